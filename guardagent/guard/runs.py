"""One guard run of the compiled graph, named and traced the same way wherever it starts.

`GuardAgent.check`, the agent middleware and `guard_node` all run the graph through here, so
every run that anything records (LangSmith, `collect_runs`, the caller's callbacks) has a name,
carries the profile and model as metadata, and is followed by a child run `<run_name>.decision`
whose metadata holds the outcome (program source, attempts, LLM calls, allowed, failed
closed): outcome facts only exist after the run, and LangSmith filters on metadata, not on
outputs. A run nothing records carries none of it: nothing could read it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from functools import partial
from typing import Any

from langchain_core.callbacks.manager import CallbackManager
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.graph.state import CompiledStateGraph

from guardagent.context import GuardContext
from guardagent.decision import GuardDecision
from guardagent.nodes.runtime import one_run
from guardagent.twins import Twin, Wait, arun, run

Graph = CompiledStateGraph[Any, Any, Any, Any]


def model_name(model: Any) -> str:
    """A readable name for a context's model: the spec string, or the model's own name."""
    if isinstance(model, str):
        return model
    return str(
        getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__
    )


def run_config(
    context: GuardContext, run_name: str, metadata: Mapping[str, Any] | None = None
) -> RunnableConfig:
    """Config of one guard run: its name, tags and the metadata known before it starts."""
    return {
        "run_name": run_name,
        "tags": ["guardagent"],
        "metadata": {
            "guardagent_profile": context.profile,
            "guardagent_model": model_name(context.model),
            **(metadata or {}),
        },
    }


def outcome_metadata(decision: GuardDecision) -> dict[str, Any]:
    """What a trace should be filterable by once the decision exists."""
    return {
        "guardagent_profile": decision.profile,
        "guardagent_allowed": decision.allowed,
        "guardagent_program_source": decision.program_source,
        "guardagent_attempts": decision.attempts,
        "guardagent_llm_calls": decision.llm_calls,
        "guardagent_failed_closed": decision.failed_closed,
    }


def _summary(decision: GuardDecision) -> dict[str, Any]:
    return decision.model_dump(
        mode="json", include={"allowed", "label", "violations", "reason", "error"}
    )


def _traced_config(
    context: GuardContext, run_name: str, metadata: Mapping[str, Any] | None
) -> RunnableConfig | None:
    """The run's config when anything records runs, else None (nothing to name or tag).

    Name, tags and metadata exist only for the callbacks that record runs (a tracer, a
    collector, the caller's handlers); nothing else reads them. With none configured,
    LangGraph would still merge them into every node's config (~0.3 ms a decision through
    `ainvoke`, a tenth of a batch's loop time), and the outcome run would compute its
    summary and throw it away, so both are skipped.
    """
    return run_config(context, run_name, metadata) if _recorders() else None


def _outcome_run(decision: GuardDecision, run_name: str) -> tuple[Any, RunnableConfig]:
    """The outcome child run and its config (only made when something records runs)."""
    name = f"{run_name}.decision"
    config: RunnableConfig = {
        "run_name": name,
        "tags": ["guardagent"],
        "metadata": outcome_metadata(decision),
    }
    return RunnableLambda(_summary, name=name), config


def _recorders() -> list[Any]:
    """The callback handlers a run started here would have.

    The caller's, inherited from the context as `ensure_config` does (the outcome's config
    adds none), plus tracing's (LangSmith's environment, `collect_runs`, ...).
    """
    parent = var_child_runnable_config.get() or {}
    return list(CallbackManager.configure(parent.get("callbacks")).handlers)


def _finish(out: dict[str, Any], started: float) -> GuardDecision:
    decision: GuardDecision = out["guard_decision"]
    return decision.model_copy(update={"latency_ms": (time.perf_counter() - started) * 1000})


def guard_run(
    graph: Graph,
    context: GuardContext,
    agent_input: str,
    agent_output: str,
    *,
    run_name: str,
    metadata: Mapping[str, Any] | None = None,
) -> Twin[GuardDecision]:
    """Guard one event: run the graph, time it end to end, record the outcome run.

    Written once for both paths (:mod:`guardagent.twins`): :func:`invoke_guard` and
    :func:`ainvoke_guard` drive it.
    """
    started = time.perf_counter()
    config = _traced_config(context, run_name, metadata)
    event = {"agent_input": agent_input, "agent_output": agent_output}
    with one_run():
        out = yield Wait(
            partial(graph.invoke, event, context=context, config=config),
            partial(graph.ainvoke, event, context=context, config=config),
        )
    decision = _finish(out, started)
    if config is not None:
        summary, outcome = _outcome_run(decision, run_name)
        yield Wait(
            partial(summary.invoke, decision, config=outcome),
            partial(summary.ainvoke, decision, config=outcome),
        )
    return decision


def invoke_guard(
    graph: Graph,
    context: GuardContext,
    agent_input: str,
    agent_output: str,
    *,
    run_name: str,
    metadata: Mapping[str, Any] | None = None,
) -> GuardDecision:
    """Guard one event (:func:`guard_run`, sync)."""
    return run(
        guard_run(graph, context, agent_input, agent_output, run_name=run_name, metadata=metadata)
    )


async def ainvoke_guard(
    graph: Graph,
    context: GuardContext,
    agent_input: str,
    agent_output: str,
    *,
    run_name: str,
    metadata: Mapping[str, Any] | None = None,
) -> GuardDecision:
    """Guard one event (:func:`guard_run`, async)."""
    return await arun(
        guard_run(graph, context, agent_input, agent_output, run_name=run_name, metadata=metadata)
    )
