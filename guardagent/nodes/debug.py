"""debug: the debugger LLM diagnoses a failed program for the next coding attempt."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.llm import ModelCallError, ask
from guardagent.nodes import prompts
from guardagent.nodes.runtime import context_of, model_of, profile_of
from guardagent.nodes.state import GuardState
from guardagent.nodes.steps import Steps, async_node, sync_node
from guardagent.tools.registry import Toolbox
from guardagent.tools.verdict import VerdictRecorder
from guardagent.twins import Wait

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


def debugger_prompt(
    toolbox: Toolbox, plan: str, program: str, error: str, stdout: str
) -> tuple[str, str]:
    """The debugger's (system, user) prompt for `program`'s `error`."""
    user = prompts.DEBUGGER_USER.format(
        plan=plan, program=program, error=error, stdout=stdout or "(nothing)"
    )
    return prompts.DEBUGGER_SYSTEM.format(toolbox=toolbox_listing(toolbox)), user


def diagnose(
    model: BaseChatModel, toolbox: Toolbox, plan: str, program: str, error: str, stdout: str
) -> Wait:
    """The debugger's diagnosis of `program`'s `error`, as a node's wait: (text, tokens).

    Used by this node after a failed run and by the coder for a program refused before it
    ran (a data-flow violation), so both reach the next coding attempt the same way. A
    :class:`ModelCallError` (no usable answer) is raised at the `yield`.
    """
    system, user = debugger_prompt(toolbox, plan, program, error, stdout)
    return ask(model, system, user, run_name="guardagent.debug")


def debug_steps(state: GuardState, runtime: Runtime[GuardContext]) -> Steps:
    """Explain the error so the coder can fix it."""
    ctx = context_of(runtime)
    model = model_of(ctx)
    if model is None:
        return {"error": "no model configured for debugging"}
    execution = state.get("execution")
    calls = state.get("llm_calls", 0) + 1
    try:
        text, tokens = yield diagnose(
            model,
            profile_of(ctx).tools(),
            state.get("plan", ""),
            state.get("program", ""),
            (execution["error"] or "") if execution else "",
            execution["stdout"] if execution else "",
        )
    except ModelCallError as exc:
        return {"error": f"debugger model failed: {exc}", "llm_calls": calls}
    return {"feedback": text, "llm_calls": calls, "tokens": state.get("tokens", 0) + tokens}


debug = sync_node(debug_steps)
adebug = async_node(debug_steps)
