"""The canonical JSON a thread state is signed over, its postings' text kept between calls.

Why: a signed thread state (:meth:`~guardagent.trace.state.TraceIndex.to_json`) is MACed
over its canonical JSON (:func:`canonical`: keys sorted, no spaces). At 100 messages most of
that text is the postings (about 33 KB of ``"key hash":[message ids]``), and serialising
them again on every call was about a quarter of a decision with state, though a call
changes only the few lists its new messages post to. This module produces **the same
bytes** with less work: each key's ``"hash":[ids]`` text is kept per state this process
signed (:func:`keep`, bounded), and the next call of that thread renders only the lists
that are not the verified state's own (new keys, and lists copied when first posted to:
``TraceIndex._post``). The MAC does not change, so states written by older versions or
other processes verify exactly as before, and a forged, unsigned or rolled-back state is
refused exactly as before (verification is untouched; this is only how we sign).

Why it is safe: kept texts are found by ``(key, mac)`` of a state that *verified* with
that key, so their state's canonical JSON is the one they were rendered from (an HMAC
names its text); a kept text is used only for a list that is, by identity, the verified
state's own list (the host's, never changed by the index: ``TraceIndex.shared``). Any other
list is rendered from its current content. Were a text ever wrong, the state would not
verify at its next call: a denial (``unreadable_state``), never an allow.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

MAX_KEPT_CHARS = 32 * 1024 * 1024
"""Postings text kept at most (characters; successive states of a thread share theirs)."""
MAX_KEPT_STATES = 1024
"""States whose postings text is kept at most (least recently signed first out)."""

_kept: OrderedDict[tuple[bytes, str], tuple[dict[str, str], int]] = OrderedDict()
_lock = threading.Lock()
_held = 0
rendered = 0
"""Posting lists rendered to text so far (tests count the work of a call with it)."""


def canonical(data: Mapping[str, Any]) -> str:
    """The canonical JSON of a state's object, its ``mac`` left out (what is signed)."""
    return json.dumps({k: v for k, v in data.items() if k != "mac"}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False, default=str)  # fmt: skip


def postings_texts(
    postings: Mapping[str, list[int]], shared: Mapping[str, list[int]], kept: Mapping[str, str]
) -> dict[str, str]:
    """Each key's ``"hash":[ids]`` text: kept for the verified state's own lists, else new.

    With nothing kept (a new thread, or a state this process did not sign) every list is
    new: they are written in one :func:`json.dumps` and the text split at its lists' ends
    (:func:`_split`), which costs what signing them always cost.
    """
    global rendered
    if not kept and (texts := _split(postings)) is not None:
        rendered += len(texts)
        return texts
    out: dict[str, str] = {}
    fresh = 0
    for h, ids in postings.items():
        text = kept.get(h) if shared.get(h) is ids else None
        if text is None:
            fresh += 1
            text = _written(h, ids)
        out[h] = text
    rendered += fresh
    return out


_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
"""The characters of a key hash (URL-safe base64: :func:`~guardagent.trace.reading.key_hash`)."""


def _written(h: str, ids: list[int]) -> str:
    """One list's text, as :func:`json.dumps` writes it inside the canonical JSON."""
    if type(h) is str and _PLAIN.issuperset(h) and all(type(i) is int for i in ids):
        return f'"{h}":[{",".join(map(str, ids))}]'
    return canonical({h: ids})[1:-1]


def _split(postings: Mapping[str, list[int]]) -> dict[str, str] | None:
    """Every list's text from one :func:`json.dumps` of the postings (None: keys not plain).

    With key hashes only (no ``]`` or ``,`` in a key) and lists of ints, the canonical text
    is ``{t1,t2,...}`` with each ``t`` ending in ``]`` and none holding ``],``.
    """
    ordered = sorted(postings)
    if not ordered:
        return {}
    if not (all(type(h) is str for h in ordered) and _PLAIN.issuperset("".join(ordered))):
        return None
    parts = canonical(postings)[1:-1].split("],")
    if len(parts) != len(ordered):
        return None
    texts = {h: part + "]" for h, part in zip(ordered, parts[:-1], strict=False)}
    texts[ordered[-1]] = parts[-1]
    return texts


def canonical_with(data: Mapping[str, Any], texts: Mapping[str, str]) -> str:
    """:func:`canonical` of a state whose ``postings`` are written from `texts`.

    The object's other fields are small and serialised as :func:`canonical` does; the
    postings' text is spliced in at its sorted place, so the bytes are the same.
    """
    before = {k: v for k, v in data.items() if k < "postings" and k != "mac"}
    after = {k: v for k, v in data.items() if k > "postings" and k != "mac"}
    postings = "{" + ",".join([texts[h] for h in sorted(texts)]) + "}"
    head = canonical(before)[:-1] + ("," if before else "")
    tail = ("," + canonical(after)[1:]) if after else "}"
    return f'{head}"postings":{postings}{tail}'


def keep(key: bytes, mac: str, texts: dict[str, str]) -> None:
    """Keep a signed state's postings texts for its thread's next call (bounded)."""
    global _held
    size = sum(map(len, texts.values()))
    if size > MAX_KEPT_CHARS:
        return
    with _lock:
        old = _kept.pop((key, mac), None)
        _held -= old[1] if old is not None else 0
        _kept[(key, mac)] = (texts, size)
        _held += size
        while len(_kept) > MAX_KEPT_STATES or _held > MAX_KEPT_CHARS:
            _held -= _kept.popitem(last=False)[1][1]


def kept(key: bytes, mac: Any) -> dict[str, str]:
    """The postings texts of the state signed with `key` and `mac` (empty: none kept).

    Call only for a state that verified with `key` (see the module docstring).
    """
    if not isinstance(mac, str):
        return {}
    with _lock:
        entry = _kept.get((key, mac))
    return entry[0] if entry is not None else {}


def forget() -> None:
    """Drop every kept text (tests and benchmarks: a process that never signed the state)."""
    global _held
    with _lock:
        _kept.clear()
        _held = 0
