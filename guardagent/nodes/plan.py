"""plan: the planner LLM writes the four-step plan for this event."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from guardagent import prompts
from guardagent.context import GuardContext
from guardagent.graph.state import GuardState
from guardagent.llm import ModelCallError, call_model
from guardagent.nodes.derive import derivation_update
from guardagent.nodes.retrieve import demonstrations
from guardagent.nodes.runtime import context_of, model_of, profile_of


def plan(state: GuardState, runtime: Runtime[GuardContext]) -> dict[str, Any]:
    """Ask the model for a plan given the guard request, spec, demonstrations and event.

    A profile with neither a rule table nor a policy model first gets its rules derived
    from the guard request (once per request; :mod:`guardagent.nodes.derive`): they are the
    oracle the program is verified against.
    """
    ctx = context_of(runtime)
    profile = profile_of(ctx)
    model = model_of(ctx)
    if model is None:
        return {"error": "no model configured for planning"}
    derived = derivation_update(state, ctx, model)  # the oracle the program will verify on
    if "error" in derived:
        return derived
    state = {**state, **derived}  # type: ignore[typeddict-item]
    try:
        shots = demonstrations(state, ctx)
    except Exception as exc:  # noqa: BLE001 - memory down: no prompt without its demos
        return {"error": f"memory unavailable: {type(exc).__name__}: {exc}"}
    demos = "\n\n".join(
        prompts.DEMO_PLAN.format(
            event=prompts.event_block(d["agent_input"], d["agent_output"]),
            plan=d["plan"],
        )
        for d in shots
    )
    user = prompts.PLANNER_USER.format(
        guard_request=profile.guard_request,
        agent_specification=profile.agent_specification,
        demonstrations=demos or "(none)",
        event=prompts.event_block(state["agent_input"], state["agent_output"]),
    )
    calls = state.get("llm_calls", 0) + 1
    try:
        text, tokens = call_model(model, prompts.PLANNER_SYSTEM, user, run_name="guardagent.plan")
    except ModelCallError as exc:
        return {"error": f"planner model failed: {exc}", "llm_calls": calls}
    return {
        "plan": text,
        "demonstrations": shots,
        "llm_calls": calls,
        "tokens": state.get("tokens", 0) + tokens,
    }
