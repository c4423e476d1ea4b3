"""The trace reader as it was before its speed-up (frozen, for differential tests only).

`extract_values` is the per-kind locator of ``guardagent/trace/found/locate.py`` at commit 4c11cb9
(one RE2 pass per kind, candidates confirmed by each kind's parser); :class:`OldIndex` reads
messages as ``TraceIndex._read`` did then. The speed-up must find the same values and keys:
``tests/test_trace_reader_differential.py`` compares both over generated and real layouts.
Never imported by the package. Amended since, where the reading itself changed on purpose: a
quoted number (`'26'`) is a number, and a year-less date opening a range takes the range's year.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from guardagent.trace.found.addresses import read_located
from guardagent.trace.found.dates import MONTH, MONTHS, full_year, host_year, iso
from guardagent.trace.found.urls import read_link
from guardagent.trace.text.budget import check_budget
from guardagent.trace.text.kinds import Found, Value, unplaced
from guardagent.trace.text.normal import tokens
from guardagent.trace.text.numbers import (
    amount_value,
    iban_key,
    iban_length,
    magnitude_end,
    phone_key,
)

_W = r"\pL\pN_"
_URL_CHARS = r"[^\s\pZ\pC<>\"'`{}|^]"
_PATTERNS = {
    # a quote never starts a local part in text: 'bob@x.org' is quoted, not an address with '
    "email": rf"[{_W}.!#$%&*+/=?^{{|}}~-][{_W}.!#$%&'*+/=?^`{{|}}~-]*@[{_W}-]+(?:\.[{_W}-]+)+",
    "url": rf"(?:^|[^{_W}.+-])((?:https?|ftp|wss?)://{_URL_CHARS}+)",
    "bare": rf"(?:^|[^{_W}.@/:\\-])((?:www\.)?[{_W}-]+(?:\.[{_W}-]+)+(?::\d{{1,5}})?"
    rf"(?:[/?#]{_URL_CHARS}*)?|localhost(?::\d{{1,5}})?(?:[/?#]{_URL_CHARS}*)?)",
    "iban": rf"(?:^|[^{_W}])([a-z]{{2}}[ -]?\d[ -]?\d)",
    "iso": rf"(?:^|[^{_W}.-])((\d{{4}})-(\d{{1,2}})-(\d{{1,2}})"
    r"(?:[t ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?)",
    "num": rf"(?:^|[^{_W}.,/-])((\d{{1,2}})([./-])(\d{{1,2}})([./-])(\d{{4}}|\d{{2}}))",
    "dmy": rf"(?:^|[^{_W}])((\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({MONTH})\.?"
    r"(?:,?\s+(\d{4}))?)",
    "mdy": rf"(?:^|[^{_W}])(({MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?)",
    "at_token": r"[^\s\pZ]*@[^\s\pZ]*",
    "phone": rf"(?:^|[^{_W}+])((?:\+|\()?\d[\d \-.()/]{{4,24}}\d)",
    "number": rf"(?:^|[^{_W}.,'])'?(\d+(?:[.,']\d+)*)",  # amended: a quoted number ('26')
}
_SURROGATE = re.compile("[\ud800-\udfff]")  # one character class: linear
_DIGIT = re.compile(r"\d")  # one character, no repetition: nothing to backtrack
_NUM_HINT = re.compile(r"\d[./-]\d")  # fixed width: constant work per position
_IBAN_HINT = re.compile(r"[a-z][a-z][ -]?\d")  # fixed width
_MONTH_HINT = re.compile("jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec")  # literals only
_IBAN_SEPARATORS = frozenset(" -")
_TOKEN_PUNCTUATION = ".,;:!?()[]<>'\""
_CHECK_EVERY = 256


@cache
def _re(name: str) -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False
    options.max_mem = 64 << 20
    return re2.compile(_PATTERNS[name], options)


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _after_ok(text: str, end: int, extra: str = "") -> bool:
    """The character after a match does not continue it (a word character or `extra`)."""
    return end >= len(text) or not (_word(text[end]) or text[end] in extra)


class _Hit:
    """One match: the group spans over the text (what RE2 returns, without the wrapper)."""

    __slots__ = ("spans", "text")

    def __init__(self, text: str, spans: list[tuple[int, int]]) -> None:
        self.text = text
        self.spans = spans

    def span(self, group: int = 0) -> tuple[int, int]:
        return self.spans[group]

    def start(self, group: int = 0) -> int:
        return self.spans[group][0]

    def group(self, group: int = 0) -> str:
        """A group's text (empty when it did not take part)."""
        start, end = self.spans[group]
        return "" if start < 0 else self.text[start:end]


def _matches(name: str, text: str) -> Iterator[_Hit]:
    """Every non-overlapping match, left to right; the budget is checked as they come."""
    pattern = _re(name)
    if text.isascii():  # byte offsets are character offsets: call RE2 directly, no decoding
        import re2

        data = text.encode("ascii")
        regexp = pattern._regexp
        unanchored = re2._Anchor.UNANCHORED
        pos, n = 0, 0
        while pos <= len(data):
            spans = regexp.Match(unanchored, data, pos, len(data))
            if spans[0][0] < 0:
                return
            n += 1
            if n % _CHECK_EVERY == 0:
                check_budget()
            yield _Hit(text, spans)
            pos = spans[0][1] if spans[0][1] > pos else pos + 1
        return
    groups = pattern.groups
    for n, m in enumerate(pattern.finditer(text), 1):
        if n % _CHECK_EVERY == 0:
            check_budget()
        yield _Hit(text, [m.span(g) for g in range(groups + 1)])


class _Spans:
    """Non-overlapping spans taken so far: overlap checks in O(log n), no insertion cost.

    Each locator pass yields candidates left to right, so a pass's spans are collected in
    order (`pending`) and merged into the sorted lists once, at the end of the pass.
    """

    def __init__(self, across: tuple[int, int] | None) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.pending: list[tuple[int, int]] = []
        self.across = across

    def free(self, start: int, end: int) -> bool:
        """Whether a candidate may be read: it overlaps nothing taken (and spans `across`)."""
        if self.across is not None and not (start < self.across[0] and end > self.across[1]):
            return False
        if self.pending and self.pending[-1][1] > start:
            return False
        at = bisect_right(self.starts, start)
        if at and self.ends[at - 1] > start:
            return False
        return at == len(self.starts) or self.starts[at] >= end

    def inside(self, pos: int) -> bool:
        """Whether a position lies inside a span taken by an earlier pass."""
        at = bisect_right(self.starts, pos)
        return bool(at) and self.ends[at - 1] > pos

    def take(self, start: int, end: int) -> None:
        self.pending.append((start, end))

    def flush(self) -> None:
        """End of a pass: merge its spans into the sorted lists."""
        if self.pending:
            spans = sorted([*zip(self.starts, self.ends, strict=True), *self.pending])
            self.starts = [a for a, _ in spans]
            self.ends = [b for _, b in spans]
            self.pending = []


class _Reader:
    def __init__(self, text: str, across: tuple[int, int] | None) -> None:
        self.text = text
        self.found: list[Found] = []
        self.taken = _Spans(across)

    def keep(self, value: Value | None, start: int, end: int, checked: bool = False) -> None:
        """Take a value's span (`checked`: the caller saw it free)."""
        if value is not None and (checked or self.taken.free(start, end)):
            self.found.append(Found(value, start, end))
            self.taken.take(start, end)

    def each(
        self, name: str, read: Callable[[Any], Value | None], after: str | None = "", group: int = 1
    ) -> None:
        """Read every match of a locator whose span is free and whose right boundary holds."""
        for m in _matches(name, self.text):
            start, end = m.span(group)
            if (after is None or _after_ok(self.text, end, after)) and self.taken.free(start, end):
                self.keep(read(m), start, end, checked=True)
        self.taken.flush()


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


def _dates(r: _Reader, year: int) -> None:
    def numeric(m: _Hit) -> Value | None:
        if m.group(3) != m.group(5):
            return None
        a, b, y = int(m.group(2)), int(m.group(4)), full_year(m.group(6))
        return _date_value([iso(y, b, a), iso(y, a, b)], m.group(1))

    def named(day: str, month: str, yr: str | None, written: str, end: int) -> Value | None:
        yr = yr or _range_year(r.text[end : end + 64])
        return _date_value([iso(int(yr) if yr else year, MONTHS[month], int(day))], written)

    if "-" in r.text:
        r.each(
            "iso",
            lambda m: _date_value(
                [iso(int(m.group(2)), int(m.group(3)), int(m.group(4)))], m.group(1)
            ),
            "-",
        )
    if _NUM_HINT.search(r.text) is not None:
        r.each("num", numeric, "/-")
    if _MONTH_HINT.search(r.text) is not None:
        r.each("dmy", lambda m: named(m.group(2), m.group(3), m.group(4), m.group(1), m.span(1)[1]))
        r.each("mdy", lambda m: named(m.group(3), m.group(2), m.group(4), m.group(1), m.span(1)[1]))


_RANGE_REST = re.compile(  # amended: a range's one year is its first date's too
    rf"(?:\s*[-\u2013\u2014]\s*|\s+(?:to|until|till|through|thru|and)\s+)(?:the\s+)?"
    rf"(?:{MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)?(?:\s+(?:of\s+)?{MONTH}\.?)?)"
    r",?\s+(\d{4})(?!\w)"
)


def _range_year(window: str) -> str:
    m = _RANGE_REST.match(window)
    return m.group(1) if m else ""


def _date_value(isos: list[str | None], written: str) -> Value | None:
    keys = tuple(dict.fromkeys(f"date:{d}" for d in isos if d is not None))
    return Value("date", keys, written, tuple(tokens(written))) if keys else None


def _links(r: _Reader, name: str, *, bare: bool) -> None:
    for m in _matches(name, r.text):
        start, end = m.span(1)
        if r.taken.free(start, end):
            value = read_link(m.group(1), bare)
            if value is not None:
                r.keep(value, start, start + len(value.text))
    r.taken.flush()


def _handle(token: str) -> bool:
    """``@alice``: a mention, not an address (``@evil.io`` is no handle)."""
    return all(c.isalnum() or c == "_" for c in token[1:])


def _leftover_at_signs(r: _Reader) -> None:
    """Every token with an ``@`` that no address or URL accounts for is an unplaced value.

    A lone ``@``, a trailing one or a handle (``@alice``) is not an address. A leftover that
    overlaps a value read before (``bob@x.ch@evil.io``) is kept beside it: both are judged.
    """
    for m in _matches("at_token", r.text):
        start = m.start()
        token = m.group(0).strip(_TOKEN_PUNCTUATION)
        if token.count("@") == 1 and (token[-1] == "@" or (token[0] == "@" and _handle(token))):
            continue
        offset = start + m.group(0).index(token)
        ats, at = [], token.find("@")
        while at >= 0:  # str.find: C speed over a long token
            ats.append(offset + at)
            at = token.find("@", at + 1)
        if all(r.taken.inside(at) for at in ats):
            continue
        value = unplaced("email", token, tuple(tokens(token)))
        end = offset + len(token)
        across = r.taken.across
        if r.taken.free(offset, end):
            r.keep(value, offset, end, checked=True)
        elif across is None or (offset < across[0] and end > across[1]):
            r.found.append(Found(value, offset, end))
    r.taken.flush()


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
    if "://" in text:
        _links(r, "url", bare=False)
    if "@" in text:
        r.each("email", lambda m: read_located(m.group(0)), None, group=0)
    if "." in text or "localhost" in text:
        _links(r, "bare", bare=True)
    if "@" in text:
        _leftover_at_signs(r)
    if _DIGIT.search(text) is not None:  # every kind below has digits
        for m in _matches("iban", text) if _IBAN_HINT.search(text) is not None else ():
            start = m.start(1)
            hit = _iban_at(text, start) if not r.taken.inside(start) else None
            if hit is not None and r.taken.free(start, hit[1]):
                key = iban_key(hit[0])
                if key is not None:
                    written = text[start : hit[1]]
                    r.keep(Value("iban", (key,), written, tuple(tokens(written))), start, hit[1])
        r.taken.flush()
        _dates(r, host_year() if year is None else year)
        r.each("phone", lambda m: _phone(m.group(1), region))
        for m in _matches("number", text):  # with a magnitude word after it (5 Mio.)
            start, end = m.span(1)
            stop = magnitude_end(text, end) or end
            if (stop > end or _after_ok(text, end)) and r.taken.free(start, stop):
                r.keep(amount_value(text[start:stop], text[start:stop]), start, stop, True)
        r.taken.flush()
    r.found.sort(key=lambda f: (f.start, f.end))
    return r.found


def _phone(text: str, region: str | None) -> Value | None:
    key = phone_key(text, region)
    return Value("phone", (key,), text, tuple(tokens(text))) if key is not None else None
