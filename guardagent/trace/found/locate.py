"""Finding typed values in free text, in time linear in the text.

Candidates are located with RE2 (:mod:`~guardagent.trace.found.scan`: no backtracking, matching
time linear in the text) over the text in reading form
(:func:`~guardagent.trace.text.normal.reading_form`); each candidate is then accepted or rejected
by its kind's parser. IBANs are located by their first four characters and read forward at
most their country's length (a bounded scan per start).

Spans do not overlap: an e-mail address is not read again as a URL, nor an IBAN's digits,
a date's day or a phone number's groups as amounts. Every ``@`` that no address or URL
accounts for, and every link-shaped token no URL reading places, is kept as an unplaced
value (see :func:`~guardagent.trace.text.kinds.unplaced`).

A boundary reading (``across``) keeps only values that span the boundary. Any two such
values overlap, so once one is taken no later pass can take another (only the leftover
``@`` tokens, judged beside it, are still looked for); and a boundary that holds a space
can only be spanned by the kinds whose spans may hold one (IBANs, dates, phone numbers,
amounts with a magnitude word).
Both skip passes that could find nothing, never a value.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from guardagent.trace.found.addresses import read_located
from guardagent.trace.found.dates import MONTHS, full_year, host_year, iso
from guardagent.trace.found.scan import RANGE_WINDOW, Spans, Taken, group, matches, prefix
from guardagent.trace.found.urls import read_link
from guardagent.trace.text.kinds import Found, Value, unplaced
from guardagent.trace.text.normal import tokens
from guardagent.trace.text.numbers import (
    amount_value,
    iban_key,
    iban_length,
    magnitude_end,
    phone_key,
)

_SURROGATE = re.compile("[\ud800-\udfff]")  # one character class: linear
_DIGIT = re.compile(r"\d")  # one character, no repetition: nothing to backtrack
_NUM_HINT = re.compile(r"\d[./-]\d")  # fixed width: constant work per position
_IBAN_HINT = re.compile(r"[a-z][a-z][ -]?\d")  # fixed width
_MONTH_HINT = re.compile("jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec")  # literals only
_IBAN_SEPARATORS = frozenset(" -")
_TOKEN_PUNCTUATION = ".,;:!?()[]<>'\""
_PRECHECK_CHARS = 4096
"""Longest text whose dots and at signs are looked at before a pass (a message, a boundary)."""
_SPACES = frozenset(
    " \t\n\f\r\u00a0\u1680\u2028\u2029\u202f\u205f\u3000"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
)
"""RE2's ``\\s`` and the Unicode separators (``\\pZ``): no address, link, leftover token,
numeric date or bare amount holds one."""

Read = Callable[[str, Spans], Value | None]


class _Reader:
    __slots__ = ("across", "found", "stop", "taken", "text")

    def __init__(self, text: str, across: tuple[int, int] | None) -> None:
        self.text = text
        self.found: list[Found] = []
        self.taken = Taken(across)
        self.across = across
        self.stop = len(text) + 1 if across is None else across[0]
        """Where a value may start at the latest (a boundary reading: before the boundary)."""

    def done(self) -> bool:
        """A boundary reading took its value: no later candidate can be free."""
        return self.across is not None and bool(self.taken.starts)

    def keep(self, value: Value | None, start: int, end: int) -> None:
        """Take a value's span if it is free."""
        if value is not None and self.taken.free(start, end):
            self.found.append(Found(value, start, end))
            self.taken.pending.append((start, end))

    def each(self, name: str, read: Read, after: str | None = "", index: int = 1) -> None:
        """Read every match of a locator whose span is free and whose right boundary holds.

        `after`: characters that, like a word character, may not follow the match (None:
        no right boundary).
        """
        text, found, taken = self.text, self.found, self.taken
        size, free, pending, stop = len(text), taken.free, taken.pending, self.stop
        for spans in matches(name, text):
            start, end = spans[index]
            if start >= stop:
                break  # this match and every later one start after the boundary
            if after is not None and end < size:
                c = text[end]
                if c.isalnum() or c == "_" or c in after:
                    continue
            if free(start, end):
                value = read(text, spans)
                if value is not None:
                    found.append(Found(value, start, end))
                    pending.append((start, end))
        taken.flush()


def _after_ok(text: str, end: int) -> bool:
    """The character after a match does not continue it (a word character)."""
    return end >= len(text) or not (text[end].isalnum() or text[end] == "_")


def _iban_at(text: str, start: int) -> tuple[str, int] | None:
    """The compact IBAN starting at `start` (single spaces or hyphens between characters)."""
    length = iban_length(text[start : start + 2])
    if length is None:
        return None
    compact: list[str] = []
    i = start
    while i < len(text) and len(compact) < length:
        c = text[i]
        if c.isascii() and c.isalnum():
            compact.append(c)
        elif not (
            c in _IBAN_SEPARATORS
            and compact
            and i + 1 < len(text)
            and text[i + 1].isascii()
            and text[i + 1].isalnum()
        ):
            return None
        i += 1
    if len(compact) != length or not _after_ok(text, i):
        return None
    return "".join(compact), i


def _ibans(r: _Reader) -> None:
    text, taken = r.text, r.taken
    for spans in matches("iban", text):
        start = spans[1][0]
        if start >= r.stop:
            break
        hit = _iban_at(text, start) if not taken.inside(start) else None
        if hit is not None and taken.free(start, hit[1]):
            key = iban_key(hit[0])
            if key is not None:
                written = text[start : hit[1]]
                r.keep(Value("iban", (key,), written, tuple(tokens(written))), start, hit[1])
    taken.flush()


def _numbers(r: _Reader) -> None:
    """Amounts, each with the magnitude word after it (``5 Mio.``: 5,000,000, never 5).

    A number glued to other letters (``5kg``, ``3rd``) is no amount, as before.
    """
    text, taken = r.text, r.taken
    for spans in matches("number", text):
        start, end = spans[1]
        if start >= r.stop:
            break
        stop = magnitude_end(text, end) or end
        if stop == end and end < len(text) and (text[end].isalnum() or text[end] == "_"):
            continue
        if taken.free(start, stop):
            written = text[start:stop]
            r.keep(amount_value(written, written), start, stop)
    taken.flush()


def _date_value(isos: list[str | None], written: str) -> Value | None:
    keys = tuple(dict.fromkeys(f"date:{d}" for d in isos if d is not None))
    return Value("date", keys, written, tuple(tokens(written))) if keys else None


def _iso(text: str, spans: Spans) -> Value | None:
    (_, _), (w0, w1), (y0, y1), (m0, m1), (d0, d1) = spans[:5]
    return _date_value([iso(int(text[y0:y1]), int(text[m0:m1]), int(text[d0:d1]))], text[w0:w1])


def _numeric(text: str, spans: Spans) -> Value | None:
    if group(text, spans, 3) != group(text, spans, 5):
        return None
    a, b = int(group(text, spans, 2)), int(group(text, spans, 4))
    y = full_year(group(text, spans, 6))
    return _date_value([iso(y, b, a), iso(y, a, b)], group(text, spans, 1))


def _named(year: int, day: int, month: int) -> Read:
    """A reader of a date with a month name (the groups of its day and month)."""

    def read(text: str, spans: Spans) -> Value | None:
        yr = group(text, spans, 4) or _range_year(text, spans[1][1])
        return _date_value(
            [
                iso(
                    int(yr) if yr else year,
                    MONTHS[group(text, spans, month)],
                    int(group(text, spans, day)),
                )
            ],
            group(text, spans, 1),
        )

    return read


def _range_year(text: str, end: int) -> str:
    """The year of the range a year-less date opens ("January 11th to January 15th 2025").

    One year written once for two dates is the range's: the first is not in the host's (or
    the trace's) year. Only a range connector and a second date with its year count, read
    in a constant window after the date.
    """
    tail = text[end : end + RANGE_WINDOW]
    spans = prefix("range_year", tail)
    return "" if spans is None else group(tail, spans, 1)


def _dates(r: _Reader, year: int, spaced: bool) -> None:
    text = r.text
    if "-" in text:
        r.each("iso", _iso, "-")
    if not spaced and not r.done() and _NUM_HINT.search(text) is not None:
        r.each("num", _numeric, "/-")
    if not r.done() and _MONTH_HINT.search(text) is not None:
        r.each("dmy", _named(year, 2, 3))
        if not r.done():
            r.each("mdy", _named(year, 3, 2))


def _links(r: _Reader, name: str, *, bare: bool) -> None:
    text, taken = r.text, r.taken
    for spans in matches(name, text):
        start, end = spans[1]
        if start >= r.stop:
            break
        if taken.free(start, end):
            value = read_link(text[start:end], bare)
            if value is not None:
                r.keep(value, start, start + len(value.text))
    taken.flush()


def _email(text: str, spans: Spans) -> Value:
    start, end = spans[0]
    return read_located(text[start:end])


def _handle(token: str) -> bool:
    """``@alice``: a mention, not an address (``@evil.io`` is no handle)."""
    return all(c.isalnum() or c == "_" for c in token[1:])


def _leftover_at_signs(r: _Reader) -> None:
    """Every token with an ``@`` that no address or URL accounts for is an unplaced value.

    A lone ``@``, a trailing one or a handle (``@alice``) is not an address. A leftover that
    overlaps a value read before (``bob@x.ch@evil.io``) is kept beside it: both are judged.
    """
    text, taken, across = r.text, r.taken, r.across
    for spans in matches("at_token", text):
        start, stop = spans[0]
        if start >= r.stop:
            break
        whole = text[start:stop]
        token = whole.strip(_TOKEN_PUNCTUATION)
        if token.count("@") == 1 and (token[-1] == "@" or (token[0] == "@" and _handle(token))):
            continue
        offset = start + whole.index(token)
        ats, at = [], token.find("@")
        while at >= 0:  # str.find: C speed over a long token
            ats.append(offset + at)
            at = token.find("@", at + 1)
        if all(taken.inside(at) for at in ats):
            continue
        value = unplaced("email", token, tuple(tokens(token)))
        end = offset + len(token)
        if taken.free(offset, end):
            r.found.append(Found(value, offset, end))
            taken.pending.append((offset, end))
        elif across is None or (offset < across[0] and end > across[1]):
            r.found.append(Found(value, offset, end))
    taken.flush()


def _linkish(c: str) -> bool:
    """A character a bare link's labels may hold (any non-ASCII one, to be safe)."""
    return c.isalnum() or c in "_-" or not c.isascii()


def _may_link(r: _Reader) -> bool:
    """Whether the bare-link pass may find a free candidate (a short text is looked at).

    Every candidate but ``localhost`` holds a dot between two label characters, and one
    whose dots all lie in taken spans overlaps them: without a free such dot, nothing.
    """
    text, taken = r.text, r.taken
    if len(text) > _PRECHECK_CHARS or "localhost" in text:
        return True
    at = text.find(".", 1)
    while 0 < at < len(text) - 1:
        if _linkish(text[at - 1]) and _linkish(text[at + 1]) and not taken.inside(at):
            return True
        at = text.find(".", at + 1)
    return False


def _free_at_sign(r: _Reader) -> bool:
    """Whether some ``@`` lies outside the spans taken (else no leftover token can be new)."""
    text, taken = r.text, r.taken
    if len(text) > _PRECHECK_CHARS:
        return True
    at = text.find("@")
    while at >= 0:
        if not taken.inside(at):
            return True
        at = text.find("@", at + 1)
    return False


def _digit_at_space(text: str, across: tuple[int, int] | None) -> bool:
    """Whether a digit ends right before a space at the boundary (``5 | mio``).

    An amount spans a spaced boundary only so: a cheap test before the number pass.
    """
    if across is None:
        return True
    stop = min(across[1] + 1, len(text) - 1)
    return any(
        text[i].isdigit() and text[i + 1] in _SPACES for i in range(max(across[0] - 2, 0), stop)
    )


def _spaced(text: str, across: tuple[int, int]) -> bool:
    """Whether a value spanning the boundary would hold a space (see the module docstring)."""
    return any(c in _SPACES for c in text[max(across[0] - 1, 0) : across[1] + 1])


def extract_values(
    text: str,
    *,
    region: str | None = None,
    across: tuple[int, int] | None = None,
    year: int | None = None,
) -> list[Found]:
    """Every typed value in text (reading form), in order of position.

    Args:
        text: Text from :func:`~guardagent.trace.text.normal.reading_form`.
        region: Default phone region (``"US"``, ``"CH"``); None reads only ``+`` numbers.
        across: ``(a, b)``: only values that start before `a` and end after `b` (the values
            that span a boundary; the others are not parsed at all).
        year: The year of dates written without one (None: the host's; 0: not read).

    Returns:
        The values with their spans. Spans do not overlap.
    """
    if not text.isascii():
        text = _SURROGATE.sub("\ufffd", text)  # RE2 reads UTF-8; same length, same offsets
    r = _Reader(text, across)
    spaced = across is not None and _spaced(text, across)
    if not spaced:  # links, addresses and leftovers hold no space
        if "://" in text:
            _links(r, "url", bare=False)
        if "@" in text and not r.done():
            r.each("email", _email, None, index=0)
        if ("." in text or "localhost" in text) and not r.done() and _may_link(r):
            _links(r, "bare", bare=True)
        if "@" in text and _free_at_sign(r):
            _leftover_at_signs(r)
    if not r.done() and _DIGIT.search(text) is not None:  # every kind below has digits
        if _IBAN_HINT.search(text) is not None:
            _ibans(r)
        if not r.done():
            _dates(r, host_year() if year is None else year, spaced)
        if not r.done():
            r.each("phone", lambda t, s: _phone(group(t, s, 1), region))
        if not r.done() and (not spaced or _digit_at_space(text, across)):
            _numbers(r)  # across a space: only a number and its magnitude word (5 mio)
    r.found.sort(key=lambda f: (f.start, f.end))
    return r.found


def _phone(text: str, region: str | None) -> Value | None:
    key = phone_key(text, region)
    return Value("phone", (key,), text, tuple(tokens(text))) if key is not None else None
