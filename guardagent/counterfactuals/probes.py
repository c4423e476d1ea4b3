"""Probe tables from a policy model: the literals its predicates' expressions compare with.

A policy model says how each predicate is assigned. An ``expression`` assignment is
documentation for the program's author and is never run, but its comparisons name exactly
the values a counterfactual has to put on either side of an edge:
``parse_user_info(agent_input)['age'] < 18`` is the user fact ``age`` around 18,
``web_action_category(task, action) == 'car'`` a task of the category ``car``,
``any(c['args']['amount'] > 1000 for c in parse_tool_calls(agent_output) if c['name'] ==
'transfer_funds')`` a ``transfer_funds`` call's ``amount`` around 1000. They are read here
with :mod:`ast` (a parser, never patterns over text) into the tables the table oracles of
:mod:`.oracles` already know how to probe with, so one edit generator serves both.

The probes only choose which events to build; the expected decision of each event comes
from the policy model and the trusted readers (:mod:`.policy_oracle`). A comparison this
module does not understand yields no probe, and the request's coverage check then names
the rule no event violates.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from guardagent.policy.model import PolicyModel, Rule

TOOL_READERS = ("parse_tool_calls", "parse_tool_call")
"""Readers of a tool-using agent's pending call(s)."""

_OPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_MIRROR = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_COMPREHENSIONS = (ast.GeneratorExp, ast.ListComp, ast.SetComp)

Source = tuple[str, tuple[Any, ...]]
"""A reader's name and the subscripts applied to its result (or to one item of it)."""


class Comparison(NamedTuple):
    """``<reader result>[keys...] <op> <literal>``, found in a predicate's expression.

    Attributes:
        reader: The toolbox function whose result is compared (``parse_user_info``).
        keys: Subscripts on its result, or on an item of it when a comprehension iterates
            it (``('args', 'amount')`` for ``c['args']['amount']``).
        op: ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` (the reader's side on the left).
        value: The literal.
        where: The comprehension's conditions on the same item (``c['name'] == 'x'``).
    """

    reader: str
    keys: tuple[Any, ...]
    op: str
    value: Any
    where: tuple[Comparison, ...] = ()


def comparisons(expression: str) -> list[Comparison]:
    """The comparisons of one assignment expression ([] when it does not parse)."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    return list(_walk(tree.body, {}, ()))


def _walk(
    node: ast.AST, scope: Mapping[str, Source], where: tuple[Comparison, ...]
) -> Iterator[Comparison]:
    if isinstance(node, _COMPREHENSIONS):
        inner = dict(scope)
        conditions: list[Comparison] = []
        for gen in node.generators:
            source = _source(gen.iter, inner)
            if isinstance(gen.target, ast.Name) and source is not None:
                inner[gen.target.id] = source
            for test in gen.ifs:
                found = list(_walk(test, inner, where))
                conditions += found
                yield from found
        yield from _walk(node.elt, inner, (*where, *conditions))
    elif isinstance(node, ast.Compare):
        compared = _compare(node, scope, where)
        if compared is not None:
            yield compared
    else:
        for child in ast.iter_child_nodes(node):
            yield from _walk(child, scope, where)


def _compare(
    node: ast.Compare, scope: Mapping[str, Source], where: tuple[Comparison, ...]
) -> Comparison | None:
    if len(node.ops) != 1 or type(node.ops[0]) not in _OPS:
        return None
    op = _OPS[type(node.ops[0])]
    left, right = node.left, node.comparators[0]
    for side, literal, shown in ((left, right, op), (right, left, _MIRROR[op])):
        source = _source(side, scope)
        if source is None:
            continue
        try:
            value = ast.literal_eval(literal)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        return Comparison(source[0], source[1], shown, value, where)
    return None


def _source(node: ast.AST, scope: Mapping[str, Source]) -> Source | None:
    """Which reader's result (and which subscripts of it) an expression denotes."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return (node.func.id, ())
    if isinstance(node, ast.Name):
        return scope.get(node.id)
    if isinstance(node, ast.Subscript):
        base = _source(node.value, scope)
        key = _literal(node.slice)
        return None if base is None or key is None else (base[0], (*base[1], key))
    if (  # x.get('key')
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
    ):
        base = _source(node.func.value, scope)
        key = _literal(node.args[0])
        return None if base is None or key is None else (base[0], (*base[1], key))
    return None


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int):
        return node.value
    return None


# --------------------------------------------------------------------------- per rule


def rule_name(rule: Rule) -> str:
    """How decisions name a rule in violations and coverage: its policy text, else its id."""
    return rule.policy or rule.id


def predicate_comparisons(model: PolicyModel, names: Iterable[str]) -> list[Comparison]:
    """The comparisons of the expressions that assign `names` (others give none)."""
    found: list[Comparison] = []
    for name in dict.fromkeys(names):
        pred = model.by_name.get(name)
        if pred is not None and pred.assigned_by is not None and pred.assigned_by.expression:
            found += comparisons(pred.assigned_by.expression)
    return found


def rule_comparisons(model: PolicyModel, rule: Rule) -> list[Comparison]:
    """The comparisons behind the predicates a rule names and the actions it is attached to."""
    return predicate_comparisons(model, [*rule.predicates, *rule.actions])


def facts(found: Iterable[Comparison]) -> list[Comparison]:
    """Comparisons of one user fact from the host (``parse_user_info(...)['field']``)."""
    return [
        c
        for c in found
        if c.reader == "parse_user_info" and len(c.keys) == 1 and isinstance(c.keys[0], str)
    ]


def _equals(
    found: Iterable[Comparison], reader: str | tuple[str, ...], keys: tuple[Any, ...] = ()
) -> list[Any]:
    readers = (reader,) if isinstance(reader, str) else reader
    return list(
        dict.fromkeys(
            c.value
            for c in found
            if c.reader in readers and c.keys == keys and c.op == "==" and isinstance(c.value, str)
        )
    )


# --------------------------------------------------------------------------- tables


def access_table(model: PolicyModel) -> dict[str, dict[str, list[str]]]:
    """Identities to probe, as an access table's keys (``parse_identity(...) == 'role'``).

    The permissions themselves are left empty: the policy model decides, not this table.
    """
    found = predicate_comparisons(model, [p.name for p in model.predicates])
    return {role: {} for role in _equals(found, "parse_identity")}


def category_table(model: PolicyModel) -> list[dict[str, Any]]:
    """Rows ``{category, field, op, value, violation}`` in the shape of a category table.

    Each rule's web-action categories (``web_action_category(...) == 'car'``) with each user
    fact it compares.
    """
    rows: list[dict[str, Any]] = []
    for rule in model.rules:
        found = rule_comparisons(model, rule)
        for category in _equals(found, "web_action_category"):
            rows += [
                {
                    "category": category,
                    "field": f.keys[0],
                    "op": f.op,
                    "value": f.value,
                    "violation": rule_name(rule),
                }
                for f in facts(found)
            ]
    return rows


def tool_table(model: PolicyModel) -> list[dict[str, Any]]:
    """Rows ``{tool, when, field, op, value, violation}`` in the shape of a tool-rule table.

    Each rule's called tools (``c['name'] == 'tool'`` over a tool-call reader), the argument
    conditions on calls of that tool (``c['args']['arg'] <op> value`` under ``if c['name'] ==
    'tool'``), and each user fact the rule compares.
    """
    rows: list[dict[str, Any]] = []
    for rule in model.rules:
        found = rule_comparisons(model, rule)
        for tool in _equals(found, TOOL_READERS, ("name",)):
            when = [
                {"arg": c.keys[1], "op": c.op, "value": c.value}
                for c in found
                if c.reader in TOOL_READERS
                and len(c.keys) == 2
                and c.keys[0] == "args"
                and tool in _equals(c.where, TOOL_READERS, ("name",))
            ]
            rows += [
                {
                    "tool": tool,
                    "when": when,
                    "field": f.keys[0],
                    "op": f.op,
                    "value": f.value,
                    "violation": rule_name(rule),
                }
                for f in facts(found)
            ]
    return rows
