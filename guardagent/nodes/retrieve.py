"""retrieve: a verified program for this guard request, else demonstrations for the model."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.memory_store.seed import opened_memory
from guardagent.memory_store.store import Demonstration
from guardagent.nodes.derive import load_derived
from guardagent.nodes.runtime import RunRefused, context_of, memory_of, profile_of
from guardagent.nodes.state import GuardState
from guardagent.nodes.steps import Steps, async_node, sync_node
from guardagent.profiles.loader import Profile
from guardagent.profiles.verification import known_problems, program_problems
from guardagent.twins import in_thread


def demonstrations(state: GuardState, ctx: GuardContext) -> list[Demonstration]:
    """The k nearest demonstrations of this request (Levenshtein re-ranked), fetched once."""
    if state.get("demonstrations"):
        return state["demonstrations"]
    profile = profile_of(ctx)
    return memory_of(ctx).search(
        state["agent_input"],
        state["agent_output"],
        ctx.k or profile.k,
        request=profile.fingerprint,
    )


def _shipped(ctx: GuardContext) -> list[str]:
    """The distinct programs of the profile's demonstrations that verify (in order)."""
    profile = profile_of(ctx)
    return [c for c in _shipped_codes(profile) if not program_problems(c, profile)]


def _shipped_codes(profile: Profile) -> list[str]:
    """The distinct programs of the profile's demonstrations, in order."""
    return list(dict.fromkeys(d.code for d in profile.demonstrations))


def _verified_program(state: GuardState, ctx: GuardContext) -> str | None:
    """The program to run: the profile's own verified program, else one from memory.

    Memory may hold programs the model wrote (or anything a shared Chroma server was given),
    so those count only after they verify on this profile's demonstrations in this process.
    """
    profile = profile_of(ctx)
    shipped = _shipped(ctx)
    if len(shipped) == 1:  # the profile's own verified program decides: no memory to open
        return shipped[0]
    memory = memory_of(ctx)
    programs = shipped or [
        c for c in memory.verified_programs(profile.fingerprint) if not program_problems(c, profile)
    ]
    if len(programs) <= 1:  # the usual case: one general program, no search needed
        return programs[0] if programs else None
    nearest = memory.search(
        state["agent_input"],
        state["agent_output"],
        memory.candidates,
        request=profile.fingerprint,
        verified_only=True,
    )
    return next((d["code"] for d in nearest if d["code"] in programs), programs[0])


def _retrieved(state: GuardState, ctx: GuardContext) -> dict[str, Any]:
    update: dict[str, Any] = {}
    event: Any = state
    try:
        load_derived(ctx)  # cached rules derived from the request judge memory's programs
        program = _verified_program(event, ctx) if ctx.reuse_programs else None
        if program:
            update.update(program=program, program_source="memory")
        else:
            update["demonstrations"] = demonstrations(event, ctx)
    except RunRefused as exc:  # a profile this deployment does not serve
        update["error"] = f"refused: {exc}"
    except Exception as exc:  # noqa: BLE001 - Chroma down, bad memory dir...: deny, say why
        update["error"] = f"memory unavailable: {type(exc).__name__}: {exc}"
    return update


def retrieve_steps(state: GuardState, runtime: Runtime[GuardContext]) -> Steps:
    """Pick the verified program for this request, nearest-first when memory holds several.

    With a verified program, the planner and coder are skipped, so the event needs no LLM
    call and no demonstrations. Otherwise the demonstrations for the prompts are fetched here.
    The event's per-event keys were written afresh by `admit`. The memory's reads are the
    node's wait (a worker thread on the async path), unless the memory is local and in step.
    """
    ctx = context_of(runtime)
    if _no_wait(ctx):
        return _retrieved(state, ctx)
    update: dict[str, Any] = yield in_thread(_retrieved, state, ctx)
    return update


def _no_wait(ctx: GuardContext) -> bool:
    """Whether retrieving needs no wait worth a thread.

    So when the profile's own verified program decides (reuse on: no memory is opened at
    all), or when the run's memory is open already, local, and nobody wrote to it since it
    was last read (:meth:`MemoryStore.current`), and with reuse on, its programs' verdicts
    are known. Opening one (Chroma's imports, seeding) and verifying a program (sandbox runs
    on every demonstration and counterfactual: the profile's own, once per package version,
    or one another process stored) happen in the thread.
    """
    try:
        if ctx.reuse_programs:
            profile = profile_of(ctx)
            known = [known_problems(c, profile) for c in _shipped_codes(profile)]
            if any(problems is None for problems in known):
                return False
            if sum(not problems for problems in known) == 1:  # as `_shipped` would find
                return True
        store = opened_memory(ctx.profile, ctx.memory_dir, ctx.memory_url, ctx.memory_key)
        if ctx.memory_url or store is None or not store.current():
            return False
        return not ctx.reuse_programs or store.programs_known(profile_of(ctx).fingerprint)
    except Exception:  # noqa: BLE001 - refused, unopenable: `_retrieved` says why
        return False


retrieve = sync_node(retrieve_steps)
aretrieve = async_node(retrieve_steps)
