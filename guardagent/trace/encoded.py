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

import codecs
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence

import ahocorasick

from guardagent.trace.budget import check_budget
from guardagent.trace.labels import Labels
from guardagent.trace.messages import ToolCall, Trace
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
    """Identifier-like tokens (and runs of adjacent ones) of the sensitive tools' results.

    What a re-spelled argument can leak: only these are traced further (the same look-up
    as the argument's own values), so a view's other tokens cost no look-up. A result
    holding backslashes is also read with its escapes read. Linear in those results.
    """
    out: set[str] = set()
    for message in trace.messages:
        if not labels.sensitive(message.source):
            continue
        texts = [message.text] + ([unescape(message.text)] if "\\" in message.text else [])
        for text in texts:
            out.update(t for t in joined_tokens(tokens(normalize_text(text))) if secret_like(t))
    return out


def _glued(token: str) -> bool:
    return (len(token) >= GLUED_MIN and token.isalnum() and not token.isdigit()
            and not token.isalpha())  # fmt: skip


def encoded_tokens(call: ToolCall, wanted: set[str]) -> list[tuple[str, Value, bool]]:
    """``(path, token, inner)`` for each token of `wanted` a string value carries (module).

    `wanted` are :func:`sensitive_tokens`; each is looked for as written, reversed and in
    ROT13 (``QX412937`` and ``739214KD`` are ``739214XQ``).
    """
    turned = {w[::-1]: w for w in wanted} | {codecs.encode(w, "rot13"): w for w in wanted}
    turned.update((w, w) for w in wanted)
    automaton = ahocorasick.Automaton()
    for key, w in turned.items():
        if _glued(w):
            automaton.add_word(key, w)
    glued = len(automaton) > 0
    if glued:
        automaton.make_automaton()
    strings = [(p, v) for p, v in flatten(call.args) if isinstance(v, str) and v]
    out: list[tuple[str, Value, bool]] = []

    def add(paths: Iterable[str], token: str) -> None:
        if (w := turned.get(token)) is not None:
            out.extend((p, Value("text", (), w, (w,)), True) for p in paths)

    def scan(text: str) -> Iterable[str]:
        return (w for _, w in automaton.iter(text)) if glued and text else ()

    for path, text in strings:
        for _, view in views(text, turned=False):
            check_budget()
            norm = normalize_text(view)
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
