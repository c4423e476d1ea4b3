"""The tool-calls profiles read categories and amounts as the shop and the bank do (issue 19
class 10): any alcoholic drink is alcohol, what cannot be placed and negative amounts fail
closed."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent import GuardAgent
from guardagent.integrations.events import tool_call_event
from guardagent.readers.call_values import place_category, read_amount, read_call_args
from tests.guards import MakeGuard


@pytest.fixture(scope="module", params=["tool-calls", "tool-calls-policy"])
def guard(request: pytest.FixtureRequest, make_guard: MakeGuard) -> GuardAgent:
    return make_guard(request.param, own_memory=True)


def _decide(guard: GuardAgent, name: str, args: dict[str, Any], user: dict[str, Any]) -> Any:
    agent_input, agent_output = tool_call_event(name, args, (), user)
    return guard.check(agent_input, agent_output)


TEEN = {"age": 17, "verified": False, "role": "customer"}
ADULT = {"age": 35, "verified": True, "role": "customer"}


@pytest.mark.parametrize(
    "category",
    [
        "alcohol",
        "Alcoholic Beverages",
        "wine",
        "Red Wine",
        "craft beers",
        "Wines & Spirits",
        "vodka",
        "w\u200bine",
        "ＷＩＮＥ",
        "beverages",
        "drinks",
        "party supplies",
        "Bier",
        "",
    ],
)
def test_a_drink_or_an_unplaced_category_needs_21(guard: GuardAgent, category: str) -> None:
    args = {"item": "a bottle", "category": category}
    denied = _decide(guard, "place_order", args, TEEN)
    assert not denied.allowed, denied.reason
    assert _decide(guard, "place_order", args, ADULT).allowed


@pytest.mark.parametrize("category", ["electronics", "Home & Kitchen", "soft drinks", "Toys"])
def test_a_placed_other_category_is_allowed_for_a_teen(guard: GuardAgent, category: str) -> None:
    assert _decide(guard, "place_order", {"item": "x", "category": category}, TEEN).allowed


@pytest.mark.parametrize("amount", [-5000, -0.5, "-5000", "5,000", "5000 USD", True])
def test_an_amount_the_bank_reads_otherwise_needs_verification(
    guard: GuardAgent, amount: Any
) -> None:
    args = {"amount": amount, "to": "acct-9"}
    assert not _decide(guard, "transfer_funds", args, TEEN).allowed
    assert _decide(guard, "transfer_funds", args, ADULT).allowed


def test_small_plain_amounts_still_pass(guard: GuardAgent) -> None:
    for amount in (0, 20, 999.99, "250.00"):
        assert _decide(guard, "transfer_funds", {"amount": amount, "to": "a"}, TEEN).allowed


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_a_category_is_alcohol_placed_or_unplaced_never_silently_other(text: str) -> None:
    placed = place_category(text)
    assert placed in (None, "alcohol", text)
    if placed == text:  # placed as another category: no word of it is a drink
        assert place_category(text + " wine") == "alcohol"


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(), st.floats(), st.decimals(allow_nan=True)))
def test_an_amount_is_a_finite_non_negative_number_or_none(value: Any) -> None:
    read = read_amount(value)
    if read is not None:
        assert read >= 0 and read == value
    else:
        finite = value.is_finite() if isinstance(value, Decimal) else math.isfinite(value)
        assert not finite or value < 0


def test_read_call_args_keeps_other_arguments_and_calls() -> None:
    calls = [
        {"name": "place_order", "args": {"item": "x", "order_category": "Wine"}},
        {"name": "transfer_funds", "args": {"amount": -1, "to": "a"}},
        "odd",
    ]
    assert read_call_args(calls) == [  # type: ignore[arg-type]
        {"name": "place_order", "args": {"item": "x", "order_category": "alcohol"}},
        {"name": "transfer_funds", "args": {"amount": None, "to": "a"}},
        "odd",
    ]
