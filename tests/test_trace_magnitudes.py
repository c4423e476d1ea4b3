"""A magnitude word after a number is read as a bank clerk reads it: ``CHF 5 million`` is
5,000,000, never 5 (h8's residual).

Seen failing before the fix: the text reader read ``5`` out of "CHF 5 million" and
"5 Mio.", so a yes to "May I send CHF 5 million to <IBAN>?" approved a payment of 5 and not
one of 5,000,000, and "Pay Bob CHF 5 million" made a payment of 5 come from the user.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace.found.locate import extract_values
from guardagent.trace.found.values import read_scalar
from guardagent.trace.text.numbers import MAGNITUDES, canon
from tests.test_consent_conversation import assistant, call, fact, tool, user
from tests.trace_helpers import facts, system

IBAN = "CH9300762011623852957"


def amounts(text: str) -> list[tuple[str, ...]]:
    return [f.value.keys for f in extract_values(text.lower()) if f.value.kind == "amount"]


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("Pay CHF 5 million now", ("amount:5000000",)),
        ("Pay 5 Mio. CHF", ("amount:5000000",)),
        ("about 5k", ("amount:5000",)),
        ("USD 1.5 mln", ("amount:1500000",)),
        ("EUR 1,5 Mio.", ("amount:1500000",)),
        ("$2 bn", ("amount:2000000000",)),
        ("CHF 3 Mrd.", ("amount:3000000000",)),
        ("5 thousand", ("amount:5000",)),
        ("2 lakh", ("amount:200000",)),
        ("5\u00a0Millionen", ("amount:5000000",)),
    ],
)
def test_a_magnitude_word_scales_the_number_in_text(text: str, keys: tuple[str, ...]) -> None:
    assert amounts(text) == [keys]


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("5 billion", ("amount:5000000000", "amount:5000000000000")),  # English; German, French
        ("send 5 m", ("amount:5000000", "amount:5")),  # a lone letter after a space: both ways
        ("USD 5M", ("amount:5000000", "amount:5")),  # or metres, minutes
        ("flat 1b", ("amount:1000000000", "amount:1")),
        ("1,500 million", ("amount:1500000000", "amount:1500000")),
    ],
)
def test_a_magnitude_read_two_ways_keeps_both_readings(text: str, keys: tuple[str, ...]) -> None:
    assert amounts(text) == [keys]


@pytest.mark.parametrize("text", ["5 millionaires", "5kg", "3rd", "5 min"])
def test_a_word_that_is_no_magnitude_leaves_the_number_as_it_was(text: str) -> None:
    assert all("amount:5000000" not in k and "amount:5000" not in k for k in amounts(text))


@pytest.mark.parametrize("amount", ["CHF 5 million", "5 Mio.", "5k", "5 million CHF", "$5 bn"])
def test_a_whole_argument_with_a_magnitude_is_over_a_limit(amount: str) -> None:
    f = facts([system(), user("Pay the invoice")], "send_money", {"iban": IBAN, "amount": amount})
    assert f.fact('arg_compare("amount", "<=", 1000)').value is False, amount
    value, _ = read_scalar(amount, region=None)
    assert value is not None and "amount:5" not in value.keys


def _paid(question: str, amount: Any) -> bool | None:
    messages = [
        user("Pay the invoice in my inbox."),
        call("l1", "read_inbox", {}),
        tool("l1", "Invoice"),
        assistant(question),
        user("Yes."),
    ]
    proposed = {"id": "p1", "name": "send_money", "args": {"iban": IBAN, "amount": amount}}
    return fact(messages, proposed)[0].value  # type: ignore[no-any-return]


@pytest.mark.parametrize("written", ["CHF 5 million", "5 Mio CHF", "5k CHF"])
def test_a_yes_to_a_magnitude_approves_that_amount_only(written: str) -> None:
    question = f"May I send {written} to {IBAN}?"
    scaled = 5000 if written.startswith("5k") else 5_000_000
    assert _paid(question, 5) is False, "a yes to 5 million approved a payment of 5"
    assert _paid(question, scaled) is True
    assert _paid(f"May I send CHF 5 to {IBAN}?", f"{scaled:,}") is False  # 5000 or 5


def test_a_yes_to_a_magnitude_read_two_ways_approves_neither() -> None:
    for amount in (5_000_000_000, 5_000_000_000_000, 5):
        assert _paid(f"May I send CHF 5 billion to {IBAN}?", amount) is False


def test_a_payment_of_the_bare_number_is_not_from_the_user() -> None:
    said = [system(), user(f"Pay CHF 5 million to {IBAN} for the house.")]
    small = facts(said, "send_money", {"iban": IBAN, "amount": 5})
    assert small.fact('arg_from_trusted("amount")').value is False
    whole = facts(said, "send_money", {"iban": IBAN, "amount": 5_000_000})
    assert whole.fact('arg_from_trusted("amount")').value is True


UNAMBIGUOUS = sorted(w for w, f in MAGNITUDES.items() if len(f) == 1 and len(w) > 1)


@settings(max_examples=150, deadline=None)
@given(
    number=st.decimals(min_value=1, max_value=10**6, places=2),
    word=st.sampled_from(UNAMBIGUOUS),
    upper=st.booleans(),
    before=st.sampled_from(["", "Pay ", "CHF ", "about USD "]),
    after=st.sampled_from(["", ".", " now", ", thanks", "!"]),
)
def test_any_number_with_a_magnitude_word_reads_scaled(
    number: Decimal, word: str, upper: bool, before: str, after: str
) -> None:
    """Metamorphic: however it is written around, ``<n> <word>`` reads n times the word's
    factor, and never n alone."""
    written = f"{number:f}" + " " + (word.upper() if upper else word)
    expected = "amount:" + canon(number * MAGNITUDES[word][0])
    found = amounts(before + written + after)
    assert found and found[-1] == (expected,), (before + written + after, found)


@pytest.mark.parametrize(
    ("question", "amount"),
    [
        ("CHF 5", "5,000"),
        ("CHF 1.5", "1,5000"),
        ("CHF 5", "5 m"),
        ("CHF 5", "5.000"),
    ],
)
def test_a_yes_to_one_reading_does_not_approve_a_value_read_two_ways(
    question: str, amount: str
) -> None:
    """Seen failing before: "May I send CHF 5?" approved a call paying "5,000" (5000 to a
    bank that groups thousands)."""
    assert _paid(f"May I send {question} to {IBAN}?", amount) is False


def test_a_question_echoing_a_value_read_two_ways_still_approves_it() -> None:
    assert _paid(f"May I send CHF 5,000 to {IBAN}?", "5,000") is True
    assert _paid(f"May I send CHF 5,000 to {IBAN}?", 5000) is True
    assert _paid(f"May I send CHF 5,000 to {IBAN}?", 5) is False
