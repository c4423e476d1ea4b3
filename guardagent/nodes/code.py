"""code: the coder LLM turns the plan into a general guard program."""

from __future__ import annotations

from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.llm import ModelCallError, ask
from guardagent.nodes import prompts
from guardagent.nodes.debug import diagnose, toolbox_listing
from guardagent.nodes.runtime import context_of, model_of, profile_of
from guardagent.nodes.state import GuardState
from guardagent.nodes.steps import Steps, async_node, sync_node
from guardagent.profiles.verification import extract_code
from guardagent.sandbox.dataflow import check_dataflow

__all__ = ["acode", "code", "toolbox_listing"]


def code_steps(state: GuardState, runtime: Runtime[GuardContext]) -> Steps:
    """Ask the model for a program; on a retry the debugger's diagnosis is included.

    A program that handles the raw event text itself (anything but passing `agent_input` /
    `agent_output` straight to a reader, see :mod:`guardagent.sandbox.dataflow`) is refused
    here, before it can run: the refusal counts as an attempt, goes to the debugger like a
    compile error, and the coder tries again while attempts remain.
    """
    ctx = context_of(runtime)
    profile = profile_of(ctx)
    model = model_of(ctx)
    if model is None:
        return {"error": "no model configured for coding"}
    tools = profile.tools()
    demos = "\n\n".join(
        prompts.DEMO_CODE.format(plan=d["plan"], code=d["code"])
        for d in state.get("demonstrations", [])
    )
    system = prompts.CODER_SYSTEM.format(toolbox=toolbox_listing(tools))
    plan = state.get("plan", "")
    execution = state.get("execution")
    retry: tuple[str, str, str] | None = None  # (program, error, diagnosis) of the last try
    if state.get("feedback") and execution:
        retry = (state.get("program", ""), execution["error"] or "", state["feedback"])
    calls, tokens = state.get("llm_calls", 0), state.get("tokens", 0)
    attempts, errors = state.get("attempts", 0), list(state.get("attempt_errors", []))
    while True:
        feedback = (
            ""
            if retry is None
            else prompts.CODER_FEEDBACK.format(program=retry[0], error=retry[1], diagnosis=retry[2])
        )
        user = prompts.CODER_USER.format(
            guard_request=profile.guard_request,
            demonstrations=demos or "(none)",
            event=prompts.event_block(state["agent_input"], state["agent_output"]),
            plan=plan,
            feedback=feedback,
        )
        calls += 1
        try:
            text, used = yield ask(model, system, user, run_name="guardagent.code")
        except ModelCallError as exc:
            return {"error": f"coder model failed: {exc}", "llm_calls": calls, "tokens": tokens}
        tokens += used
        program = extract_code(text)
        refused = check_dataflow(program, tools)
        if not refused:
            return {
                "program": program,
                "program_source": "generated",
                "llm_calls": calls,
                "tokens": tokens,
                "attempts": attempts,
                "attempt_errors": errors,
            }
        error = "; ".join(refused)
        attempts += 1
        errors.append(error)
        spent = {
            "llm_calls": calls,
            "tokens": tokens,
            "attempts": attempts,
            "attempt_errors": errors,
        }
        if attempts >= ctx.max_attempts:
            return {"error": f"the coder's program was refused before running: {error}", **spent}
        calls += 1
        try:
            diagnosis, used = yield diagnose(model, tools, plan, program, error, "")
        except ModelCallError as exc:
            return {"error": f"debugger model failed: {exc}", **spent, "llm_calls": calls}
        tokens += used
        retry = (program, error, diagnosis)


code = sync_node(code_steps)
acode = async_node(code_steps)
