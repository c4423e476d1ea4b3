"""The guard graph's state, with input and output schemas kept apart.

Only `agent_input`/`agent_output` go in and only `guard_decision` comes out, so a host graph
that adds the guard as a subgraph sees no internal keys and shares no reducers with it.
"""

from __future__ import annotations

from typing import Any, Literal, get_origin, get_type_hints

from typing_extensions import TypedDict

from guardagent.decision import GuardDecision
from guardagent.memory_store.store import Demonstration
from guardagent.policy.results import PolicyVerdict
from guardagent.readers.evidence import Unreadable
from guardagent.sandbox.process import ExecutionResult


class GuardInput(TypedDict):
    """One event of the target agent."""

    agent_input: str
    agent_output: str


class GuardOutput(TypedDict):
    """What the guard hands back."""

    guard_decision: GuardDecision


class GuardState(GuardInput, total=False):
    """Working state between nodes."""

    guard_decision: GuardDecision
    demonstrations: list[Demonstration]
    plan: str
    program: str
    program_source: Literal["memory", "generated", "none"]
    feedback: str
    attempts: int
    attempt_errors: list[str | None]
    llm_calls: int
    tokens: int
    execution: ExecutionResult
    policy_verdict: PolicyVerdict
    error: str
    refused: list[Unreadable]
    """What the guard refused to read (an oversized event): the decision's `unreadable`."""
    started_at: float


def _empty(hint: Any) -> Any:
    """A key's value before any node wrote it this event.

    Counters and lists that nodes add to start at zero / empty; every other key is None,
    which the nodes and the decision read as absent (`program=None`, no `error`).
    """
    kind = get_origin(hint) or hint
    return kind() if kind in (int, float, list, dict) else None


# Every working key: the state schema minus the event itself, so that a key added to
# GuardState later is reset too. Under a checkpointer the next event on a thread starts from
# the last event's state; a key left over (the program the model wrote, its execution, an
# error, another event's demonstrations or decision) would decide the new event.
_PER_EVENT_HINTS: dict[str, Any] = {
    key: hint
    for key, hint in get_type_hints(GuardState).items()
    if key not in get_type_hints(GuardInput)
}
PER_EVENT_KEYS: tuple[str, ...] = tuple(_PER_EVENT_HINTS)


def fresh_state() -> dict[str, Any]:
    """Every per-event key at its value before the event's first node (new lists each call)."""
    fresh = {key: _empty(hint) for key, hint in _PER_EVENT_HINTS.items()}
    fresh["program_source"] = "none"
    return fresh
