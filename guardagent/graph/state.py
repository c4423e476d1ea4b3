"""The guard graph's state, with input and output schemas kept apart.

Only `agent_input`/`agent_output` go in and only `guard_decision` comes out, so a host graph
that adds the guard as a subgraph sees no internal keys and shares no reducers with it.
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

from guardagent.decision import GuardDecision
from guardagent.memory_store.store import Demonstration
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
    error: str
    started_at: float
