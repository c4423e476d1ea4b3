"""execute: run the program in the sandbox with the event bound as plain data.

A program from `retrieve` (shipped with the profile, or verified on its demonstrations in
this process) runs in a warm worker, with no fork; a model-written one that has not verified
yet gets a fresh process.

The host's structured user facts (the run's `user_facts`) go to the sandbox as data too, so
`parse_user_info` returns them there instead of re-reading the input's text block.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.nodes.runtime import context_of, limits_of, profile_of
from guardagent.nodes.state import GuardState
from guardagent.nodes.steps import Steps, async_node, sync_node
from guardagent.sandbox.dataflow import check_dataflow
from guardagent.sandbox.process import ExecutionResult, arun_program, run_program
from guardagent.twins import Wait


def execute_steps(state: GuardState, runtime: Runtime[GuardContext]) -> Steps:
    """Run the current program once; every run counts as an attempt.

    A program that handles the raw event itself is refused, not run (retrieve and code
    already refuse it; this keeps it so whatever reaches the node). The run is the node's
    wait: :func:`run_program` on the sync path, :func:`arun_program` on the async one.
    """
    ctx = context_of(runtime)
    program, tools = state.get("program", ""), profile_of(ctx).tools()
    refused = check_dataflow(program, tools)
    if refused:
        result = ExecutionResult(
            ok=False,
            verdict=None,
            error="; ".join(refused),
            stdout="",
            duration_ms=0.0,
            unreadable=[],
            predicates={},
        )
    else:
        args = (program, tools, state["agent_input"], state["agent_output"], limits_of(ctx))
        facts, trusted = ctx.user_facts, state.get("program_source") == "memory"
        result = yield Wait(
            lambda: run_program(*args, user_facts=facts, trusted=trusted),
            lambda: arun_program(*args, user_facts=facts, trusted=trusted),
        )
    return {
        "execution": result,
        "attempts": state.get("attempts", 0) + 1,
        "attempt_errors": [*state.get("attempt_errors", []), result["error"]],
    }


execute = sync_node(execute_steps)
aexecute = async_node(execute_steps)
