"""Task parameters inside trace predicate expressions: ``navigation_in_scope("$sites")``.

A deployment's policy is written once; some of its values belong to the task at hand (the
sites of this task, the tool it must finish with). A string argument that is exactly
``"$name"`` stands for the task parameter `name`, which the host sets when it attaches the
task (:mod:`guardagent.policy.task`). Resolving replaces it with the parameter's value, at any
depth of the literal (``{"tool": "fill", "args": {"value": "$amount"}}``); in a predicate's
list of scopes or globs (its ``*args``), a list value gives one argument per element, so
``navigation_in_scope("$sites")`` with ``sites: ["a.example", "b.example/docs/*"]`` is
``navigation_in_scope("a.example", "b.example/docs/*")``.

Expressions are the deployer's and the host's text (never the agent's): they are read with
:mod:`ast` and rebuilt from literals, never evaluated. A ``"$name"`` written in a policy
loads as a plain string, so the policy checks (z3) without any task; an expression whose
parameter the task does not set is left out and its predicate is open, so a rule that needs
it denies (fail closed).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

_IDENT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def param_name(value: Any) -> str | None:
    """The parameter a literal stands for (``"$sites"`` -> ``sites``), else None."""
    if not isinstance(value, str) or not value.startswith("$"):
        return None
    name = value[1:]
    if not name or name[0].isdigit() or not set(name) <= _IDENT:
        return None
    return name


def _call(expression: str) -> ast.Call | None:
    try:
        node = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node
    return None


def _literals(call: ast.Call) -> Iterator[tuple[int | str, Any]]:
    """``(position or keyword, literal value)`` of each argument that is a literal."""
    for position, node in enumerate(call.args):
        try:
            yield position, ast.literal_eval(node)
        except ValueError:
            continue
    for keyword in call.keywords:
        if keyword.arg is not None:
            try:
                yield keyword.arg, ast.literal_eval(keyword.value)
            except ValueError:
                continue


def _names(value: Any) -> Iterator[str]:
    name = param_name(value)
    if name is not None:
        yield name
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _names(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _names(item)


@lru_cache(maxsize=4096)
def placeholders(expression: str) -> frozenset[str]:
    """The task parameters an expression names (empty for most expressions)."""
    call = _call(expression)
    if call is None:
        return frozenset()
    return frozenset(n for _, value in _literals(call) for n in _names(value))


def _substitute(value: Any, params: Mapping[str, Any]) -> Any:
    name = param_name(value)
    if name is not None:
        return params[name]
    if isinstance(value, list | tuple):
        return type(value)(_substitute(v, params) for v in value)
    if isinstance(value, dict):
        return {k: _substitute(v, params) for k, v in value.items()}
    return value


def _spread_from(function: str) -> int | None:
    """Index of the first positional argument a predicate gathers in ``*args``, if any."""
    from guardagent.trace.predicates import PREDICATES

    func = PREDICATES.get(function)
    if func is None:
        return None
    positional = 0
    for parameter in list(inspect.signature(func).parameters.values())[1:]:  # after `facts`
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            return positional
        if parameter.kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            positional += 1
    return None


def resolve(expression: str, params: Mapping[str, Any]) -> str:
    """The expression with every ``"$name"`` replaced by ``params[name]``.

    The caller checks first that :func:`placeholders` are all in `params`; the result is
    compiled like any expression (a value the predicate refuses is an error then).

    Raises:
        KeyError: a parameter `params` does not hold.
    """
    call = _call(expression)
    if call is None or not placeholders(expression):
        return expression
    assert isinstance(call.func, ast.Name)  # _call returns calls of a name only
    spread = _spread_from(call.func.id)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for where, value in _literals(call):
        if isinstance(where, str):
            kwargs[where] = _substitute(value, params)
            continue
        name = param_name(value)
        if name is not None and spread is not None and where >= spread:
            found = params[name]
            args.extend(found if isinstance(found, list) else [found])
        else:
            args.append(_substitute(value, params))
    shown = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{call.func.id}({', '.join(shown)})"


def check_template(expression: str) -> None:
    """Check an expression as a policy file holds it (configuration errors when loading).

    Without parameters it is compiled like any expression. With them, its values are
    checked when a task sets them (:mod:`guardagent.policy.task`), since ``"$limit"`` is no
    number yet; here only its shape: a call of a known predicate, literal arguments it takes.

    Raises:
        PredicateSpecError: the expression cannot be bound.
    """
    from guardagent.trace.predicates import PREDICATES, PredicateSpecError, compile_predicate

    if not placeholders(expression):
        compile_predicate(expression)
        return
    call = _call(expression)
    assert call is not None and isinstance(call.func, ast.Name)  # it names parameters
    func = PREDICATES.get(call.func.id)
    if func is None:
        raise PredicateSpecError(f"{expression!r}: unknown predicate {call.func.id!r}")
    literal = dict(_literals(call))
    if len(literal) != len(call.args) + len(call.keywords):
        raise PredicateSpecError(f"{expression!r}: arguments must be literals")
    args = [literal[i] for i in range(len(call.args))]
    kwargs = {k: v for k, v in literal.items() if isinstance(k, str)}
    try:
        inspect.signature(func).bind(None, *args, **kwargs)
    except TypeError as exc:
        raise PredicateSpecError(f"{expression!r}: {exc}") from None
