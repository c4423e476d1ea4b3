"""Assignment expressions of derived rules, evaluated over the readers' results."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardagent.counterfactuals.expressions import Evaluator, ExpressionError, parse_expression

FACTS: dict[str, Any] = {}


def parse_user_info(agent_input: str) -> dict[str, Any]:
    return dict(FACTS)


def parse_tool_calls(agent_output: str) -> list[dict[str, Any]]:
    return [
        {"name": "transfer_funds", "args": {"amount": 1500}},
        {"name": "place_order", "args": {"category": "alcohol"}},
    ]


FUNCTIONS = {"parse_user_info": parse_user_info, "parse_tool_calls": parse_tool_calls}


def truth(text: str, **facts: Any) -> bool | None:
    FACTS.clear()
    FACTS.update(facts)
    return Evaluator(FUNCTIONS, "in", "out").truth(parse_expression(text, FUNCTIONS))


def test_comparisons_follow_the_policy_semantics_and_missing_facts_are_open():
    age = "parse_user_info(agent_input)['age'] < 18"
    assert truth(age, age=16) is True and truth(age, age=40) is False
    assert truth(age) is None  # missing: open
    assert truth(age, age="sixteen") is None  # does not compare: open
    assert truth(age, age=True) is None  # a bool is not a number
    assert truth("parse_user_info(agent_input).get('vaccine') == True", vaccine=True) is True


def test_three_valued_and_or_not():
    both = "parse_user_info(agent_input)['a'] == 1 and parse_user_info(agent_input)['b'] == 1"
    assert truth(both, a=1) is None and truth(both, a=2) is False and truth(both, a=1, b=1)
    either = both.replace(" and ", " or ")
    assert truth(either, a=1) is True and truth(either, a=2) is None
    assert truth("not parse_user_info(agent_input)['a'] == 1") is None


def test_any_over_a_comprehension_with_conditions():
    text = (
        "any(c['args']['amount'] > 1000 for c in parse_tool_calls(agent_output) "
        "if c['name'] == 'transfer_funds')"
    )
    assert truth(text) is True
    assert truth(text.replace("1000", "2000")) is False
    assert (
        truth(
            "any(c['args'].get('category') in ['alcohol', 'tobacco'] "
            "for c in parse_tool_calls(agent_output))"
        )
        is True
    )


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os')",
        "open('x')",
        "parse_user_info(agent_input).__class__",
        "agent_input.split()",
        "[x for x in ().__class__.__mro__]",
        "lambda: 1",
        "parse_user_info(agent_input=agent_input)",
        "eval('1')",
        "x := 1",
        "1 if 2 else 3",
    ],
)
def test_anything_outside_the_subset_is_refused(text: str):
    with pytest.raises(ExpressionError):
        parse_expression(text, FUNCTIONS)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(["age", "vaccine", "x"]),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(),
            st.text(max_size=5),
            st.lists(st.integers(), max_size=2),
        ),
    )
)
def test_any_fact_values_give_true_false_or_open_never_an_exception(facts: dict[str, Any]):
    for text in (
        "parse_user_info(agent_input)['age'] >= 18",
        "parse_user_info(agent_input)['vaccine'] == True",
        "parse_user_info(agent_input)['x'] in ['a', 'b']",
        "not parse_user_info(agent_input).get('x')",
    ):
        assert truth(text, **facts) in (True, False, None)


# --------------------------------------------------------------------------- differential

_FACT = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 40),
    st.sampled_from(["yes", "True", "17", ""]),
    st.floats(allow_nan=True, allow_infinity=False, width=32),
)
_TASKS = [
    "Book a hotel room in Lisbon",
    "Rent a pickup truck",
    "Find jazz albums to stream",
    "Apply for a barista job",
    "Add headphones to my cart",
    "Book a flight to Oslo",
    "Check the weather in Paris",
]


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(["age", "domestic", "dr_license", "vaccine", "membership"]), _FACT
    ),
    st.sampled_from(_TASKS),
)
def test_derived_expressions_agree_with_the_shipped_predicate_function(facts, task):
    """The derived mind2web-sc rules, evaluated from their expressions, give every predicate
    the value the shipped predicate function gives from the same readers' output."""
    from guardagent.counterfactuals.events import Event, with_task
    from guardagent.policy.shipped import mind2web_sc_predicates

    oracle, functions = _web_oracle()
    event = Event(with_task(task, facts), _PAGE)
    user = functions["parse_user_info"](event.agent_input)
    category = functions["web_action_category"](
        functions["parse_task"](event.agent_input),
        functions["seeact_final_action"](event.agent_output),
    )
    assert oracle.predicates(event) == mind2web_sc_predicates(category, user)


_PAGE = (
    "(Analysis)\nThe page is open.\n\n(Choices)\nA. <button id=0> Go </button>\n\n"
    "(Final Answer)\nELEMENT: A\n\nACTION: CLICK\n\nVALUE: None"
)
_ORACLE: list[Any] = []


def _web_oracle() -> tuple[Any, dict[str, Any]]:
    """The derived mind2web-sc rules' oracle (built once) and the profile's functions."""
    if not _ORACLE:
        from guardagent.authoring.derive import DerivedAnswer, policy_text
        from guardagent.counterfactuals.derived import DerivedOracle
        from guardagent.policy.model import load_policy_text
        from guardagent.profiles import load_profile
        from tests.derived_answers import policy_answer

        profile = load_profile("mind2web-sc")
        text = policy_text(profile, DerivedAnswer(**policy_answer("mind2web-sc")))
        oracle = DerivedOracle(load_policy_text(text), profile)
        _ORACLE.append((oracle, profile.tools().functions()))
    return _ORACLE[0]


def test_derived_access_rules_agree_with_the_shipped_predicate_function():
    """eicu-ac: on every demonstration and every counterfactual the derived oracle builds
    (identities, each column read by each identity), its predicate values are the shipped
    function's on the same readers' output."""
    from guardagent.authoring.derive import DerivedAnswer, policy_text
    from guardagent.counterfactuals.derived import DerivedOracle
    from guardagent.counterfactuals.events import Event
    from guardagent.policy.model import load_policy_text
    from guardagent.policy.shipped import eicu_ac_predicates
    from guardagent.profiles import load_profile
    from tests.derived_answers import policy_answer

    profile = load_profile("eicu-ac")
    text = policy_text(profile, DerivedAnswer(**policy_answer("eicu-ac")))
    oracle = DerivedOracle(load_policy_text(text), profile)
    functions = profile.tools().functions()
    events = [Event(d.agent_input, d.agent_output) for d in profile.demonstrations]
    events += [edit.event for event in list(events) for edit in oracle.edits(event)]
    assert len(events) > 100
    for event in events:
        role = functions["parse_identity"](event.agent_input)
        accessed = functions["ehr_accessed_columns"](event.agent_output)
        assert oracle.predicates(event) == eicu_ac_predicates(role, accessed), event.agent_input
