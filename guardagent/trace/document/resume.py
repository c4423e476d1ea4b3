"""A thread's parsed messages, kept per process: its next call parses only the new ones.

A thread is guarded call after call, and each call brings every earlier message again.
:class:`~guardagent.trace.thread.state.TraceIndex` already reads only the new messages; this
module spares the parse of the old ones (and the rewrite check's hashing of them) when the
process served the thread's previous call:

- after a call, :func:`remember` keeps the reader's state at the end of its messages
  (:class:`ReadState`: the messages, the calls and results seen, the size read) under the
  hash chain of those messages, which is what the thread state handed back says it saw
  (``trace_state["chain"]``), with the chain's SHA-256 object;
- the next call gives that state back: :func:`resumable` finds the entry by the state's
  chain and :func:`~guardagent.trace.document.messages.parse_trace` resumes from it, **only if**
  the first raw messages of the new trace are exactly the ones read then (the same
  :func:`content_digest`), read under the same labels and size limit. Otherwise (another
  process, an evicted entry, any difference) the trace is parsed from its start, as
  without this module; the result is the same either way.

Why it is safe:

- *Keyed by everything the result depends on.* Reading a list of raw messages is a pure
  function of their content, the labels (tool results split by their labelled fields) and
  the size limit. :func:`content_digest` is SHA-256 over a pickle of the raw messages that
  refuses any type but plain ``dict``, ``list``, ``tuple``, ``str``, ``int``, ``float``,
  ``bool``, ``None`` (and ``bytes`` / sets), so it tells every difference a reader could
  see apart (a tuple from a list, ``1`` from ``True``, an ``int`` key from a ``str`` one);
  messages given as objects (LangChain messages) are never kept. The labels must be the
  same object, the size limit the same number.
- *No shared mutable state.* An entry is kept only when the parse holds no container of
  the host's (arguments given as a mapping with nested lists or objects are the host's;
  arguments given as JSON text, the usual case, are the reader's own), so a host that
  edits its message objects after a call cannot change what a later call resumes from.
  The reader continues on copies of the entry's tables.
- *No thread sees another's facts.* An entry is found by a chain (a hash of the parsed
  messages) and used only for raw messages identical to the ones it was read from: what a
  call resumes from is exactly what parsing its own messages gives. The thread state is
  still checked in full afterwards (signature, rewrite check, ledger).
- *Bounded.* :data:`MAX_ENTRIES` entries and :data:`MAX_BYTES` of message text, least
  recently used first out; the lock makes it safe for a server's threads.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from guardagent.trace.document.shapes import ReadState

if TYPE_CHECKING:
    pass

MAX_ENTRIES = 256
"""Threads kept at most."""
MAX_BYTES = 32 * 1024 * 1024
"""Message text kept at most (UTF-8 bytes, as the reader counts them)."""


class _PlainPickler(pickle.Pickler):
    """A pickler of plain data only: any other object is refused (no digest)."""

    def reducer_override(self, obj: Any) -> Any:
        # called for every object but exact dict, list, tuple, str, bytes, int, float,
        # bool, None, set and frozenset (CPython pickles those itself)
        raise pickle.PicklingError(f"not plain data: {type(obj).__name__}")


def content_digest(items: Sequence[Any]) -> bytes | None:
    """SHA-256 of a list of raw messages, or None when they are not plain data."""
    buffer = io.BytesIO()
    try:
        _PlainPickler(buffer, protocol=5).dump(list(items))
    except Exception:  # noqa: BLE001 - any refusal (an object, a cycle too deep): no digest
        return None
    return hashlib.sha256(buffer.getvalue()).digest()


_entries: OrderedDict[str, ReadState] = OrderedDict()
_lock = threading.Lock()
_held = 0


def resumable(thread_state: Any) -> ReadState | None:
    """The entry the state's chain names, if this process kept one (a hint: checked by use)."""
    chain = thread_state.get("chain") if isinstance(thread_state, Mapping) else None
    if not isinstance(chain, str):
        return None
    with _lock:
        entry = _entries.get(chain)
        if entry is not None:
            _entries.move_to_end(chain)
    return entry


def remember(chain: str, read: ReadState | None, hasher: Any) -> None:
    """Keep a call's read messages under their chain (hex) with the chain's SHA-256 object."""
    global _held
    if read is None or hasher is None or read.size > MAX_BYTES:
        return
    entry = replace(read, chain=hasher.copy())
    with _lock:
        old = _entries.pop(chain, None)
        _held -= old.size if old is not None else 0
        _entries[chain] = entry
        _held += entry.size
        while len(_entries) > MAX_ENTRIES or _held > MAX_BYTES:
            _held -= _entries.popitem(last=False)[1].size


def forget() -> None:
    """Drop every entry (tests and benchmarks: a process that never saw the thread)."""
    global _held
    with _lock:
        _entries.clear()
        _held = 0
