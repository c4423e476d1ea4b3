"""Rule logic as a small typed syntax tree: what the grammar produces and the solver reads.

Rules are propositional formulas over named predicates. Keeping them as our own frozen
dataclasses (not lark trees, not z3 terms) lets the model, the checker, the solver and the
probability code share one representation that compares by value and prints back to the
rule language, so a policy file round-trips and templates can be derived, not hand-kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Var:
    """A predicate reference; `column` (1-based, inside the logic string) is for errors only."""

    name: str
    column: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Const:
    """`TRUE` or `FALSE`."""

    value: bool


@dataclass(frozen=True)
class Not:
    """`NOT operand`."""

    operand: Formula


@dataclass(frozen=True)
class And:
    """`a AND b AND ...` (two or more operands)."""

    operands: tuple[Formula, ...]


@dataclass(frozen=True)
class Or:
    """`a OR b OR ...` (two or more operands)."""

    operands: tuple[Formula, ...]


@dataclass(frozen=True)
class Implies:
    """`left IMPLIES right` (right-associative in the grammar)."""

    left: Formula
    right: Formula


@dataclass(frozen=True)
class Iff:
    """`left IFF right` (left-associative; boolean equivalence is associative anyway)."""

    left: Formula
    right: Formula


Formula = Var | Const | Not | And | Or | Implies | Iff

# Binding strength, loosest first; used to print with the fewest parentheses.
_LEVEL: dict[type, int] = {Iff: 0, Implies: 1, Or: 2, And: 3, Not: 4, Var: 5, Const: 5}


def walk(formula: Formula) -> Iterator[Formula]:
    """Every node of `formula`, parents before children, left to right."""
    stack: list[Formula] = [formula]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, Not):
            stack.append(node.operand)
        elif isinstance(node, And | Or):
            stack.extend(reversed(node.operands))
        elif isinstance(node, Implies | Iff):
            stack.extend((node.right, node.left))


def variables(formula: Formula) -> tuple[str, ...]:
    """Predicate names in order of first appearance, each once."""
    return tuple(dict.fromkeys(n.name for n in walk(formula) if isinstance(n, Var)))


def occurrences(formula: Formula) -> list[Var]:
    """Every predicate reference with its column, in reading order (for error positions)."""
    return [n for n in walk(formula) if isinstance(n, Var)]


def map_vars(formula: Formula, replace: Callable[[Var], Formula]) -> Formula:
    """`formula` with every predicate occurrence replaced by `replace(var)`."""
    if isinstance(formula, Var):
        return replace(formula)
    if isinstance(formula, Const):
        return formula
    if isinstance(formula, Not):
        return Not(map_vars(formula.operand, replace))
    if isinstance(formula, And):
        return And(tuple(map_vars(o, replace) for o in formula.operands))
    if isinstance(formula, Or):
        return Or(tuple(map_vars(o, replace) for o in formula.operands))
    if isinstance(formula, Implies):
        return Implies(map_vars(formula.left, replace), map_vars(formula.right, replace))
    return Iff(map_vars(formula.left, replace), map_vars(formula.right, replace))


def rename(formula: Formula, mapping: dict[str, str]) -> Formula:
    """`formula` with predicates renamed (names missing from `mapping` are kept)."""
    return map_vars(formula, lambda v: Var(mapping.get(v.name, v.name), v.column))


def substitute(formula: Formula, definitions: dict[str, Formula]) -> Formula:
    """`formula` with each defined predicate replaced by its definition."""
    return map_vars(formula, lambda v: definitions.get(v.name, v))


def _wrap(node: Formula, parent_level: int, *, strict: bool) -> str:
    text = render(node)
    level = _LEVEL[type(node)]
    if level < parent_level or (strict and level == parent_level):
        return f"({text})"
    return text


def render(formula: Formula) -> str:
    """The formula in the rule language, parenthesised only where precedence needs it.

    `parse(render(f)) == f` for every formula the grammar produces (tested).
    """
    if isinstance(formula, Var):
        return formula.name
    if isinstance(formula, Const):
        return "TRUE" if formula.value else "FALSE"
    if isinstance(formula, Not):
        return "NOT " + _wrap(formula.operand, _LEVEL[Not], strict=False)
    if isinstance(formula, And | Or):
        word = " AND " if isinstance(formula, And) else " OR "
        level = _LEVEL[type(formula)]
        return word.join(_wrap(o, level, strict=True) for o in formula.operands)
    if isinstance(formula, Implies):  # right-associative: only the left side needs care
        return (
            f"{_wrap(formula.left, _LEVEL[Implies], strict=True)} IMPLIES "
            f"{_wrap(formula.right, _LEVEL[Implies], strict=False)}"
        )
    return (  # Iff, left-associative
        f"{_wrap(formula.left, _LEVEL[Iff], strict=False)} IFF "
        f"{_wrap(formula.right, _LEVEL[Iff], strict=True)}"
    )


def template(formula: Formula) -> str:
    """The logic template: predicates renamed P1, P2, ... in order of first appearance.

    ShieldAgent keeps a template beside each rule (`NOT P1 IMPLIES NOT P2`) so rules of the
    same shape can be grouped; deriving it means it can never disagree with the logic.
    """
    names = variables(formula)
    return render(rename(formula, {n: f"P{i}" for i, n in enumerate(names, 1)}))
