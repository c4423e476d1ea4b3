"""A sensitive tool's value on its way out: re-spelled, encoded, split or glued to other text.

``secret_flow`` and ``value_from_sensitive`` trace every value of the proposed call; a page
can also tell the model to send a code in another spelling, and whoever receives it reads
the code all the same. This module finds, in the call's values (strings, and numbers as
their digits), the tokens of the sensitive tools' results (:func:`sensitive_tokens`) that
the values carry. Both sides are read as *runs*: each token, and up to :data:`MAX_JOINED`
adjacent ones joined (``739-214-XQ`` is the run ``739214xq``; :func:`_runs`); a run of the
call that is a run of a sensitive result is carried:

- re-spelled: ``739214XQ``, ``739-214-XQ``, ``7 3 9 2 1 4 X Q`` are one code, whichever
  way the result wrote it;
- encoded: in each decoded view :func:`guardagent.trace.found.secrets.views` gives (HTML and
  string escapes, URL, base64, base32, hex, base85, Ascii85: see
  :mod:`guardagent.trace.text.decoders`; nested once), and reversed or in ROT13; a view that is
  not ASCII is also read as a reader sees it
  (:func:`guardagent.trace.found.secret_forms.fold`: Unicode look-alikes read as the ASCII
  letters they imitate, default-ignorable code points such as U+3164 dropped);
- split: runs over two argument values or list elements (``subject: "739"``, ``body:
  "214XQ"``);
- glued: a result's token of at least :data:`GLUED_MIN` characters with letters and
  digits (a code, a key, an IBAN) inside any run of letters and digits of a view,
  separators dropped (``Bob739214XQ``, ``/abc739214XQ``), found with one Aho-Corasick
  automaton.

Each token found is then traced like the value's own (the user may have given it); one the
call writes as one token while the result wrote it with separators is located by the
result's runs (:attr:`Carried.held`: no message holds the one token; a result that only
echoes it from the call it answers does not count), and is the user's when a user message
holds it as a run; one a result holds as one token is located by it alone, like any value.
Not read: a run the call and the result both write with separators, differently
(``739 214-XQ`` against ``739-214 XQ``), and a multi-token run glued into other text. All of
it is linear in the values (a constant number of views, each a few times the value's
length; at most MAX_JOINED runs a token; one automaton pass a view) and in the sensitive
results, and checks the trace's reading budget at each view (long attacker text has many
views: about 1.4 s of views for 100 KB of base64-, hex- and code-like runs).
"""

from __future__ import annotations

import functools
import re
import weakref
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from decimal import Decimal
from itertools import accumulate, chain, islice, takewhile
from typing import Any, NamedTuple

from guardagent.trace.document.labels import Labels
from guardagent.trace.document.shapes import Message, ToolCall, Trace
from guardagent.trace.found.reading import MAX_CACHED_BYTES, ReadingCache, kept_cache
from guardagent.trace.found.secret_forms import fold
from guardagent.trace.found.secrets import views
from guardagent.trace.found.values import Value, normalize_text, secret_like, tokens
from guardagent.trace.text.budget import check_budget
from guardagent.trace.text.native import Automaton
from guardagent.trace.text.normal import unescape
from guardagent.trace.text.numbers import canon
from guardagent.trace.text.run_targets import RunTargets, merged, rot13, run_targets
from guardagent.trace.thread.state import flatten

MAX_JOINED = 8
"""Adjacent tokens read joined (``7 3 9 2 1 4 X Q`` is ``739214XQ``)."""
_JOINED_CHARS = 64
"""Longest run read joined (a token alone is read whatever its length: a long key)."""

GLUED_MIN = 8
"""Characters a sensitive token needs (letters and digits both) to be looked for glued."""

_NOT_ALNUM = re.compile(r"[\W_]+")


def _short(run: str) -> bool:
    return len(run) <= _JOINED_CHARS


def _runs(toks: Sequence[str]) -> Iterator[Iterable[str]]:
    """Each token's runs: itself, then joined with up to MAX_JOINED - 1 that follow it.

    A value re-spelled on its way out (``739-214-XQ``, ``739214 XQ``, spaced letter by
    letter) is the same identifier to whoever reads it; so is one inside a URL, which is
    read by its tokens too. Linear: at most MAX_JOINED runs start at each token, each at
    most :data:`_JOINED_CHARS` long but for the token alone.
    """
    ends = [0, *accumulate(map(len, toks))]
    for i in range(len(toks)):
        window = toks[i : i + MAX_JOINED]
        runs: Iterable[str] = accumulate(window)
        if ends[i + len(window)] - ends[i] > _JOINED_CHARS:
            runs = chain(window[:1], takewhile(_short, islice(runs, 1, None)))
        yield runs


class Read:
    """One message's text read as :func:`sensitive_tokens` reads it (kept per message).

    Attributes:
        tokens: Its tokens (what a look-up finds in it).
        identifiers: Those that are identifier-like (``secret_like``: what a look-up of a
            call's run can find).
        glued: Those looked for glued into other text (:data:`GLUED_MIN`).
    """

    __slots__ = ("_runs", "_targets", "_words", "glued", "identifiers", "tokens")

    def __init__(self, words: list[list[str]]) -> None:
        self._words = words  # the token list of each reading (as written, escapes read)
        self.tokens = frozenset(chain.from_iterable(words))
        self.identifiers = frozenset(filter(secret_like, self.tokens))
        self.glued = frozenset(filter(_glued, self.identifiers))
        self._runs: frozenset[str] | None = None
        self._targets: RunTargets | None = None

    @property
    def targets(self) -> RunTargets:
        """Its identifiers as the runs of a call are matched against them (made once)."""
        if self._targets is None:
            self._targets = run_targets(self.identifiers, _JOINED_CHARS)
        return self._targets

    @property
    def runs(self) -> frozenset[str]:
        """Its tokens and runs of adjacent ones (:func:`_runs`), made when first asked for.

        Only a call writing as one token what no result holds as one needs them.
        """
        if self._runs is None:
            check_budget()
            self._runs = frozenset(
                chain.from_iterable(chain.from_iterable(_runs(w) for w in self._words))
            )
        return self._runs


class Sensitive:
    """The tokens (and runs of adjacent ones) of a thread's sensitive tools' results.

    Attributes:
        parts: Each sensitive message's index and reading (kept per message: see
            :func:`sensitive_tokens`).
        glued: The tokens of those results looked for glued into other text (a run glued
            is that token glued).
    """

    def __init__(
        self,
        parts: Sequence[tuple[int, Read]],
        users: Sequence[Message] = (),
        trace: Trace | None = None,
    ) -> None:
        self.parts = tuple(parts)
        self.glued = frozenset().union(*(read.glued for _, read in self.parts))
        self._users = users
        self._trace = trace
        self._union: frozenset[str] | None = None
        self._held: dict[str, list[int]] = {}  # a run -> the results holding it (noted)
        self._user_runs: frozenset[str] | None = None

    def __bool__(self) -> bool:
        return any(read.tokens for _, read in self.parts)

    def holding(self, candidates: set[str]) -> set[str]:
        """The identifier-like candidates some sensitive result holds as one token."""
        return {w for w in candidates.intersection(self._tokens()) if secret_like(w)}

    def written_as_runs(self, candidates: set[str]) -> set[str]:
        """The identifier-like candidates some sensitive result holds as a run only.

        Notes which results hold each (:meth:`holders`): the work is one intersection a
        result, then one entry a result holding a candidate.
        """
        wanted = {w for w in candidates.difference(self._tokens()) if secret_like(w)}
        if not wanted:
            return set()
        for i, read in self.parts:
            for w in wanted & read.runs:
                self._held.setdefault(w, []).append(i)
        return wanted.intersection(self._held)

    def _tokens(self) -> frozenset[str]:
        """Every part's tokens together: made once for a thread's parts (a one-entry memo)."""
        if self._union is not None:
            return self._union
        key = tuple(id(read) for _, read in self.parts)
        if _UNION and _UNION[0][0] == key:
            self._union = _UNION[0][1]
            return self._union
        self._union = frozenset().union(*(read.tokens for _, read in self.parts))
        _UNION[:] = [(key, self._union, self.parts)]  # holds the parts: their ids stay theirs
        return self._union

    def targets(self) -> RunTargets:
        """Every part's :attr:`Read.targets` together (a one-entry memo, as :meth:`_tokens`)."""
        key = tuple(id(read) for _, read in self.parts)
        if _TARGETS and _TARGETS[0][0] == key:
            return _TARGETS[0][1]
        found = merged(
            [read.targets for _, read in self.parts if read.identifiers] or [_NO_TARGETS]
        )
        _TARGETS[:] = [(key, found, self.parts)]  # holds the parts: their ids stay theirs
        return found

    def holders(self, token: str) -> frozenset[int]:
        """The sensitive messages holding `token`, as one token or a run of adjacent ones.

        Not one that only repeats it from the call it answers (as a look-up leaves out a
        token a result echoes from its call: :func:`guardagent.trace.thread.state.echo_of`).
        """
        held = self._held.get(token)
        if held is None:  # not noted by written_as_runs: look in each result
            held = [i for i, read in self.parts if token in read.runs]
        return frozenset(i for i in dict.fromkeys(held) if not self._echoed(i, token))

    def _echoed(self, index: int, token: str) -> bool:
        if self._trace is None:
            return False
        call = self._trace.call_of(self._trace.messages[index])
        return call is not None and any(
            token in runs
            for _, v in flatten(call.args)
            if (text := _written(v))
            for runs in _runs(tokens(normalize_text(text)))
        )

    def from_user(self, token: str) -> bool:
        """Whether a user message holds `token`, as one token or a run of adjacent ones."""
        if self._user_runs is None:
            self._user_runs = frozenset().union(*(_message_tokens(m).runs for m in self._users))
        return token in self._user_runs


_UNION: list[tuple[tuple[int, ...], frozenset[str], Any]] = []
_TARGETS: list[tuple[tuple[int, ...], RunTargets, Any]] = []
_NO_TARGETS = RunTargets(frozenset(), frozenset())


class Carried(NamedTuple):
    """A sensitive token a call's value carries (:func:`encoded_tokens`).

    Attributes:
        path: The argument holding it (several for a token split over values).
        value: The token, as a text value to locate.
        held: The sensitive messages that wrote it as a run of adjacent tokens when the call
            writes it as one token (``739-214-XQ`` sent as ``739214XQ``, or base64 of it):
            located by those runs, since no message holds the one token. Empty otherwise.
    """

    path: str
    value: Value
    held: frozenset[int]


def sensitive_tokens(trace: Trace, labels: Labels) -> Sensitive:
    """The tokens (and runs of adjacent ones) of the sensitive tools' results.

    What a re-spelled argument can leak: only those of these that are identifier-like
    are traced further (the same look-up as the argument's own values), so a view's other
    tokens cost no look-up. A result holding backslashes is also read with its escapes
    read. Linear in those results; a message's runs are kept while its parsed message
    lives (a resumed thread keeps its messages, :mod:`guardagent.trace.document.resume`) and by its
    text for the process (:data:`_KEPT`), so a call reads only the new ones.
    """
    return Sensitive(
        [(m.index, _message_tokens(m)) for m in trace.messages if labels.sensitive(m.source)],
        [m for m in trace.messages if m.source == "user"],
        trace,
    )


_TOKENS: dict[int, tuple[weakref.ref[Message], Read]] = {}
_KEPT: ReadingCache[Read] = kept_cache(
    MAX_CACHED_BYTES // 8,
    keys=lambda read: MAX_JOINED * len(read.tokens) + 24 * len(read.identifiers),
)
"""Readings by content (pure functions of the text: see :mod:`guardagent.trace.found.reading` for
why that is safe to share; the runs and targets made later are counted ahead, MAX_JOINED a
token and about 24 keys' worth an identifier: three spellings' prefixes)."""


def _message_tokens(message: Message) -> Read:
    """One message's :class:`Read`, kept while it lives."""
    key = id(message)
    kept = _TOKENS.get(key)
    if kept is not None and kept[0]() is message:
        return kept[1]
    text = message.text
    read = _KEPT.get((text, "", None, 0))
    if read is None:
        check_budget()
        read = Read(
            [tokens(normalize_text(x)) for x in [text] + ([unescape(text)] if "\\" in text else [])]
        )
        _KEPT.put((text, "", None, 0), read)
    _TOKENS[key] = (weakref.ref(message, functools.partial(_forget, key)), read)
    return read


def _forget(key: int, _: object) -> None:
    _TOKENS.pop(key, None)


def _glued(token: str) -> bool:
    return (
        len(token) >= GLUED_MIN and token.isalnum() and not token.isdigit() and not token.isalpha()
    )


def encoded_tokens(call: ToolCall, wanted: Sensitive | set[str]) -> list[Carried]:
    """Each token of `wanted` a value of the call carries (see the module docstring).

    `wanted` are :func:`sensitive_tokens` (or a set of them); each is looked for as written,
    reversed and in ROT13 (``QX412937`` and ``739214KD`` are ``739214XQ``): a view's runs
    read backwards or in ROT13 are the runs of the view reversed or in ROT13.
    """
    sensitive = (
        wanted
        if isinstance(wanted, Sensitive)
        else Sensitive([(-1, Read([[w] for w in sorted(wanted)]))])
    )  # each a token (its runs: itself)
    strings = [(p, t) for p, v in flatten(call.args) if (t := _written(v))]
    normal: list[tuple[str, list[str]]] = []
    for path, text in strings:
        read = []
        for _, view in views(text, turned=False):
            check_budget()
            norm = normalize_text(view)
            read.append(norm)
            if not norm.isascii() and (seen := fold(view)) != norm:
                read.append(seen)  # as a reader sees it: look-alikes, invisibles dropped
        normal.append((path, read))
    automaton = _automaton(frozenset(_carried(sensitive.glued, normal, strings)))
    out: list[Carried] = []

    def add(paths: Iterable[str], found: Iterable[str], runs: bool = False) -> None:
        # only a token no result holds as one is located by the runs holding it: one a result
        # holds is located by its token (echoes of the result's own call left out, as for
        # any value), and a user's run does not make it the user's
        for w in found:
            if runs:
                check_budget()  # each such token is looked for in every sensitive result
            held = sensitive.holders(w) if runs else frozenset()
            out.extend(Carried(p, Value("text", (), w, (w,)), held) for p in paths)

    targets = sensitive.targets()
    for path, read in normal:
        candidates: set[str] = set()  # runs a look-up may find (:mod:`.run_targets`)
        whole: set[str] = set()  # the value's identifier-like tokens (in some view)
        for norm in read:
            toks = tokens(norm)
            whole.update(filter(secret_like, toks))  # reversed or in ROT13 alike
            candidates |= targets.found(toks, MAX_JOINED, _JOINED_CHARS)
            if automaton is not None and norm:
                candidates.update(automaton.found(_NOT_ALNUM.sub("", norm)))
        add((path,), sorted(sensitive.holding(_turned(candidates))))  # a look-up finds it
        add((path,), sorted(sensitive.written_as_runs(_turned(whole))), runs=True)
    # by the value's place, not its path: the model names the arguments, and two values
    # may have one path ({"a.b": "7392", "a": {"b": "1455"}}; "body[0]" beside body's first)
    spread = (
        [(t, p, k) for k, (p, v) in enumerate(strings) for t in tokens(normalize_text(v))]
        if targets.targets
        else []
    )  # no identifier-like sensitive token: no run is one
    crossing: dict[str, tuple[str, ...]] = {}  # runs that span two values or more: their paths
    for i in range(len(spread)):
        if spread[i][2] == spread[min(i + MAX_JOINED, len(spread)) - 1][2]:
            continue  # the run stays in one value: read above
        joined, paths = "", dict.fromkeys([spread[i][1]])
        for t, p, k in spread[i : i + MAX_JOINED]:
            joined += t
            paths[p] = None
            if len(joined) > _JOINED_CHARS:
                break
            if k != spread[i][2]:
                crossing.setdefault(joined, tuple(paths))
    for w in sorted(sensitive.holding(_turned(set(crossing)))):  # as written, or turned back
        add(next(crossing[j] for j in (w, w[::-1], rot13(w)) if j in crossing), [w])
    if automaton is not None and len(strings) > 1:  # glued over a value's end: one run
        compact = [_NOT_ALNUM.sub("", normalize_text(v)) for _, v in strings]
        ends = [0]
        for part in compact:
            ends.append(ends[-1] + len(part))
        for start, end, w in automaton.spanning("".join(compact), ends[1:-1]):
            first = bisect_right(ends, start) - 1
            last = bisect_right(ends, end - 1) - 1
            add([strings[k][0] for k in range(first, last + 1)], [w])
    return out


def _written(scalar: Any) -> str:
    """A scalar argument as text: a string, or a number as its digits (else empty).

    A number is a run of digits to whoever reads it: ``73921455`` carries a result's
    ``7392 1455``. Decimal writes an integer of any length (str stops at 4,300 digits), and
    a float that repr writes with an exponent in full (``1.234e-05`` carries ``00001234``).
    """
    if isinstance(scalar, str):
        return scalar
    if isinstance(scalar, bool) or not isinstance(scalar, int | float):
        return ""
    if isinstance(scalar, int):
        return str(Decimal(scalar))
    written = repr(scalar)  # 1.234e-05 is 0.00001234 to its reader (and to the amount reader)
    return canon(Decimal(written)) if "e" in written else written


def _turned(runs: set[str]) -> set[str]:
    """The runs as written, reversed and in ROT13.

    The same as the runs of the text reversed or in ROT13: tokens are runs of word
    characters, which neither turn changes, and the runs of a token list are every
    adjacent few of them (:func:`_runs`), read backwards the same.
    """
    if not runs:
        return set()
    joined = "\0".join(runs)  # turned at once: NUL is in no token
    return runs.union(joined[::-1].split("\0"), rot13(joined).split("\0"))


def _carried(
    glued: AbstractSet[str], normal: list[tuple[str, list[str]]], strings: list[tuple[str, str]]
) -> set[str]:
    """The tokens of `glued` that could be in the call at all.

    Inside some view of its values (or all of them read as one run), separators dropped, as
    written, reversed or in ROT13.
    A superset of what the automaton then finds (it says where); most calls carry none, and
    then no automaton is built for the thread's every code.
    """
    if not glued:
        return set()
    runs = [_NOT_ALNUM.sub("", norm) for _, read in normal for norm in read]
    runs.append("".join(_NOT_ALNUM.sub("", normalize_text(v)) for _, v in strings))
    text = "\0".join(runs)
    every = "\0".join((text, text[::-1], rot13(text)))
    return {w for w in glued if w in every}


@functools.lru_cache(maxsize=32)
def _automaton(glued: frozenset[str]) -> Automaton[str] | None:
    """One Aho-Corasick automaton of `glued` as written, reversed and in ROT13 (None: empty).

    Built once per set: a thread's set changes only when a sensitive result brings a new
    code, and the automaton only matches (it keeps no state between scans). A token of over
    :data:`~guardagent.trace.text.native.MAX_KEY_CHARS` characters is searched by ``str.find``.
    """
    if not glued:
        return None
    # as written wins a tie (the last one added for a key)
    return Automaton((key, w) for w in glued for key in (rot13(w), w[::-1], w))
