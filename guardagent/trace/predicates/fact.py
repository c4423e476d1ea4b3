"""A predicate's value for the proposed call, with the messages that decided it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guardagent.trace.provenance import SourceRef


class PredicateSpecError(ValueError):
    """A predicate expression that cannot be bound."""


@dataclass(frozen=True)
class Fact:
    """One predicate's value for the proposed call.

    Attributes:
        name: The predicate expression (``arg_only_untrusted("to")``).
        value: True, False, or None when it cannot be told.
        sources: The messages that decided it.
        detail: Why, in one line (names the values and messages).
    """

    name: str
    value: bool | None
    sources: tuple[SourceRef, ...] = ()
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        """JSON-able form, for a decision."""
        return {"name": self.name, "value": self.value, "detail": self.detail,
                "sources": [{"index": s.index, "source": s.source, "kind": s.kind}
                            for s in self.sources]}  # fmt: skip
