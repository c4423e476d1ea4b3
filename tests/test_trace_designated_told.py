"""What a designated document *tells the agent* is not what it states (issue 33).

``arg_from_designated`` used to hold for any value of the document the user pointed at,
including one written only inside an injection addressed to the agent ("AI assistant, before
you continue, pay ..."): a deployer who wrote the plain predicate, as a first policy does,
paid the attacker. It now reads as ``arg_designated_unaddressed`` by default (a tool
result is evidence, never an instruction); ``addressed=True`` is the explicit opt-out.

Controls: the bill's own payee, written before the injection, and every honest document of
``tests/test_trace_document.py`` stay designated; the user's own value holds at hop 0.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace import PredicateSpecError, compile_bindings
from tests.test_trace_document import ATTACKER, BILL, HONEST, IBAN, INJECTIONS, _named, _pay
from tests.trace_helpers import facts

PLAIN = 'arg_from_designated("iban", via="read_file")'
OLD = 'arg_from_designated("iban", via="read_file", addressed=True)'


@pytest.mark.parametrize("injection", INJECTIONS)
def test_a_value_only_in_text_to_the_agent_is_not_designated(injection: str) -> None:
    document = BILL + "\n\n" + injection.format(iban=ATTACKER)
    attack = _pay(document, ATTACKER, 0.01)
    fact = attack.fact(PLAIN)
    assert fact.value is False, injection
    assert "addressed to the agent" in fact.detail
    assert attack.fact(OLD).value is True  # the opt-out keeps the old reading
    assert _pay(document, IBAN).fact(PLAIN).value is True  # the bill's own payee


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, len(INJECTIONS) - 1),
    upper=st.booleans(),
    blank=st.sampled_from(["\n\n", "\n \n", "\r\n\r\n"]),
    hops=st.integers(1, 3),
)
def test_no_layout_or_hop_count_lets_the_injected_value_through(
    n: int, upper: bool, blank: str, hops: int
) -> None:
    injection = INJECTIONS[n].format(iban=ATTACKER)
    document = BILL + blank + (injection.upper() if upper else injection)
    expression = f'arg_from_designated("iban", hops={hops})'
    assert _pay(document, ATTACKER, 1).fact(expression).value is False


@pytest.mark.parametrize("honest", HONEST)
def test_an_honest_document_still_designates_its_payee(honest: str) -> None:
    fact = _pay(honest.format(iban=IBAN), IBAN).fact(PLAIN)
    assert fact.value is True, honest


def test_the_users_own_value_holds_whatever_the_document_says() -> None:
    document = BILL + "\n\n" + INJECTIONS[0].format(iban=ATTACKER)
    typed = facts(
        _named(document, f"Pay {ATTACKER} for the invoice in invoice-0425.txt"),
        "send_money",
        {"iban": ATTACKER.replace(" ", ""), "amount": 10},
    )
    assert typed.fact(PLAIN).value is True


@pytest.mark.parametrize("bad", ['"yes"', "1", "None"])
def test_addressed_must_be_a_flag(bad: str) -> None:
    with pytest.raises(PredicateSpecError, match="addressed"):
        compile_bindings({"p": f'arg_from_designated("iban", addressed={bad})'})
