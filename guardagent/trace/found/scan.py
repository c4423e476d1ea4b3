"""The locators of :mod:`~guardagent.trace.found.locate`: RE2 patterns, their matches, taken spans.

RE2 (``google-re2``) has no backtracking: matching time is linear in the text. It has no
look-around either: a pattern's left boundary is a consumed character (``(?:^|[^...])``),
its right boundary is checked by the caller on the character after the match.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from functools import cache
from typing import Any

from guardagent.trace.found.dates import MONTH
from guardagent.trace.text.budget import check_budget

_W = r"\pL\pN_"
_URL_CHARS = r"[^\s\pZ\pC<>\"'`{}|^]"
PATTERNS = {
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
    "number": rf"(?:^|[^{_W}.,'])'?(\d+(?:[.,']\d+)*)",  # a quoted number ('26') too
    # after a date with no year: the rest of a range whose last date has one (`to May 2, 2025`)
    "range_year": rf"(?:\s*[-\x{{2013}}\x{{2014}}]\s*|\s+(?:to|until|till|through|thru|and)\s+)"
    rf"(?:the\s+)?(?:{MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?(?:\s+(?:of\s+)?{MONTH}\.?)?),?\s+(\d{{4}})(?:[^{_W}]|$)",
}
RANGE_WINDOW = 64
"""Characters after a year-less date looked at for the rest of its range (constant work)."""
CHECK_EVERY = 256
"""Matches between two checks of the reading budget."""

Spans = list[tuple[int, int]]
"""One match: ``(start, end)`` of the whole match and of each group (``(-1, -1)``: absent)."""


@cache
def _re(name: str) -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False
    options.max_mem = 64 << 20
    return re2.compile(PATTERNS[name], options)


@cache
def _unanchored() -> Any:
    import re2

    return re2._Anchor.UNANCHORED


def matches(name: str, text: str) -> Iterator[Spans]:
    """Every non-overlapping match, left to right; the budget is checked as they come."""
    pattern = _re(name)
    if text.isascii():  # byte offsets are character offsets: call RE2 directly, no decoding
        data = text.encode("ascii")
        match = pattern._regexp.Match
        unanchored = _unanchored()
        size = len(data)
        pos, n = 0, 0
        while pos <= size:
            spans = match(unanchored, data, pos, size)
            start, end = spans[0]
            if start < 0:
                return
            n += 1
            if n % CHECK_EVERY == 0:
                check_budget()
            yield spans
            pos = end if end > pos else pos + 1
        return
    groups = range(pattern.groups + 1)
    for n, m in enumerate(pattern.finditer(text), 1):
        if n % CHECK_EVERY == 0:
            check_budget()
        yield [m.span(g) for g in groups]


def prefix(name: str, text: str) -> Spans | None:
    """The match of a locator at the start of `text` (anchored), or None."""
    m = _re(name).match(text)
    return None if m is None else [m.span(g) for g in range(_re(name).groups + 1)]


def group(text: str, spans: Spans, index: int) -> str:
    """A group's text (empty when it did not take part)."""
    start, end = spans[index]
    return "" if start < 0 else text[start:end]


class Taken:
    """Non-overlapping spans taken so far: overlap checks in O(log n), no insertion cost.

    Each locator pass yields candidates left to right, so a pass's spans are collected in
    order (`pending`) and merged into the sorted lists once, at the end of the pass.

    Args:
        across: ``(a, b)``: only spans that start before `a` and end after `b` are free.
    """

    __slots__ = ("across", "ends", "pending", "starts")

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
        starts = self.starts
        if not starts:
            return True
        at = bisect_right(starts, start)
        if at and self.ends[at - 1] > start:
            return False
        return at == len(starts) or starts[at] >= end

    def inside(self, pos: int) -> bool:
        """Whether a position lies inside a span taken by an earlier pass."""
        at = bisect_right(self.starts, pos)
        return bool(at) and self.ends[at - 1] > pos

    def flush(self) -> None:
        """End of a pass: merge its spans into the sorted lists."""
        if self.pending:
            spans = sorted([*zip(self.starts, self.ends, strict=True), *self.pending])
            self.starts = [a for a, _ in spans]
            self.ends = [b for _, b in spans]
            self.pending = []
