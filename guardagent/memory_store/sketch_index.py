"""An in-process scan of every demonstration by word-level edit distance.

Vectors of character n-grams lose the order of a log. On logs that share one structure (every
SeeAct step has an analysis, a list of choices and an answer) the exact Levenshtein neighbours
are near ties that no such vector keeps among its candidates
(`benchmarks/retrieval_headroom.py`). Levenshtein distance between word sketches (one
character per hashed word) does keep them, at ~2.4 us per demonstration: affordable as a scan
of a memory of up to ~10k demonstrations, not of 100k. The store uses this index up to its
`scan_limit` and Chroma's approximate index above it.
"""

from __future__ import annotations

import re
import threading
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein as SketchLevenshtein

_WORD = re.compile(r"\w+")


def word_sketch(text: str) -> str:
    """One character (1-255) per word of `text`, from a hash of the lowercased word."""
    return "".join(chr(1 + zlib.crc32(w.encode()) % 255) for w in _WORD.findall(text.lower()))


class Entry(NamedTuple):
    """What the scan needs of one demonstration: its text, sketch and filter fields.

    `trusted` says its integrity tag checked when it was indexed; the store checks the tag
    again on the record it returns, so a record changed since then is still caught.
    """

    document: str
    sketch: str
    request: str
    code: str
    trusted: bool


Trust = Callable[[str, dict[str, Any]], bool]
"""Whether a (document, metadata) record carries a valid integrity tag."""


def _trust_all(document: str, meta: dict[str, Any]) -> bool:
    return True


class SketchIndex:
    """Every demonstration of one collection, kept in step with Chroma (the store of record).

    The index reloads when the collection's count differs from its own (another process
    wrote); this process's writes are put in directly. Metadata changed by another process
    without a new demonstration shows up at its next reload.

    Args:
        trust: Checks a record's integrity tag (see :mod:`.integrity`); untrusted entries
            are kept (the count must match Chroma's) but never returned by `nearest`.
    """

    def __init__(self, trust: Trust = _trust_all) -> None:
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()
        self._trust = trust

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, ids: list[str], documents: list[str], metadatas: list[dict[str, Any]]) -> None:
        """Add or replace entries (what this process just wrote to Chroma)."""
        with self._lock:
            for demo_id, doc, meta in zip(ids, documents, metadatas, strict=True):
                self._entries[demo_id] = _entry(doc, meta, self._trust)

    def sync(self, collection: Any, count: int) -> None:
        """Reload filter fields when the count moved; fetch documents only for unseen ids."""
        with self._lock:
            if count == len(self._entries):
                return
            found = collection.get(include=["metadatas"])
            new = [i for i in found["ids"] if i not in self._entries]
            docs = dict.fromkeys(new, "")
            if new:
                fetched = collection.get(ids=new, include=["documents"])
                docs.update(zip(fetched["ids"], fetched["documents"] or [], strict=True))
            old = self._entries
            trust = self._trust
            self._entries = {
                i: _entry(docs[i], meta or {}, trust)
                if i in docs
                else _refiled(old[i], meta or {}, trust)
                for i, meta in zip(found["ids"], found.get("metadatas") or [], strict=True)
            }

    def nearest(
        self,
        query: str,
        depth: int,
        *,
        request: str | None,
        accept: Callable[[Entry], bool] | None = None,
    ) -> list[tuple[str, str]]:
        """(id, document) of the `depth` trusted demonstrations nearest by word-sketch distance.

        Nearest first; when there are no more than `depth`, all of them in the index's order
        (no sketch is computed: the store orders its candidates by exact distance anyway).

        Args:
            query: The event text.
            depth: How many to return.
            request: Only demonstrations of this guard-request fingerprint.
            accept: A further filter (the store's: program verified in this process).
        """
        with self._lock:
            pool = [
                (demo_id, e)
                for demo_id, e in self._entries.items()
                if e.trusted and (not request or e.request == request)
            ]
        if accept is not None:  # outside the lock: it may verify a program
            pool = [(demo_id, e) for demo_id, e in pool if accept(e)]
        if len(pool) <= depth:  # all of them: no order to find (the store re-ranks them)
            return [(demo_id, e.document) for demo_id, e in pool]
        scores = process.cdist(
            [word_sketch(query)],
            [e.sketch for _, e in pool],
            scorer=SketchLevenshtein.distance,
            dtype=np.int32,
        )[0]
        nearest = np.argsort(scores, kind="stable")[:depth]
        return [(pool[j][0], pool[j][1].document) for j in nearest]


def _entry(document: str, meta: dict[str, Any], trust: Trust) -> Entry:
    document = document or ""
    return _refiled(Entry(document, word_sketch(document), "", "", False), meta, trust)


def _refiled(entry: Entry, meta: dict[str, Any], trust: Trust) -> Entry:
    """`entry` with the filter fields of `meta`, its tag checked again.

    Ids are content-addressed, so the text and sketch of a known id never change and a reload
    does not recompute them (a record rewritten in place under its id fails its tag check
    when the store reads it back).
    """
    return entry._replace(
        request=str(meta.get("request_fingerprint", "")),
        code=str(meta.get("code", "")),
        trusted=trust(entry.document, meta),
    )
