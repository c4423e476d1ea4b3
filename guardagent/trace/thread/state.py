"""Per-thread incremental index of a trace: what every earlier message contains, kept small.

An agent thread is guarded call after call, and each call brings the whole conversation
again. Reading every message again (normalising it, finding its e-mail addresses, URLs,
IBANs, phone numbers, amounts, dates and words) would make the n-th call cost the whole
thread. :class:`TraceIndex` keeps what that reading produced, so each call reads only the
messages that are new since the last one:

- **postings**: for every key a message contains (typed keys from
  :mod:`guardagent.trace.found.values` and ``w:<token>`` for each word), the messages that contain
  it. A message is read as written and, when it holds backslashes, once more with its
  string-literal escapes read (:func:`~guardagent.trace.text.normal.unescape`: a tool result that
  prints JSON or a Python repr); it contains what either reading holds. Keys are stored
  as 64-bit BLAKE2b digests: the state holds no conversation text but the last
  :data:`WINDOW` characters of each source's last message (for splits, below).
- **echo exclusion**: a tool result does not count as a source of what its own call's
  arguments put into it (``search_contacts("x@evil.com")`` answering "no contact
  x@evil.com" does not make that address the user's data): the keys of the call's
  arguments are left out of the result's postings.
- **written**: every key the model put into an earlier call's arguments (in every form
  the tool may store it: :func:`written_keys`), with the first message that did. A
  trusted tool's result that holds a value the model wrote before it
  (``add_contact("eve@evil.example")``, then ``search_contacts`` listing it) only gives
  back what the model stored: :mod:`~guardagent.trace.sources.provenance` does not count it as a
  trusted source of that value. Always kept, whatever the size budget (it can only lower
  trust).
- **splits**: a value written across two consecutive messages of one source (an IBAN
  whose last groups arrive in the next chunk) is read from the joined boundary (the last
  and first :data:`WINDOW` characters) and posted to both messages.
- **hash chain**: one SHA-256 over every message the index has seen (role, source, ids,
  status, text, calls: :mod:`~guardagent.trace.document.chain`), and each message's own digest. A
  call whose trace changed, dropped or moved a message the index has seen is unreadable
  (``trace_rewritten``), naming the first changed message (the per-message digests are
  computed only then). A host that edits a message on purpose (a reviewer's edit of a
  pending call) says so with :meth:`truncate`.

Cost. Each update hashes every message once (one C-speed SHA-256 over the thread, needed to
see a rewrite anywhere; only the new ones when the parse resumed from messages whose chain
this process computed, :mod:`~guardagent.trace.document.resume`) and *reads* only new ones; the
counters in :attr:`TraceIndex.work` say how much of each was done, and the tests check them.
A fresh index (a call with no thread state) may defer its reading (:meth:`TraceIndex.defer`):
the call's questions are answered from the messages that may hold what they ask about
(:mod:`~guardagent.trace.sources.lookup`), and the index is read in full only when its state is.
Restoring a state copies nothing but its tables' outer dicts: a posting list of the state is
copied when a new message is first posted to it, so the host's state object never changes.

Trust. Whoever can write the thread's state could forge an index (post an attacker's IBAN
under the user's first message). With a deployment key (``key=``), :meth:`to_json` signs
the state (HMAC-SHA256 over its canonical JSON) and :meth:`from_json` refuses a state
without a valid signature (``unreadable_state``). Without a key nothing authenticates it:
:mod:`~guardagent.trace.event.restore` uses such a state only to deny (a rewritten history, an
approval already used), never as evidence; the thread is read from its messages.

Year. Dates written without a year are read in the thread's year, fixed at its first
message: the current date its system messages state, else the host's (part of the state).

Size. The state is plain JSON (for a LangGraph checkpoint). A message whose postings would
take the state over ``max_state_bytes`` (default 1 MB) is not posted; it is listed as
*unindexed* and read again at query time (correct, but its cost is then paid per call).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from guardagent.readers.evidence import unreadable
from guardagent.surrogates import without_surrogates
from guardagent.trace.document.chain import GENESIS, chains
from guardagent.trace.document.resume import content_digest
from guardagent.trace.document.shapes import Message, ToolCall, Trace
from guardagent.trace.found.dates import host_year
from guardagent.trace.found.reading import (
    CALLS,
    MAX_CACHED_CALLS,
    NOTHING,
    READ_AHEAD,
    Reading,
    boundary_keys,
    key_hash,
    message_reading,
    read_ahead,
    readings,
    text_keys,
)
from guardagent.trace.found.today import trace_year
from guardagent.trace.found.values import read_argument
from guardagent.trace.text.budget import check_budget
from guardagent.trace.text.normal import reading_form
from guardagent.trace.thread import state_text

STATE_FORMAT = "guardagent-trace-index/5"
_OLDER_FORMATS = frozenset(
    {
        "guardagent-trace-index/1",
        "guardagent-trace-index/2",
        "guardagent-trace-index/3",
        "guardagent-trace-index/4",
    }
)
"""States of earlier versions (other readings): the thread is read again from its start."""
MAX_STATE_BYTES = 1_000_000
"""Default budget of a serialised state."""

WINDOW = 48
"""Characters read on each side of a boundary between two messages of one source (an IBAN
written in groups of four is 42 characters at most)."""


def _short(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest[:9]).decode("ascii")


def short_digest(message: Message) -> str:
    """A message's digest as the state keeps it (:attr:`TraceIndex.hashes`)."""
    return _short(message.digest)


def flatten(args: Any, path: str = "") -> list[tuple[str, Any]]:
    """Scalar leaves of a call's arguments as ``(path, value)``: ``to``, ``to[0]``, ``a.b``."""
    if isinstance(args, Mapping):
        out: list[tuple[str, Any]] = []
        for key, value in args.items():
            out.extend(flatten(value, f"{path}.{key}" if path else str(key)))
        return out
    if isinstance(args, list | tuple):
        return [leaf for i, item in enumerate(args) for leaf in flatten(item, f"{path}[{i}]")]
    return [(path, args)]


MAX_CACHED_CALL_CHARS = 4096
"""Calls whose string arguments are longer in all are read each time (the cache stays small)."""


def _cached_call(
    kind: str,
    call: ToolCall,
    region: str | None,
    year: int | None,
    read: Callable[[list[Any], str | None, int], frozenset[str]],
) -> frozenset[str]:
    """A reading of a call's scalar arguments, kept by their values and types.

    Both readings depend only on the scalar values (not on names or nesting), the region
    and the year; arguments that cannot be a dictionary key, or too long, are read each time.
    """
    year = host_year() if year is None else year
    scalars = [v for _, v in flatten(call.args)]
    if sum(len(v) for v in scalars if isinstance(v, str)) > MAX_CACHED_CALL_CHARS:
        return read(scalars, region, year)
    key = (kind, region, year, *((type(v), v) for v in scalars))
    try:
        found = CALLS.get(key)
    except TypeError:
        return read(scalars, region, year)
    if found is None:
        found = read(scalars, region, year)
        if len(CALLS) >= MAX_CACHED_CALLS:
            CALLS.clear()
        CALLS[key] = found
    return found


def _call_keys(scalars: list[Any], region: str | None, year: int) -> frozenset[str]:
    keys: set[str] = set()
    for scalar in scalars:
        for value, _ in read_argument(scalar, region=region, year=year):
            keys.update(value.keys)
            keys.update(k for _, k in value.parts)
            keys.update("w:" + t for t in value.tokens)
    return frozenset(keys)


def _written_keys(scalars: list[Any], region: str | None, year: int) -> frozenset[str]:
    keys = set(_call_keys(scalars, region, year))
    for scalar in scalars:
        if not isinstance(scalar, str) or not scalar.strip():
            continue
        for form in dict.fromkeys((scalar, unquote(scalar), html.unescape(scalar))):
            keys |= text_keys(form, region, year)
    return frozenset(keys)


def call_keys(call: ToolCall, region: str | None, year: int | None = None) -> set[str]:
    """Every key a call's arguments contain (typed keys, URL parts, ``w:`` tokens)."""
    return set(_cached_call("call", call, region, year, _call_keys))


def written_keys(call: ToolCall, region: str | None, year: int | None = None) -> set[str]:
    """Every key a call's arguments may store, however the tool cleans them up.

    A tool that stores a value (a contacts app) may drop invisible characters, fold
    compatibility forms, decode ``%40`` or ``&#64;`` and read escapes before a trusted tool
    lists it back: ``add_contact("eve@evil\u200b.io")`` stores ``eve@evil.io``. The keys
    of :func:`call_keys` are joined by those of every such reading of each string
    argument, read as free text (:func:`text_keys`). Used only to refuse trust, so reading
    more can only deny.
    """
    return set(_cached_call("written", call, region, year, _written_keys))


_NO_ECHO: frozenset[str] = frozenset()


def echo_of(
    message: Message, trace: Trace, region: str | None, year: int | None = None
) -> set[str]:
    """Keys a tool result only repeats from the arguments of the call it answers."""
    if message.role != "tool":
        return set()
    call = trace.call_of(message)
    return call_keys(call, region, year) if call is not None else set()


def message_keys(
    message: Message, trace: Trace, region: str | None, year: int | None = None
) -> set[str]:
    """The keys a message is a source of (its own, less those echoed from its call)."""
    return text_keys(message.text, region, year) - echo_of(message, trace, region, year)


@dataclass
class Work:
    """What an update or a query actually did (for tests and benchmarks)."""

    messages_hashed: int = 0
    bytes_hashed: int = 0
    messages_read: int = 0
    chars_read: int = 0
    messages_verified: int = 0
    messages_rescanned: int = 0


class TraceIndex:
    """The incremental index of one thread (see the module docstring).

    Args:
        region: Default phone region (from the labels); part of the state, since it
            changes what is read.
        max_state_bytes: Budget of the serialised state.
    """

    def __init__(self, region: str | None = None, max_state_bytes: int = MAX_STATE_BYTES) -> None:
        self.region = region
        self.year: int | None = None
        self.max_state_bytes = max_state_bytes
        self.count = 0
        self.chain = GENESIS
        self.hashes: list[str] = []
        self.sources: list[int] = []
        self.source_names: list[str] = []
        self.postings: dict[str, list[int]] = {}
        self.tails: dict[str, tuple[int, str]] = {}
        self.unindexed: list[int] = []
        self.written: dict[str, int] = {}
        self.work = Work()
        self._size = 400
        self.shared: dict[str, list[int]] = {}  # postings lists that are the host's state's
        self.deferred: Trace | None = None  # a fresh index's trace, not read yet (defer)
        self.summaries = 0  # conversation summaries the thread went through (restore.py)
        self.carried: dict[str, list[int]] = {}  # key hash -> sources of summarised messages
        self.texts: dict[str, str] = {}  # the verified state's postings text (state_text)
        self.copied: set[str] = set()  # keys whose shared list was copied to be changed

    # -- reading a trace -------------------------------------------------------------------

    def update(self, trace: Trace) -> list[int]:
        """Check the trace against what the index has seen, then read its new messages.

        Returns:
            The indices of the messages read now.

        Raises:
            UnreadableEvidence: ``trace_rewritten`` when a message seen before changed or
                is gone.
        """
        self.complete()
        messages = trace.messages
        chain = self.check_unchanged(trace)
        new = list(range(self.count, len(messages)))
        if self.year is None:
            stated = trace_year([reading_form(m.text) for m in messages if m.role == "system"])
            self.year = stated or host_year()
        for i in new:
            check_budget()
            self._read(messages[i], trace)
        self.count = len(messages)
        self.chain = chain
        return new

    def check_unchanged(self, trace: Trace) -> str:
        """Check that the trace begins with the messages the index saw, as they were.

        One hash over the thread (:mod:`~guardagent.trace.document.chain`); the per-message digests
        are compared only to name the first changed message. Reads nothing.

        Returns:
            The hash chain of all the trace's messages (its SHA-256 object kept in
            ``self.hasher``, for :mod:`~guardagent.trace.document.resume`).

        Raises:
            UnreadableEvidence: ``trace_rewritten`` when a message seen before changed or
                is gone.
        """
        messages = trace.messages
        if len(messages) < self.count:
            unreadable(
                "trace_rewritten",
                f"the thread had {self.count} messages at its last "
                f"check and now has {len(messages)}: messages were removed",
            )
        resumed = trace.resumed  # a parse resumed from messages whose chain is known
        known = (len(resumed.messages), resumed.chain) if resumed and resumed.chain else None
        seen, chain, self.hasher = chains(messages, self.count, known)  # one hash, the thread
        hashed = messages[known[0] :] if known and known[0] <= self.count else messages
        self.work.messages_hashed += len(hashed)
        self.work.bytes_hashed += sum(len(m.text) for m in hashed)
        if self.count and seen != self.chain:  # name the first changed message
            for i, message in enumerate(messages[: self.count]):
                if _short(message.digest) != self.hashes[i]:
                    unreadable(
                        "trace_rewritten",
                        f"message {i} ({message.source}) changed since the thread's last check",
                    )
            if self.chain:  # "": unknown since a truncate, the messages' digests decide
                unreadable(
                    "trace_rewritten", "the thread's hash chain does not match its last check"
                )
        return chain

    def defer(self, trace: Trace) -> None:
        """Take a fresh index's trace without reading it (read by :meth:`complete`).

        A call with no thread state asks about a few values (:mod:`~guardagent.trace.sources.lookup`
        answers it from the messages that may hold them); the index is read in full only
        when its state is asked for. What the call needs at once is set now: the count,
        the hash chain (for :mod:`~guardagent.trace.document.resume`) and the year. Every query of
        this class (:meth:`ids`, :meth:`written_before`, :meth:`source_of`, :meth:`to_json`,
        :meth:`truncate`, :meth:`update`) completes the index first, so it answers exactly
        what :meth:`update` would have.

        Raises:
            ValueError: the index is not fresh (it has read or restored messages).
        """
        if self.count or self.postings or self.written or self.deferred is not None:
            raise ValueError("only a fresh index defers its reading")
        messages = trace.messages
        resumed = trace.resumed
        known = (len(resumed.messages), resumed.chain) if resumed and resumed.chain else None
        _, self.chain, self.hasher = chains(messages, 0, known)
        hashed = messages[known[0] :] if known and known[0] <= 0 else messages
        self.work.messages_hashed += len(hashed)
        self.work.bytes_hashed += sum(len(m.text) for m in hashed)
        if self.year is None:  # a restored state of no message keeps its year, as update does
            stated = trace_year([reading_form(m.text) for m in messages if m.role == "system"])
            self.year = stated or host_year()
        self.count = len(messages)
        self.deferred = trace

    def complete(self) -> None:
        """Read a deferred trace (:meth:`defer`) as :meth:`update` would have."""
        trace = self.deferred
        if trace is None:
            return
        self.deferred = None
        count, self.count = self.count, 0
        try:
            for message in trace.messages:
                check_budget()
                self._read(message, trace)
        except BaseException:  # a partial reading is no index: this one is unusable
            self.deferred, self.count = trace, count
            self.postings, self.written, self.tails, self.unindexed = {}, {}, {}, []
            self.hashes, self.sources, self.source_names, self._size = [], [], [], 400
            raise
        self.count = count

    def _source_id(self, source: str) -> int:
        try:
            return self.source_names.index(source)
        except ValueError:
            self.source_names.append(source)
            self._size += len(source) + 4
            return len(self.source_names) - 1

    def _read(self, message: Message, trace: Trace) -> None:
        text, index, region, year = message.text, message.index, self.region, self.year
        self.work.messages_read += 1
        self.work.chars_read += len(text)
        if (index - self.count) % READ_AHEAD == 0:  # the next new messages, read together
            read_ahead((m.text for m in trace.messages[index : index + READ_AHEAD]), region, year)
        echo = echo_of(message, trace, region, year) if message.role == "tool" else _NO_ECHO
        reading = message_reading(text, region, year)
        hashes: Set[str] = reading.hashes
        if echo and not echo.isdisjoint(reading.hashed):
            hashes = {h for k, h in reading.hashed.items() if k not in echo}
        self.hashes.append(_short(message.digest))
        self.sources.append(self._source_id(message.source))
        self._size += 16 + len(str(len(self.sources)))
        width = len(str(index))
        written = self.written
        for call in message.calls:
            for key in _cached_call("written", call, region, year, _written_keys):
                h = key_hash(key)
                if h not in written:
                    written[h] = index
                    self._size += 16 + width
        postings = self.postings
        limit = self.max_state_bytes - self._size
        if (width + 17) * len(hashes) > limit:  # near the budget: the exact cost
            fresh = sum(h not in postings for h in hashes)
            if (width + 1) * len(hashes) + 16 * fresh > limit:
                self.unindexed.append(index)
                self._size += width + 1
                return
        added = appended = size = 0
        get, shared = postings.get, self.shared
        for h in hashes:
            ids = get(h)
            if ids is None:
                postings[h] = [index]
                added += 1
            elif ids and ids[-1] < index and not (shared and ids is shared.get(h)):
                ids.append(index)  # messages are read in order: most posts append
                appended += 1
            else:
                size += self._post(h, index)
        self._size += size + (16 + width) * added + (1 + width) * appended
        normalized = reading_form(readings(text)[-1] if "\\" in text else text)
        prev = self.tails.get(message.source)
        if prev is not None:
            for key, h in self._crossing(message, normalized).hashed.items():
                if key not in echo:
                    self._size += self._post(h, prev[0]) + self._post(h, index)
        self.tails[message.source] = (index, normalized[-WINDOW:])

    def _post(self, h: str, index: int) -> int:
        """Post a key's hash under a message; returns the bytes the state grew by."""
        ids = self.postings.get(h)
        if ids is None:
            self.postings[h] = [index]
            return 16 + len(str(index))
        at = bisect_left(ids, index)
        if at == len(ids) or ids[at] != index:
            if self.shared and ids is self.shared.get(h):  # the host's state's: copy, change
                ids = self.postings[h] = ids.copy()
                self.copied.add(h)  # its kept text is stale (state_text)
            ids.insert(at, index)
            return 1 + len(str(index))
        return 0

    def _crossing(self, message: Message, normalized: str) -> Reading:
        """Keys (with hashes) of typed values spanning the boundary with the source's last."""
        prev = self.tails.get(message.source)
        if prev is None or not normalized or message.source == "model":
            return NOTHING  # model text is never a source: its splits do not matter
        return boundary_keys(prev[1], normalized[:WINDOW], self.region, self.year)

    def truncate(self, count: int) -> None:
        """Forget messages from `count` on (a host that rewrote them on purpose says so).

        The next :meth:`update` reads them again. Costs one pass over the postings.
        """
        self.complete()
        if count >= self.count:
            return
        count = max(0, count)
        self.postings = {
            h: kept for h, ids in self.postings.items() if (kept := [i for i in ids if i < count])
        }
        self.texts = {}  # every list written again
        self.unindexed = [i for i in self.unindexed if i < count]
        self.tails = {s: t for s, t in self.tails.items() if t[0] < count}
        self.written = {h: i for h, i in self.written.items() if i < count}
        del self.hashes[count:]
        del self.sources[count:]
        self.count = count
        self.chain = ""  # unknown until the next update re-hashes the kept messages
        self._size = len(json.dumps(self.to_json()))

    # -- queries ---------------------------------------------------------------------------

    def ids(self, key: str) -> list[int]:
        """Messages posted under a key (unindexed messages not included).

        A posting restored from a checkpoint is checked here, when used, rather than all
        of them on every restore.
        """
        self.complete()
        ids = self.postings.get(key_hash(key), [])
        if not all(type(i) is int and 0 <= i < self.count for i in ids):
            unreadable("unreadable_state", "the thread's trace index holds a bad posting")
        return ids

    def written_before(self, key: str, index: int) -> bool:
        """Whether the model put `key` into a call's arguments before message `index`."""
        self.complete()
        at = self.written.get(key_hash(key))
        return at is not None and at < index

    def source_of(self, index: int) -> str:
        """The source of a message the index has seen."""
        self.complete()
        return self.source_names[self.sources[index]]

    # -- state -----------------------------------------------------------------------------

    def to_json(self, key: bytes | None = None) -> dict[str, Any]:
        """The state as JSON-able data (for a checkpoint), signed when given a key.

        Its texts (source names, the tails kept for the next boundary) are written with each
        lone surrogate as U+FFFD (:mod:`guardagent.surrogates`): a checkpointer encodes
        the state as UTF-8 (msgpack, JSON), which refuses one; a tail's surrogate is no part
        of any value a boundary is read for. Signed as written: read back identically.
        """
        self.complete()
        data: dict[str, Any] = {
            "format": STATE_FORMAT,
            "region": self.region,
            "year": self.year,
            "count": self.count,
            "chain": self.chain,
            "hashes": "".join(self.hashes),
            "sources": self.sources,
            "source_names": without_surrogates(self.source_names),
            "postings": self.postings,
            "tails": without_surrogates({s: [i, t] for s, (i, t) in self.tails.items()}),
            "unindexed": self.unindexed,
            "written": self.written,
            "size": self._size,
        }
        if self.summaries:  # a thread no summary rewrote keeps the state it always had
            data["summaries"] = self.summaries
            data["carried"] = self.carried
        if key is not None:  # only the lists this call changed are written again (state_text)
            text, texts = state_text.body(data, self.shared, self.texts, self.copied)
            data["mac"] = _mac(text, key)
            _remember_signed(data, key)  # its next verify needs no canonical JSON
            state_text.keep(key, data["mac"], texts)
        return data

    @classmethod
    def from_json(
        cls,
        data: Any,
        *,
        region: str | None = None,
        max_state_bytes: int = MAX_STATE_BYTES,
        key: bytes | None = None,
    ) -> TraceIndex:
        """A state read back from a checkpoint.

        A state made under another phone region starts over (the readings differ); a
        state that is not one this module wrote, or (with a key) not signed with it, is
        unreadable (``unreadable_state``).
        """
        index = cls(region, max_state_bytes)
        if data is None:
            return index
        if key is not None and not (isinstance(data, Mapping) and verify(data, key)):
            unreadable(
                "unreadable_state",
                "the thread's trace index is not signed by this "
                "deployment (altered, or written by someone else)",
            )
        try:
            if data.get("format") in _OLDER_FORMATS:
                return index
            if data.get("format") != STATE_FORMAT:
                raise ValueError("format")
            if data.get("region") != region:
                return index
            count = int(data["count"])
            hashes = str(data["hashes"])
            sources = list(map(int, data["sources"]))
            names = [str(n) for n in data["source_names"]]
            if len(hashes) != 12 * count or len(sources) != count:
                raise ValueError("lengths")
            if sources and not (min(sources) >= 0 and max(sources) < len(names)):
                raise ValueError("sources")
            postings = data["postings"]
            if (
                type(postings) is not dict
                or not set(map(type, postings.values())) <= {list}
                or not all(postings.values())
            ):
                raise ValueError("postings")  # each list's items are checked when used (ids)
            tails = {str(s): (int(v[0]), str(v[1])) for s, v in data["tails"].items()}
            unindexed = [int(i) for i in data["unindexed"]]
            written = {str(h): int(i) for h, i in data["written"].items()}
            chain = str(data["chain"])
            year = data.get("year")
            if year is not None and (type(year) is not int or not 1 <= year <= 9999):
                raise ValueError("year")
            size = int(data.get("size", 0)) or len(json.dumps(data))
            summaries = data.get("summaries", 0)
            if type(summaries) is not int or summaries < 0:
                raise ValueError("summaries")
            carried = {
                str(h): [int(i) for i in ids] for h, ids in (data.get("carried") or {}).items()
            }
            if not all(0 <= i < len(names) for ids in carried.values() for i in ids):
                raise ValueError("carried")
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            unreadable("unreadable_state", f"the thread's trace index cannot be read ({exc})")
        index.count = count
        index.year = year
        index.chain = chain
        index.hashes = [hashes[i : i + 12] for i in range(0, len(hashes), 12)]
        index.sources = sources
        index.source_names = names
        index.postings = dict(postings)  # the host's lists are copied when first posted to
        index.shared = postings  # (_post): its state stays as it was, a signed one valid
        index.tails = tails
        index.unindexed = unindexed
        index.written = written
        index._size = size
        index.summaries = summaries
        index.carried = carried
        if key is not None:  # verified: the text of its lists, if this process signed it
            index.texts = state_text.kept(key, data.get("mac"), postings)
        return index

    def summarised(self, at: int, replaced: int) -> TraceIndex:
        """A fresh index for the thread once a summary replaced messages ``at..replaced-1``.

        The messages are read again from the trace (the summary as the model's untrusted
        text, :mod:`~guardagent.trace.text.summaries`); kept are the thread's year, what the
        calls of the messages up to `replaced` wrote (:meth:`written_before`: it only takes
        trust away), the replaced ones' as written just before the summary's place, and, per
        key, the sources of the replaced messages that held it (:attr:`carried`, an earlier
        summary's too): a value the summary repeats keeps the sources it had, but the
        model's and those of a tool result repeating what the model had written.
        """
        self.complete()
        fresh = TraceIndex(self.region, self.max_state_bytes)
        fresh.year = self.year
        fresh.summaries = self.summaries + 1
        fresh.written = {h: min(i, at) for h, i in self.written.items() if i < replaced}
        fresh._size += sum(16 + len(str(i)) for i in fresh.written.values())
        carried: dict[str, set[str]] = {
            h: {self.source_names[s] for s in ids} for h, ids in self.carried.items()
        }
        for h, ids in self.postings.items():
            if not all(type(i) is int and 0 <= i < self.count for i in ids):
                unreadable("unreadable_state", "the thread's trace index holds a bad posting")
            first_written = self.written.get(h)
            for i in ids[bisect_left(ids, at) :]:
                if i >= replaced:
                    break
                name = self.source_names[self.sources[i]]
                if name == "model" or (
                    name.startswith("tool:") and first_written is not None and first_written < i
                ):
                    continue  # model text is nobody's; a tool repeating the model launders
                carried.setdefault(h, set()).add(name)
        for h, names in carried.items():
            if names:
                fresh.carried[h] = sorted(fresh._source_id(n) for n in names)
                fresh._size += 20 + 4 * len(names)
        return fresh

    def carried_sources(self, keys: Iterable[str]) -> list[str]:
        """The sources summarised messages holding any of the keys had (:meth:`summarised`)."""
        if not self.carried:
            return []
        found = {i for key in keys for i in self.carried.get(key_hash(key), ())}
        return sorted(self.source_names[i] for i in found)


def sign(data: Mapping[str, Any], key: bytes) -> str:
    """HMAC-SHA256 of a JSON object's canonical form (its ``mac`` left out)."""
    return _mac(state_text.canonical(data), key)


def _mac(body: str, key: bytes) -> str:
    return hmac.new(key, body.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def verify(data: Mapping[str, Any], key: bytes) -> bool:
    """Whether a JSON object carries a valid ``mac`` made with `key`.

    A thread state this process signed (:meth:`TraceIndex.to_json`) is recognised without
    its canonical JSON (most of a with-state call's time under a key): when `data` is,
    type for type, the object signed with that key and mac (the same
    :func:`~guardagent.trace.document.resume.content_digest`), its canonical JSON, hence its HMAC,
    is the one computed then. Anything else is checked in full.
    """
    mac = data.get("mac")
    if not isinstance(mac, str):
        return False
    with _signed_lock:
        known = _signed.get((key, mac))
    if known is not None and content_digest([data]) == known:
        return True
    return hmac.compare_digest(mac, sign(data, key))


_signed: OrderedDict[tuple[bytes, str], bytes] = OrderedDict()
"""(key, mac) -> content digest of the state this process signed with them (bounded)."""
_signed_lock = threading.Lock()
MAX_SIGNED = 4096


def _remember_signed(data: Mapping[str, Any], key: bytes) -> None:
    digest = content_digest([data])
    if digest is None:
        return
    with _signed_lock:
        _signed[(key, data["mac"])] = digest
        while len(_signed) > MAX_SIGNED:
            _signed.popitem(last=False)


def posted(index: TraceIndex, keys: Iterable[str]) -> set[int]:
    """Messages posted under any of the keys."""
    found: set[int] = set()
    for key in keys:
        found.update(index.ids(key))
    return found
