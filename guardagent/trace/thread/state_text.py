"""The canonical JSON a thread state is signed over, its postings' text kept between calls.

Why: a signed thread state (:meth:`~guardagent.trace.thread.state.TraceIndex.to_json`) is MACed
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
from collections.abc import Mapping, Set
from typing import Any

MAX_KEPT_CHARS = 32 * 1024 * 1024
"""Postings text kept at most (characters; successive states of a thread share theirs)."""
MAX_KEPT_STATES = 1024
"""States whose postings text is kept at most (least recently signed first out)."""

_kept: OrderedDict[tuple[bytes, str], tuple[dict[str, str] | str, int]] = OrderedDict()
_lock = threading.Lock()
_held = 0
rendered = 0
"""Posting lists rendered to text so far (tests count the work of a call with it)."""


def canonical(data: Mapping[str, Any]) -> str:
    """The canonical JSON of a state's object, its ``mac`` left out (what is signed)."""
    return json.dumps(
        {k: v for k, v in data.items() if k != "mac"},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )


def body(
    data: Mapping[str, Any],
    shared: Mapping[str, list[int]],
    kept: Mapping[str, str],
    copied: Set[str] = frozenset(),
) -> tuple[str, dict[str, str] | str]:
    """The canonical JSON of a state (``data["postings"]`` its postings), and what to keep.

    Args:
        data: The state's object (its ``mac`` left out).
        shared: The verified state's postings (the index's lists are these, but the new
            keys' and the `copied` ones).
        kept: The texts of `shared` (:func:`kept`; empty: none kept).
        copied: Keys whose shared list the index copied to change it.

    Returns:
        The text to sign, and for :func:`keep` the lists' texts or, with nothing kept, the
        postings' whole text (split into lists only if the thread's next call comes here:
        :func:`kept`), so a state signed cold costs what signing always cost.
    """
    global rendered
    postings: Mapping[str, list[int]] = data["postings"]
    if kept and len(kept) == len(shared):  # only the new and copied lists are written
        texts = dict(kept)
        changed = (postings.keys() - shared.keys()) | copied
        for h in changed:
            texts[h] = _written(h, postings[h])
        rendered += len(changed)
        return _spliced(data, "{" + ",".join([texts[h] for h in sorted(texts)]) + "}"), texts
    whole = canonical(postings)
    rendered += len(postings)
    return _spliced(data, whole), whole


def _written(h: str, ids: list[int]) -> str:
    """One list's text, as :func:`json.dumps` writes it inside the canonical JSON."""
    if (
        h.isascii()
        and h.replace("-", "").replace("_", "").isalnum()
        and all(type(i) is int for i in ids)
    ):
        return f'"{h}":[{",".join(map(str, ids))}]'
    return canonical({h: ids})[1:-1]


def _split(postings: Mapping[str, list[int]], whole: str) -> dict[str, str] | None:
    """Every list's text from the postings' canonical text `whole` (None: not split).

    With str keys and list values the text is ``{t1,t2,...,tn}``, each ``t`` ending in
    ``]``: it holds n - 1 ``],`` between them, and any ``],`` inside a key or a list adds a
    part, so n parts are exactly the n lists' texts in sorted order.
    """
    ordered = sorted(postings)
    if not ordered:
        return {} if whole == "{}" else None
    if not (set(map(type, ordered)) == {str} and set(map(type, postings.values())) == {list}):
        return None
    parts = whole[1:-1].split("],")
    if len(parts) != len(ordered) or not whole.endswith("]}"):
        return None
    texts = {h: part + "]" for h, part in zip(ordered, parts[:-1], strict=False)}
    texts[ordered[-1]] = parts[-1]
    return texts


def _spliced(data: Mapping[str, Any], postings: str) -> str:
    """:func:`canonical` of `data` with its postings written as the text `postings`.

    The object's other fields are small and serialised as :func:`canonical` does; the
    postings' text is put at its sorted place, so the bytes are the same.
    """
    before = {k: v for k, v in data.items() if k < "postings" and k != "mac"}
    after = {k: v for k, v in data.items() if k > "postings" and k != "mac"}
    head = canonical(before)[:-1] + ("," if before else "")
    tail = ("," + canonical(after)[1:]) if after else "}"
    return f'{head}"postings":{postings}{tail}'


def keep(key: bytes, mac: str, texts: dict[str, str] | str) -> None:
    """Keep a signed state's postings texts for its thread's next call (bounded)."""
    global _held
    size = len(texts) if isinstance(texts, str) else sum(map(len, texts.values()))
    if size > MAX_KEPT_CHARS:
        return
    with _lock:
        old = _kept.pop((key, mac), None)
        _held -= old[1] if old is not None else 0
        _kept[(key, mac)] = (texts, size)
        _held += size
        while len(_kept) > MAX_KEPT_STATES or _held > MAX_KEPT_CHARS:
            _held -= _kept.popitem(last=False)[1][1]


def kept(key: bytes, mac: Any, postings: Mapping[str, list[int]]) -> dict[str, str]:
    """The texts of the lists of `postings`, a verified state's signed with `key` and `mac`.

    Empty when this process did not sign that state (or no longer keeps it). Call only for
    a state that verified with `key` (see the module docstring).
    """
    if not isinstance(mac, str):
        return {}
    with _lock:
        entry = _kept.get((key, mac))
    if entry is None:
        return {}
    if isinstance(entry[0], dict):
        return entry[0]
    texts = _split(postings, entry[0])
    if texts is None:
        return {}
    with _lock:  # split once: the same state given again finds the lists' texts
        if _kept.get((key, mac)) is entry:
            _kept[(key, mac)] = (texts, entry[1])
    return texts


def forget() -> None:
    """Drop every kept text (tests and benchmarks: a process that never signed the state)."""
    global _held
    with _lock:
        _kept.clear()
        _held = 0
