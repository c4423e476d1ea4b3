"""The thread's hash chain and the one-pass nesting check: the shortcuts of a state's call.

The chain (:mod:`guardagent.trace.document.chain`) replaces a digest per message: it must tell every
different message list apart. The nesting check of a whole message list
(:func:`~guardagent.trace.document.messages.within_nesting`) replaces a walk per message: it must
agree with the per-message check, and a trace must still report its first problem.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.readers.evidence import UnreadableEvidence
from guardagent.trace.document.chain import chains, record
from guardagent.trace.document.messages import (
    MAX_NESTING,
    check_nesting,
    parse_trace,
    within_nesting,
)
from guardagent.trace.document.shapes import Message, ToolCall, calls_json
from tests.traces.synthetic import proposed, thread

_text = st.text(alphabet=st.sampled_from(list('a1:{}[]"\\ é\n')), max_size=6)
_calls = st.lists(
    st.builds(
        ToolCall,
        name=_text,
        args=st.dictionaries(_text, _text, max_size=2),
        id=st.none() | _text,
        index=st.just(0),
    ),
    max_size=2,
)
_messages = st.lists(
    st.builds(
        Message,
        role=st.sampled_from(["system", "user", "assistant", "tool"]),
        source=_text,
        text=_text,
        tool_name=st.none(),
        tool_call_id=st.none() | _text,
        index=st.just(0),
        calls=_calls.map(tuple),
        status=st.sampled_from([None, "ok", "error"]),
    ),
    max_size=4,
)


def _fields(m: Message) -> tuple[Any, ...]:
    return (
        m.role,
        m.source,
        m.tool_call_id or "",
        m.status or "",
        [(c.id, c.name, c.args) for c in m.calls],
        m.text,
    )


@settings(max_examples=400, deadline=None)
@given(_messages, _messages, st.integers(0, 4))
def test_two_message_lists_chain_alike_only_when_equal(
    a: list[Message], b: list[Message], cut: int
) -> None:
    same = [_fields(m) for m in a] == [_fields(m) for m in b]
    assert (chains(a, len(a))[1] == chains(b, len(b))[1]) == same
    cut = min(cut, len(a))
    seen, whole, _ = chains(a, cut)
    assert seen == chains(a[:cut], cut)[1]
    assert whole == chains(a, len(a))[1], "the chain of them all does not depend on the cut"
    for n in range(len(a) + 1):  # resumed from a known chain of the first n: the same chains
        known = (n, chains(a[:n], n)[2])
        assert chains(a, cut, known)[:2] == (seen, whole)


def _decode(joined: str) -> list[tuple[str, ...]]:
    """Read chained records back (six length-prefixed fields each): the format is injective."""
    fields: list[str] = []
    at = 0
    while at < len(joined):
        colon = joined.index(":", at)
        size = int(joined[at:colon])
        fields.append(joined[colon + 1 : colon + 1 + size])
        at = colon + 1 + size
    assert len(fields) % 6 == 0
    return [tuple(fields[i : i + 6]) for i in range(0, len(fields), 6)]


@settings(max_examples=400, deadline=None)
@given(_messages)
def test_the_records_of_a_thread_read_back_to_its_messages(messages: list[Message]) -> None:
    expected = [
        (m.role, m.source, m.tool_call_id or "", m.status or "", calls_json(m), m.text)
        for m in messages
    ]
    assert _decode("".join(record(m) for m in messages)) == expected


def test_a_field_moved_between_messages_changes_the_chain() -> None:
    call = ToolCall("t", {}, "c1", 0)
    plain = [
        Message("assistant", "model", "x", None, None, 0),
        Message("user", "user", "y", None, None, 1),
    ]
    moved = [
        Message("assistant", "model", "", None, None, 0, (call,)),
        Message("user", "user", "xy", None, None, 1),
    ]
    assert chains(plain, 2) != chains(moved, 2)
    shifted = [
        Message("user", "user", "ab", None, None, 0),
        Message("user", "user", "", None, None, 1),
    ]
    assert chains(shifted, 2) != chains(
        [Message("user", "user", "a", None, None, 0), Message("user", "user", "b", None, None, 1)],
        2,
    )


def _deep(n: int) -> Any:
    value: Any = "x"
    for _ in range(n):
        value = {"k": [value]} if n % 2 else [value]
    return value


_nested = st.recursive(
    st.none() | st.text(max_size=2) | st.integers(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=2), inner, max_size=3)
        | st.lists(inner, max_size=2).map(tuple)
    ),
    max_leaves=12,
)


def _depth(value: Any) -> int:
    """Containers nested in a value, counted recursively (the reference, small values only)."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list | tuple):
        return 1 + max(map(_depth, value), default=0)
    return 0


def _per_message(values: list[Any]) -> bool:
    try:
        for value in values:
            check_nesting(value, "x")
    except UnreadableEvidence:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_nested, st.integers(MAX_NESTING - 3, MAX_NESTING + 1)), max_size=4))
def test_one_walk_over_the_messages_agrees_with_a_walk_each(spec: list[tuple[Any, int]]) -> None:
    values = []
    for leaf, depth in spec:
        value = leaf
        for _ in range(depth - 1):
            value = [value]
        values.append(value)
    expected = all(_depth(v) <= MAX_NESTING for v in values)
    assert within_nesting(values) == _per_message(values) == expected


def test_a_trace_reports_its_first_problem_and_names_the_deep_message() -> None:
    messages = thread(6, seed=1)
    too_deep = {"role": "user", "content": [{"type": "image", "data": _deep(MAX_NESTING + 2)}]}
    with pytest.raises(UnreadableEvidence) as caught:
        parse_trace([*messages[:3], too_deep, *messages[3:]], proposed(messages))
    assert caught.value.reason == "unparsable_trace" and caught.value.detail.startswith(
        "message 3: objects or lists are nested"
    )
    unknown = {"role": "narrator", "content": "hi"}
    with pytest.raises(UnreadableEvidence) as caught:
        parse_trace([unknown, *messages[:3], too_deep], proposed(messages))
    assert "message 0 has an unknown role" in caught.value.detail, "the first problem first"
    at_limit = {"role": "user", "content": [{"type": "image", "data": _lists(MAX_NESTING - 3)}]}
    assert parse_trace([*messages[:3], at_limit], proposed(messages)).messages  # 64 deep
    over = {"role": "user", "content": [{"type": "image", "data": _lists(MAX_NESTING - 2)}]}
    with pytest.raises(UnreadableEvidence):
        parse_trace([*messages[:3], over], proposed(messages))


def _lists(n: int) -> Any:
    value: Any = "x"
    for _ in range(n):
        value = [value]
    return value
