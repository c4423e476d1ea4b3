"""Where each value of the proposed call comes from: the earlier messages that contain it.

For every argument of the proposed call, every list element, and every typed value inside a
free-text argument (an address in a message body), the messages that contain it after
normalisation (:mod:`guardagent.trace.found.values`), and from those its **origin**:

- ``user``: a user message contains it;
- ``trusted``: else the system prompt or a ``trusted`` tool's result;
- ``untrusted``: else only ``untrusted`` tool results (mail, pages, others' messages);
- ``invented``: no user, system or tool message contains it (model text may: the model
  made it up or assembled it).

Search. Typed values are looked up by key in the thread's index
(:class:`~guardagent.trace.thread.state.TraceIndex`), and only by key: a typed value is found only
where the same whole value is written (``13`` is not in ``June 13``, which is a date), and
an address that is not from anyone has no key and is never found. A phrase (a ``text``
value) is a run of whole word tokens: the index gives the
messages holding all its tokens, and one Aho-Corasick automaton over all the call's
phrases (``pyahocorasick``; a phrase of over :data:`~guardagent.trace.text.native.MAX_KEY_CHARS`
characters by ``str.find``, :mod:`~guardagent.trace.text.native`) confirms the contiguous run in
each such message in one pass, so the work is linear in the candidate messages (at most the
trace). A phrase found in no single message is looked for across a boundary: its first part
at the end of a message and the rest at the start of the next message of the same source (a
value split in two).
Messages the index could not keep (over its size budget) are read here instead.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from guardagent.trace.document.labels import Labels, SourceKind
from guardagent.trace.document.shapes import ToolCall, Trace
from guardagent.trace.found.addresses import read_address_list
from guardagent.trace.found.reading import message_tokens
from guardagent.trace.found.redirects import every_carried
from guardagent.trace.found.values import Value, ValueKind, read_argument, secret_like
from guardagent.trace.found.written import Written, is_target
from guardagent.trace.text.budget import check_budget
from guardagent.trace.text.kinds import nobody
from guardagent.trace.text.native import Automaton
from guardagent.trace.text.summaries import SUMMARY_SOURCE
from guardagent.trace.thread.state import (
    TraceIndex,
    echo_of,
    flatten,
    message_keys,
    posted,
)

Origin = Literal["user", "trusted", "untrusted", "invented"]
_TRUSTED: frozenset[SourceKind] = frozenset({"user", "system", "trusted_tool"})
_SHOWN_CHARS = 60


@dataclass(frozen=True)
class SourceRef:
    """One message that contains a value."""

    index: int
    source: str
    kind: SourceKind

    def __str__(self) -> str:
        return f"message {self.index} ({self.source})"


@dataclass(frozen=True)
class ValueProvenance:
    """One value of the proposed call and the messages that contain it.

    Attributes:
        path: The argument path (``to``, ``to[1]``, ``payment.iban``).
        value: The value as read.
        inner: Found inside a free-text argument (not the argument itself).
        sources: Every earlier message containing it (model messages included, though
            they never make a value trusted), in order.
        split: Found only across the boundary of two consecutive messages of one source.
        laundered: Trusted tool results that hold it only because the model had written
            it into an earlier call (not counted among the sources).
    """

    path: str
    value: Value
    inner: bool
    sources: tuple[SourceRef, ...]
    split: bool = False
    laundered: tuple[SourceRef, ...] = ()

    def kinds(self) -> set[SourceKind]:
        """The trust classes of the sources."""
        return {s.kind for s in self.sources}

    @property
    def origin(self) -> Origin:
        """``user`` / ``trusted`` / ``untrusted`` / ``invented`` (see the module docstring)."""
        kinds = self.kinds()
        if "user" in kinds:
            return "user"
        if kinds & _TRUSTED:
            return "trusted"
        return "untrusted" if "untrusted_tool" in kinds else "invented"

    def of(self, *kinds: SourceKind) -> tuple[SourceRef, ...]:
        """The sources of the given classes."""
        return tuple(s for s in self.sources if s.kind in kinds)

    def describe(self) -> str:
        """One line for a decision: the value, its origin and the messages that decided it."""
        shown = (
            self.value.text
            if len(self.value.text) <= _SHOWN_CHARS
            else (self.value.text[:_SHOWN_CHARS] + "...")
        )
        where = f"{self.path} ({'inside' if self.inner else 'value'}) {shown!r}"
        origin = self.origin
        if (
            not self.value.keys
            and self.value.kind != "text"
            or (self.value.kind == "text" and not self.value.tokens)
        ):
            if "#" in self.path:
                part = self.path.rsplit("#", 1)[1]
                return f"{where} is no URL with a {part}: it comes from nobody"
            if self.value.kind == "email":
                return f"{where} is not an address a mail server accepts: it comes from nobody"
            if self.value.kind in ("amount", "date"):
                return (
                    f"{where} is a number or a date, not a recipient: no message's number "
                    "is where it goes, so it comes from nobody"
                )
            return f"{where} holds nothing that can be traced: it comes from nobody"
        if origin == "invented":
            model = self.of("model")
            said = f"; only the model wrote it ({', '.join(map(str, model))})" if model else ""
            if self.laundered:
                said += (
                    f"; {', '.join(map(str, self.laundered))} only hold what the model "
                    "wrote into an earlier call"
                )
            return f"{where} is in no user, system or tool message{said}"
        deciding = {
            "user": ("user",),
            "trusted": ("system", "trusted_tool"),
            "untrusted": ("untrusted_tool",),
        }[origin]
        refs = ", ".join(str(s) for s in self.of(*deciding))  # type: ignore[arg-type]
        split = " (split across two messages)" if self.split else ""
        if self.laundered:
            split += (
                "; not counting "
                + ", ".join(map(str, self.laundered))
                + ", which only hold what the model wrote into an earlier call"
            )
        label = {
            "user": "from the user",
            "trusted": "from a trusted source",
            "untrusted": "only from untrusted sources",
        }[origin]
        return f"{where} is {label}: {refs}{split}"


@dataclass(frozen=True)
class CallProvenance:
    """The provenance of every value of one call."""

    call: ToolCall
    values: tuple[ValueProvenance, ...]

    def select(
        self, arg: str = "*", *, kinds: Iterable[ValueKind] | None = None, inner: bool = True
    ) -> list[ValueProvenance]:
        """Values of an argument (``*``: all), optionally of some kinds only.

        `arg` names an argument or a path prefix: ``to`` selects ``to``, ``to[0]``,
        ``to.name``. Inner values (found inside free text) are included unless `inner` is
        False; `kinds` filters both.
        """
        wanted = set(kinds) if kinds is not None else None
        return [
            v
            for v in self.values
            if (arg == "*" or v.path == arg or v.path.startswith((arg + "[", arg + ".")))
            and (inner or not v.inner)
            and (wanted is None or v.value.kind in wanted)
        ]


class Search:
    """Finds values in the messages of one trace (one query: caches live for one call).

    Args:
        trace: The trace.
        index: Its index, up to date (:meth:`TraceIndex.update` on this trace).
        labels: The deployer's labels.
    """

    def __init__(self, trace: Trace, index: TraceIndex, labels: Labels) -> None:
        if index.count != len(trace.messages):
            raise ValueError("the index is not up to date with this trace; call update() first")
        self.trace = trace
        self.index = index
        self.labels = labels
        self.region = index.region
        self.year = index.year
        self._unindexed: dict[int, set[str]] = {}
        self._texts: dict[int, str] = {}
        self._read_whole: dict[int, Written] = {}
        self._token_list: dict[int, list[str]] = {}
        self._next: list[int | None] | None = None
        self._located: dict[
            tuple[bool, tuple[str, ...], tuple[str, ...]], tuple[frozenset[int], bool]
        ] = {}

    # -- primitives ------------------------------------------------------------------------

    def _unindexed_keys(self, i: int) -> set[str]:
        keys = self._unindexed.get(i)
        if keys is None:
            self.index.work.messages_rescanned += 1
            keys = message_keys(self.trace.messages[i], self.trace, self.region, self.year)
            self._unindexed[i] = keys
        return keys

    def ids(self, keys: Iterable[str]) -> set[int]:
        """Messages containing any of the keys (index and unindexed messages)."""
        keys = list(keys)
        found = posted(self.index, keys)
        for i in self.index.unindexed:
            if not self._unindexed_keys(i).isdisjoint(keys):
                found.add(i)
        return found

    def _all(self, keys: Sequence[str]) -> set[int]:
        """Messages containing every key."""
        lists = sorted((self.index.ids(k) for k in set(keys)), key=len)
        found = set(lists[0]) if lists else set()
        for ids in lists[1:]:
            if not found:
                break
            found.intersection_update(ids)
        for i in self.index.unindexed:
            if self._unindexed_keys(i).issuperset(keys):
                found.add(i)
        return found

    def token_list(self, i: int) -> list[str]:
        """A message's tokens, with those echoed from its own call blanked out."""
        toks = self._token_list.get(i)
        if toks is None:
            message = self.trace.messages[i]
            self.index.work.messages_verified += 1
            echo = echo_of(message, self.trace, self.region, self.year)
            toks = [t if "w:" + t not in echo else "\x00" for t in message_tokens(message.text)]
            self._token_list[i] = toks
        return toks

    def token_text(self, i: int) -> str:
        """A message's token list as one space-padded string (what the automaton scans)."""
        text = self._texts.get(i)
        if text is None:
            text = " " + " ".join(self.token_list(i)) + " "
            self._texts[i] = text
        return text

    def _next_of_source(self, i: int) -> int | None:
        if self._next is None:
            nxt: list[int | None] = [None] * self.index.count
            last: dict[int, int] = {}
            for j in range(self.index.count - 1, -1, -1):
                nxt[j] = last.get(self.index.sources[j])
                last[self.index.sources[j]] = j
            self._next = nxt
        return self._next[i]

    # -- phrases ---------------------------------------------------------------------------

    def phrases(self, needles: Sequence[tuple[str, ...]]) -> list[tuple[set[int], bool]]:
        """For each token run: the messages containing it, and whether only split in two."""
        results: list[tuple[set[int], bool]] = [(set(), False) for _ in needles]
        candidates: list[set[int]] = []
        keys: list[tuple[str, int]] = []
        for n, needle in enumerate(needles):
            if len(needle) == 1:
                results[n] = (self.ids(["w:" + needle[0]]), False)
                candidates.append(set())
                continue
            candidates.append(self._all(["w:" + t for t in needle]))
            keys.append((" " + " ".join(needle) + " ", n))
        scan = set().union(*candidates) if candidates else set()
        if scan:
            automaton = Automaton(keys)  # a long phrase is searched by str.find (native.py)
            for i in sorted(scan):
                check_budget()
                wanted = {n for n, ids in enumerate(candidates) if i in ids}
                for _, n in automaton.iter(self.token_text(i)):
                    if n in wanted:
                        results[n][0].add(i)
                        wanted.discard(n)
                        if not wanted:
                            break  # every phrase this message may hold is found
        for n, needle in enumerate(needles):
            if not results[n][0] and len(needle) > 1:
                split = self._split(needle)
                if split:
                    results[n] = (split, True)
        return results

    def _split(self, needle: tuple[str, ...]) -> set[int]:
        """Messages i, j (j next of i's source): the run's head ends i, its rest starts j."""
        firsts = self.ids(["w:" + needle[0]])
        lasts = self.ids(["w:" + needle[-1]])
        found: set[int] = set()
        for i in sorted(firsts):
            j = self._next_of_source(i)
            if j is None or j not in lasts:
                continue
            head, tail = self.token_list(i), self.token_list(j)
            for k in range(1, len(needle)):
                if tuple(head[-k:]) == needle[:k] and tuple(tail[: len(needle) - k]) == needle[k:]:
                    found.update((i, j))
                    break
        return found

    # -- values ----------------------------------------------------------------------------

    def locate(self, values: Sequence[Value]) -> list[tuple[set[int], bool]]:
        """For each value: the messages containing it, and whether only split in two.

        Kept for the search (several predicates trace the same values of one call); each
        answer is a fresh set.
        """
        out: list[tuple[set[int], bool]] = []
        pending: list[tuple[int, tuple[str, ...]]] = []
        for n, value in enumerate(values):
            kept = self._located.get(_located_key(value))
            if kept is not None:
                out.append((set(kept[0]), kept[1]))
                continue
            found = self.ids(list(value.keys)) if value.keys else set()
            out.append((found, False))
            if not found and value.tokens and value.kind == "text":
                pending.append((n, value.tokens))
        if pending:
            for (n, _), result in zip(pending, self.phrases([p for _, p in pending]), strict=True):
                out[n] = result
        for value, (found, split) in zip(values, out, strict=True):
            self._located[_located_key(value)] = (frozenset(found), split)
        return out

    def refs(self, ids: Iterable[int]) -> tuple[SourceRef, ...]:
        """Source references of message indices, in order."""
        out = []
        for i in sorted(ids):
            source = self.index.source_of(i)
            out.append(SourceRef(i, source, self.labels.kind(source)))
        return tuple(out)

    def launder(
        self, value: Value, refs: tuple[SourceRef, ...]
    ) -> tuple[tuple[SourceRef, ...], tuple[SourceRef, ...]]:
        """Split sources into real ones and trusted results repeating what the model wrote."""
        kept: list[SourceRef] = []
        dropped: list[SourceRef] = []
        for ref in refs:
            if ref.kind == "trusted_tool" and self._written(value, ref.index):
                dropped.append(ref)
            else:
                kept.append(ref)
        return tuple(kept), tuple(dropped)

    def _written(self, value: Value, index: int) -> bool:
        if any(self.index.written_before(k, index) for k in value.keys):
            return True
        return bool(value.tokens) and all(
            self.index.written_before("w:" + t, index) for t in value.tokens
        )

    def provenance(
        self, path: str, value: Value, inner: bool, ids: Iterable[int], split: bool
    ) -> ValueProvenance:
        """A value's provenance from the messages found to contain it.

        A short text (:func:`~guardagent.trace.found.written.is_target`) keeps a trusting source
        only where it is written with its punctuation (:mod:`guardagent.trace.found.written`).
        """
        refs = self.refs(ids)
        if self.index.carried and value.keys:
            refs = self._with_carried(value, refs)
        if is_target(value) and any(r.kind in _TRUSTED for r in refs):
            held = self._written_split(value, {r.index for r in refs}) if split else None
            refs = tuple(
                r
                for r in refs
                if r.kind not in _TRUSTED
                or (r.index in held if held is not None else self._written_in(value, r.index))
            )
        kept, dropped = self.launder(value, refs)
        return ValueProvenance(path, value, inner, kept, split and bool(kept), dropped)

    def _with_carried(self, value: Value, refs: tuple[SourceRef, ...]) -> tuple[SourceRef, ...]:
        """The refs plus, at a summary holding the value, the sources it had before it.

        A conversation summary is untrusted model text (:mod:`~guardagent.trace.text.summaries`),
        but a typed value it repeats keeps the sources the messages it replaced gave it, as
        the thread's signed state recorded them (:meth:`TraceIndex.summarised`).
        """
        at = [r.index for r in refs if r.source == SUMMARY_SOURCE]
        names = self.index.carried_sources(value.keys) if at else []
        if not names:
            return refs
        extra = {SourceRef(i, n, self.labels.kind(n)) for i in at for n in names}
        return tuple(sorted({*refs, *extra}, key=lambda r: (r.index, r.source)))

    def _written_in(self, value: Value, i: int) -> bool:
        """Whether message `i` writes a short text with its punctuation (read once)."""
        read = self._read_whole.get(i)
        if read is None:
            read = self._read_whole[i] = Written(self.trace.messages[i].text)
        return read.holds(value)

    def _written_split(self, value: Value, found: set[int]) -> set[int]:
        """The messages of `found` that write a value split across into the next of its source.

        Each message is in at most two pairs (with the one before and the one after), so
        the texts read are at most twice the messages found.
        """
        texts, held = self.trace.messages, set[int]()
        for a in found:
            b = self._next_of_source(a)
            if (
                b is not None
                and b in found
                and Written(texts[a].text + " " + texts[b].text).holds(value)
            ):
                held.update((a, b))
        return held

    def part_provenance(self, found: ValueProvenance, part: str) -> ValueProvenance | None:
        """The provenance of a coarser part of a value (a URL's ``host`` or ``domain``).

        A value that is no URL (an address, a phrase) has no such part: it is from nobody,
        so a rule about hosts never holds vacuously for it.
        """
        key = found.value.part(part)
        if key is None:  # not a URL: it has no host a rule could trust, so it is from nobody
            none = nobody(found.value.kind, found.value.text)
            return ValueProvenance(f"{found.path}#{part}", none, found.inner, ())
        value = Value(found.value.kind, (key,), found.value.text)
        return self.provenance(f"{found.path}#{part}", value, found.inner, self.ids([key]), False)

    def carried_parts(self, found: ValueProvenance, part: str) -> list[ValueProvenance]:
        """The same part of every URL a URL carries (an open redirect's target), to judge too.

        ``https://example.com/redirect?url=https://evil.example`` opens ``evil.example``:
        that the user named ``example.com`` says nothing of it. Each carried target
        (:func:`~guardagent.trace.found.redirects.every_carried`) is found where its own part is,
        or where the whole carrying URL is (a message holding the whole URL holds what it
        carries); a target that does not read is found only where the whole URL is.
        """
        where = found.value.where
        if found.value.kind != "url" or where is None:
            return []
        whole = found.value.keys
        out: list[ValueProvenance] = []
        for target in every_carried(where):
            key = None if target is None else target.part(part)
            keys = whole if key is None else (key, *whole)
            text = "(a carried URL that does not read)" if target is None else target.text
            value = Value("url", keys, text)
            out.append(
                self.provenance(
                    f"{found.path}#{part} carries", value, found.inner, self.ids(keys), False
                )
            )
        return out


def recipients_read(
    values: Sequence[ValueProvenance], raw: Mapping[str, Any]
) -> list[ValueProvenance]:
    """Recipient values as the mail server, bank or SMS gateway reads the whole argument.

    - A number or a date (``600``, ``2024-05-01``) and a phrase of digits only (``123 45
      67``) are dialled or sent to as digits: no amount, date or part of a longer number a
      message holds is that recipient, so they are from nobody.
    - Text around an address, a phone number or an IBAN (``+41 44 234 11 11 ext. 999``,
      ``bob@x.ch eve``) is judged whole, beside the values inside it: only a clean RFC 5322
      address list (``Bob <bob@x.ch>``) is its addresses, its display names ignored.

    Args:
        values: The provenance of the recipient arguments' values (whole and inner).
        raw: The raw scalar of each argument path (:func:`~guardagent.trace.thread.state.flatten`).
    """
    out: list[ValueProvenance] = []
    for v in values:
        kind, toks = v.value.kind, v.value.tokens
        digits = kind == "text" and bool(toks) and all(t.isdigit() for t in toks)
        if not v.inner and (kind in ("amount", "date") or digits):
            number = nobody("date" if kind == "date" else "amount", v.value.text)
            out.append(ValueProvenance(v.path, number, v.inner, ()))
            continue
        if not v.inner and kind == "text" and address_list(raw.get(v.path)):
            continue  # display names: the addresses inside are the recipients
        out.append(v)
    return out


def invented_pieces(
    search: Search, provenance: CallProvenance, values: Sequence[ValueProvenance]
) -> list[ValueProvenance]:
    """What identifies something inside each invented phrase among `values`, traced alone.

    A phrase the model assembled (``9999 units``, ``25 HACKED7``) is in no message as a
    whole, so it is "invented", never "only from untrusted sources", though the page gave
    its number or its code. Its typed values of every kind (amounts and dates included)
    and its identifier-like tokens (:func:`~guardagent.trace.text.normal.secret_like`) are
    therefore judged on their own too.
    """
    out: list[ValueProvenance] = []
    tokens: list[tuple[str, str]] = []
    for v in values:
        if v.inner or v.value.kind != "text" or v.origin != "invented" or not v.value.tokens:
            continue
        inside = [p for p in provenance.values if p.inner and p.path == v.path]
        out.extend(inside)
        typed = {t for p in inside for t in p.value.tokens}
        tokens.extend(
            (v.path, t) for t in dict.fromkeys(v.value.tokens) if secret_like(t) and t not in typed
        )
    if tokens:
        words = [Value("text", (), t, (t,)) for _, t in tokens]
        for (path, _), word, (ids, split) in zip(tokens, words, search.locate(words), strict=True):
            out.append(search.provenance(path, word, True, ids, split))
    return out


def address_list(scalar: Any) -> bool:
    """A string that is a clean RFC 5322 address list (``Bob <bob@x.ch>, eve@y.org``)."""
    if not isinstance(scalar, str) or "@" not in scalar or "://" in scalar:
        return False
    return read_address_list(unicodedata.normalize("NFC", scalar).strip()) is not None


def _located_key(value: Value) -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
    """What :meth:`Search.locate` reads of a value: its keys, and a text's tokens."""
    return (value.kind == "text", value.keys, value.tokens)


def call_values(
    call: ToolCall, region: str | None, year: int | None = None
) -> list[tuple[str, Value, bool]]:
    """``(path, value, inner)`` for every value of a call's arguments, in argument order.

    Every element of a list is traced: an element that reads to nothing (None, an empty
    string) is a value from nobody, so a list cannot hide a leftover.
    """
    out: list[tuple[str, Value, bool]] = []
    for path, scalar in flatten(call.args):
        items = read_argument(scalar, region=region, year=year)
        if not items and path.endswith("]") and (scalar is None or isinstance(scalar, str)):
            items = [(nobody("text", repr(scalar)), False)]
        out.extend((path, value, inner) for value, inner in items)
    return out


def call_provenance(search: Search, call: ToolCall | None = None) -> CallProvenance:
    """The provenance of every value of a call (default: the trace's proposed call)."""
    call = call if call is not None else search.trace.call
    items = call_values(call, search.region, search.year)
    located = search.locate([v for _, v, _ in items])
    return CallProvenance(
        call,
        tuple(
            search.provenance(path, value, inner, ids, split)
            for (path, value, inner), (ids, split) in zip(items, located, strict=True)
        ),
    )
