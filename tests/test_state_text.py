"""Signing a thread state renders only the posting lists its call changed (issue 38 item 2).

The signed bytes stay the canonical JSON of the state (:func:`state_text.canonical`), so a
state verifies in any process and old states verify as before; these tests count the work
(posting lists rendered) and check the bytes, never time.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent import GuardAgent
from guardagent.trace.thread import state_text
from guardagent.trace.thread.state import verify
from tests.traces.synthetic import proposed, thread

KEY = "state-text test key"


def _guard() -> GuardAgent:
    return GuardAgent("assistant-trace", memory_dir=tempfile.mkdtemp(), trace_key=KEY)


def _mac(state: dict, key: str = KEY) -> str:
    index = {k: v for k, v in state.items() if k != "consent"}
    body = state_text.canonical(index).encode("utf-8", "surrogatepass")
    return hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


@pytest.mark.parametrize("seed", [1, 7, 100, 2024])
@pytest.mark.parametrize("step", [1, 2, 4, 9])
def test_a_call_with_state_renders_only_the_lists_it_changed(seed: int, step: int) -> None:
    guard = _guard()
    messages = thread(60 + step, seed=seed)
    first = guard.check_trace(messages[:-step], proposed(messages[:-step])).trace_state
    before = state_text.rendered
    second = guard.check_trace(messages, proposed(messages), thread_state=first).trace_state
    rendered = state_text.rendered - before
    old, new = first["postings"], second["postings"]
    changed = sum(1 for h, ids in new.items() if old.get(h) != ids)
    assert 0 < rendered == changed < len(new)
    assert second["mac"] == _mac(second)  # the bytes signed are the canonical JSON's


def test_a_state_from_storage_verifies_and_its_next_state_is_canonical() -> None:
    guard = _guard()
    messages = thread(80, seed=5)
    states = [guard.check_trace(messages[:40], proposed(messages[:40])).trace_state]
    for cut in (50, 60, 80):
        stored = json.loads(json.dumps(states[-1]))  # a checkpointer's copy: no list shared
        decision = guard.check_trace(messages[:cut], proposed(messages[:cut]), thread_state=stored)
        assert decision.error is None, decision.reason
        states.append(decision.trace_state)
    for state in states:
        assert state["mac"] == _mac(state)
    state_text.forget()  # another process: nothing kept, the same bytes
    again = guard.check_trace(messages, proposed(messages), thread_state=states[-2]).trace_state
    assert again["mac"] == states[-1]["mac"]


def test_an_altered_list_is_refused_though_its_text_was_kept() -> None:
    guard = _guard()
    messages = thread(70, seed=11)
    state = guard.check_trace(messages[:60], proposed(messages[:60])).trace_state
    forged = copy.deepcopy(state)
    h = next(iter(forged["postings"]))
    forged["postings"][h] = [*forged["postings"][h], 0] if forged["postings"][h][0] else [1]
    decision = guard.check_trace(messages, proposed(messages), thread_state=forged)
    assert not decision.allowed and "unreadable_state" in (decision.error or decision.reason)


POSTINGS = st.dictionaries(
    st.text(alphabet='ABCxyz019-_"\\é\u2028],[', min_size=1, max_size=12),
    st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=6),
    max_size=30,
)
OTHER = st.dictionaries(
    st.sampled_from(["a", "chain", "count", "postingz", "region", "z", "é"]),
    st.one_of(st.integers(), st.text(max_size=8), st.none()),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(POSTINGS, OTHER, st.data())
def test_the_signed_text_is_the_canonical_json(postings: dict, other: dict, data) -> None:
    state = {**other, "postings": postings}
    text, whole = state_text.body(state, {}, {})  # nothing kept: as signing always wrote it
    assert text == state_text.canonical(state) and isinstance(whole, str)
    texts = state_text._split(postings, whole)  # the next call splits it, or writes anew
    assert texts is None or texts == {
        h: state_text.canonical({h: ids})[1:-1] for h, ids in postings.items()
    }
    if texts is None:
        return
    # the next state: some lists copied and changed, some keys new, the rest shared
    shared = dict(postings)
    after = {h: list(ids) for h, ids in postings.items()}
    copied = set(
        data.draw(st.sets(st.sampled_from(sorted(postings))) if postings else st.just(set()))
    )
    for h in copied:
        after[h] = [*after[h], 10**7]
    for h, ids in postings.items():
        if h not in copied:
            after[h] = ids  # the very list: its kept text is used
    after.update(data.draw(POSTINGS))
    copied |= {h for h in after if h in shared and after[h] is not shared[h]}
    nxt = {**other, "postings": after}
    text, _ = state_text.body(nxt, shared, texts, copied)
    assert text == state_text.canonical(nxt)


def test_verification_is_unchanged_for_a_signed_state() -> None:
    guard = _guard()
    messages = thread(30, seed=3)
    state = guard.check_trace(messages, proposed(messages)).trace_state
    index = {k: v for k, v in state.items() if k != "consent"}
    assert verify(json.loads(json.dumps(index)), KEY.encode())
    assert not verify(json.loads(json.dumps(index)), b"another key")


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.text(alphabet="AZaz09-_", min_size=1, max_size=11),
        st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=6),
        max_size=40,
    )
)
def test_key_hashes_lists_split_from_one_dump_are_each_lists_text(postings: dict) -> None:
    whole = json.dumps(postings, sort_keys=True, separators=(",", ":"))
    assert state_text._split(postings, whole) == {
        h: json.dumps({h: ids}, separators=(",", ":"))[1:-1] for h, ids in postings.items()
    }
