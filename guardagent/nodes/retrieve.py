"""retrieve: a verified program for this guard request, else demonstrations for the model."""

from __future__ import annotations

import time
from typing import Any, get_origin, get_type_hints

from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.graph.state import GuardInput, GuardState
from guardagent.memory_store.store import Demonstration
from guardagent.nodes.runtime import context_of, memory_of, profile_of
from guardagent.verification import program_problems


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


def demonstrations(state: GuardState, ctx: GuardContext) -> list[Demonstration]:
    """The k nearest demonstrations of this request (Levenshtein re-ranked), fetched once."""
    if state.get("demonstrations"):
        return state["demonstrations"]
    profile = profile_of(ctx)
    return memory_of(ctx).search(
        state["agent_input"], state["agent_output"], ctx.k or profile.k,
        request=profile.fingerprint,
    )


def _verified_program(state: GuardState, ctx: GuardContext) -> str | None:
    """The program to run: the profile's own verified program, else one from memory.

    Memory may hold programs the model wrote (or anything a shared Chroma server was given),
    so those count only after they verify on this profile's demonstrations in this process.
    """
    profile = profile_of(ctx)
    shipped = [c for c in dict.fromkeys(d.code for d in profile.demonstrations)
               if not program_problems(c, profile)]  # fmt: skip
    memory = memory_of(ctx)
    programs = shipped or [
        c for c in memory.verified_programs(profile.fingerprint) if not program_problems(c, profile)
    ]
    if len(programs) <= 1:  # the usual case: one general program, no search needed
        return programs[0] if programs else None
    nearest = memory.search(
        state["agent_input"], state["agent_output"], memory.candidates,
        request=profile.fingerprint, verified_only=True,
    )  # fmt: skip
    return next((d["code"] for d in nearest if d["code"] in programs), programs[0])


def retrieve(state: GuardState, runtime: Runtime[GuardContext]) -> dict[str, Any]:
    """Pick the verified program for this request, nearest-first when memory holds several.

    With a verified program, the planner and coder are skipped, so the event needs no LLM
    call and no demonstrations. Otherwise the demonstrations for the prompts are fetched here.
    Every per-event key (:data:`PER_EVENT_KEYS`) is written afresh first: under a
    checkpointer, the thread's state still holds the previous event's keys.
    """
    started = time.perf_counter()
    ctx = context_of(runtime)
    update = fresh_state() | {"started_at": started}
    # Read the event through a fresh view: nothing of a previous event on this thread counts.
    event: Any = {**state, **update}
    try:
        program = _verified_program(event, ctx) if ctx.reuse_programs else None
        if program:
            update.update(program=program, program_source="memory")
        else:
            update["demonstrations"] = demonstrations(event, ctx)
    except Exception as exc:  # noqa: BLE001 - Chroma down, bad memory dir...: deny, say why
        update["error"] = f"memory unavailable: {type(exc).__name__}: {exc}"
    return update
