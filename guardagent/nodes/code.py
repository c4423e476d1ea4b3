"""code: the coder LLM turns the plan into a general guard program."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from guardagent import prompts
from guardagent.context import GuardContext
from guardagent.graph.state import GuardState
from guardagent.llm import ModelCallError, call_model
from guardagent.nodes.runtime import context_of, model_of, profile_of
from guardagent.tools.registry import Toolbox
from guardagent.tools.verdict import VerdictRecorder
from guardagent.verification import extract_code


def toolbox_listing(toolbox: Toolbox) -> str:
    """Signatures and docstrings of the profile's toolbox plus the verdict calls."""
    return VerdictRecorder().toolbox().merged(toolbox).describe()


def code(state: GuardState, runtime: Runtime[GuardContext]) -> dict[str, Any]:
    """Ask the model for a program; on a retry the debugger's diagnosis is included."""
    ctx = context_of(runtime)
    profile = profile_of(ctx)
    model = model_of(ctx)
    if model is None:
        return {"error": "no model configured for coding"}
    demos = "\n\n".join(
        prompts.DEMO_CODE.format(plan=d["plan"], code=d["code"])
        for d in state.get("demonstrations", [])
    )
    feedback = ""
    if state.get("feedback") and state.get("execution"):
        feedback = prompts.CODER_FEEDBACK.format(
            program=state.get("program", ""),
            error=state["execution"]["error"],
            diagnosis=state["feedback"],
        )
    user = prompts.CODER_USER.format(
        guard_request=profile.guard_request,
        demonstrations=demos or "(none)",
        event=prompts.event_block(state["agent_input"], state["agent_output"]),
        plan=state.get("plan", ""),
        feedback=feedback,
    )
    system = prompts.CODER_SYSTEM.format(toolbox=toolbox_listing(profile.tools()))
    calls = state.get("llm_calls", 0) + 1
    try:
        text, tokens = call_model(model, system, user, run_name="guardagent.code")
    except ModelCallError as exc:
        return {"error": f"coder model failed: {exc}", "llm_calls": calls}
    return {
        "program": extract_code(text),
        "program_source": "generated",
        "llm_calls": calls,
        "tokens": state.get("tokens", 0) + tokens,
    }
