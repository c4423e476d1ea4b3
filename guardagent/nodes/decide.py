"""decide: turn the last execution into a GuardDecision, failing closed without a verdict."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.decision import GuardDecision
from guardagent.nodes.runtime import context_of, profile_of
from guardagent.nodes.state import GuardState
from guardagent.policy.runs import decision_parts
from guardagent.profiles.check import NO_PROGRAM, explain_no_program
from guardagent.readers.evidence import describe

__all__ = ["NO_PROGRAM", "decide"]


def _failure(state: GuardState, ctx: GuardContext) -> str:
    execution = state.get("execution")
    if state.get("error"):
        return state["error"]
    if execution is None:
        return explain_no_program(profile_of(ctx))
    if execution["ok"] and execution["verdict"] is None:
        return "the program assigned predicates but the profile names no policy model"
    return f"program failed after {state.get('attempts', 0)} attempt(s): {execution['error']}"


def decide(state: GuardState, runtime: Runtime[GuardContext]) -> dict[str, Any]:
    """Build the decision; anything short of a valid verdict is a denial with the reason."""
    ctx = context_of(runtime)
    execution = state.get("execution")
    verdict = execution["verdict"] if execution and execution["ok"] else None
    common: dict[str, Any] = {
        "program_source": state.get("program_source", "none"),
        "program": state.get("program"),
        "attempts": state.get("attempts", 0),
        "attempt_errors": state.get("attempt_errors", []),
        "llm_calls": state.get("llm_calls", 0),
        "tokens": state.get("tokens", 0),
        "latency_ms": (time.perf_counter() - state.get("started_at", time.perf_counter())) * 1000,
        "profile": ctx.profile,
    }
    unread = (execution.get("unreadable") if execution else None) or []
    policy = state.get("policy_verdict")
    if unread and not state.get("error"):
        error = f"unreadable evidence: {describe(unread)}"
        decision = GuardDecision(
            allowed=False,
            label=1,
            reason=f"denied: the guard could not read the event ({error})",
            error=error,
            unreadable=unread,
            **common,
        )
    elif policy is not None and not state.get("error"):
        parts = decision_parts(policy, verdict)  # the policy model's verdict (and the program's)
        decision = GuardDecision(
            **parts,
            guardrailed_output=state["agent_output"] if parts["allowed"] else None,
            **common,
        )
    elif verdict is None or state.get("error"):
        error = _failure(state, ctx)
        decision = GuardDecision(
            allowed=False,
            label=1,
            reason=f"denied: the guard could not decide ({error})",
            error=error,
            unreadable=state.get("refused") or [],
            **common,
        )
    elif verdict["allowed"]:
        decision = GuardDecision(
            allowed=True,
            label=0,
            reason=verdict["reason"],
            guardrailed_output=state["agent_output"],
            **common,
        )
    else:
        decision = GuardDecision(
            allowed=False,
            label=1,
            violations=verdict["violations"],
            reason=verdict["reason"],
            **common,
        )
    return {"guard_decision": decision}
