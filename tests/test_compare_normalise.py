"""Policy literals against model-chosen values: normalised strings, membership, fail closed.

The arguments of a tool call are chosen by the model (and whoever steers it): a condition
that a spelling variant, a NaN or a value of the wrong type makes false exempts the call from
its rule. Such values either compare as the literal they spell or are uncomparable (None):
a `when` condition then holds and a requirement is unmet.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardagent.tools.compare import compare, unmet_requirements
from guardagent.tools.rules import check_rules, check_tool_rules

ALCOHOL_RULE = {
    "tool": "place_order",
    "when": [{"arg": "category", "op": "==", "value": "alcohol"}],
    "field": "age",
    "op": ">=",
    "value": 21,
    "violation": "under 21: no alcohol",
}
ALCOHOL_SET = ["alcohol", "wine", "beer", "spirits"]
AMOUNT_RULE = {
    "tool": "transfer_funds",
    "when": [{"arg": "amount", "op": ">", "value": 1000}],
    "field": "verified",
    "op": "==",
    "value": True,
    "violation": "verify first",
}
TEEN = {"age": 17, "verified": False}


def _order(category: Any, rule: dict[str, Any] = ALCOHOL_RULE) -> list[str]:
    return check_tool_rules({"name": "place_order", "args": {"category": category}}, TEEN, [rule])


@pytest.mark.parametrize(
    "variant",
    [
        "alcohol",
        "Alcohol",
        "ALCOHOL",
        " alcohol ",
        "\talcohol\n",
        "ａｌｃｏｈｏｌ",
        "ＡＬＣＯＨＯＬ",
        "al\u200bcohol",
        "\u00a0alcohol\u3000",
        "alcohol\ufeff",
    ],
)
def test_spelling_variants_of_a_literal_are_the_literal(variant: str) -> None:
    assert compare(variant, "==", "alcohol") is True
    assert compare(variant, "!=", "alcohol") is False
    assert _order(variant) == ["under 21: no alcohol"]


def test_whitespace_inside_is_collapsed_not_removed() -> None:
    assert compare("red   wine", "==", "red wine") is True
    assert compare("red\u2003\u2003wine", "==", "Red Wine") is True
    assert compare("redwine", "==", "red wine") is False


def test_membership_is_the_fix_for_synonyms() -> None:
    # Normalisation cannot make "wine" equal "alcohol"; the call reader does: check_tool_rules
    # reads categories as the shop files them (issue 19 class 10), so a drink is alcohol.
    assert compare("wine", "==", "alcohol") is False
    assert _order("wine") == ["under 21: no alcohol"]
    in_set = {**ALCOHOL_RULE, "when": [{"arg": "category", "op": "in", "value": ALCOHOL_SET}]}
    for category in ("wine", "WINE", " Beer ", "ｓｐｉｒｉｔｓ", "alcohol"):
        assert _order(category, in_set) == ["under 21: no alcohol"], category
    assert _order("books", in_set) == []
    assert compare("Wine", "in", ALCOHOL_SET) is True
    assert compare("Wine", "not in", ALCOHOL_SET) is False
    assert compare("books", "not in", ("Alcohol", "WINE")) is True
    # The list's own items are normalised too.
    assert compare("wine", "in", [" WINE "]) is True


def test_a_list_value_with_eq_means_membership() -> None:
    assert compare("Beer", "==", ALCOHOL_SET) is True
    assert compare("books", "==", ALCOHOL_SET) is False
    assert compare("Beer", "!=", ALCOHOL_SET) is False
    as_list = {**ALCOHOL_RULE, "when": [{"arg": "category", "op": "==", "value": ALCOHOL_SET}]}
    assert _order("Beer", as_list) == ["under 21: no alcohol"]
    assert (
        check_rules(
            {"role": "Nurse"},
            "x",
            [
                {
                    "category": "x",
                    "field": "role",
                    "op": "==",
                    "value": ["doctor", "nurse"],
                    "violation": "clinical staff only",
                }
            ],
        )
        == []
    )


@pytest.mark.parametrize(
    "amount", [math.nan, math.inf, -math.inf, float("-nan"), Decimal("NaN"), Decimal("Infinity")]
)
def test_non_finite_numbers_are_uncomparable(amount: Any) -> None:
    for op in ("==", "!=", ">", ">=", "<", "<="):
        assert compare(amount, op, 1000) is None
        assert compare(1000, op, amount) is None
    call = {"name": "transfer_funds", "args": {"amount": amount}}
    assert check_tool_rules(call, TEEN, [AMOUNT_RULE]) == ["verify first"]
    age_rule = {"category": "hotel", "field": "age", "op": ">=", "value": 18, "violation": "v"}
    assert check_rules({"age": amount}, "hotel", [age_rule]) == ["v"]


@pytest.mark.parametrize(
    "actual, op, expected",
    [
        (True, ">", 0),
        (False, "<", 1),
        (1, "==", True),
        (True, "==", 1),
        (0, "!=", False),
        ("5000", "==", 5000),
        ("5000", ">", 1000),
        (5000, "==", "5000"),
        ("yes", "==", True),
        ([5000], "==", 5000),
        ({"a": 1}, "==", "a"),
        (None, "==", "alcohol"),
        (["alcohol"], "==", "alcohol"),
        (5, "in", ["5", "6"]),
        (True, "in", [1, 2]),
        ("b", ">", "a"),
        ("10", "<", "9"),
        (True, ">", False),
    ],
)
def test_wrong_types_are_uncomparable(actual: Any, op: str, expected: Any) -> None:
    assert compare(actual, op, expected) is None


def test_an_uncomparable_argument_makes_the_rule_apply() -> None:
    for amount in ("5000", [5000], True, None, {"value": 1}):
        call = {"name": "transfer_funds", "args": {"amount": amount}}
        assert check_tool_rules(call, TEEN, [AMOUNT_RULE]) == ["verify first"], amount
    # "==" across types used to be a plain False: the condition failed and the rule did not apply.
    exact = {**AMOUNT_RULE, "when": [{"arg": "amount", "op": "==", "value": 5000}]}
    call = {"name": "transfer_funds", "args": {"amount": "5000"}}
    assert check_tool_rules(call, TEEN, [exact]) == ["verify first"]


def test_numbers_and_bools_still_compare_as_before() -> None:
    assert compare(5000, ">", 1000) is True and compare(10, ">", 1000) is False
    assert compare(1000.0, "==", 1000) is True and compare(Decimal("999.5"), "<", 1000) is True
    assert compare(True, "==", True) is True and compare(False, "!=", True) is True
    assert (
        check_tool_rules({"name": "transfer_funds", "args": {"amount": 10}}, TEEN, [AMOUNT_RULE])
        == []
    )


def test_malformed_membership_rules_are_policy_errors() -> None:
    with pytest.raises(ValueError, match="list"):
        compare("wine", "in", "alcohol, wine")  # a substring test would let "" and "l" pass
    with pytest.raises(ValueError, match="list"):
        compare(5, ">", [1, 2])
    with pytest.raises(ValueError):
        unmet_requirements(
            {},
            [{"category": "x", "field": "f", "op": "in", "value": "abc", "violation": "v"}],
            "category",
            lambda rule: False,
        )


# --- properties ------------------------------------------------------------------------------

WORDS = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=12
)
SPACES = st.lists(
    st.sampled_from([" ", "\t", "\n", "\u00a0", "\u2003", "\u3000"]), min_size=1, max_size=3
).map("".join)
INVISIBLE = st.sampled_from(["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"])


@st.composite
def spelling_variant(draw: st.DrawFn, words: list[str]) -> str:
    """The same words with case, full-width forms, spacing and invisible characters changed."""
    out = []
    for word in words:
        chars = []
        for c in word:
            style = draw(st.sampled_from(["same", "upper", "lower", "fullwidth"]))
            c = {"upper": c.upper(), "lower": c.lower(), "fullwidth": chr(ord(c) + 0xFEE0)}.get(
                style, c
            )
            chars.append(c + (draw(INVISIBLE) if draw(st.booleans()) else ""))
        out.append("".join(chars))
    gaps = [draw(SPACES) for _ in range(len(words) + 1)]
    lead = gaps[0] if draw(st.booleans()) else ""
    tail = gaps[-1] if draw(st.booleans()) else ""
    return lead + "".join(w + g for w, g in zip(out, [*gaps[1:-1], ""], strict=True)) + tail


@given(st.data(), st.lists(WORDS, min_size=1, max_size=4))
def test_variants_of_the_same_words_always_compare_equal(
    data: st.DataObject, words: list[str]
) -> None:
    literal = " ".join(words)
    variant = data.draw(spelling_variant(words))
    assert compare(variant, "==", literal) is True
    assert compare(variant, "in", ["something else", literal]) is True
    assert compare(variant, "not in", [literal]) is False
    rule = {**ALCOHOL_RULE, "when": [{"arg": "category", "op": "==", "value": literal}]}
    assert _order(variant, rule) == ["under 21: no alcohol"]


NON_FINITE = st.sampled_from(
    [math.nan, math.inf, -math.inf, -math.nan, Decimal("NaN"), Decimal("-Infinity")]
)
NUMBERS = st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False))


@given(NON_FINITE, NUMBERS, st.sampled_from(["==", "!=", ">", ">=", "<", "<="]))
def test_nan_and_infinity_never_satisfy_a_numeric_requirement(
    bad: Any, threshold: Any, op: str
) -> None:
    assert compare(bad, op, threshold) is None
    rule = {"category": "x", "field": "amount", "op": op, "value": threshold, "violation": "v"}
    assert unmet_requirements({"amount": bad}, [rule], "category", lambda r: True) == ["v"]
    when = {
        "tool": "t",
        "when": [{"arg": "amount", "op": op, "value": threshold}],
        "field": "ok",
        "op": "==",
        "value": True,
        "violation": "w",
    }
    assert check_tool_rules({"name": "t", "args": {"amount": bad}}, {}, [when]) == ["w"]
