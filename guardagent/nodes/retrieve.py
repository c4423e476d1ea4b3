"""retrieve: demonstrations for the prompts, and a verified program if memory has one."""

from __future__ import annotations

import time
from typing import Any

from guardagent.graph.state import GuardState
from guardagent.nodes.runtime import context_of, memory_of, profile_of


def retrieve(state: GuardState, runtime: Any) -> dict[str, Any]:
    """Fetch the k nearest demonstrations of this guard request (Levenshtein re-ranked).

    A verified program among them is taken for execution, so the planner and coder are
    skipped: most events then need no LLM call at all.
    """
    started = time.perf_counter()
    ctx = context_of(runtime)
    profile = profile_of(ctx)
    memory = memory_of(ctx)
    k = ctx.k or profile.k
    demos = memory.search(
        state["agent_input"], state["agent_output"], k, request=profile.fingerprint
    )
    update: dict[str, Any] = {
        "started_at": started,
        "demonstrations": demos,
        "attempts": 0,
        "attempt_errors": [],
        "llm_calls": 0,
        "tokens": 0,
        "program_source": "none",
    }
    if ctx.reuse_programs:
        verified = [d for d in demos if d["verified"]] or memory.search(
            state["agent_input"],
            state["agent_output"],
            1,
            request=profile.fingerprint,
            verified_only=True,
        )
        if verified:
            update.update(program=verified[0]["code"], program_source="memory")
    return update
