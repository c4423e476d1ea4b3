"""Calls a conversation summary replaced are not known: history predicates stay open.

A summary stands where earlier messages were, their calls included: two payments made
before it are not in the trace. ``at_most("send_money", 2)`` counted only the calls it
could see and held for a third payment. Whatever a summary may hide, a history predicate
answers only what the visible calls decide, and is open (None, so a rule needing it
denies) otherwise. Each open case below was seen holding (or failing) before the fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.test_summaries import PREFIX, lc_dict, lc_object, openai_user
from tests.trace_helpers import call, facts, result, user

PAY = {"iban": "CH9300762011623852957", "amount": 100, "subject": "rent"}
SUMMARY = PREFIX + "The user paid rent twice and checked the balance."


def _thread(
    form: Any,
    visible: list[dict[str, Any]],
    prefix: list[dict[str, Any]] | None = None,
) -> list[Any]:
    return [
        *(prefix or []),
        form(SUMMARY),
        user("Pay rent again: CHF 100 to IBAN CH93 0076 2011 6238 5295 7."),
        *visible,
    ]


PAID = [call("v1", "send_money", PAY), result("v1", "Transfer done.")]
BALANCE = [call("v2", "get_balance", {"account": "checking"}), result("v2", "CHF 12.00")]

# (expression, visible calls after the summary, value without a summary, value with one)
CASES: list[tuple[str, list[dict[str, Any]], bool, bool | None]] = [
    ('at_most("send_money", 2)', [], True, None),
    ('at_most("send_money", 2)', PAID, True, None),
    ('at_most("send_money", 1)', PAID, False, False),  # two visible: over, whatever is hidden
    ('never_after("send_money")', [], True, None),
    ('never_after("send_money")', PAID, False, False),
    ('nothing_after("send_money")', [], True, None),
    ('nothing_after("send_money")', PAID, False, False),
    ('called_before("get_balance")', [], False, None),
    ('called_before("get_balance")', BALANCE, True, True),
    ('called_at_least("get_balance", 1)', BALANCE, True, True),
    ('called_at_least("get_balance", 2)', BALANCE, False, None),
    ('immediately_after("get_balance")', [], False, None),
    ('immediately_after("get_balance")', BALANCE, True, True),
    ('immediately_after("get_balance")', PAID, False, False),
    ('within_steps("get_balance", 1)', BALANCE, True, True),
    ('within_steps("get_balance", 2)', BALANCE, True, None),
    ('within_steps("get_balance", 2)', [*BALANCE, *PAID], True, True),
    ('history_in_scope("bank.example", tool="browse")', [], True, None),
]


@pytest.mark.parametrize("form", [lc_object, lc_dict, openai_user], ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_history_hidden_by_a_summary_is_open(form: Any, case: int) -> None:
    expression, visible, plain, summarised = CASES[case]
    ask = user("Pay rent again: CHF 100 to IBAN CH93 0076 2011 6238 5295 7.")
    without = facts([ask, *visible], "send_money", PAY).fact(expression)
    assert without.value is plain, (expression, without)
    got = facts(_thread(form, visible), "send_money", PAY).fact(expression)
    assert got.value is summarised, (expression, got)
    if summarised is None:
        assert "summary" in got.detail, got.detail


def test_calls_before_the_summary_still_count() -> None:
    """Calls in the unchanged messages before a summary are seen: they decide what they can."""
    prefix = [user("Pay rent: CHF 100 to CH93 0076 2011 6238 5295 7."), *PAID]
    got = facts(_thread(lc_object, [], prefix), "send_money", PAY)
    assert got.fact('at_most("send_money", 0)').value is False
    assert got.fact('never_after("send_money")').value is False
    assert got.fact('at_most("send_money", 5)').value is None


def test_nothing_after_is_open_when_called_before_is() -> None:
    """`nothing_after` negated an open `called_before` into True (a pattern read two ways)."""
    messages = [
        user("Mail the report to bob@x.example."),
        call(
            "m1",
            "send_email",
            {"to": "eve@evil.example, bob@x.example", "subject": "r", "body": "r"},
        ),
        result("m1", "sent"),
    ]
    got = facts(messages, "send_money", PAY)
    before = got.fact('called_before("send_email", args={"to": "bob@x.example"})')
    after = got.fact('nothing_after("send_email", args={"to": "bob@x.example"})')
    assert before.value is None, before  # the list read as written and as addresses differ
    assert after.value is None, after


PAY_INVOICE = Path(__file__).parents[1] / "guardagent" / "policies" / "examples" / "pay-invoice"


@pytest.mark.parametrize("keep", [0, 2])  # the summary replaced both transfers, or one
@pytest.mark.parametrize("form", [lc_object, lc_dict, openai_user], ids=lambda f: f.__name__)
def test_a_third_transfer_after_a_summary_is_not_allowed(form: Any, keep: int) -> None:
    """The shipped pay-invoice example: two transfers, summarised away, then a third."""
    from guardagent.agent import GuardAgent

    doc = json.loads((PAY_INVOICE / "traces" / "i03_third_transfer.json").read_text())
    guard = GuardAgent(profile=str(PAY_INVOICE))
    messages = doc["messages"]
    assert not guard.check_trace(doc).allowed
    kept = messages[len(messages) - keep :] if keep else []
    summarised = [
        messages[0],
        form(PREFIX + "Rent was paid as the user asked."),
        messages[1],
        *kept,
    ]
    decision = guard.check_trace({"messages": summarised, "proposed_call": doc["proposed_call"]})
    assert not decision.allowed, decision.reason
    assert "few-transfers" in decision.reason and "summary" in decision.reason, decision.reason
