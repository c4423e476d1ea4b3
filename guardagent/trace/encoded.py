"""A sensitive tool's value on its way out: re-spelled, encoded, split or glued to other text.

``secret_flow`` and ``value_from_sensitive`` trace every value of the proposed call; a page
can also tell the model to send a code in another spelling, and whoever receives it reads
the code all the same. This module finds, in the call's string values, the tokens of the
sensitive tools' results (:func:`sensitive_tokens`) that the values carry:

- re-spelled: a token and runs of up to :data:`MAX_JOINED` adjacent ones read joined
  (``739-214-XQ``, ``7 3 9 2 1 4 X Q``: :func:`joined_tokens`);
- encoded: in each decoded view :func:`guardagent.trace.secrets.views` gives (HTML and
  string escapes, URL, base64, base32, hex; nested once), and reversed or in ROT13;
- split: runs over two argument values or list elements (``subject: "739"``, ``body:
  "214XQ"``);
- glued: a token of at least :data:`GLUED_MIN` characters with letters and digits (a
  code, a key, an IBAN) inside any run of letters and digits of a view, separators
  dropped (``Bob739214XQ``, ``/abc739214XQ``), found with one Aho-Corasick automaton.

Each token found is then traced like the value's own (the user may have given it). All of
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
from collections.abc import Iterable, Sequence
from typing import Any

import ahocorasick

from guardagent.trace.budget import check_budget
from guardagent.trace.labels import Labels
from guardagent.trace.messages import Message, ToolCall, Trace
from guardagent.trace.normal import unescape
from guardagent.trace.secrets import views
from guardagent.trace.state import flatten
from guardagent.trace.values import Value, normalize_text, secret_like, tokens

MAX_JOINED = 8
"""Adjacent tokens read joined (``7 3 9 2 1 4 X Q`` is ``739214XQ``)."""
_JOINED_CHARS = 64

GLUED_MIN = 8
"""Characters a sensitive token needs (letters and digits both) to be looked for glued."""

_NOT_ALNUM = re.compile(r"[\W_]+")
_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)  # what codecs' "rot13" does, without a codec look-up per token


def joined_tokens(toks: Sequence[str]) -> dict[str, None]:
    """Each token, and each run of up to :data:`MAX_JOINED` adjacent tokens joined.

    A value re-spelled on its way out (``739-214-XQ``, ``739214 XQ``, spaced letter by
    letter) is the same identifier to whoever reads it; so is one inside a URL, which is
    read by its tokens too. Linear: at most MAX_JOINED runs start at each token.
    """
    out: dict[str, None] = {}
    for i in range(len(toks)):
        joined = ""
        for t in toks[i:i + MAX_JOINED]:
            joined += t
            if len(joined) > _JOINED_CHARS:
                break
            out[joined] = None
    return out


def sensitive_tokens(trace: Trace, labels: Labels) -> set[str]:
    """The tokens (and runs of adjacent ones) of the sensitive tools' results.

    What a re-spelled argument can leak: only those of these that are identifier-like
    (:func:`_wanted`) are traced further (the same look-up as the argument's own values), so
    a view's other tokens cost no look-up. A result
    holding backslashes is also read with its escapes read. Linear in those results; each
    message's tokens are kept while its parsed message lives (a resumed thread keeps its
    messages, :mod:`guardagent.trace.resume`), so a call reads only the new ones.
    """
    parts = [_message_tokens(m) for m in trace.messages if labels.sensitive(m.source)]
    key = tuple(id(p) for p in parts)  # kept frozensets: one per sensitive message object
    if _UNION and _UNION[0][0] == key:
        return _UNION[0][1]
    tokens_ = _Tokens()
    tokens_.update(*(found for found, _ in parts))
    tokens_.glued = set().union(*(glued for _, glued in parts))
    _UNION[:] = [(key, tokens_, parts)]  # holds the parts: their ids stay theirs
    return tokens_


class _Tokens(set[str]):
    """Sensitive tokens, with those looked for glued (:data:`GLUED_MIN`) picked out."""

    glued: set[str]


_UNION: list[tuple[tuple[int, ...], _Tokens, list[Any]]] = []  # the last union made


_TOKENS: dict[int, tuple[weakref.ref[Message], tuple[frozenset[str], frozenset[str]]]] = {}


def _message_tokens(message: Message) -> tuple[frozenset[str], frozenset[str]]:
    """(tokens, those looked for glued) of one sensitive message, kept while it lives."""
    key = id(message)
    kept = _TOKENS.get(key)
    if kept is not None and kept[0]() is message:
        return kept[1]
    text = message.text
    texts = [text] + ([unescape(text)] if "\\" in text else [])
    found = frozenset(t for x in texts for t in joined_tokens(tokens(normalize_text(x))))
    both = (found, frozenset(t for t in found if _glued(t) and secret_like(t)))
    _TOKENS[key] = (weakref.ref(message, functools.partial(_forget, key)), both)
    return both


def _forget(key: int, _: object) -> None:
    _TOKENS.pop(key, None)


def _glued(token: str) -> bool:
    return (len(token) >= GLUED_MIN and token.isalnum() and not token.isdigit()
            and not token.isalpha())  # fmt: skip


def encoded_tokens(call: ToolCall, wanted: set[str]) -> list[tuple[str, Value, bool]]:
    """``(path, token, inner)`` for each token of `wanted` a string value carries (module).

    `wanted` are :func:`sensitive_tokens`; each is looked for as written, reversed and in
    ROT13 (``QX412937`` and ``739214KD`` are ``739214XQ``).
    """
    strings = [(p, v) for p, v in flatten(call.args) if isinstance(v, str) and v]
    normal: list[tuple[str, list[str]]] = []
    for path, text in strings:
        read = []
        for _, view in views(text, turned=False):
            check_budget()
            read.append(normalize_text(view))
        normal.append((path, read))
    automaton = _automaton(frozenset(_carried(_glued_part(wanted), normal, strings)))
    glued = automaton is not None
    out: list[tuple[str, Value, bool]] = []

    def add(paths: Iterable[str], token: str) -> None:
        w = _wanted(token, wanted)
        if w is not None:
            out.extend((p, Value("text", (), w, (w,)), True) for p in paths)

    def scan(text: str) -> Iterable[str]:
        return (w for _, w in automaton.iter(text)) if automaton is not None and text else ()

    for path, read in normal:
        for norm in read:
            for t in joined_tokens(tokens(norm)):
                add((path,), t)
            for w in scan(_NOT_ALNUM.sub("", norm)):
                add((path,), w)
    spread = [(t, p) for p, v in strings for t in tokens(normalize_text(v))]
    for i in range(len(spread)):  # runs that span two values or more
        joined, paths = "", dict.fromkeys([spread[i][1]])
        for t, p in spread[i:i + MAX_JOINED]:
            joined += t
            paths[p] = None
            if len(joined) > _JOINED_CHARS:
                break
            if len(paths) > 1:
                add(paths, joined)
    if glued and len(strings) > 1:  # glued over a value's end: read the values as one run
        compact = [_NOT_ALNUM.sub("", normalize_text(v)) for _, v in strings]
        ends = [0]
        for part in compact:
            ends.append(ends[-1] + len(part))
        for end, w in automaton.iter("".join(compact)):
            first = bisect_right(ends, end - len(w) + 1) - 1
            last = bisect_right(ends, end) - 1
            if first != last:
                add([strings[k][0] for k in range(first, last + 1)], w)
    return out


def _wanted(token: str, wanted: set[str]) -> str | None:
    """The identifier-like token of `wanted` that `token` is: as written, reversed, or in ROT13."""
    for w in (token, token[::-1], token.translate(_ROT13)):
        if w in wanted and secret_like(w):
            return w
    return None


def _glued_part(wanted: set[str]) -> set[str]:
    """The tokens of `wanted` looked for glued, from each message's kept share when it can."""
    parts = getattr(wanted, "glued", None)
    return parts if parts is not None else {w for w in wanted if _glued(w) and secret_like(w)}


def _carried(
    glued: set[str], normal: list[tuple[str, list[str]]], strings: list[tuple[str, str]]
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
    every = "\0".join((text, text[::-1], text.translate(_ROT13)))
    return {w for w in glued if w in every}


@functools.lru_cache(maxsize=32)
def _automaton(glued: frozenset[str]) -> Any:
    """One Aho-Corasick automaton of `glued` as written, reversed and in ROT13 (None: empty).

    Built once per set: a thread's set changes only when a sensitive result brings a new
    code, and the automaton only matches (it keeps no state between scans).
    """
    if not glued:
        return None
    automaton = ahocorasick.Automaton()
    for w in glued:
        for key in (w.translate(_ROT13), w[::-1], w):  # as written wins a tie
            automaton.add_word(key, w)
    automaton.make_automaton()
    return automaton
