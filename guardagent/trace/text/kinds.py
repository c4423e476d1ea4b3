"""What a value is: its kind, canonical keys, and where it sits in a text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

ValueKind = Literal["email", "url", "iban", "phone", "amount", "date", "text"]
TYPED_KINDS: tuple[ValueKind, ...] = ("email", "url", "iban", "phone", "amount", "date")
"""Every kind read by a parser (all but ``text``)."""

RAW_PREFIX = "raw:"
"""Key prefix of an unplaced value: the token itself, found only where it is written whole."""


class Location(NamedTuple):
    """A URL as the browser reads it (WHATWG), for scope rules.

    Attributes:
        host: ASCII host (IDNA), no ``www.``; IPv6 in brackets.
        port: The port when not the scheme's default, else None.
        path: Percent-decoded, case-folded path without a trailing ``/`` (``""`` for root).
        query: The query without ``?`` (``""`` when none).
        fragment: The fragment without ``#`` (``""`` when none).
        served: The path as a web server may resolve it (see
            :func:`~guardagent.trace.found.urls.served_path`); scope rules read both.
    """

    host: str
    port: int | None
    path: str
    query: str
    fragment: str
    served: str = ""


@dataclass(frozen=True)
class Value:
    """One value, read by kind.

    Attributes:
        kind: What it is.
        keys: Canonical keys; the value is found where any of them is (several only for
            ambiguous readings, e.g. ``1,500``). Empty for ``text`` and for a value that is
            not from anyone (an address no mail server would accept).
        text: The value as written (normalised), for explanations.
        tokens: The value's word tokens: the phrase searched for a ``text`` value.
        parts: Coarser keys of the same value, by name (a URL's ``host`` and ``domain``).
        placed: False for a token that looks like a link or an address but that its parser
            cannot place (its only key is the raw token).
        where: A URL's parts as the browser reads them (None for other kinds).
    """

    kind: ValueKind
    keys: tuple[str, ...]
    text: str
    tokens: tuple[str, ...] = ()
    parts: tuple[tuple[str, str], ...] = field(default=())
    placed: bool = True
    where: Location | None = None

    def part(self, name: str) -> str | None:
        """The key of one part (``host``, ``domain``), or None."""
        return next((key for n, key in self.parts if n == name), None)


def unplaced(kind: ValueKind, token: str, toks: tuple[str, ...]) -> Value:
    """A token its parser cannot place: found only where the same token is written whole."""
    key = RAW_PREFIX + token
    parts = (("host", key), ("domain", key)) if kind == "url" else ()
    return Value(kind, (key,), token, toks, parts, placed=False)


def nobody(kind: ValueKind, text: str) -> Value:
    """A value that cannot come from anyone (no key: never found, so invented)."""
    return Value(kind, (), text, (), placed=False)


@dataclass(frozen=True)
class Found:
    """A value found in normalised text, with its span."""

    value: Value
    start: int
    end: int
