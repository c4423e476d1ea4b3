"""A message's reading: every key its text contains, with the key's stored hash.

Reading a text (its words, and the typed values
:func:`~guardagent.trace.found.locate.extract_values`
finds) is the cost of indexing a thread. A host that keeps no thread state sends the whole
growing conversation at every call, and each call would read every message again; so the
readings are kept for the process, by content (:class:`ReadingCache`).

Why the cache is safe. A reading is a pure function of the text and of what the reading
depends on besides: the phone region and the year of dates written without one (``None``
is resolved to the host's year before the look-up, so a new year is a new entry). The
entry is keyed by all three (the text itself, not a digest: no collision), so a hit returns
what reading the text again would return, whoever sent it: one thread or tenant cannot change
another's decision through it (it can at most learn, by timing, that a text was read
recently in this process). Entries are never changed after they are stored (read-only
views, frozen sets); nothing else is kept (echo exclusion, the index's postings and every
decision are computed per call); the cache is bounded by about the memory it holds
(:data:`MAX_CACHED_BYTES`, least recently used entries out first). A reading that raises
(the reading budget spent) stores nothing.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Generic, NamedTuple, TypeVar

from guardagent.trace.found.dates import host_year
from guardagent.trace.found.locate import extract_values
from guardagent.trace.text.budget import check_budget
from guardagent.trace.text.normal import normalize_text, reading_form, tokens, unescape

MAX_CACHED_BYTES = 32 << 20
"""About the memory the cache of message readings holds at most (boundaries: a quarter of
it); an entry above a sixteenth of its cache (a long page with many distinct words) is read
again each time."""
READ_AHEAD = 64
"""Messages an index reads ahead together (:func:`read_ahead`)."""
READ_AHEAD_CHARS = 100_000
"""Longest text read ahead."""
KEY_BYTES = 160
"""What one key costs an entry (the key, its hash, the mapping's slots), about."""


MAX_HASHES = 1 << 16
"""Key hashes remembered at most (then forgotten all at once)."""
_HASHES: dict[str, str] = {}


def key_hash(key: str) -> str:
    """The stored form of a key: 64-bit BLAKE2b, URL-safe base64 (11 characters)."""
    h = _HASHES.get(key)
    if h is None:
        return _hashed((key,))[key]
    return h


def _hashed(keys: Iterable[str]) -> dict[str, str]:
    """:func:`key_hash` of each key, the new ones hashed in one go.

    Eight digest bytes and a zero byte are nine bytes, twelve base64 characters whose
    first eleven are the eight bytes' own encoding: the digests are encoded at once.
    """
    memo = _HASHES
    out = {key: memo.get(key, "") for key in keys}
    missing = [key for key, h in out.items() if not h]
    if missing:
        blake = hashlib.blake2b
        joined = (
            b"\0".join(
                [
                    blake(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
                    for key in missing
                ]
            )
            + b"\0"
        )
        text = base64.urlsafe_b64encode(joined).decode("ascii")
        hashes = dict(
            zip(missing, [text[i : i + 11] for i in range(0, len(text), 12)], strict=True)
        )
        if len(memo) + len(hashes) > MAX_HASHES:
            memo.clear()
        memo.update(hashes)
        out.update(hashes)
    return out


@lru_cache(maxsize=64)
def readings(text: str) -> tuple[str, ...]:
    """A message's text as written, and with its escapes read when it holds any."""
    if "\\" not in text:
        return (text,)
    unescaped = unescape(text)
    return (text, unescaped) if unescaped != text else (text,)


class Reading(NamedTuple):
    """What a text (or a boundary) contains: its keys with their hashes, and the hashes."""

    hashed: Mapping[str, str]
    hashes: frozenset[str]

    @classmethod
    def of(cls, keys: Iterable[str]) -> Reading:
        """The reading of a set of keys (hashed here)."""
        hashed = _hashed(keys)
        return cls(MappingProxyType(hashed), frozenset(hashed.values()))


NOTHING = Reading.of(())
"""The empty reading."""
CacheKey = tuple[str, str, str | None, int]


E = TypeVar("E")


def _key_count(reading: Any) -> int:
    return len(reading.hashes)


class ReadingCache(Generic[E]):
    """Readings by the text read and what the reading depends on, least recently used out.

    Args:
        max_bytes: About the memory held at most: each entry counts its characters and
            :data:`KEY_BYTES` per key.
        keys: The keys an entry holds (a :class:`Reading`'s hashes by default).
    """

    def __init__(
        self, max_bytes: int = MAX_CACHED_BYTES, keys: Callable[[E], int] = _key_count
    ) -> None:
        self.max_bytes = max_bytes
        self.keys = keys
        self.entries: OrderedDict[CacheKey, tuple[E, int]] = OrderedDict()
        self.size = 0
        self.hits = 0
        self.misses = 0
        self.lock = threading.Lock()  # guards run in threads (acheck_trace)

    def get(self, key: CacheKey) -> E | None:
        """An entry (and it becomes the most recently used), or None."""
        with self.lock:
            entry = self.entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self.hits += 1
            self.entries.move_to_end(key)
            return entry[0]

    def put(self, key: CacheKey, reading: E) -> None:
        """Keep an entry unless it is too big; drop the least recently used beyond the bound."""
        weight = len(key[0]) + len(key[1]) + KEY_BYTES * self.keys(reading)
        with self.lock:
            if weight > self.max_bytes // 16 or key in self.entries:
                return
            self.entries[key] = (reading, weight)
            self.size += weight
            while self.size > self.max_bytes and self.entries:
                _, (_, dropped) = self.entries.popitem(last=False)
                self.size -= dropped

    def clear(self) -> None:
        """Forget every entry (tests, or a deployment that wants no reuse at all)."""
        with self.lock:
            self.entries.clear()
            self.size = 0


def clear_caches() -> None:
    """Forget every kept reading (a benchmark timing cold reads, a test)."""
    for forget in _FORGETS:
        forget()


_FORGETS: list[Callable[[], None]] = []
"""How each reader keeping readings by content forgets them (:func:`on_clear`)."""


def on_clear(forget: Callable[[], None]) -> None:
    """Have :func:`clear_caches` call `forget` too (a reader keeping readings of its own)."""
    _FORGETS.append(forget)


def kept_cache(max_bytes: int, keys: Callable[[E], int] = _key_count) -> ReadingCache[E]:
    """A new cache of readings by content, one :func:`clear_caches` forgets too."""
    cache: ReadingCache[E] = ReadingCache(max_bytes, keys)
    on_clear(cache.clear)
    return cache


TEXTS: ReadingCache[Reading] = kept_cache(MAX_CACHED_BYTES)
"""Readings of message texts (and of call arguments read as text)."""
BOUNDARIES: ReadingCache[Reading] = kept_cache(MAX_CACHED_BYTES // 4)
"""Readings of the boundaries between two messages of one source."""
CALLS: dict[tuple[Any, ...], frozenset[str]] = {}
"""Readings of calls' arguments by their scalar values' types and values, region and year
(:func:`guardagent.trace.thread.state.call_keys`; kept by content for the reasons above); forgotten
all at once beyond :data:`MAX_CACHED_CALLS`."""
MAX_CACHED_CALLS = 4096
on_clear(CALLS.clear)


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


def message_reading(text: str, region: str | None, year: int | None = None) -> Reading:
    """Every key a message's text contains (both :func:`readings`), with its hash.

    Shared with later calls: never to be changed (see the module docstring).
    """
    year = host_year() if year is None else year
    key = (text, "", region, year)
    entry = TEXTS.get(key)
    if entry is None:
        entry = Reading.of(_read(text, region, year))
        TEXTS.put(key, entry)
    return entry


def read_ahead(texts: Iterable[str], region: str | None, year: int | None = None) -> None:
    """Read the texts the cache does not hold yet, their new keys hashed in one go.

    What an index about to read several new messages calls first (hashing keys one text
    at a time costs about twice as much); a long text is left to :func:`message_reading`.
    """
    year = host_year() if year is None else year
    pending: dict[CacheKey, set[str]] = {}
    for text in texts:
        key = (text, "", region, year)
        if len(text) <= READ_AHEAD_CHARS and key not in pending and key not in TEXTS.entries:
            check_budget()
            pending[key] = _read(text, region, year)
    if not pending:
        return
    hashed = _hashed(set().union(*pending.values()))
    for key, keys in pending.items():
        mapping = {k: hashed[k] for k in keys}
        TEXTS.put(key, Reading(MappingProxyType(mapping), frozenset(mapping.values())))


def text_keys(text: str, region: str | None, year: int | None = None) -> set[str]:
    """Every key a message's text contains (both readings, see :func:`readings`)."""
    return set(message_reading(text, region, year).hashed)


def boundary_keys(tail: str, head: str, region: str | None, year: int | None) -> Reading:
    """Keys (with their hashes) of typed values that span the end of `tail` and `head`.

    Read with the two joined as written and, unless a space already separates them, with
    one space between (a value split mid-group, or between groups).
    """
    year = host_year() if year is None else year
    key = (tail, head, region, year)
    entry = BOUNDARIES.get(key)
    if entry is None:
        keys: set[str] = set()
        joins = ("",) if tail[-1:].isspace() or head[:1].isspace() else ("", " ")
        for sep in joins:
            cut = len(tail)
            for found in extract_values(
                tail + sep + head, region=region, year=year, across=(cut, cut + len(sep))
            ):
                keys.update(found.value.keys)
                keys.update(k for _, k in found.value.parts)
        entry = Reading.of(keys)
        BOUNDARIES.put(key, entry)
    return entry


def message_tokens(text: str) -> list[str]:
    """A message's word tokens, both readings joined by a token no phrase contains."""
    out: list[str] = []
    for reading in readings(text):
        if out:
            out.append("\x00")
        out.extend(tokens(normalize_text(reading)))
    return out
