"""The picture as data: typed nodes and edges that both writers (Mermaid, SVG) draw.

Node ids are made here, from positions (``m3``, ``p0``, ``r1``), never from decision text:
an id is written bare in Mermaid, and text an attacker chose must only ever be a label.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Literal

from guardagent.surrogates import text_without_surrogates

_HIDDEN = frozenset({"Cc", "Cf", "Cn", "Cs", "Co"})

NodeKind = Literal["message", "value", "predicate", "rule", "verdict"]
RANK: dict[NodeKind, int] = {"message": 0, "value": 1, "predicate": 2, "rule": 3, "verdict": 4}
"""Left to right: a cause is always drawn left of what it decided."""

LABEL_CHARS = 72
"""A label line is cut here (with an ellipsis): a picture is for one glance, the JSON has all."""


@dataclass(frozen=True)
class Node:
    """One box.

    Attributes:
        id: Made from a position (``m3``, ``p0``), safe to write bare.
        kind: Its layer: message, value, predicate, rule or verdict.
        lines: The label, one line each (already cut to :data:`LABEL_CHARS`).
        tone: What it says, for colour: a message's trust class (``user``,
            ``untrusted_tool``), a predicate's value (``true``/``false``/``open``), a
            rule's status, the verdict (``allowed``/``denied``).
        marked: It decided the verdict.
    """

    id: str
    kind: NodeKind
    lines: tuple[str, ...]
    tone: str = ""
    marked: bool = False


@dataclass(frozen=True)
class Edge:
    """One arrow, from a cause to what it decided; `marked` when it carried the decision."""

    source: str
    target: str
    label: str = ""
    marked: bool = False


@dataclass(frozen=True)
class Diagram:
    """Nodes in drawing order and the edges between them (each edge joins two nodes)."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]

    def layers(self) -> dict[str, int]:
        """Each node's column: its kind's rank, pushed right past every cause it has.

        A user message that designated a call sits left of the call's result (a chain
        within one kind). Edges only go to a later (rank, drawing position), so the graph
        has no cycle and one pass in that order is a longest-path layering.
        """
        order = {n.id: (RANK[n.kind], i) for i, n in enumerate(self.nodes)}
        causes: dict[str, list[str]] = {n.id: [] for n in self.nodes}
        for e in self.edges:
            causes[e.target].append(e.source)
        layer: dict[str, int] = {}
        for node in sorted(self.nodes, key=lambda n: order[n.id]):
            before = [layer[c] + 1 for c in causes[node.id] if c in layer]
            layer[node.id] = max([RANK[node.kind], *before])
        return layer


def visible(text: str) -> str:
    """Text with every invisible control as U+FFFD: whitespace runs as one space.

    Control and format characters (a bidi override turns ``txt.exe`` into what reads as
    ``exe.txt``), unassigned code points and lone surrogates would show a reviewer something
    other than what the decision holds, or nothing; the replacement mark shows they are there.
    """
    flat = " ".join(text_without_surrogates(text).split())
    if flat.isascii() and flat.isprintable():
        return flat
    return "".join("\ufffd" if unicodedata.category(c) in _HIDDEN else c for c in flat)


def one_line(text: str, limit: int = LABEL_CHARS) -> str:
    """Text as one label line (:func:`visible`), cut at `limit` with an ellipsis."""
    flat = visible(text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def checked(nodes: list[Node], edges: list[Edge]) -> Diagram:
    """The diagram, keeping only edges that go forward between drawn nodes, each once.

    Whatever a decision file claims (a chain that loops, a message naming itself), the
    drawing stays a DAG read left to right.
    """
    order = {n.id: (RANK[n.kind], i) for i, n in enumerate(nodes)}
    kept: dict[tuple[str, str], Edge] = {}
    for e in edges:
        if e.source in order and e.target in order and order[e.source] < order[e.target]:
            old = kept.get((e.source, e.target))
            if old is None or (e.marked and not old.marked):
                kept[(e.source, e.target)] = e
    return Diagram(tuple(nodes), tuple(kept.values()))
