"""Consent is one approval of one call (issue 19, class 7): thread, call id, uses, the key.

Each of these was seen failing before the fix: a signed approval allowed a second identical
payment later in the thread and the same payment in another thread, and an id-bound record
covered a call with no id.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from guardagent.agent import GuardAgent
from guardagent.trace import Consent, parse_trace
from guardagent.trace.predicates.ledger import LEDGER_FIELD, read_ledger
from guardagent.trace.thread.state import verify
from tests.guards import MakeGuard
from tests.test_trace_wiring import TRACES
from tests.trace_helpers import twin_analyze as analyze

KEY = "deployment secret"
ATTACK = {"iban": "GB82WEST12345698765432", "amount": 4950, "subject": "deposit"}


@pytest.fixture(scope="module")
def guard(make_guard: MakeGuard) -> GuardAgent:
    return make_guard(trace_key=KEY)


def payment() -> dict[str, Any]:
    return json.loads((TRACES / "i01_inbox_iban_openai.json").read_text(encoding="utf-8"))


def paid_and_asked_again(doc: dict[str, Any], new_id: str | None = "c3") -> dict[str, Any]:
    """The thread after the approved payment ran, the model proposing the same payment again."""
    messages = [
        *doc["messages"],
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "send_money", "arguments": json.dumps(ATTACK)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "Transfer done."},
        {"role": "user", "content": "Thanks. Anything else in the inbox?"},
    ]
    call: dict[str, Any] = {"name": "send_money", "args": ATTACK}
    if new_id is not None:
        call["id"] = new_id
    return {"messages": messages, "proposed_call": call}


def approval(**fields: Any) -> dict[str, Any]:
    return Consent("send_money", "approve", args=ATTACK, **fields).signed(KEY.encode())


def test_an_approval_lets_one_payment_through_not_a_second_later(guard: GuardAgent) -> None:
    records = [approval(thread="t1")]
    first = guard.check_trace(payment(), consent=records, thread_id="t1")
    assert first.allowed, first.reason
    assert (
        first.trace_facts and "1 use(s) left" not in first.trace_facts["call_confirmed"]["detail"]
    )
    again = guard.check_trace(
        paid_and_asked_again(payment()),
        consent=records,
        thread_state=first.trace_state,
        thread_id="t1",
    )
    assert not again.allowed, "the second identical payment needs a second approval"
    assert "used up" in again.trace_facts["call_confirmed"]["detail"]  # type: ignore[index]
    # a denied call uses nothing: the same check again is still denied, and an approval
    # the host set for two calls lets both through
    twice = [approval(thread="t1", uses=2)]
    first = guard.check_trace(payment(), consent=twice, thread_id="t1")
    second = guard.check_trace(
        paid_and_asked_again(payment()),
        consent=twice,
        thread_state=first.trace_state,
        thread_id="t1",
    )
    assert first.allowed and second.allowed
    later = paid_and_asked_again(payment())
    later["messages"] += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c3",
                    "type": "function",
                    "function": {"name": "send_money", "arguments": json.dumps(ATTACK)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c3", "content": "Transfer done."},
    ]
    later["proposed_call"] = {"id": "c4", "name": "send_money", "args": ATTACK}
    third = guard.check_trace(later, consent=twice, thread_state=second.trace_state, thread_id="t1")
    assert not third.allowed, "two uses, three payments"


def test_an_approval_counts_only_in_its_thread(guard: GuardAgent) -> None:
    records = [approval(thread="t1")]
    assert guard.check_trace(payment(), consent=records, thread_id="t1").allowed
    other = guard.check_trace(payment(), consent=records, thread_id="t2")
    assert not other.allowed, "the same record in another thread approves nothing"
    assert "not bound to this thread" in other.trace_facts["call_confirmed"]["detail"]  # type: ignore[index]
    unbound = guard.check_trace(payment(), consent=[approval()], thread_id="t1")
    assert not unbound.allowed, "a record that names no thread approves nothing"
    no_thread = guard.check_trace(payment(), consent=records)
    assert not no_thread.allowed, "a thread the host gave no id gets a random one"


def test_a_state_of_another_thread_is_unreadable(guard: GuardAgent) -> None:
    first = guard.check_trace(payment(), thread_id="t1")
    moved = guard.check_trace(
        paid_and_asked_again(payment()), thread_state=first.trace_state, thread_id="t2"
    )
    assert not moved.allowed and moved.unreadable[0]["reason"] == "unreadable_state"
    assert "'t1'" in moved.reason


def test_an_id_bound_record_does_not_approve_a_call_without_an_id(guard: GuardAgent) -> None:
    doc = payment()
    bound = [approval(thread="t1", call_id="c2")]
    assert guard.check_trace(doc, consent=bound, thread_id="t1").allowed
    no_id = {"messages": doc["messages"], "proposed_call": {"name": "send_money", "args": ATTACK}}
    assert not guard.check_trace(no_id, consent=bound, thread_id="t1").allowed
    other_id = {
        "messages": doc["messages"],
        "proposed_call": {"id": "c9", "name": "send_money", "args": ATTACK},
    }
    assert not guard.check_trace(other_id, consent=bound, thread_id="t1").allowed


def test_parallel_identical_calls_share_one_approval() -> None:
    from tests.test_trace_predicates import LABELS, call

    messages = [
        {"role": "user", "content": "Pay the deposit."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                *call("c1", "send_money", ATTACK)["tool_calls"],
                *call("c2", "send_money", ATTACK)["tool_calls"],
            ],
        },
    ]
    record = Consent("send_money", args=ATTACK, thread="t1")
    first = analyze(
        parse_trace(messages, {"id": "c1", "name": "send_money", "args": ATTACK}),
        LABELS,
        consent=[record],
        thread="t1",
    )
    assert first.fact("consent_given()").value is True
    second = analyze(
        parse_trace(messages, {"id": "c2", "name": "send_money", "args": ATTACK}),
        LABELS,
        consent=[record],
        thread="t1",
    )
    assert second.fact("consent_given()").value is False, "c1, not yet run, took the one use"


def test_the_ledger_is_signed_bound_to_its_state_and_cannot_be_dropped(guard: GuardAgent) -> None:
    records = [approval(thread="t1")]
    first = guard.check_trace(payment(), consent=records, thread_id="t1")
    state = first.trace_state
    assert state is not None and verify(state[LEDGER_FIELD], KEY.encode())
    assert verify({k: v for k, v in state.items() if k != LEDGER_FIELD}, KEY.encode())
    _, ledger = read_ledger(state, key=KEY.encode())
    assert ledger.thread == "t1" and list(ledger.uses.values()) == [["c2"]]
    reset = {**state, LEDGER_FIELD: {**state[LEDGER_FIELD], "uses": {}}}
    dropped = {k: v for k, v in state.items() if k != LEDGER_FIELD}
    shorter = {"messages": payment()["messages"][:2], "proposed_call": payment()["proposed_call"]}
    before = guard.check_trace(shorter, thread_id="t1")  # an older state of the thread
    older = {**state, LEDGER_FIELD: before.trace_state[LEDGER_FIELD]}  # type: ignore[index]
    for forged in (reset, dropped, older):
        decision = guard.check_trace(
            paid_and_asked_again(payment()), consent=records, thread_state=forged, thread_id="t1"
        )
        assert not decision.allowed and decision.unreadable, decision.reason


@pytest.mark.parametrize(
    "ledger",
    [
        "not a ledger",
        {"format": "guardagent-consent-ledger/1"},
        {"uses": 5},
        [],
        {"format": "guardagent-consent-ledger/1", "thread": 7, "uses": {}},
        {"format": "guardagent-consent-ledger/1", "thread": "t1", "uses": {"r:x": "c2"}},
        {"format": "other/1", "thread": "t1", "uses": {}},
    ],
)
def test_a_ledger_that_does_not_read_is_unreadable_state_with_or_without_a_key(
    guard: GuardAgent,
    ledger: Any,
) -> None:
    unkeyed = GuardAgent(profile=guard.context.profile)
    for deciding in (guard, unkeyed):
        first = deciding.check_trace(payment(), thread_id="t1")
        state = {**first.trace_state, LEDGER_FIELD: ledger}  # type: ignore[dict-item]
        if isinstance(ledger, dict):  # bound to the right index: only its content is wrong
            state[LEDGER_FIELD] = {
                "count": first.trace_state["count"],  # type: ignore[index]
                "chain": first.trace_state["chain"],
                **ledger,
            }  # type: ignore[index]
        decision = deciding.check_trace(
            paid_and_asked_again(payment()), thread_state=state, thread_id="t1"
        )
        assert not decision.allowed and decision.unreadable[0]["reason"] == "unreadable_state"
