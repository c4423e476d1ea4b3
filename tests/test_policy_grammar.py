"""Rule logic: precedence, round trips, templates and error positions (in the logic and the file)."""

from __future__ import annotations

import itertools

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.policy.formula import (
    And,
    Const,
    Iff,
    Implies,
    Not,
    Or,
    Var,
    render,
    template,
    variables,
)
from guardagent.policy.grammar import LogicSyntaxError, parse_logic
from guardagent.policy.model import PolicyError, load_policy_text
from guardagent.policy.solver import to_z3

NAMES = ["a", "b", "c", "d", "e", "f"]


def formulas(max_leaves: int = 12) -> st.SearchStrategy:
    leaf = st.one_of(st.sampled_from(NAMES).map(Var), st.booleans().map(Const))

    def extend(children: st.SearchStrategy) -> st.SearchStrategy:
        pair = st.tuples(children, children)
        many = st.lists(children, min_size=2, max_size=3).map(tuple)
        return st.one_of(
            children.map(Not),
            many.map(And),
            many.map(Or),
            pair.map(lambda p: Implies(*p)),
            pair.map(lambda p: Iff(*p)),
        )

    return st.recursive(leaf, extend, max_leaves=max_leaves)


def truth(formula, env) -> bool:
    if isinstance(formula, Var):
        return env[formula.name]
    if isinstance(formula, Const):
        return formula.value
    if isinstance(formula, Not):
        return not truth(formula.operand, env)
    if isinstance(formula, And):
        return all(truth(o, env) for o in formula.operands)
    if isinstance(formula, Or):
        return any(truth(o, env) for o in formula.operands)
    if isinstance(formula, Implies):
        return (not truth(formula.left, env)) or truth(formula.right, env)
    return truth(formula.left, env) == truth(formula.right, env)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a AND b OR c", Or((And((Var("a"), Var("b"))), Var("c")))),
        ("a OR b AND c", Or((Var("a"), And((Var("b"), Var("c")))))),
        ("NOT a AND b", And((Not(Var("a")), Var("b")))),
        ("a IMPLIES b IMPLIES c", Implies(Var("a"), Implies(Var("b"), Var("c")))),
        ("a AND b IMPLIES c OR d", Implies(And((Var("a"), Var("b"))), Or((Var("c"), Var("d"))))),
        ("a IFF b IMPLIES c", Iff(Var("a"), Implies(Var("b"), Var("c")))),
        ("a IFF b IFF c", Iff(Iff(Var("a"), Var("b")), Var("c"))),
        ("NOT (a OR b)", Not(Or((Var("a"), Var("b"))))),
        ("x IMPLIES FALSE", Implies(Var("x"), Const(False))),
        ("ANDROID AND NOTE", And((Var("ANDROID"), Var("NOTE")))),
    ],
)
def test_precedence(text, expected):
    assert parse_logic(text) == expected


def test_the_shieldagent_rule_and_its_template():
    formula = parse_logic("data_is_private AND NOT user_consent IMPLIES NOT publish_data")
    assert variables(formula) == ("data_is_private", "user_consent", "publish_data")
    assert template(formula) == "P1 AND NOT P2 IMPLIES NOT P3"


@pytest.mark.parametrize(
    "text, line, column, words",
    [
        ("a AND", 1, 6, "ends early"),
        ("a and b", 1, 3, "keywords are upper case: AND"),
        ("a AND (b", 1, 9, "')'"),
        ("a & b", 1, 3, "unexpected character '&'"),
        ("AND a", 1, 1, "unexpected 'AND'"),
        ("a b", 1, 3, "unexpected 'b'"),
        ("a AND\n  b OR )", 2, 8, "unexpected ')'"),
        ("   ", 1, 1, "empty"),
    ],
)
def test_syntax_errors_carry_line_and_column(text, line, column, words):
    with pytest.raises(LogicSyntaxError) as info:
        parse_logic(text)
    assert (info.value.line, info.value.column) == (line, column)
    assert words in info.value.message


def _policy_with_logic(logic_yaml: str) -> str:
    return (
        "format: guardagent-policy/1\nname: p\nversion: '1'\npredicates:\n"
        "  - {name: a, kind: condition}\n  - {name: b, kind: condition}\nrules:\n"
        f"  - id: r\n    logic: {logic_yaml}\n"
    )


@pytest.mark.parametrize(
    "logic_yaml, line, column",
    [
        ("a AND AND b", 9, 18),  # plain scalar: the file column of the second AND
        ('"a AND AND b"', 9, 19),  # double-quoted: one more for the quote
        ("'a OR )'", 9, 18),
        ("|\n      a AND\n        ) b", 11, 9),  # literal block: the block's own lines
    ],
)
def test_file_positions_point_into_the_logic_string(logic_yaml, line, column):
    text = _policy_with_logic(logic_yaml)
    with pytest.raises(PolicyError) as info:
        load_policy_text(text, "p.yaml")
    issue = info.value.issues[0]
    assert (issue.location.file, issue.location.line, issue.location.column) == (
        "p.yaml",
        line,
        column,
    )
    assert str(issue).startswith(f"p.yaml:{line}:{column}: rule 'r' logic:")
    assert text.splitlines()[line - 1][column - 1] in "A)"


@settings(max_examples=150, deadline=None)
@given(formulas())
def test_render_parses_back_to_the_same_formula(formula):
    assert parse_logic(render(formula)) == formula


@settings(max_examples=150, deadline=None)
@given(formulas())
def test_z3_translation_agrees_with_truth_tables(formula):
    names = sorted(variables(formula))
    bools = {n: z3.Bool(n) for n in NAMES}
    term = to_z3(formula, bools)
    for bits in itertools.product((False, True), repeat=len(names)):
        env = dict(zip(names, bits, strict=True))
        pairs = [(bools[n], z3.BoolVal(v)) for n, v in env.items()]
        value = z3.simplify(z3.substitute(term, *pairs)) if pairs else z3.simplify(term)
        assert z3.is_true(value) == truth(formula, env)
