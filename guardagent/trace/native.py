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

from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

import ahocorasick

from guardagent.trace.budget import check_budget

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
            self._native.add_word(key, value)
        if self._native is not None:
            self._native.make_automaton()

    def found(self, haystack: str) -> set[V]:
        """The values of the keys the haystack holds (a long key: one ``in`` each)."""
        found = {value for _, value in self._native.iter(haystack)} if self._native else set()
        for key, value in self.long.items():
            check_budget()
            if value not in found and key in haystack:
                found.add(value)
        return found

    def iter(self, haystack: str) -> Iterator[tuple[int, V]]:
        """Each match as ``(end index, value)``: the short keys' first, then each long key's.

        A long key's occurrences are found left to right, each search from the character
        after the last one found (overlapping occurrences are reported, as the automaton
        reports them); the reading budget is checked between searches.
        """
        if self._native is not None:
            yield from self._native.iter(haystack)
        for key, value in self.long.items():
            at = haystack.find(key)
            while at >= 0:
                yield at + len(key) - 1, value
                check_budget()
                at = haystack.find(key, at + 1)
