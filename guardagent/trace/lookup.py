"""Questions about a thread no state indexed, answered from the messages that may hold each value.

A host that keeps no thread state sends the whole conversation at every call, and the index
of :mod:`~guardagent.trace.state` reads every message in full (its words and every typed
value: ~0.1 ms a message) although the decision asks about a few keys only: those of the
proposed call's arguments (and of the earlier calls a derivation follows). :class:`LookupSearch`
answers the same questions as :class:`~guardagent.trace.provenance.Search` over an index
that deferred its reading (:meth:`TraceIndex.defer`): for each key asked, the messages that
hold it, with echo exclusion and boundary readings, computed as the index computes them, but
only for the messages that may hold the key (:func:`needle`); the others are not read. The
index is read in full only if the thread's state is asked for
(:class:`~guardagent.trace.guard.TraceEvent`).

Why the answers are those of the index. A message is posted under a key when its reading
(:func:`~guardagent.trace.reading.message_reading`, both readings of its text) holds the key
and the call its result answers did not put the key there (echo), or when the boundary with
the previous message of its source holds it (posted to both). Here a message is checked the
same way (the same functions, kept readings included), except that a message whose text
lacks the key's *necessary string* is skipped: a string that every text holding the key
contains, so skipping it skips only messages that do not hold it. The strings, by key kind,
each looked for in every reading of the text in the form its reader reads:

- ``w:<token>``: the token, in the word reading (it is a run of it); the candidates are then
  checked exactly against their tokens;
- ``raw:<token>``: the token, in the value reading (an unplaced token is a slice of it);
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
form (as :func:`~guardagent.trace.reading.boundary_keys` joins them) holds the string.

Differences with the index: none for keys (compared whole here, by their 64-bit hash
there); and no message is left *unindexed* by the state's size budget, which bounds a state
this call does not keep (when the state is asked for, the index applies its budget as
always).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from guardagent.trace.labels import Labels
from guardagent.trace.messages import Trace
from guardagent.trace.normal import normalize_text, reading_form, tokens
from guardagent.trace.provenance import Search, SourceRef
from guardagent.trace.reading import boundary_keys, message_reading, readings
from guardagent.trace.state import WINDOW, TraceIndex, echo_of, written_keys
from guardagent.trace.values import Value

_DIGIT = re.compile(r"\d")  # one character: linear
_LINKS = ("://", ".", "localhost")

Screen = Callable[["Forms"], bool]


class Forms:
    """One text's readings in the forms the necessary strings are looked for in (lazily)."""

    __slots__ = ("_compact", "_low", "forms", "words")

    def __init__(self, words: Sequence[str], forms: Sequence[str]) -> None:
        self.words = words
        self.forms = forms
        self._low: list[str] | None = None
        self._compact: list[str] | None = None

    @property
    def low(self) -> list[str]:
        """The value readings, lower-cased."""
        if self._low is None:
            self._low = [f if f.isascii() and f.islower() else f.lower() for f in self.forms]
        return self._low

    @property
    def compact(self) -> list[str]:
        """The lower-cased value readings without spaces and hyphens."""
        if self._compact is None:
            self._compact = [f.replace(" ", "").replace("-", "") for f in self.low]
        return self._compact


def needle(key: str) -> Screen:
    """A test every text holding `key` passes (see the module docstring)."""
    kind, _, rest = key.partition(":")
    if kind == "w":
        return lambda f: any(rest in w for w in f.words)
    if kind == "raw":
        return lambda f: any(rest in v for v in f.forms)
    if kind == "email":
        local = rest.partition("@")[0]
        if local and local.isascii():
            return lambda f: any(local in v for v in f.low)
        return lambda f: any("@" in v for v in f.forms)
    if kind == "iban" and rest:
        compact = rest.lower()
        return lambda f: any(compact in v for v in f.compact)
    if kind in ("phone", "amount", "date"):
        return lambda f: any(_DIGIT.search(v) is not None for v in f.forms)
    if kind in ("url", "host", "domain"):
        return lambda f: any(s in v for v in f.forms for s in _LINKS)
    return lambda f: True


class LookupSearch(Search):
    """:class:`~guardagent.trace.provenance.Search` over an index that deferred its reading.

    Args:
        trace: The trace.
        index: Its index, deferred (:meth:`TraceIndex.defer` on this trace).
        labels: The deployer's labels.
    """

    def __init__(self, trace: Trace, index: TraceIndex, labels: Labels) -> None:
        super().__init__(trace, index, labels)
        self._forms: list[Forms] | None = None
        self._pairs: list[tuple[int, int, Forms, str, str]] | None = None
        self._posted: dict[str, frozenset[int]] = {}
        self._echo: dict[int, set[str]] = {}
        self._tokens: dict[int, frozenset[str]] = {}
        self._first_written: dict[str, int] | None = None

    # -- what each message may hold ------------------------------------------------------------

    def forms(self) -> list[Forms]:
        """Each message's word and value readings (as the index's reading makes them)."""
        if self._forms is None:
            out = []
            for message in self.trace.messages:
                words, values = [], []
                for reading in readings(message.text):
                    w = normalize_text(reading)
                    words.append(w)
                    values.append(w if reading.isascii() else reading_form(reading))
                out.append(Forms(words, values))
            self._forms = out
        return self._forms

    def pairs(self) -> list[tuple[int, int, Forms, str, str]]:
        """Each boundary the index reads: (previous, message, joined forms, tail, head)."""
        if self._pairs is None:
            out = []
            tails: dict[str, tuple[int, str]] = {}
            for message in self.trace.messages:
                text = message.text
                normalized = reading_form(readings(text)[-1] if "\\" in text else text)
                prev = tails.get(message.source)
                if prev is not None and normalized and message.source != "model":
                    tail, head = prev[1], normalized[:WINDOW]
                    joins = ("",) if tail[-1:].isspace() or head[:1].isspace() else ("", " ")
                    joined = [tail + sep + head for sep in joins]
                    out.append((prev[0], message.index, Forms((), joined), tail, head))
                tails[message.source] = (message.index, normalized[-WINDOW:])
            self._pairs = out
        return self._pairs

    def echo(self, i: int) -> set[str]:
        """The keys message `i` only repeats from its call's arguments."""
        found = self._echo.get(i)
        if found is None:
            found = self._echo[i] = echo_of(self.trace.messages[i], self.trace, self.region,
                                            self.year)  # fmt: skip
        return found

    def _token_set(self, i: int) -> frozenset[str]:
        found = self._tokens.get(i)
        if found is None:
            found = self._tokens[i] = frozenset(
                t for w in self.forms()[i].words for t in tokens(w))
        return found

    def posted(self, key: str) -> frozenset[int]:
        """The messages the index would post under `key` (see the module docstring)."""
        found = self._posted.get(key)
        if found is not None:
            return found
        screen = needle(key)
        out: set[int] = set()
        messages = self.trace.messages
        if key.startswith("w:"):
            token = key[2:]
            for i, forms in enumerate(self.forms()):
                if screen(forms) and token in self._token_set(i) and key not in self.echo(i):
                    out.add(i)
        else:
            region, year = self.region, self.year
            for i, forms in enumerate(self.forms()):
                if (screen(forms) and key in message_reading(messages[i].text, region, year).hashed
                        and key not in self.echo(i)):  # fmt: skip
                    out.add(i)
            for prev, i, forms, tail, head in self.pairs():
                if (screen(forms) and key in boundary_keys(tail, head, region, year).hashed
                        and key not in self.echo(i)):  # fmt: skip
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
        """Messages containing every key."""
        lists = sorted((self.posted(k) for k in set(keys)), key=len)
        found = set(lists[0]) if lists else set()
        for ids in lists[1:]:
            if not found:
                break
            found.intersection_update(ids)
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
        return tuple(SourceRef(i, messages[i].source, self.labels.kind(messages[i].source))
                     for i in sorted(ids))  # fmt: skip

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
        return bool(value.tokens) and all(self._written_before("w:" + t, index)
                                          for t in value.tokens)  # fmt: skip
