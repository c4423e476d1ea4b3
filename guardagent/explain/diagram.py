"""The picture as data: typed nodes and edges that both writers (Mermaid, SVG) draw.

Node ids are made here, from positions (``m3``, ``p0``, ``r1``), never from decision text:
an id is written bare in Mermaid, and text an attacker chose must only ever be a label.
"""

from __future__ import annotations

import textwrap
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
        """Each node's column: one column per kind, left to right, messages in several.

        A user message that designated a call sits left of the call's result (a chain
        within one kind): messages take a column per step of the longest such chain, and
        every other kind one column after the last message column, so each kind lines up.
        Edges only go to a later (rank, drawing position), so one pass in that order is a
        longest-path layering.
        """
        order = {n.id: (RANK[n.kind], i) for i, n in enumerate(self.nodes)}
        kind = {n.id: n.kind for n in self.nodes}
        causes: dict[str, list[str]] = {n.id: [] for n in self.nodes}
        for e in self.edges:
            if kind[e.source] == kind[e.target] == "message":
                causes[e.target].append(e.source)
        step: dict[str, int] = {}
        for node in sorted(self.nodes, key=lambda n: order[n.id]):
            step[node.id] = max([0, *(step[c] + 1 for c in causes[node.id])])
        column: dict[NodeKind, int] = {}
        at = 0
        for k in RANK:
            steps = [step[n.id] for n in self.nodes if n.kind == k]
            if steps:
                column[k] = at
                at += max(steps) + 1
        return {n.id: column[n.kind] + step[n.id] for n in self.nodes}

    def columns(self) -> list[list[Node]]:
        """The nodes of each column, ordered to cross few edges (deterministic).

        Two barycentre sweeps: left to right each node moves to the mean row of its causes,
        then right to left to the mean row of what it decided; a node with none keeps its
        row, and ties keep the drawing order.
        """
        layer = self.layers()
        cols: dict[int, list[Node]] = {}
        for node in self.nodes:
            cols.setdefault(layer[node.id], []).append(node)
        ordered = [cols[c] for c in sorted(cols)]
        into: dict[str, list[str]] = {n.id: [] for n in self.nodes}
        out: dict[str, list[str]] = {n.id: [] for n in self.nodes}
        for e in self.edges:
            into[e.target].append(e.source)
            out[e.source].append(e.target)
        for links, sweep in (
            (into, range(1, len(ordered))),
            (out, range(len(ordered) - 2, -1, -1)),
        ):
            for c in sweep:
                row = {n.id: i for col in ordered for i, n in enumerate(col)}
                keyed = [
                    (_centre(i, [row[x] for x in links[n.id]]), n) for i, n in enumerate(ordered[c])
                ]
                ordered[c] = [n for _, n in sorted(keyed, key=lambda pair: pair[0])]
        return ordered


def _centre(row: int, ends: list[int]) -> tuple[float, int]:
    """A node's sort key in a sweep: the mean row of its linked nodes (else its own), row."""
    return (sum(ends) / len(ends) if ends else float(row), row)


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


def wrapped(text: str, lines: int = 3, width: int = LABEL_CHARS) -> list[str]:
    """Text as up to `lines` label lines of `width` (:func:`visible`), the last one cut.

    The reason a predicate holds is often longer than one line, and its end (which message,
    which words) is what a reviewer looks for; the text is cut before wrapping, so the work
    stays bounded whatever the decision holds.
    """
    flat = visible(text[: lines * width * 2])
    out = textwrap.wrap(flat, width, break_long_words=True, break_on_hyphens=False)
    if len(out) > lines:
        out = [*out[: lines - 1], one_line(" ".join(out[lines - 1 :]), width)]
    return out


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
