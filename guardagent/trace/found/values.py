r"""Values in arguments and in free text, read by type the way the consuming tool reads them.

Provenance asks "which earlier message contains this value?". Asking it of raw strings
misses every re-spelling an agent makes on the way (an IBAN re-spaced, an e-mail address
capitalised, ``https://www.Example.com/pay/`` written as ``example.com/pay``), and asking it
of substrings finds ``alice@example.com`` inside ``malice@example.com`` or ``13`` inside
``June 13``. So values are read by type, each with a real parser, and reduced to canonical
*keys*; two spellings of one value share a key, and a key only ever matches a whole value.

The kinds and their parsers live in focused modules: :mod:`~guardagent.trace.found.urls`
(WHATWG URLs, IDNA hosts, registrable domains), :mod:`~guardagent.trace.found.addresses` (RFC 5322
address lists, validated), :mod:`~guardagent.trace.text.numbers` (IBANs, phones, amounts),
:mod:`~guardagent.trace.found.dates`, :mod:`~guardagent.trace.found.locate` (finding them in text in
linear time) and :mod:`~guardagent.trace.text.normal` (the word and value readings of text).
This module reads one argument value (:func:`read_argument`).
"""

from __future__ import annotations

import math
import unicodedata
from decimal import Decimal
from functools import lru_cache
from typing import Any

from guardagent.trace.found.addresses import email_key, read_address_list
from guardagent.trace.found.dates import host_year
from guardagent.trace.found.locate import extract_values
from guardagent.trace.found.reading import on_clear
from guardagent.trace.found.urls import _tld, link_like, read_link, trim
from guardagent.trace.found.urls import read_url as _url_value
from guardagent.trace.text.budget import check_budget
from guardagent.trace.text.kinds import TYPED_KINDS, Found, Value, ValueKind, nobody
from guardagent.trace.text.normal import (
    _FORMAT_RANGES,
    normalize_text,
    reading_form,
    secret_like,
    tokens,
)
from guardagent.trace.text.numbers import amount_readings, canon, strip_currency

__all__ = [
    "TYPED_KINDS",
    "Found",
    "Value",
    "ValueKind",
    "_FORMAT_RANGES",
    "_tld",
    "_url_value",
    "amount_readings",
    "extract_values",
    "normalize_text",
    "read_argument",
    "read_scalar",
    "reading_form",
    "secret_like",
    "tokens",
]
_TRAILING = ".,;:!?"
_TAB_NEWLINE = {9: None, 10: None, 13: None}


def _one_link(text: str) -> Value | None:
    """A whole argument a browser reads as one URL, or None.

    The URL Standard removes every ASCII tab and newline before parsing, so
    ``https://example.com<TAB>@evil.io`` opens ``evil.io``: the argument is read the same way.
    """
    cleaned = text.translate(_TAB_NEWLINE)
    if not cleaned or any(c.isspace() for c in cleaned):
        return None  # several tokens
    if "@" in cleaned.split("/", 1)[0] and "://" not in cleaned and cleaned == text:
        return None  # an address (bob@x.ch), unless tabs or newlines were hiding a link
    bare = "://" not in cleaned
    if bare and not link_like(trim(cleaned)) and not cleaned.startswith(("localhost", "www.")):
        return None
    return read_link(cleaned, bare)


def _whole(text: str, region: str | None, year: int | None) -> Value | None:
    """The typed value a whole string is (in reading form), or None."""
    if "://" in text or "." in text or "localhost" in text:
        link = _one_link(text)
        if link is not None and (link.placed or text.translate(_TAB_NEWLINE) != text):
            return link
    found = extract_values(text, region=region, year=year)
    if len(found) == 1 and found[0].start == 0 and found[0].end >= len(text.rstrip(_TRAILING)):
        value = found[0].value
        if value.kind == "phone":
            more = tuple(f"amount:{r}" for r in amount_readings(text))
            return Value("phone", value.keys + more, text, value.tokens)
        return value
    readings = amount_readings(strip_currency(text))
    if readings:
        return Value("amount", tuple(f"amount:{r}" for r in readings), text, tuple(tokens(text)))
    return None


def _raw_key(raw: str) -> tuple[str, ...]:
    """The key of a bare address as written (NFC only, as a mail server reads it)."""
    local, at, domain = raw.removeprefix("mailto:").rpartition("@")
    key = email_key(local, domain.rstrip(".")) if at else None
    return (key,) if key is not None else ()


def read_argument(
    value: Any, *, region: str | None = None, year: int | None = None
) -> list[tuple[Value, bool]]:
    """Read one argument value (a scalar) into the values to trace, as ``(value, inner)``.

    A string that is one typed value as a whole is that value; one holding ``@`` that
    parses as a clean RFC 5322 address list is its addresses (each traced; see
    :mod:`~guardagent.trace.found.addresses`); any other string is a ``text`` phrase, followed
    by the typed values found inside it (``inner``: an address in a message body, and the
    unplaced link- or address-shaped tokens). A non-empty string with no word in it is a
    value from nobody. Numbers are amounts. Booleans, None and empty strings are absent:
    nothing to trace.

    Args:
        value: A string, a number, or anything else from a call's arguments.
        region: Default phone region.
        year: The year of dates written without one (None: the host's).
    """
    check_budget()
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            return []
        number = canon(Decimal(repr(value)) if isinstance(value, float) else Decimal(value))
        written = number if isinstance(value, int) else str(value)  # str(int) stops at 4300 digits
        return [
            (
                Value(
                    "amount",
                    (f"amount:{number}",),
                    written,
                    (number,) if number.isdigit() else tuple(tokens(number)),
                ),
                False,
            )
        ]
    if not isinstance(value, str) or not value.strip():
        return []
    if len(value) > MAX_CACHED_CHARS:
        return _read_string(value, region, year)
    return list(_cached_string(value, region, host_year() if year is None else year))


MAX_CACHED_CHARS = 4_096
"""Longest argument whose reading is kept (:func:`_cached_string`): the cache stays a few MB."""


@lru_cache(maxsize=2_048)
def _cached_string(value: str, region: str | None, year: int) -> tuple[tuple[Value, bool], ...]:
    """:func:`_read_string`, kept: one argument is read again and again.

    The proposed call is read for several predicates, and again in the next call's trace.

    The reading is a pure function of the string, the region and the year (the values are
    frozen), so the key holds all three, the year resolved (a new year is a new key).
    """
    return tuple(_read_string(value, region, year))


on_clear(_cached_string.cache_clear)


def _read_string(value: str, region: str | None, year: int | None) -> list[tuple[Value, bool]]:
    """:func:`read_argument` of a non-empty string."""
    text = reading_form(value).strip()
    raw = unicodedata.normalize("NFC", value).strip()  # what a mail server reads: no NFKC
    listed = read_address_list(raw) if "@" in raw and "://" not in raw else None
    if (
        listed is not None
        and len(listed) == 1
        and (listed[0].text.casefold() == raw.removeprefix("mailto:").casefold())
    ):
        return [(listed[0], False)]  # one bare address
    typed = _whole(text, region, year) if listed is None else None
    if typed is not None and typed.kind == "email" and typed.keys[:1] != _raw_key(raw):
        typed = nobody("email", text)  # NFKC made the address: ｂｏｂ is not bob, ＠ is no @
    if typed is not None:
        return [(typed, False)]
    words = normalize_text(value).strip()
    toks = tuple(tokens(words))
    phrase = Value("text", (), words, toks) if toks else nobody("text", text)
    if listed is not None:  # display names are the phrase; the addresses are judged inside
        return [(phrase, False), *((v, True) for v in listed)]
    if not toks:
        return [(phrase, False)]
    inner = [(f.value, True) for f in extract_values(text, region=region, year=year)]
    return [(phrase, False), *inner]


def read_scalar(
    value: Any, *, region: str | None = None, year: int | None = None
) -> tuple[Value | None, list[Value]]:
    """``(whole, inner)`` of one argument value: its first whole value and the inner ones.

    See :func:`read_argument` (an address list of several addresses gives its first here).
    """
    items = read_argument(value, region=region, year=year)
    wholes = [v for v, inner in items if not inner]
    return (wholes[0] if wholes else None), [v for v, inner in items if inner]
