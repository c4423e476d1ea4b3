"""The provenance chain of one trace predicate: the messages that decided it, in order.

A trace fact names the messages that decided its value (``sources``: message 3, a result of
``read_inbox``, untrusted). Where the decision also says which argument values it judged
(``values``, each with its ``chain``), the chain is drawn through the value: the user
message that asked for a document, the tool result that holds the value, the value, the
predicate. Each message is drawn once, however many predicates it decided.
"""

from __future__ import annotations

from guardagent.explain.diagram import Edge, Node, one_line
from guardagent.explain.reading import FactJson, MessageRef

MAX_SOURCES = 8
"""Messages drawn per predicate (the rest are counted on the predicate's box)."""
MAX_VALUES = 5
"""Argument values drawn per predicate (a decision's detail names at most five too)."""
MAX_NOTES = 2
"""What a message did, noted at most this many ways in its box."""

_KIND = {
    "user": "user",
    "system": "system prompt",
    "model": "model (never trusted)",
    "trusted_tool": "trusted tool result",
    "untrusted_tool": "untrusted tool result",
}


class MessageNodes:
    """The message boxes of one picture, one per message index, in trace order.

    What a message did in a chain (``asked: "...invoice-0425.txt..."``, ``result of
    read_file(...)``) is written in its box, up to :data:`MAX_NOTES` different notes.
    """

    def __init__(self) -> None:
        self._heads: dict[int, tuple[str, ...]] = {}
        self._kinds: dict[int, str] = {}
        self._notes: dict[int, list[str]] = {}

    def add(self, ref: MessageRef, note: str = "") -> str:
        """The id of the message's box (drawn from the first reference that names it)."""
        if ref.index not in self._heads:
            kind = _KIND.get(ref.kind, one_line(ref.kind))
            source = one_line(ref.source)
            said = (f"message {ref.index}", "" if source == ref.kind else source, kind)
            self._heads[ref.index] = tuple(x for x in said if x)
            self._kinds[ref.index] = ref.kind
            self._notes[ref.index] = []
        notes = self._notes[ref.index]
        if note and note not in notes and len(notes) < MAX_NOTES:
            notes.append(note)
        return _message_id(ref.index)

    def nodes(self) -> list[Node]:
        """The boxes, in the order of the trace."""
        return [
            Node(
                _message_id(i),
                "message",
                (*self._heads[i], *(one_line(n) for n in self._notes[i])),
                self._kinds[i],
            )
            for i in sorted(self._heads)
        ]


def _message_id(index: int) -> str:
    return f"m{index}" if index >= 0 else f"mn{-index}"


def chain_of(
    fact: FactJson, predicate: str, marked: bool, messages: MessageNodes, prefix: str
) -> tuple[list[Node], list[Edge]]:
    """The value boxes and edges that lead into `predicate` (message boxes go to `messages`).

    Args:
        fact: The predicate's trace fact.
        predicate: The id of its box.
        marked: The predicate decided the verdict: its chain is marked too.
        messages: The picture's message boxes (shared by every predicate).
        prefix: Id prefix of this predicate's value boxes.
    """
    nodes: list[Node] = []
    edges: list[Edge] = []
    if fact.values:
        for k, value in enumerate(fact.values[:MAX_VALUES]):
            vid = f"{prefix}{k}"
            lines = (
                one_line(value.path),
                one_line(repr(value.value)),
                one_line(f"origin: {value.origin or 'unknown'}"),
            )
            nodes.append(Node(vid, "value", lines, value.origin, marked))
            ids = [messages.add(link, link.note) for link in value.chain[:MAX_SOURCES]]
            for here, there in zip(ids, [*ids[1:], vid][: len(ids)], strict=True):
                edges.append(Edge(here, there, "", marked))
            edges.append(Edge(vid, predicate, "", marked))
        return nodes, edges
    for ref in fact.sources[:MAX_SOURCES]:
        edges.append(Edge(messages.add(ref), predicate, "", marked))
    return nodes, edges
