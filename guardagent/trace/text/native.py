"""Aho-Corasick search with every native call's input bounded: a long key never reaches C.

pyahocorasick keeps its keys in a trie of one node per character and frees it recursively,
one C stack frame per character of the longest key: a key of ~0.5 MB overflows the 8 MB
main stack, a few tens of KB a worker thread's (SIGSEGV: the host process dies with the
guard). Its matching and building are iterative (a 45 MB haystack, 300,000 keys: fine).

So only keys of at most :data:`MAX_KEY_CHARS` characters go into the automaton; a longer key
is looked for with ``str.find`` (CPython's two-way search: linear in the haystack and the
key), its every occurrence reported as the automaton reports one. Nothing is left unread:
the answer is the same as one automaton over all the keys would give, only slower for the
long keys (the caller checks the reading budget between haystacks).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import ahocorasick

from guardagent.trace.text.budget import check_budget

V = TypeVar("V")

MAX_KEY_CHARS = 1024
"""Longest key put into the native trie (at most ~16 bytes of C stack a character freed)."""


class Automaton(Generic[V]):
    """Keys with values, matched in one pass per haystack (as ``ahocorasick.Automaton``).

    Attributes:
        long: The keys longer than :data:`MAX_KEY_CHARS`, with their values (searched by
            ``str.find``).
    """

    __slots__ = ("_native", "long")

    def __init__(self, keys: Iterable[tuple[str, V]]) -> None:
        self._native: Any = None
        self.long: dict[str, V] = {}
        for key, value in keys:
            if len(key) > MAX_KEY_CHARS:
                self.long[key] = value
                continue
            if self._native is None:
                self._native = ahocorasick.Automaton()
            self._native.add_word(key, (len(key), value))
        if self._native is not None:
            self._native.make_automaton()

    def found(self, haystack: str) -> set[V]:
        """The values of the keys the haystack holds (a long key: one ``in`` each)."""
        found = {value for _, (_, value) in self._native.iter(haystack)} if self._native else set()
        for key, value in self.long.items():
            check_budget()
            if value not in found and key in haystack:
                found.add(value)
        return found

    def iter(self, haystack: str) -> Iterator[tuple[int, V]]:
        """Matches as ``(end index, value)``: each of a short key, the first of a long one.

        Short keys' matches come first, in the haystack's order, then each long key's first
        occurrence (one ``str.find``): what a caller asking which keys a text holds needs.
        Every occurrence of a long key would cost up to its length each (a periodic key in
        a periodic text has one at each character); :meth:`spanning` finds those that span
        a boundary.
        """
        if self._native is not None:
            for end, (_, value) in self._native.iter(haystack):
                yield end, value
        for key, value in self.long.items():
            check_budget()
            at = haystack.find(key)
            if at >= 0:
                yield at + len(key) - 1, value

    def spanning(self, haystack: str, bounds: Sequence[int]) -> Iterator[tuple[int, int, V]]:
        """Matches that span a boundary, as ``(start, end, value)`` (`end` exclusive).

        `bounds` are sorted positions in the haystack (where one part ends and the next
        starts); a match spans one when it starts before it and ends after it. A short key:
        each such match. A long key: for each boundary, one match spanning it (its first
        within the boundary's window, one ``str.find``): every value of every part a
        spanning match covers is then in one of those (a part it covers is next to a
        boundary it spans), in time linear in the boundaries and the key, never in the
        matches (a periodic key of a periodic haystack has one at each character).
        """
        if self._native is not None:
            for end, (length, value) in self._native.iter(haystack):
                start = end + 1 - length
                at = bisect_left(bounds, start + 1)
                if at < len(bounds) and bounds[at] <= end:
                    yield start, end + 1, value
        for key, value in self.long.items():
            for bound in bounds:
                check_budget()
                start = haystack.find(key, max(0, bound - len(key) + 1), bound + len(key) - 1)
                if start >= 0:
                    yield start, start + len(key), value
