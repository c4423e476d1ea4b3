"""Run the guard graph for one event from inside a host graph, with traceable names.

The middleware and `guard_node` both run the guard *inside* a host LangGraph run. Two things
matter there that `GuardAgent.check` does not handle:

- The guard graph is compiled with ``checkpointer=False``: an event's guard run is
  stateless, and inheriting the host's checkpointer would make a re-executed host node (after
  an interrupt/resume) resume the *old* guard run instead of checking afresh, and would
  checkpoint the guard's internals for nothing.
- Each run is named (``run_name``) and carries metadata (profile, what is being guarded); a
  child run ``<run_name>.decision`` carries the outcome (``program_source``, ``attempts``,
  ``llm_calls``, ``allowed``) as metadata, because outcome facts only exist after the run and
  LangSmith filters on metadata, not on outputs.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph.state import CompiledStateGraph

from guardagent.agent import GuardAgent
from guardagent.decision import GuardDecision
from guardagent.graph.builder import build_graph


@lru_cache(maxsize=1)
def stateless_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The guard graph compiled never to use a checkpointer, even as a host's subgraph."""
    return build_graph().compile(name="guardagent", checkpointer=False)


def as_guard(guard_or_profile: GuardAgent | str, **settings: Any) -> GuardAgent:
    """A `GuardAgent`, built from a profile name/path and settings when not given one."""
    if isinstance(guard_or_profile, GuardAgent):
        if not settings:
            return guard_or_profile
        guard = copy.copy(guard_or_profile)  # never change the caller's guard
        guard.context = replace(guard.context, **settings)
        return guard
    return GuardAgent(profile=guard_or_profile, **settings)


def _model_name(model: Any) -> str:
    if isinstance(model, str):
        return model
    return str(getattr(model, "model_name", None) or getattr(model, "model", None)
               or type(model).__name__)


def run_config(guard: GuardAgent, run_name: str, metadata: Mapping[str, Any]) -> RunnableConfig:
    """Config of one guard run: its name, tags and the metadata known before it starts."""
    return {
        "run_name": run_name,
        "tags": ["guardagent"],
        "metadata": {
            "guardagent_profile": guard.context.profile,
            "guardagent_model": _model_name(guard.context.model),
            **metadata,
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


def _record(decision: GuardDecision, run_name: str) -> None:
    RunnableLambda(_summary, name=f"{run_name}.decision").invoke(
        decision,
        config={"run_name": f"{run_name}.decision", "tags": ["guardagent"],
                "metadata": outcome_metadata(decision)},
    )


async def _arecord(decision: GuardDecision, run_name: str) -> None:
    await RunnableLambda(_summary, name=f"{run_name}.decision").ainvoke(
        decision,
        config={"run_name": f"{run_name}.decision", "tags": ["guardagent"],
                "metadata": outcome_metadata(decision)},
    )


def run_guard(
    guard: GuardAgent,
    agent_input: str,
    agent_output: str,
    *,
    run_name: str,
    metadata: Mapping[str, Any] | None = None,
) -> GuardDecision:
    """Guard one event as a named, traced child of the current host run."""
    started = time.perf_counter()
    out = stateless_graph().invoke(
        {"agent_input": agent_input, "agent_output": agent_output},
        context=guard.context,
        config=run_config(guard, run_name, metadata or {}),
    )
    decision: GuardDecision = out["guard_decision"]
    decision = decision.model_copy(update={"latency_ms": (time.perf_counter() - started) * 1000})
    _record(decision, run_name)
    return decision


async def arun_guard(
    guard: GuardAgent,
    agent_input: str,
    agent_output: str,
    *,
    run_name: str,
    metadata: Mapping[str, Any] | None = None,
) -> GuardDecision:
    """Async :func:`run_guard`."""
    started = time.perf_counter()
    out = await stateless_graph().ainvoke(
        {"agent_input": agent_input, "agent_output": agent_output},
        context=guard.context,
        config=run_config(guard, run_name, metadata or {}),
    )
    decision: GuardDecision = out["guard_decision"]
    decision = decision.model_copy(update={"latency_ms": (time.perf_counter() - started) * 1000})
    await _arecord(decision, run_name)
    return decision


def describe_denial(decision: GuardDecision) -> str:
    """One readable line: what was violated and why (for a ToolMessage or a log)."""
    if isinstance(decision.violations, dict):
        parts = [f"{table}: {', '.join(cols)}" for table, cols in decision.violations.items()]
    else:
        parts = list(decision.violations)
    violated = "; ".join(parts) or ("the guard could not decide" if decision.error else "denied")
    reason = decision.reason.strip()
    if reason and reason[-1] not in ".!?":
        reason += "."
    return f"{violated}. Reason: {reason}"
