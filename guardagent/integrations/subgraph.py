"""The guard graph as a node of a host `StateGraph` whose state schema differs from ours.

A compiled graph can be added as a node directly only when the host shares its keys
(``agent_input``/``agent_output`` in, ``guard_decision`` out). Most hosts do not: they keep
``messages``, their own facts, their own result keys. :func:`guard_node` maps the host state
to GuardAgent events, runs the guard graph *inside* the node (so LangGraph treats it as a
subgraph: ``stream(..., subgraphs=True)`` yields the guard's own node updates under a
``("<host node>:<task id>",)`` namespace) and writes the decision under a host key.

```python
from guardagent.integrations import guard_node

host = StateGraph(HostState)
host.add_node("agent", call_model)
host.add_node("guard", guard_node("tool-calls"))        # reads state["messages"]
host.add_node("tools", ToolNode(tools))
host.add_edge("agent", "guard")
host.add_conditional_edges(
    "guard", lambda s: END if s["guard_decision"] and not s["guard_decision"].allowed else "tools"
)
graph = host.compile()
graph.invoke({"messages": [...]}, context={"user_info": {"verified": False}})
```

The user's facts are the host's: by default from the run's context (``user_info``), from
the host state only with ``facts_from_state=True`` (whoever invokes the graph, and tools
returning `Command`, write state). They reach the guard program as data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableLambda
from langgraph.runtime import get_runtime

from guardagent.agent import GuardAgent
from guardagent.decision import GuardDecision
from guardagent.integrations.events import answer_event, tool_call_event
from guardagent.integrations.runner import arun_guard, as_guard, facts_in, run_guard
from guardagent.twins import Twin, Wait, arun, run

Event = tuple[str, str]
ToEvent = Callable[[Any], Event | Sequence[Event] | None]


def _get(state: Any, key: str, default: Any = None) -> Any:
    if isinstance(state, Mapping):
        return state.get(key, default)
    return getattr(state, key, default)


def messages_to_events(
    state: Any,
    *,
    messages_key: str = "messages",
    user_info_key: str = "user_info",
    user_info: Mapping[str, Any] | None = None,
) -> list[Event]:
    """Events for what the last AI message is about to do (the default `to_event`).

    One event per pending tool call of the last message when it calls tools; otherwise one
    answer event for its text. Nothing is pending (``[]``) when the last message is not an
    AI message. User facts in the text come from `user_info`, else from the host state's
    `user_info_key`, never from the messages (:func:`guard_node` passes the facts it hands
    the program as data, so the text shows what was decided on).

    Args:
        state: The host state (a mapping or an object with attributes).
        messages_key: Where the host keeps its message list.
        user_info_key: Where the host state keeps facts about the user (a mapping).
        user_info: The user's facts to write into the events (overrides the state's).
    """
    messages = [m for m in (_get(state, messages_key) or []) if isinstance(m, BaseMessage)]
    facts = user_info if user_info is not None else facts_in(state, user_info_key)
    if not messages or not isinstance(messages[-1], AIMessage):
        return []
    last = messages[-1]
    if last.tool_calls:
        return [
            tool_call_event(c["name"], c.get("args") or {}, messages, facts)
            for c in last.tool_calls
        ]
    return [answer_event(last.text, messages[:-1], facts)]


def _events(found: Event | Sequence[Event] | None) -> list[Event]:
    if not found:
        return []
    if isinstance(found, tuple) and len(found) == 2 and all(isinstance(x, str) for x in found):
        return [(str(found[0]), str(found[1]))]  # a single (agent_input, agent_output) pair
    return [(str(e[0]), str(e[1])) for e in found]


def combine(decisions: Sequence[GuardDecision]) -> GuardDecision:
    """One decision for several events: the first denial, else the last allowance."""
    for decision in decisions:
        if not decision.allowed:
            return decision
    return decisions[-1]


def _run_context() -> Any:
    """The current host run's context (None outside a graph run)."""
    try:
        return get_runtime().context
    except (RuntimeError, KeyError, AttributeError):
        return None


def guard_node(
    guard_or_profile: GuardAgent | str,
    *,
    to_event: ToEvent = messages_to_events,
    key: str = "guard_decision",
    run_name: str = "guardagent.guard_node",
    user_info_key: str = "user_info",
    facts_from_state: bool = False,
    **settings: Any,
) -> RunnableLambda[Any, dict[str, Any]]:
    """A host-graph node that guards the host state's pending tool calls or answer.

    Args:
        guard_or_profile: A :class:`GuardAgent`, or a profile name/path to build one.
        to_event: Host state -> one ``(agent_input, agent_output)`` event, a list of them,
            or None when nothing is pending. Default: :func:`messages_to_events`.
        key: Host state key the :class:`GuardDecision` is written to (None when nothing
            was pending). With several events it holds the first denial, else the last
            allowance, so one `allowed` check gates everything.
        run_name: Trace name of each guard run; its outcome is ``<run_name>.decision``.
        user_info_key: Key of the user's facts in the run's context (and, opted in, state).
        facts_from_state: Read the facts from the host state when the context has none.
        **settings: :class:`~guardagent.context.GuardContext` fields for the guard (the
            deployment's; the host's context never changes them).

    Returns:
        A runnable (sync and async) to pass to ``StateGraph.add_node``.

    The facts found go to the program as data. With the default `to_event` that is ``{}``
    when the host has none (the events are ours: their text is never re-parsed); with a
    custom `to_event` and no facts found, the program reads the host's own text block.
    """
    guard = as_guard(guard_or_profile, **settings)
    own_events = to_event is messages_to_events

    def metadata(index: int, total: int) -> dict[str, Any]:
        return {
            "guardagent_integration": "guard_node",
            "guardagent_host_key": key,
            "guardagent_event": f"{index + 1}/{total}",
        }

    def prepare(state: Any) -> tuple[list[Event], dict[str, Any] | None]:
        found = facts_in(_run_context(), user_info_key)
        if found is None and facts_from_state:
            found = facts_in(state, user_info_key)
        facts = dict(found) if found is not None else None
        if own_events:
            facts = facts or {}
            return _events(messages_to_events(state, user_info=facts)), facts
        return _events(to_event(state)), facts

    def decide(state: Any) -> Twin[dict[str, Any]]:
        """Both forms of the node, written once (:mod:`guardagent.twins`)."""
        events, facts = prepare(state)
        decisions = []
        for n, (i, o) in enumerate(events):
            settings: dict[str, Any] = {
                "run_name": run_name,
                "user_facts": facts,
                "metadata": metadata(n, len(events)),
            }
            decision = yield Wait(
                partial(run_guard, guard, i, o, **settings),
                partial(arun_guard, guard, i, o, **settings),
            )
            decisions.append(decision)
        return {key: combine(decisions) if decisions else None}

    def node(state: Any) -> dict[str, Any]:
        return run(decide(state))

    async def anode(state: Any) -> dict[str, Any]:
        return await arun(decide(state))

    return RunnableLambda(node, afunc=anode, name="guard_node")
