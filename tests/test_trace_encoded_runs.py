"""The runs of a call's views are formed only where a sensitive identifier can start (issue 38).

:func:`guardagent.trace.sources.encoded.encoded_tokens` used to form every run of every decoded view
of the call's values and intersect them afterwards; it now forms a run only while it is a
prefix of an identifier-like sensitive token (:mod:`guardagent.trace.text.run_targets`). These
tests check that nothing found before is lost (a differential run against the former
reading, kept here as the oracle, over many generated threads and calls) and that the work
is gone (no run of a view formed when no sensitive token is identifier-like).
"""

from __future__ import annotations

import base64
import codecs
from bisect import bisect_right
from collections.abc import Iterable
from itertools import chain
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace.document.shapes import ToolCall
from guardagent.trace.found.secret_forms import fold
from guardagent.trace.found.secrets import views
from guardagent.trace.found.values import Value, normalize_text, tokens
from guardagent.trace.sources import encoded
from guardagent.trace.sources.encoded import (
    _JOINED_CHARS,
    _NOT_ALNUM,
    MAX_JOINED,
    Carried,
    Read,
    Sensitive,
    _automaton,
    _carried,
    _runs,
    _turned,
    _written,
    encoded_tokens,
)
from guardagent.trace.text.run_targets import rot13, run_targets
from guardagent.trace.thread.state import flatten


def _former(call: ToolCall, sensitive: Sensitive) -> list[Carried]:
    """encoded_tokens as it was before issue 38 (every run of every view formed)."""
    strings = [(p, t) for p, v in flatten(call.args) if (t := _written(v))]
    normal: list[tuple[str, list[str]]] = []
    for path, text in strings:
        read = []
        for _, view in views(text, turned=False):
            norm = normalize_text(view)
            read.append(norm)
            if not norm.isascii() and (seen := fold(view)) != norm:
                read.append(seen)
        normal.append((path, read))
    automaton = _automaton(frozenset(_carried(sensitive.glued, normal, strings)))
    out: list[Carried] = []

    def add(paths: Iterable[str], found: Iterable[str], runs: bool = False) -> None:
        for w in found:
            held = sensitive.holders(w) if runs else frozenset()
            out.extend(Carried(p, Value("text", (), w, (w,)), held) for p in paths)

    for path, read in normal:
        candidates: set[str] = set()
        whole: set[str] = set()
        for norm in read:
            toks = tokens(norm)
            whole.update(toks)
            candidates.update(chain.from_iterable(_runs(toks)))
            if automaton is not None and norm:
                candidates.update(automaton.found(_NOT_ALNUM.sub("", norm)))
        add((path,), sorted(sensitive.holding(_turned(candidates))))
        add((path,), sorted(sensitive.written_as_runs(_turned(whole))), runs=True)
    spread = [(t, p, k) for k, (p, v) in enumerate(strings) for t in tokens(normalize_text(v))]
    crossing: dict[str, tuple[str, ...]] = {}
    for i in range(len(spread)):
        if spread[i][2] == spread[min(i + MAX_JOINED, len(spread)) - 1][2]:
            continue
        joined, paths = "", dict.fromkeys([spread[i][1]])
        for t, p, k in spread[i : i + MAX_JOINED]:
            joined += t
            paths[p] = None
            if len(joined) > _JOINED_CHARS:
                break
            if k != spread[i][2]:
                crossing.setdefault(joined, tuple(paths))
    for w in sorted(sensitive.holding(_turned(set(crossing)))):
        add(next(crossing[j] for j in (w, w[::-1], rot13(w)) if j in crossing), [w])
    if automaton is not None and len(strings) > 1:
        compact = [_NOT_ALNUM.sub("", normalize_text(v)) for _, v in strings]
        ends = [0]
        for part in compact:
            ends.append(ends[-1] + len(part))
        for start, end, w in automaton.spanning("".join(compact), ends[1:-1]):
            first = bisect_right(ends, start) - 1
            last = bisect_right(ends, end - 1) - 1
            add([strings[k][0] for k in range(first, last + 1)], [w])
    return out


def _sensitive(results: list[str]) -> Sensitive:
    return Sensitive([(i, Read([tokens(normalize_text(r))])) for i, r in enumerate(results)])


def _as_set(found: list[Carried]) -> list[tuple[str, str, tuple[int, ...]]]:
    return sorted({(c.path, c.value.text, tuple(sorted(c.held))) for c in found})


_CHARS = "0123456789ABCDEFXQZ"
_CODE = st.text(st.sampled_from(_CHARS), min_size=3, max_size=20)
_WORD = st.sampled_from(["pay", "code", "the", "hello", "ref", "iban", "to", "bob", "x"])


@st.composite
def _spelled(draw: st.DrawFn, code: str) -> str:
    """A code as a call may carry it: as is, cut by separators, turned, encoded, glued."""
    how = draw(
        st.sampled_from(["plain", "cut", "reversed", "rot13", "base64", "hex", "glued", "spaced"])
    )
    if how == "cut":
        k = draw(st.integers(1, max(1, len(code) - 1)))
        return code[:k] + draw(st.sampled_from(["-", " ", ".", "/"])) + code[k:]
    if how == "reversed":
        return code[::-1]
    if how == "rot13":
        return codecs.encode(code, "rot13")
    if how == "base64":
        return base64.b64encode(code.encode()).decode()
    if how == "hex":
        return code.encode().hex()
    if how == "glued":
        return "Bob" + code
    if how == "spaced":
        return " ".join(code)
    return code


@st.composite
def _case(draw: st.DrawFn) -> tuple[list[str], dict[str, Any]]:
    codes = draw(st.lists(_CODE, min_size=1, max_size=4))
    results = []
    for code in codes:  # a result writes a code as one token or cut by separators
        k = draw(st.integers(0, len(code)))
        sep = draw(st.sampled_from(["", " ", "-"]))
        words = draw(st.lists(_WORD, max_size=4))
        results.append(" ".join([*words, code[:k] + sep + code[k:]]))
    parts = draw(
        st.lists(st.one_of(_WORD, st.sampled_from(codes).flatmap(_spelled)), min_size=1, max_size=6)
    )
    cut = draw(st.integers(0, len(parts)))
    args: dict[str, Any] = {"subject": " ".join(parts[:cut]), "body": " ".join(parts[cut:])}
    if draw(st.booleans()):
        args["ref"] = int(draw(st.text(st.sampled_from("0123456789"), min_size=1, max_size=12)))
    return results, args


@settings(max_examples=300, deadline=None)
@given(_case())
def test_the_call_carries_what_the_former_reading_found(case: Any) -> None:
    results, args = case
    call = ToolCall("send_email", args, None, 9)
    assert _as_set(encoded_tokens(call, _sensitive(results))) == _as_set(
        _former(call, _sensitive(results))
    ), (results, args)


@pytest.mark.parametrize(
    ("results", "body"),
    [
        (["Your code: 739214XQ"], "code 739-214-XQ"),
        (["Your code: 739-214-XQ"], "code 739214XQ"),
        (["Your code: 739214XQ"], "QX412937"),
        (["Your code: 739214XQ"], codecs.encode("739214XQ", "rot13")),
        (["Your code: 739214XQ"], base64.b64encode(b"code 739 214 XQ").decode()),
        (["IBAN CH93 0076 2011 6238 5295 7"], "to CH9300762011623852957 now"),
        (["key " + "A1" * 40], "key " + "A1" * 40),  # a token alone, longer than a joined run
        (["Your code: 739214XQ"], "Thanks, Bob739214XQ"),
    ],
)
def test_known_spellings_are_found_as_before(results: list[str], body: str) -> None:
    call = ToolCall("send_email", {"subject": "x", "body": body}, None, 9)
    found = _as_set(encoded_tokens(call, _sensitive(results)))
    assert found, body
    assert found == _as_set(_former(call, _sensitive(results)))


def test_no_run_of_a_view_is_formed_when_no_sensitive_token_is_an_identifier() -> None:
    # the results hold words only: no run of the call can be one of their identifiers, so
    # the call's views (a base64 reading of a sentence is many tokens) form no runs at all;
    # the result's own runs are formed once (a long base64 token of the call is looked for
    # among them: written there as a run)
    note = "Meeting notes: lunch with the team at noon, then review."
    sensitive = _sensitive([note])
    body = "Hi, pay the team today " + base64.b64encode(b"lunch with the team").decode()
    call = ToolCall("send_email", {"subject": "Update", "body": body}, None, 9)
    with mock.patch.object(encoded, "_runs", wraps=_runs) as runs:
        assert encoded_tokens(call, sensitive) == []
    assert [c.args[0] for c in runs.call_args_list] == [tokens(normalize_text(note))]


@settings(max_examples=300, deadline=None)
@given(
    toks=st.lists(st.text(st.sampled_from("ab12"), min_size=1, max_size=5), max_size=14),
    ids=st.frozensets(st.text(st.sampled_from("ab12"), min_size=1, max_size=12), max_size=5),
)
def test_run_targets_find_the_runs_that_are_targets(toks: list[str], ids: frozenset[str]) -> None:
    # the same runs as forming every run (encoded._runs) and keeping the targets
    targets = run_targets(ids, _JOINED_CHARS)
    every = set(chain.from_iterable(_runs(toks)))
    assert targets.found(toks, MAX_JOINED, _JOINED_CHARS) == every & targets.targets


def test_run_targets_prefixes_stay_linear_in_a_long_identifier() -> None:
    # a result's 100k-character token: found as a token alone, no prefix past a joined run
    long = "A1" * 50_000
    targets = run_targets(frozenset({long}), _JOINED_CHARS)
    assert max(map(len, targets.prefixes)) == _JOINED_CHARS
    assert len(targets.prefixes) <= 3 * _JOINED_CHARS
    assert targets.found(["x", long, "y"], MAX_JOINED, _JOINED_CHARS) == {long}
