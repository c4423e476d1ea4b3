"""debug: the debugger LLM diagnoses a failed program for the next coding attempt."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime

from guardagent import prompts
from guardagent.context import GuardContext
from guardagent.graph.state import GuardState
from guardagent.llm import ModelCallError, call_model
from guardagent.nodes.runtime import context_of, model_of, profile_of
from guardagent.tools.registry import Toolbox
from guardagent.tools.verdict import VerdictRecorder

_LISTINGS: dict[tuple[Any, ...], str] = {}


def toolbox_listing(toolbox: Toolbox) -> str:
    """Signatures and docstrings of the profile's toolbox plus the verdict calls.

    Kept per toolbox (its names, functions and groups): `inspect.signature` of every
    function cost ~1 ms of each model-written program's decision.
    """
    key = tuple((spec.name, spec.func, spec.group) for spec in toolbox)
    if key not in _LISTINGS:
        if len(_LISTINGS) > 256:
            _LISTINGS.clear()
        _LISTINGS[key] = VerdictRecorder().toolbox().merged(toolbox).describe()
    return _LISTINGS[key]


def diagnose(
    model: BaseChatModel, toolbox: Toolbox, plan: str, program: str, error: str, stdout: str
) -> tuple[str, int]:
    """The debugger's diagnosis of `program`'s `error` and the tokens it cost.

    Used by this node after a failed run and by the coder for a program refused before it
    ran (a data-flow violation), so both reach the next coding attempt the same way.

    Raises:
        ModelCallError: when the model gives no usable answer.
    """
    user = prompts.DEBUGGER_USER.format(
        plan=plan, program=program, error=error, stdout=stdout or "(nothing)"
    )
    system = prompts.DEBUGGER_SYSTEM.format(toolbox=toolbox_listing(toolbox))
    return call_model(model, system, user, run_name="guardagent.debug")


def debug(state: GuardState, runtime: Runtime[GuardContext]) -> dict[str, Any]:
    """Explain the error so the coder can fix it."""
    ctx = context_of(runtime)
    model = model_of(ctx)
    if model is None:
        return {"error": "no model configured for debugging"}
    execution = state.get("execution")
    calls = state.get("llm_calls", 0) + 1
    try:
        text, tokens = diagnose(
            model, profile_of(ctx).tools(), state.get("plan", ""), state.get("program", ""),
            (execution["error"] or "") if execution else "",
            execution["stdout"] if execution else "",
        )  # fmt: skip
    except ModelCallError as exc:
        return {"error": f"debugger model failed: {exc}", "llm_calls": calls}
    return {"feedback": text, "llm_calls": calls, "tokens": state.get("tokens", 0) + tokens}
