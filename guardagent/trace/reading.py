"""A message's reading: every key its text contains, with the key's stored hash.

Reading a text (its words, and the typed values :func:`~guardagent.trace.locate.extract_values`
finds) is the cost of indexing a thread. A host that keeps no thread state sends the whole
growing conversation at every call, and each call would read every message again; so the
readings are kept for the process, by content (:class:`ReadingCache`).

Why the cache is safe. A reading is a pure function of the text and of what the reading
depends on besides: the phone region and the year of dates written without one (``None``
is resolved to the host's year before the look-up, so a new year is a new entry). The
entry is keyed by all three, the text by its 128-bit BLAKE2b digest, so a hit returns what
reading the text again would return, whoever sent it: one thread or tenant cannot change
another's decision through it (it can at most learn, by timing, that a text was read
recently in this process). Entries are never changed after they are stored (callers get
read-only views, and copy before changing), nothing else is cached (echo exclusion, the
index's postings and every decision are computed per call), and the cache is bounded by
the number of keys it holds (least recently used entries go first; a text with more keys
than :data:`MAX_ENTRY_KEYS` is read each time). A reading that raises (the reading budget
spent) stores nothing.
"""

from __future__ import annotations

import base64
import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from functools import lru_cache

from guardagent.trace.dates import host_year
from guardagent.trace.locate import extract_values
from guardagent.trace.normal import normalize_text, reading_form, tokens, unescape

MAX_CACHED_KEYS = 250_000
"""Keys held by each reading cache at most (a few tens of MB)."""
MAX_ENTRY_KEYS = 25_000
"""A text with more keys than this (a page of a book) is read again each time."""


@lru_cache(maxsize=1 << 16)
def key_hash(key: str) -> str:
    """The stored form of a key: 64-bit BLAKE2b, URL-safe base64 (11 characters)."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


@lru_cache(maxsize=64)
def readings(text: str) -> tuple[str, ...]:
    """A message's text as written, and with its escapes read when it holds any."""
    if "\\" not in text:
        return (text,)
    unescaped = unescape(text)
    return (text, unescaped) if unescaped != text else (text,)


def _digest(*parts: str) -> bytes:
    """A collision-resistant digest of strings (each length-prefixed: no two tuples meet)."""
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.digest()


class ReadingCache:
    """Readings by ``(digest, region, year)``, least recently used first out.

    Args:
        max_keys: Keys held at most, over all entries.
    """

    def __init__(self, max_keys: int = MAX_CACHED_KEYS) -> None:
        self.max_keys = max_keys
        self.entries: OrderedDict[tuple[bytes, str | None, int], Mapping[str, str]] = OrderedDict()
        self.size = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[bytes, str | None, int]) -> Mapping[str, str] | None:
        """An entry (and it becomes the most recently used), or None."""
        entry = self.entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        self.hits += 1
        self.entries.move_to_end(key)
        return entry

    def put(self, key: tuple[bytes, str | None, int], entry: Mapping[str, str]) -> None:
        """Keep an entry unless it is too big; drop the least recently used beyond the bound."""
        if len(entry) > MAX_ENTRY_KEYS or key in self.entries:
            return
        self.entries[key] = entry
        self.size += len(entry)
        while self.size > self.max_keys:
            _, dropped = self.entries.popitem(last=False)
            self.size -= len(dropped)

    def clear(self) -> None:
        """Forget every entry (tests, or a deployment that wants no reuse at all)."""
        self.entries.clear()
        self.size = 0


TEXTS = ReadingCache()
"""Readings of message texts (and of call arguments read as text)."""
BOUNDARIES = ReadingCache()
"""Readings of the boundaries between two messages of one source."""


def _hashed(keys: set[str]) -> dict[str, str]:
    return {key: key_hash(key) for key in keys}


def _read(text: str, region: str | None, year: int) -> set[str]:
    keys: set[str] = set()
    for reading in readings(text):
        words = normalize_text(reading)
        keys.update(map("w:".__add__, tokens(words)))
        form = words if reading.isascii() else reading_form(reading)  # ASCII: both lower()
        for found in extract_values(form, region=region, year=year):
            value = found.value
            keys.update(value.keys)
            for _, key in value.parts:
                keys.add(key)
    return keys


def hashed_keys(text: str, region: str | None, year: int | None = None) -> Mapping[str, str]:
    """Every key a message's text contains (both :func:`readings`), with its hash.

    Read-only: the mapping may be shared with later calls (see the module docstring).
    """
    year = host_year() if year is None else year
    key = (_digest(text), region, year)
    entry = TEXTS.get(key)
    if entry is None:
        entry = _hashed(_read(text, region, year))
        TEXTS.put(key, entry)
    return entry


def text_keys(text: str, region: str | None, year: int | None = None) -> set[str]:
    """Every key a message's text contains (both readings, see :func:`readings`)."""
    return set(hashed_keys(text, region, year))


def boundary_keys(tail: str, head: str, region: str | None, year: int | None
                  ) -> Mapping[str, str]:  # fmt: skip
    """Keys (with their hashes) of typed values that span the end of `tail` and `head`.

    Read with the two joined as written and, unless a space already separates them, with
    one space between (a value split mid-group, or between groups).
    """
    year = host_year() if year is None else year
    key = (_digest(tail, head), region, year)
    entry = BOUNDARIES.get(key)
    if entry is None:
        keys: set[str] = set()
        joins = ("",) if tail[-1:].isspace() or head[:1].isspace() else ("", " ")
        for sep in joins:
            cut = len(tail)
            for found in extract_values(tail + sep + head, region=region, year=year,
                                        across=(cut, cut + len(sep))):  # fmt: skip
                keys.update(found.value.keys)
                keys.update(k for _, k in found.value.parts)
        entry = _hashed(keys)
        BOUNDARIES.put(key, entry)
    return entry
