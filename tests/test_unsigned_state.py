"""A thread state without a deployment key never changes a decision toward allowing (class 10).

Without ``trace_key`` nothing authenticates ``check_trace(..., thread_state=...)``: whoever
can write the store it comes from could post an attacker's IBAN under the user's message.
Such a state is not read for provenance (the thread is read from its messages, as with no
state); what it can only deny with (a rewritten history, approvals already used) still
counts. Each forgery below was seen allowing the injected call before the fix.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from guardagent.agent import GuardAgent
from guardagent.trace.thread.state import STATE_FORMAT
from tests.test_trace_wiring import TRACES, trace_profile

KEY = "deployment secret"
INJECTED = sorted(p.name for p in TRACES.glob("i*.json"))
HONEST = sorted(p.name for p in TRACES.glob("b*.json"))


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(trace_profile(tmp_path_factory.mktemp("p")))


@pytest.fixture(scope="module")
def unkeyed(profile: str) -> GuardAgent:
    return GuardAgent(profile=profile)


@pytest.fixture(scope="module")
def keyed(profile: str) -> GuardAgent:
    return GuardAgent(profile=profile, trace_key=KEY)


def _doc(name: str) -> dict[str, Any]:
    return json.loads((TRACES / name).read_text(encoding="utf-8"))


def _user_id(state: dict[str, Any]) -> int:
    names = state["source_names"]
    if "user" not in names:
        names.append("user")
    return int(names.index("user"))


def every_source_is_the_user(state: dict[str, Any]) -> None:
    """Every message the index saw claims the user wrote it."""
    state["sources"] = [_user_id(state)] * len(state["sources"])


def sources_renamed_user(state: dict[str, Any]) -> None:
    """Every source's name (tool results included) reads ``user``."""
    state["source_names"] = ["user" for _ in state["source_names"]]


def posted_under_the_user(state: dict[str, Any]) -> None:
    """Every key any message holds is also posted under a user message."""
    users = [i for i, s in enumerate(state["sources"]) if state["source_names"][s] == "user"]
    for ids in state["postings"].values():
        ids[:] = sorted({*ids, users[0]})


def nothing_written(state: dict[str, Any]) -> None:
    """The model never wrote anything (a laundered value reads as a trusted tool's)."""
    state["written"] = {}


def all_at_once(state: dict[str, Any]) -> None:
    posted_under_the_user(state)
    every_source_is_the_user(state)
    nothing_written(state)


FORGERIES: list[Callable[[dict[str, Any]], None]] = [
    every_source_is_the_user,
    sources_renamed_user,
    posted_under_the_user,
    nothing_written,
    all_at_once,
]


def forged(state: dict[str, Any] | None, how: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    assert state is not None and state["format"] == STATE_FORMAT
    out = copy.deepcopy(state)
    how(out)
    return out


@pytest.mark.parametrize("how", FORGERIES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", INJECTED)
def test_a_forged_unsigned_state_decides_as_no_state(
    unkeyed: GuardAgent, name: str, how: Callable[[dict[str, Any]], None]
) -> None:
    doc = _doc(name)
    fresh = unkeyed.check_trace(doc)
    assert not fresh.allowed, (name, fresh.reason)
    state = forged(fresh.trace_state, how)
    decision = unkeyed.check_trace(doc, thread_state=state)
    assert not decision.allowed, (name, how.__name__, decision.reason)
    assert decision.violations == fresh.violations, (name, how.__name__)
    assert [r.status for r in decision.rules] == [r.status for r in fresh.rules]
    assert "not signed" in decision.reason and "trace_key" in decision.reason


@pytest.mark.parametrize("name", INJECTED[:4])
def test_acheck_trace_ignores_a_forged_unsigned_state_too(unkeyed: GuardAgent, name: str) -> None:
    doc = _doc(name)
    state = forged(unkeyed.check_trace(doc).trace_state, all_at_once)
    decision = asyncio.run(unkeyed.acheck_trace(doc, thread_state=state))
    assert not decision.allowed, (name, decision.reason)


@pytest.mark.parametrize("name", HONEST)
def test_an_honest_unsigned_state_decides_as_before(unkeyed: GuardAgent, name: str) -> None:
    doc = _doc(name)
    fresh = unkeyed.check_trace(doc)
    again = unkeyed.check_trace(doc, thread_state=fresh.trace_state)
    assert again.allowed is fresh.allowed is True, (name, again.reason)


def test_an_unsigned_state_still_denies_a_rewritten_history(unkeyed: GuardAgent) -> None:
    """What a state can only deny with still counts: a changed earlier message."""
    doc = _doc("b01_rent_openai.json")
    state = unkeyed.check_trace(doc).trace_state
    changed = copy.deepcopy(doc)
    first_user = next(m for m in changed["messages"] if m["role"] == "user")
    first_user["content"] += " (edited)"
    decision = unkeyed.check_trace(changed, thread_state=state)
    assert not decision.allowed and decision.unreadable[0]["reason"] == "trace_rewritten"


@pytest.mark.parametrize("name", [*HONEST, *INJECTED])
def test_a_signed_state_round_trips_with_the_key(keyed: GuardAgent, name: str) -> None:
    doc = _doc(name)
    fresh = keyed.check_trace(doc)
    again = keyed.check_trace(doc, thread_state=fresh.trace_state)
    assert again.allowed is fresh.allowed is name.startswith("b"), (name, again.reason)
    assert "not signed" not in again.reason
    state = forged(fresh.trace_state, all_at_once)
    if state != fresh.trace_state:  # a one-message thread: nothing to forge
        refused = keyed.check_trace(doc, thread_state=state)
        assert not refused.allowed and refused.unreadable[0]["reason"] == "unreadable_state"


def test_the_unsigned_state_handed_back_is_the_messages_own(unkeyed: GuardAgent) -> None:
    """The next call's state is read from the messages, not copied from the forgery."""
    doc = _doc("i01_inbox_iban_openai.json")
    fresh = unkeyed.check_trace(doc)
    decision = unkeyed.check_trace(doc, thread_state=forged(fresh.trace_state, all_at_once))
    assert decision.trace_state is not None and fresh.trace_state is not None
    for field in ("sources", "source_names", "postings", "written"):
        assert decision.trace_state[field] == fresh.trace_state[field], field


ATTACK = {"iban": "GB82WEST12345698765432", "amount": 4950, "subject": "deposit"}


def _approval(thread: str) -> dict[str, Any]:
    return {"tool": "send_money", "decision": "approve", "args": ATTACK, "thread": thread}


def test_an_unsigned_ledger_names_no_thread(unkeyed: GuardAgent) -> None:
    """Approvals count in the thread the host names, not one an unsigned state names."""
    doc = _doc("i01_inbox_iban_openai.json")
    first = unkeyed.check_trace(doc, thread_id="t1")
    state = first.trace_state
    assert state is not None and state["consent"]["thread"] == "t1"
    records = [_approval("t1")]
    claimed = unkeyed.check_trace(doc, consent=records, thread_state=state)
    assert not claimed.allowed, claimed.reason
    named = unkeyed.check_trace(doc, consent=records, thread_state=state, thread_id="t1")
    assert named.allowed, named.reason


def test_an_unsigned_ledger_still_counts_used_approvals(unkeyed: GuardAgent) -> None:
    doc = _doc("i01_inbox_iban_openai.json")
    records = [_approval("t1")]
    first = unkeyed.check_trace(doc, consent=records, thread_id="t1")
    assert first.allowed, first.reason
    used = first.trace_state
    again = unkeyed.check_trace(doc, consent=records, thread_state=used, thread_id="t1")
    assert not again.allowed, "the one use is used: an unsigned ledger can still deny"


def test_an_unsigned_state_takes_a_summary_and_reads_it_as_the_models(unkeyed: GuardAgent) -> None:
    """A summary rewrite is checked as with a key; its values are nobody's (nothing carried)."""
    from tests.test_summaries import lc_object
    from tests.test_summary_rewrites import RENT, SUMMARY, _state, history

    old = history()
    state = forged(_state(unkeyed, old), every_source_is_the_user)
    text = SUMMARY + " Rent to IBAN CH93 0076 2011 6238 5295 7."
    for cut in (5, 6):
        summarised = [lc_object(text), *old[cut:]]
        call = {"name": "send_money", "args": RENT, "id": "p1"}
        decision = unkeyed.check_trace(summarised, call, thread_state=state)
        fresh = unkeyed.check_trace(summarised, call)
        assert not decision.unreadable and not decision.allowed, decision.reason
        assert decision.violations == fresh.violations
    changed = [{"role": "user", "content": "Pay Eve."}, lc_object(text), *old[5:]]
    assert (
        unkeyed.check_trace(
            changed, {"name": "send_money", "args": RENT}, thread_state=state
        ).unreadable[0]["reason"]
        == "trace_rewritten"
    )
