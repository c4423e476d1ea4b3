"""A predicate's value for the proposed call, with the messages that decided it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guardagent.trace.sources.provenance import SourceRef


class PredicateSpecError(ValueError):
    """A predicate expression that cannot be bound."""


@dataclass(frozen=True)
class Step:
    """One message on a value's way into the call, and what it did there.

    Attributes:
        ref: The message.
        note: What it did, in a few words: the user's words that asked for a document
            (``asked: "pay invoice-0425.txt"``), the call whose result holds the value
            (``result of read_file(path='invoice-0425.txt')``), or that it holds the value.
    """

    ref: SourceRef
    note: str = ""


@dataclass(frozen=True)
class Trail:
    """One argument value a predicate judged and the chain it came by, first cause first.

    What a picture of the decision draws (:mod:`guardagent.explain`): data, so no reader
    has to parse the `detail` sentence.

    Attributes:
        path: The argument path (``iban``, ``to[1]``).
        text: The value as read (cut at 60 characters).
        origin: ``user`` / ``trusted`` / ``untrusted`` / ``invented`` / ``records`` (the
            user's records hold it) / ``designated`` (from a document the user asked for).
        chain: The messages, from the first cause (the user's request) to the message
            that holds the value.
    """

    path: str
    text: str
    origin: str
    chain: tuple[Step, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """JSON-able form, for a decision."""
        return {
            "path": self.path,
            "value": self.text,
            "origin": self.origin,
            "chain": [
                {"index": s.ref.index, "source": s.ref.source, "kind": s.ref.kind, "note": s.note}
                for s in self.chain
            ],
        }


@dataclass(frozen=True)
class Fact:
    """One predicate's value for the proposed call.

    Attributes:
        name: The predicate expression (``arg_only_untrusted("to")``).
        value: True, False, or None when it cannot be told.
        sources: The messages that decided it.
        detail: Why, in one line (names the values and messages).
        values: For a provenance predicate: the values that decided it, each with its
            chain (:class:`Trail`); written to JSON only when there are some.
    """

    name: str
    value: bool | None
    sources: tuple[SourceRef, ...] = ()
    detail: str = ""
    values: tuple[Trail, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """JSON-able form, for a decision."""
        out = {
            "name": self.name,
            "value": self.value,
            "detail": self.detail,
            "sources": [
                {"index": s.index, "source": s.source, "kind": s.kind} for s in self.sources
            ],
        }
        if self.values:
            out["values"] = [t.to_json() for t in self.values]
        return out
