"""remember: keep a generated program for reuse once it proves itself on the demonstrations."""

from __future__ import annotations

import logging
from typing import Any

from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.graph.state import GuardState
from guardagent.memory_store.store import Demonstration, demonstration_id
from guardagent.nodes.runtime import context_of, memory_of, profile_of
from guardagent.verification import program_problems

log = logging.getLogger(__name__)


def remember(state: GuardState, runtime: Runtime[GuardContext]) -> dict[str, Any]:
    """Verify the program the model just wrote; if verified, store it for later events.

    The program must reproduce the label and details of every labelled demonstration of the
    guard request; only then may later events run it with no LLM call. The event it decided
    is stored with it (labelled by the program's own verdict) so retrieval finds it.
    """
    ctx = context_of(runtime)
    execution = state.get("execution")
    if execution is None or execution["verdict"] is None:
        return {}
    profile = profile_of(ctx)
    program = state.get("program", "")
    if program_problems(program, profile) or not ctx.reuse_programs:
        return {}
    verdict = execution["verdict"]
    demo = Demonstration(
        id="",
        agent_input=state["agent_input"],
        agent_output=state["agent_output"],
        plan=state.get("plan", ""),
        code=program,
        label=0 if verdict["allowed"] else 1,
        details=verdict["violations"],
        request_fingerprint=profile.fingerprint,
        verified=True,
    )
    demo["id"] = demonstration_id(demo)
    try:
        memory_of(ctx).add([demo])
    except Exception:  # noqa: BLE001 - the decision stands; only the reuse is lost
        log.warning("could not store a verified program in memory", exc_info=True)
    return {}

