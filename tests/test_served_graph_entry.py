"""The served graph (`langgraph.json`) starts every decision at its beginning.

A LangGraph server's client sends more than a run's input: a run may carry a `Command`
(``{"goto": node, "update": {...}}``) and a thread's state can be written with
``update_state(..., as_node=...)``. When the guard's own nodes were the served graph's
nodes, a client could write the guard's working keys (the program, its source, its
execution) and jump past `admit` and `retrieve`: seen failing before the fix, with
``Command(goto="execute", update={"program": "allow()", "program_source": "memory"})`` on a
thread that had one decision, the served guard allowed an event it denies, and
``goto="remember"`` reached the node that writes the deployment's memory.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from tests.test_service_app import MINOR, OUTPUT

FORGED = {
    "agent_input": MINOR,
    "agent_output": OUTPUT,
    "program": "allow('forged')",
    "program_source": "memory",
    "attempts": -5,
    "execution": {"ok": True, "verdict": {"allowed": True, "violations": []}},
}


@pytest.fixture
def graph() -> Any:
    from guardagent.integrations.server import served_graph

    return served_graph().copy(update={"checkpointer": InMemorySaver()})


def _allowed(graph: Any, command: Any, config: Any) -> bool | None:
    """Whether the run allowed the event; None when it refused to run at all."""
    try:
        out = graph.invoke(command, config, context={"profile": "mind2web-sc"})
    except Exception:  # noqa: BLE001 - a run refused by LangGraph decides nothing
        return None
    decision = (out or {}).get("guard_decision")
    return None if decision is None else bool(decision.allowed)


def test_a_command_cannot_enter_the_guard_past_its_first_node(graph: Any) -> None:
    done = {"configurable": {"thread_id": "decided"}}
    first = graph.invoke(
        {"agent_input": MINOR, "agent_output": OUTPUT}, done, context={"profile": "mind2web-sc"}
    )
    assert first["guard_decision"].allowed is False
    for node in ("execute", "decide", "verify", "remember", "retrieve", "plan", "debug"):
        for thread in ("decided", f"fresh-{node}"):
            config = {"configurable": {"thread_id": thread}}
            allowed = _allowed(graph, Command(goto=node, update=FORGED), config)
            assert allowed is not True, (node, thread)


def test_a_written_state_cannot_resume_the_guard_mid_way(graph: Any) -> None:
    config = {"configurable": {"thread_id": "written"}}
    graph.invoke(
        {"agent_input": MINOR, "agent_output": OUTPUT}, config, context={"profile": "mind2web-sc"}
    )
    for node in ("retrieve", "execute", "verify"):
        try:
            graph.update_state(config, FORGED, as_node=node)
        except Exception:  # noqa: BLE001,S112 - no such node, or keys it does not keep
            continue
        assert _allowed(graph, None, config) is not True, node


def test_the_served_graph_still_decides_and_hides_its_internals(graph: Any) -> None:
    config = {"configurable": {"thread_id": "plain"}}
    out = graph.invoke(
        {"agent_input": MINOR, "agent_output": OUTPUT}, config, context={"profile": "mind2web-sc"}
    )
    assert set(out) == {"guard_decision"} and out["guard_decision"].allowed is False
    again = graph.invoke(
        Command(goto="guard", update={"agent_input": MINOR}),
        config,
        context={"profile": "mind2web-sc"},
    )
    assert again["guard_decision"].allowed is False
    keys = set(graph.get_state(config).values)
    assert keys <= {"agent_input", "agent_output", "guard_decision"}, keys
