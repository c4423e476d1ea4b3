"""plan: the planner LLM writes the four-step plan for this event."""

from __future__ import annotations

from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.llm import ModelCallError, ask
from guardagent.nodes import prompts
from guardagent.nodes.derive import derivation_wait
from guardagent.nodes.retrieve import demonstrations
from guardagent.nodes.runtime import context_of, model_of, profile_of
from guardagent.nodes.state import GuardState
from guardagent.nodes.steps import Steps, async_node, sync_node


def plan_steps(state: GuardState, runtime: Runtime[GuardContext]) -> Steps:
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
    derivation = derivation_wait(state, ctx, model)  # the oracle the program will verify on
    derived = {} if derivation is None else (yield derivation)
    if "error" in derived:
        return derived
    state = {**state, **derived}
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
        text, tokens = yield ask(model, prompts.PLANNER_SYSTEM, user, run_name="guardagent.plan")
    except ModelCallError as exc:
        return {"error": f"planner model failed: {exc}", "llm_calls": calls}
    return {
        "plan": text,
        "demonstrations": shots,
        "llm_calls": calls,
        "tokens": state.get("tokens", 0) + tokens,
    }


plan = sync_node(plan_steps)
aplan = async_node(plan_steps)
