"""debug: the debugger LLM diagnoses a failed program for the next coding attempt."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from guardagent import prompts
from guardagent.context import GuardContext
from guardagent.graph.state import GuardState
from guardagent.llm import ModelCallError, call_model
from guardagent.nodes.code import toolbox_listing
from guardagent.nodes.runtime import context_of, model_of, profile_of


def debug(state: GuardState, runtime: Runtime[GuardContext]) -> dict[str, Any]:
    """Explain the error so the coder can fix it."""
    ctx = context_of(runtime)
    model = model_of(ctx)
    if model is None:
        return {"error": "no model configured for debugging"}
    execution = state.get("execution")
    user = prompts.DEBUGGER_USER.format(
        plan=state.get("plan", ""),
        program=state.get("program", ""),
        error=execution["error"] if execution else "",
        stdout=(execution["stdout"] if execution else "") or "(nothing)",
    )
    system = prompts.DEBUGGER_SYSTEM.format(toolbox=toolbox_listing(profile_of(ctx).tools()))
    calls = state.get("llm_calls", 0) + 1
    try:
        text, tokens = call_model(model, system, user, run_name="guardagent.debug")
    except ModelCallError as exc:
        return {"error": f"debugger model failed: {exc}", "llm_calls": calls}
    return {"feedback": text, "llm_calls": calls, "tokens": state.get("tokens", 0) + tokens}
