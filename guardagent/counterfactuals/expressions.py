"""Assignment expressions of a policy model, evaluated over the trusted readers' results.

A policy model derived from a guard request (:mod:`guardagent.counterfactuals.derived`) says
how each predicate follows from an event, e.g. ``parse_user_info(agent_input)['age'] < 18``
or ``web_action_category(parse_task(agent_input), seeact_final_action(agent_output)) ==
'car'``. Its oracle needs those values on every counterfactual event, so the expressions are
evaluated here: parsed with :mod:`ast` and interpreted node by node over a small,
side-effect-free subset (toolbox calls, subscripts, ``.get``, comparisons with the policy
semantics of :func:`guardagent.tools.compare.compare`, ``and`` / ``or`` / ``not``,
``any`` / ``all`` over a comprehension). Nothing is ``eval``-ed and no attribute other than
``get`` / ``lower`` / ``strip`` is reached, so even an expression a model wrote cannot do
more than call the profile's readers on the event.

Values are three-valued: a missing fact (a key that is absent or None) or a comparison that
does not compare is None, "open", which the verifier counts as possibly violated.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from guardagent.tools.compare import compare

EVENT_NAMES = ("agent_input", "agent_output")
_OPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_METHODS = ("get", "lower", "strip")
_MAX_NODES = 200


class ExpressionError(ValueError):
    """An expression outside the supported subset (said in the policy author's terms)."""


def parse_expression(text: str, functions: Mapping[str, Any]) -> ast.expr:
    """Parse and check one expression once (the evaluator then trusts its shape).

    Raises:
        ExpressionError: it does not parse, is too long, calls a function the profile's
            toolbox does not hold, or uses a construct outside the subset.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise ExpressionError(f"does not parse: {exc}") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > _MAX_NODES:
        raise ExpressionError(f"longer than {_MAX_NODES} syntax nodes")
    bound = {
        t.id
        for n in nodes
        if isinstance(n, ast.comprehension)
        for t in ast.walk(n.target)
        if isinstance(t, ast.Name)
    }
    for node in nodes:
        if isinstance(node, ast.Name) and node.id not in (
            *EVENT_NAMES,
            *bound,
            *functions,
            "any",
            "all",
            "len",
        ):
            raise ExpressionError(
                f"unknown name {node.id!r}: use agent_input, agent_output "
                "and the profile's toolbox functions"
            )
        if isinstance(node, ast.Call) and node.keywords:
            raise ExpressionError("keyword arguments are not supported")
        if isinstance(node, ast.Attribute) and node.attr not in _METHODS:
            raise ExpressionError(f"attribute {node.attr!r}: only .get, .lower, .strip")
        if not isinstance(node, _ALLOWED):
            raise ExpressionError(f"{type(node).__name__} is not supported")
    return tree.body


_ALLOWED = (
    ast.Expression,
    ast.Call,
    ast.Name,
    ast.Load,
    ast.Store,
    ast.Constant,
    ast.Subscript,
    ast.Attribute,
    ast.Compare,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.UnaryOp,
    ast.Not,
    ast.GeneratorExp,
    ast.ListComp,
    ast.comprehension,
    ast.List,
    ast.Tuple,
    *_OPS,
    ast.In,
    ast.NotIn,
)


class Evaluator:
    """Evaluates checked expressions on one event, calling each reader once per argument list.

    Args:
        functions: The profile's toolbox functions (name -> callable).
        agent_input: The event's input.
        agent_output: The event's output.
    """

    def __init__(
        self, functions: Mapping[str, Callable[..., Any]], agent_input: str, agent_output: str
    ) -> None:
        self.functions = functions
        self.scope: dict[str, Any] = {"agent_input": agent_input, "agent_output": agent_output}
        self._calls: dict[str, Any] = {}

    def truth(self, node: ast.expr) -> bool | None:
        """The expression's value as a predicate's: True, False or None (open)."""
        value = self.value(node, self.scope)
        return None if value is None else bool(value)

    def value(self, node: ast.expr, scope: dict[str, Any]) -> Any:  # noqa: PLR0911
        """The value of one node (reader exceptions propagate: the event is unreadable)."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return scope[node.id]
        if isinstance(node, ast.List | ast.Tuple):
            return [self.value(e, scope) for e in node.elts]
        if isinstance(node, ast.Subscript):
            return _item(self.value(node.value, scope), self.value(node.slice, scope))
        if isinstance(node, ast.Compare):
            return self._compare(node, scope)
        if isinstance(node, ast.BoolOp):
            return _kleene(
                isinstance(node.op, ast.And), (self.value(v, scope) for v in node.values)
            )
        if isinstance(node, ast.UnaryOp):
            inner = self.value(node.operand, scope)
            return None if inner is None else not inner
        if isinstance(node, ast.Call):
            return self._call(node, scope)
        raise ExpressionError(f"{type(node).__name__} cannot be evaluated here")

    def _compare(self, node: ast.Compare, scope: dict[str, Any]) -> bool | None:
        left = self.value(node.left, scope)
        result: bool | None = True
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.value(right_node, scope)
            if isinstance(op, ast.In | ast.NotIn):
                got = _member(left, right)
                step = None if got is None else got == isinstance(op, ast.In)
            elif left is None or right is None:
                step = None
            else:
                step = compare(left, _OPS[type(op)], right)
            result = _kleene(True, [result, step])
            left = right
        return result

    def _call(self, node: ast.Call, scope: dict[str, Any]) -> Any:
        if isinstance(node.func, ast.Attribute):
            target = self.value(node.func.value, scope)
            args = [self.value(a, scope) for a in node.args]
            if node.func.attr == "get":
                return _item(target, args[0]) if args else None
            return getattr(target, node.func.attr)() if isinstance(target, str) else None
        name = node.func.id if isinstance(node.func, ast.Name) else ""
        if (
            name in ("any", "all")
            and node.args
            and isinstance(node.args[0], ast.GeneratorExp | ast.ListComp)
        ):
            return _kleene(name == "all", self._each(node.args[0], scope))
        args = [self.value(a, scope) for a in node.args]
        if name == "len":
            return len(args[0]) if args and isinstance(args[0], list | dict | str) else None
        key = repr((name, args))
        if key not in self._calls:
            self._calls[key] = self.functions[name](*args)
        return self._calls[key]

    def _each(self, comp: ast.GeneratorExp | ast.ListComp, scope: dict[str, Any]) -> Iterator[Any]:
        yield from self._generate(comp, list(comp.generators), scope)

    def _generate(
        self,
        comp: ast.GeneratorExp | ast.ListComp,
        gens: list[ast.comprehension],
        scope: dict[str, Any],
    ) -> Iterator[Any]:
        if not gens:
            yield self.value(comp.elt, scope)
            return
        first, rest = gens[0], gens[1:]
        items = self.value(first.iter, scope)
        items = list(items.values()) if isinstance(items, dict) else items
        if not isinstance(items, list):
            yield None  # not something to iterate: open
            return
        for item in items:
            inner = {**scope, **_bind(first.target, item)}
            tests = [self.value(t, inner) for t in first.ifs]
            if any(t is None for t in tests):
                yield None
            elif all(tests):
                yield from self._generate(comp, rest, inner)


def _bind(target: ast.expr, item: Any) -> dict[str, Any]:
    if isinstance(target, ast.Name):
        return {target.id: item}
    raise ExpressionError("a comprehension may bind one name")


def _item(container: Any, key: Any) -> Any:
    """``container[key]``, or None when it is absent (a missing fact is open)."""
    if isinstance(container, dict):
        return container.get(key)
    if (
        isinstance(container, list)
        and isinstance(key, int)
        and -len(container) <= key < len(container)
    ):
        return container[key]
    return None


def _member(item: Any, container: Any) -> bool | None:
    if item is None or container is None:
        return None
    if isinstance(container, str):
        return item in container if isinstance(item, str) else None
    if isinstance(container, dict | list | tuple | set | frozenset):
        try:
            return item in container
        except TypeError:
            return None
    return None


def _kleene(conjunction: bool, values: Any) -> bool | None:
    """Three-valued ``and`` (conjunction) / ``or`` over values (None: open)."""
    unknown = False
    for value in values:
        if value is None:
            unknown = True
        elif bool(value) != conjunction:
            return not conjunction
    return None if unknown else conjunction
