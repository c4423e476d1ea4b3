"""The docs' architecture diagram is the graph LangGraph draws (every route, labelled)."""

from pathlib import Path

from guardagent.graph import graph

PAGE = Path(__file__).resolve().parents[1] / "docs" / "explanation" / "architecture.md"


def test_docs_diagram_is_the_drawn_graph() -> None:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("```mermaid\n") + len("```mermaid\n")
    diagram = text[start : text.index("```", start)]
    assert graph.get_graph().draw_mermaid().strip() == diagram.strip()


def test_every_branching_node_declares_its_routes() -> None:
    """Nodes route themselves (Commands): the routes they declare are the diagram's."""
    edges = {(e.source, e.target, e.conditional, e.data) for e in graph.get_graph().edges}
    assert {(s, t) for s, t, conditional, _ in edges if conditional} == {
        ("admit", "retrieve"),
        ("admit", "decide"),
        ("retrieve", "execute"),
        ("retrieve", "plan"),
        ("retrieve", "decide"),
        ("plan", "code"),
        ("plan", "decide"),
        ("code", "execute"),
        ("code", "decide"),
        ("debug", "code"),
        ("debug", "decide"),
        ("execute", "decide"),
        ("execute", "remember"),
        ("execute", "debug"),
        ("execute", "verify"),
        ("verify", "remember"),
        ("verify", "decide"),
    }
    assert ("plan", "code", True, "continue") in edges
    assert {(s, t) for s, t, conditional, _ in edges if not conditional} == {
        ("__start__", "admit"),
        ("remember", "decide"),
        ("decide", "__end__"),
    }
