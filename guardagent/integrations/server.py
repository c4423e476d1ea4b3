"""The guard graph as `langgraph.json` serves it: settings from the server, choices from runs.

Under `langgraph dev` / LangGraph Server anyone who can reach the server sends the run's
input, context and config. So the served graph takes its deployment settings only from the
server's environment (:meth:`~guardagent.context.GuardContext.from_env`, read when this module
is imported and then on every run, so a bad value fails the server's start, not a run): the
``guard`` rows of the one settings table, :data:`guardagent.environment.GUARD_SETTINGS`
(listed with their defaults on the docs' settings page), and nothing else.

API keys stay in the provider's variables (``OPENAI_API_KEY``, ...). A run may choose only
what :class:`~guardagent.context.RunContext` holds (a registered profile *name*, the user's
facts), which is also all LangGraph Studio shows; the server drops other context keys, and
the graph reads no other key even when one arrives. Task policies (extra rules and
parameters for one thread, `GuardAgent.check_trace(..., task=...)`) are host-only for the
same reason: neither the served input nor the run context has a field for them.

A server's client also sends commands (``{"goto": node, "update": {...}}``) and writes thread
state (``update_state(..., as_node=...)``). So the served graph has one node, ``guard``, and
keeps only the event and its decision: the guard's own graph runs inside it from its first
node, without a checkpointer, each time. A client that names another node or writes the
guard's working keys (a program, its source, an execution) starts no decision from them.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from guardagent.context import RunContext
from guardagent.decision import GuardDecision
from guardagent.graph.builder import build_graph
from guardagent.graph.runnables import paired
from guardagent.nodes.runtime import check_settings, deployment_settings
from guardagent.nodes.state import GuardInput, GuardOutput
from guardagent.profiles.loader import load_profile

settings = deployment_settings()  # fail at start on a malformed GUARDAGENT_* variable
check_settings(settings)
for _ref in {settings.profile, *(settings.profiles or {}).values()}:
    load_profile(_ref)  # and on a profile the deployment names that does not load


class ServedState(TypedDict, total=False):
    """All a served thread keeps: the event and its decision (nothing a decision starts from)."""

    agent_input: str
    agent_output: str
    guard_decision: GuardDecision


def served_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """One node, ``guard``, running the whole guard graph from its start on each event.

    The context schema is :class:`RunContext`: the client's context dict is coerced into it
    and never becomes a GuardContext, which the nodes trust as settings built by Python
    code. The guard graph inside keeps no checkpoint (`checkpointer=False`), so neither a
    command nor a written state can start it anywhere but at `admit`.
    """
    guard = build_graph().compile(name="guardagent.guard", checkpointer=False)

    def event(state: ServedState) -> GuardInput:
        return {
            "agent_input": state.get("agent_input") or "",
            "agent_output": state.get("agent_output") or "",
        }

    def decide(
        state: ServedState, config: RunnableConfig, runtime: Runtime[RunContext]
    ) -> GuardOutput:
        out = guard.invoke(event(state), config, context=runtime.context)
        return {"guard_decision": out["guard_decision"]}

    async def adecide(
        state: ServedState, config: RunnableConfig, runtime: Runtime[RunContext]
    ) -> GuardOutput:
        out = await guard.ainvoke(event(state), config, context=runtime.context)
        return {"guard_decision": out["guard_decision"]}

    builder = StateGraph(
        ServedState, context_schema=RunContext, input_schema=GuardInput, output_schema=GuardOutput
    )
    builder.add_node("guard", paired(decide, adecide, name="guard"))
    builder.add_edge(START, "guard")
    builder.add_edge("guard", END)
    return builder.compile(name="guardagent")


@cache
def make_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The served graph, compiled on the first call and then kept: `langgraph.json`'s factory.

    LangGraph's server calls a factory it finds in `langgraph.json` when it needs the graph
    (each run, each schema read), so compiling here rather than at import keeps importing
    this module cheap and free of the graph; `cache` makes every call after the first return
    the same compiled graph. The settings above are still checked at import (a bad value fails
    the server's start).
    """
    return served_graph()


if TYPE_CHECKING:
    graph: CompiledStateGraph[Any, Any, Any, Any]


def __getattr__(name: str) -> Any:
    if name == "graph":  # `server.py:graph`, the name deployments used before the factory
        return make_graph()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["graph", "make_graph", "served_graph", "settings"]
