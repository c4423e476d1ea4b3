"""Questions about a thread no state indexed, answered from the messages that may hold each value.

A host that keeps no thread state sends the whole conversation at every call, and the index
of :mod:`~guardagent.trace.thread.state` reads every message in full (its words and every typed
value: ~0.1 ms a message) although the decision asks about a few keys only: those of the
proposed call's arguments (and of the earlier calls a derivation follows). :class:`LookupSearch`
answers the same questions as :class:`~guardagent.trace.sources.provenance.Search` over an index
that deferred its reading (:meth:`TraceIndex.defer`): for each key asked, the messages that
hold it, with echo exclusion and boundary readings, computed as the index computes them, but
only for the messages that may hold the key (:func:`needle`); the others are not read. The
index is read in full only if the thread's state is asked for
(:class:`~guardagent.trace.event.guard.TraceEvent`).

Why the answers are those of the index. A message is posted under a key when its reading
(:func:`~guardagent.trace.found.reading.message_reading`, both readings of its text) holds the key
and the call its result answers did not put the key there (echo), or when the boundary with
the previous message of its source holds it (posted to both). Here a message is checked the
same way (the same functions, kept readings included), except that a message whose text
lacks the key's *necessary string* is skipped: a string that every text holding the key
contains, so skipping it skips only messages that do not hold it. The strings, by key kind,
each looked for in every reading of the text in the form its reader reads:

- ``w:<token>``: the token, in the word reading (it is a run of it); the candidates are then
  checked against their tokens;
- ``raw:<token>``: the token, in the value reading (an unplaced token is a slice of it),
  unless it holds U+FFFD (the locator reads a lone surrogate as one);
- ``email:<local>@<domain>`` with an ASCII local part: the local part, in the value reading
  lower-cased. The key's local part is the located one lower-cased character by character,
  and the only non-ASCII character whose ``lower()`` is ASCII is the Kelvin sign, which no
  value reading holds (NFKC maps it; a test checks both over every code point). Otherwise
  an ``@``;
- ``iban:<IBAN>``: the IBAN lower-cased, in the value reading lower-cased with every space
  and hyphen removed (an IBAN is read from ASCII letters and digits with single spaces or
  hyphens between them; its key is those characters upper-cased);
- ``phone:``, ``amount:``, ``date:``: a digit (every such locator needs one);
- ``url:``, ``host:``, ``domain:``: ``://``, a dot or ``localhost`` (what the link passes
  need before they run);
- any other key: none (every message is read).

A boundary holds only typed values (never a ``w:`` key); it is skipped when neither joined
form (as :func:`~guardagent.trace.found.reading.boundary_keys` joins them) holds the string.

Cost. The messages' readings (and the boundaries' joins) are searched as one string per
form, so a key's necessary string costs one C-speed ``str.find`` pass (:class:`Segments`);
the messages that may hold it are read once per call (kept readings included). A phrase's
messages are those holding every token's string, then checked token by token; a phrase
split across two messages is looked for only where its last token follows. A call asking
about more than :data:`MAX_LOOKUPS` keys (a long body's every word) completes the index
instead and is answered from it from then on: the work stays linear in the trace.

Differences with the index: none for keys (compared whole here, by their 64-bit hash
there), tested key by key (``tests/test_trace_lookup.py``) and predicate by predicate (every
trace of ``tests/trace_helpers``). A message the index would leave *unindexed* (over the
state's size budget) changes its boundaries (the next message of the source is joined to
the one before it), which the lookup cannot know without reading every message: a thread
whose state may exceed the budget (:meth:`LookupSearch.within_budget`, an upper bound from
lengths, :mod:`~guardagent.trace.thread.sizebound`) is answered from the completed index, as is a
call past :data:`MAX_LOOKUPS`.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence

from guardagent.trace.document.labels import Labels
from guardagent.trace.document.shapes import Trace
from guardagent.trace.found.reading import Reading, boundary_keys, message_reading, readings
from guardagent.trace.found.values import Value
from guardagent.trace.sources.provenance import Search, SourceRef
from guardagent.trace.text.budget import check_budget
from guardagent.trace.text.normal import normalize_text, reading_form, tokens
from guardagent.trace.thread.sizebound import state_bound
from guardagent.trace.thread.state import WINDOW, TraceIndex, echo_of, written_keys

_DIGIT = re.compile(r"\d")  # one character: linear
MAX_LOOKUPS = 64
"""Keys looked up message by message in one call, at most (then the index is completed)."""
_SEPARATOR = "\x00"

Needle = tuple[str, str]
"""``(form, string)``: a string every text holding a key contains in that form of it
(``words``, ``forms``, ``low``, ``compact``), or a test (``digit``, ``links``, ``all``)."""


def needle(key: str) -> Needle:
    """What every text holding `key` contains (see the module docstring)."""
    kind, _, rest = key.partition(":")
    if kind == "w":
        return ("words", rest)
    if kind == "raw" and "\ufffd" not in rest:  # the locator reads a surrogate as U+FFFD
        return ("forms", rest)
    if kind == "email":
        local = rest.partition("@")[0]
        return ("low", local) if local and local.isascii() else ("forms", "@")
    if kind == "iban" and rest:
        return ("compact", rest.lower())
    if kind in ("phone", "amount", "date"):
        return ("digit", "")
    if kind in ("url", "host", "domain"):
        return ("links", "")
    return ("all", "")


class Segments:
    """Texts owned by ids (a message's readings, a boundary's joins), searched as one string.

    Args:
        owners: The id of each text.
        words: Each text's word reading (:func:`~guardagent.trace.text.normal.normalize_text`).
        forms: Each text's value reading (what the locator reads).
    """

    def __init__(self, owners: list[int], words: list[str], forms: list[str]) -> None:
        self.owners = owners
        self.texts: dict[str, list[str]] = {"words": words, "forms": forms}
        self._joined: dict[str, tuple[str, list[int]]] = {}
        self._tests: dict[str, set[int]] = {}

    def form(self, name: str) -> list[str]:
        """The texts in one form (``low``, ``compact`` made on first use)."""
        found = self.texts.get(name)
        if found is None:
            if name == "low":
                found = [
                    f if f.isascii() and f.islower() else f.lower() for f in self.texts["forms"]
                ]
            else:  # compact
                found = [f.replace(" ", "").replace("-", "") for f in self.form("low")]
            self.texts[name] = found
        return found

    def holders(self, spec: Needle) -> set[int]:
        """The ids of the texts that contain a needle (:func:`needle`).

        The texts of a form are joined by NUL and searched with ``str.find``; after a hit,
        the search goes on from the next text: linear in the texts. A hit across a NUL
        only adds a text (read, found not to hold the key): never a text missed.
        """
        what, string = spec
        if what == "all" or not string and what not in ("digit", "links"):
            return set(self.owners)  # every text holds the empty string
        if what in ("digit", "links"):
            found = self._tests.get(what)
            if found is None:
                found = self._tests[what] = {
                    o
                    for o, f in zip(self.owners, self.texts["forms"], strict=True)
                    if _test(what, f)
                }
            return found
        joined = self._joined.get(what)
        if joined is None:
            texts = self.form(what)
            starts, at = [], 0
            for text in texts:
                starts.append(at)
                at += len(text) + 1
            joined = self._joined[what] = (_SEPARATOR.join(texts), starts)
        text, starts = joined
        out: set[int] = set()
        at = text.find(string)
        while at >= 0:
            n = bisect_right(starts, at) - 1
            out.add(self.owners[n])
            if n + 1 == len(starts):
                break
            at = text.find(string, starts[n + 1])
        return out


def _test(what: str, form: str) -> bool:
    if what == "digit":
        return _DIGIT.search(form) is not None
    return "://" in form or "." in form or "localhost" in form


class LookupSearch(Search):
    """:class:`~guardagent.trace.sources.provenance.Search` over an index that deferred its reading.

    Args:
        trace: The trace.
        index: Its index, deferred (:meth:`TraceIndex.defer` on this trace).
        labels: The deployer's labels.
    """

    def __init__(self, trace: Trace, index: TraceIndex, labels: Labels) -> None:
        super().__init__(trace, index, labels)
        self._messages: Segments | None = None
        self._pairs: list[tuple[int, int, str, str]] = []
        self._bounds: Segments | None = None
        self._posted: dict[str, frozenset[int]] = {}
        self._looked: set[str] = set()  # every key looked up, message by message
        self._full = False
        self._fits: bool | None = None
        self._echo: dict[int, set[str]] = {}
        self._first_written: dict[str, int] | None = None
        self._readings: dict[int, Reading] = {}
        self._boundaries: dict[int, Reading] = {}
        self._tokens: dict[int, frozenset[str]] = {}
        self._words: dict[int, list[str]] = {}

    # -- what each message may hold ------------------------------------------------------------

    def messages(self) -> Segments:
        """Each message's readings, in the word and value forms the index reads them in."""
        if self._messages is None:
            owners: list[int] = []
            words: list[str] = []
            forms: list[str] = []
            for message in self.trace.messages:
                check_budget()
                mine = self._words[message.index] = []
                for reading in readings(message.text):
                    w = normalize_text(reading)
                    mine.append(w)
                    owners.append(message.index)
                    words.append(w)
                    forms.append(w if reading.isascii() else reading_form(reading))
            self._messages = Segments(owners, words, forms)
        return self._messages

    def bounds(self) -> Segments:
        """Each boundary the index reads (:attr:`pairs`), both joins (as boundary_keys joins)."""
        if self._bounds is None:
            tails: dict[str, tuple[int, str]] = {}
            owners: list[int] = []
            joined: list[str] = []
            for message in self.trace.messages:
                check_budget()
                text = message.text
                normalized = reading_form(readings(text)[-1] if "\\" in text else text)
                prev = tails.get(message.source)
                if prev is not None and normalized and message.source != "model":
                    tail, head = prev[1], normalized[:WINDOW]
                    joins = ("",) if tail[-1:].isspace() or head[:1].isspace() else ("", " ")
                    for sep in joins:
                        owners.append(len(self._pairs))
                        joined.append(tail + sep + head)
                    self._pairs.append((prev[0], message.index, tail, head))
                tails[message.source] = (message.index, normalized[-WINDOW:])
            self._bounds = Segments(owners, ["" for _ in joined], joined)
        return self._bounds

    @property
    def pairs(self) -> list[tuple[int, int, str, str]]:
        """The boundaries: (previous message of the source, message, tail, head)."""
        self.bounds()
        return self._pairs

    def echo(self, i: int) -> set[str]:
        """The keys message `i` only repeats from its call's arguments."""
        found = self._echo.get(i)
        if found is None:
            found = self._echo[i] = echo_of(
                self.trace.messages[i], self.trace, self.region, self.year
            )
        return found

    def _reading(self, i: int) -> Reading:
        found = self._readings.get(i)
        if found is None:
            check_budget()
            found = self._readings[i] = message_reading(
                self.trace.messages[i].text, self.region, self.year
            )
        return found

    def _boundary(self, n: int) -> Reading:
        found = self._boundaries.get(n)
        if found is None:
            _, _, tail, head = self._pairs[n]
            found = self._boundaries[n] = boundary_keys(tail, head, self.region, self.year)
        return found

    def _token_set(self, i: int) -> frozenset[str]:
        found = self._tokens.get(i)
        if found is None:
            self.messages()
            found = self._tokens[i] = frozenset(t for w in self._words[i] for t in tokens(w))
        return found

    def posted(self, key: str) -> frozenset[int]:
        """The messages the index would post under `key` (see the module docstring)."""
        found = self._posted.get(key)
        if found is not None:
            return found
        if not self._may_look_up([key]):  # too many to look up: the index answers
            ids = self.index.ids(key)  # completes the index first: its unindexed are known
            held = {i for i in self.index.unindexed if key in self._unindexed_keys(i)}
            found = self._posted[key] = frozenset(ids).union(held)
            return found
        spec = needle(key)
        out: set[int] = set()
        if key.startswith("w:"):
            token = key[2:]
            for i in sorted(self.messages().holders(spec)):
                if token in self._token_set(i) and key not in self.echo(i):
                    out.add(i)
        else:
            for i in sorted(self.messages().holders(spec)):
                if key in self._reading(i).hashed and key not in self.echo(i):
                    out.add(i)
            for n in sorted(self.bounds().holders(spec)):
                prev, i, _, _ = self._pairs[n]
                if key in self._boundary(n).hashed and key not in self.echo(i):
                    out.update((prev, i))
        found = self._posted[key] = frozenset(out)
        return found

    # -- Search over the deferred index ----------------------------------------------------------

    def ids(self, keys: Iterable[str]) -> set[int]:
        """Messages containing any of the keys."""
        found: set[int] = set()
        for key in keys:
            found.update(self.posted(key))
        return found

    def _all(self, keys: Sequence[str]) -> set[int]:
        """Messages containing every key.

        Word keys (a phrase's tokens, never posted through a boundary): the messages whose
        text holds every token's string, each then checked for every token; the same
        messages as intersecting each key's :meth:`posted`, without reading the messages
        only some tokens' strings are in.
        """
        wanted = set(keys)
        if wanted and all(k[:2] == "w:" for k in wanted) and self._may_look_up(wanted):
            segments = self.messages()
            found: set[int] | None = None
            for holders in sorted((segments.holders(needle(k)) for k in wanted), key=len):
                found = set(holders) if found is None else found & holders
                if not found:
                    return set()
            return {i for i in sorted(found or ()) if all(self._holds(i, k) for k in wanted)}
        lists = sorted((self.posted(k) for k in wanted), key=len)
        found = set(lists[0]) if lists else set()
        for ids in lists[1:]:
            if not found:
                break
            found.intersection_update(ids)
        return found

    def _may_look_up(self, keys: Iterable[str]) -> bool:
        """Whether the keys may be looked up (at most :data:`MAX_LOOKUPS` in one call).

        Never when the index may leave a message unindexed (:meth:`within_budget`).
        """
        if self._full:
            return False
        if not self.within_budget():
            self._full = True  # the index answers, its budget applied
            return False
        new = set(keys) - self._looked
        if len(self._looked) + len(new) > MAX_LOOKUPS:
            self._full = True  # from now on, every answer comes from the completed index
            return False
        self._looked |= new
        return True

    def within_budget(self) -> bool:
        """Whether the index certainly keeps every message (its state within its budget).

        The index reads no boundary of a message it cannot keep (over ``max_state_bytes``:
        the next message of its source is joined to the one before it); the lookup reads
        every boundary, so it answers only when no message can be left out. Otherwise the
        completed index answers. The state's size is bounded above from the forms the
        lookup made and the calls' arguments, no value read
        (:mod:`~guardagent.trace.thread.sizebound`):
        by lengths first, then counting what typed values need, then counting written keys.
        """
        if self._fits is None:
            segments = self.messages()
            pairs = list(zip(segments.texts["words"], segments.texts["forms"], strict=True))
            budget, size = self.index.max_state_bytes, self.index._size  # a restored state's
            self._fits = any(
                state_bound(
                    self.trace,
                    size,
                    pairs,
                    tight=tight,
                    exact=exact,
                    region=self.region,
                    year=self.year,
                )
                <= budget
                for tight, exact in ((False, False), (True, False), (True, True))
            )
        return self._fits

    def _holds(self, i: int, key: str) -> bool:
        """Whether message `i` itself is posted under `key` (boundaries aside)."""
        if key in self.echo(i):
            return False
        if key[:2] == "w:":
            return key[2:] in self._token_set(i)
        return key in self._reading(i).hashed

    def _split(self, needle_tokens: tuple[str, ...]) -> set[int]:
        """:meth:`Search._split`, the first token checked only where the last one follows.

        The same messages, in the same order: every message holding the first token's
        string, kept when it is posted under that token (:meth:`_holds`, a word key has no
        boundary posting) and the next message of its source holds the last token.
        """
        first = "w:" + needle_tokens[0]
        if not self._may_look_up([first]):
            return super()._split(needle_tokens)
        lasts = self.ids(["w:" + needle_tokens[-1]])
        found: set[int] = set()
        if not lasts:
            return found
        for i in sorted(self.messages().holders(needle(first))):
            j = self._next_of_source(i)
            if j is None or j not in lasts or not self._holds(i, first):
                continue
            head, tail = self.token_list(i), self.token_list(j)
            n = len(needle_tokens)
            for k in range(1, n):
                if (
                    tuple(head[-k:]) == needle_tokens[:k]
                    and tuple(tail[: n - k]) == (needle_tokens[k:])
                ):
                    found.update((i, j))
                    break
        return found

    def _next_of_source(self, i: int) -> int | None:
        if self._next is None:
            nxt: list[int | None] = [None] * len(self.trace.messages)
            last: dict[str, int] = {}
            for j in range(len(self.trace.messages) - 1, -1, -1):
                source = self.trace.messages[j].source
                nxt[j] = last.get(source)
                last[source] = j
            self._next = nxt
        return self._next[i]

    def refs(self, ids: Iterable[int]) -> tuple[SourceRef, ...]:
        """Source references of message indices, in order."""
        messages = self.trace.messages
        return tuple(
            SourceRef(i, messages[i].source, self.labels.kind(messages[i].source))
            for i in sorted(ids)
        )

    def _written_before(self, key: str, index: int) -> bool:
        if self._first_written is None:
            first: dict[str, int] = {}
            for message in self.trace.messages:
                for call in message.calls:
                    for k in written_keys(call, self.region, self.year):
                        first.setdefault(k, message.index)
            self._first_written = first
        at = self._first_written.get(key)
        return at is not None and at < index

    def _written(self, value: Value, index: int) -> bool:
        if any(self._written_before(k, index) for k in value.keys):
            return True
        return bool(value.tokens) and all(
            self._written_before("w:" + t, index) for t in value.tokens
        )
