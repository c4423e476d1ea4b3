"""Mutation operators over a shipped guard program (issue 34), for `bench_mutants.py`.

Each operator makes programs a model could plausibly write instead of the shipped one: an
access list with one cell added or removed, a rule table with one condition of one rule
changed (its comparison, its value, its category, its fact, the rule dropped), flipped
comparisons, negated conditions, dropped branches, swapped verdicts, a reader given the wrong
part of the event, a reader's result (or one part of the web action) ignored, a predicate
assigned its negation, a renamed role, always-allow / always-deny, and a reworded reason
(which changes no decision: verification must still trust it).
"""

from __future__ import annotations

import ast
import copy
import random
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from guardagent.counterfactuals.cells import access_cells
from guardagent.policy.model import PolicyModel

_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


CONTROL = "control"
"""The shipped program itself: it must be trusted and equivalent, else kills mean nothing."""


class Mutant(NamedTuple):
    """One mutant: its operator, what it changed and its code."""

    operator: str
    what: str
    code: str


# --------------------------------------------------------------------------- operators


def table_node(tree: ast.Module, name: str = "PERMISSIONS") -> ast.Assign | None:
    """The module-level assignment of the program's policy table `name`, if any."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node
    return None


def _with_table(code: str, table: dict[str, dict[str, list[str]]]) -> str:
    tree = ast.parse(code)
    node = table_node(tree)
    assert node is not None, "the program holds no PERMISSIONS literal"
    node.value = ast.parse(repr(table), mode="eval").body
    return ast.unparse(tree)


def cell_mutants(code: str, per_role: int, rng: random.Random) -> Iterator[Mutant]:
    """The access list with one cell added (a denied one) or removed (an allowed one)."""
    tree = ast.parse(code)
    node = table_node(tree)
    if node is None:
        return
    table: dict[str, dict[str, list[str]]] = ast.literal_eval(node.value)
    cells = access_cells(table)
    for role in sorted(table):
        for allowed, operator in ((False, "cell added"), (True, "cell removed")):
            pool = [c for c, ok in cells.items() if c.role == role and ok is allowed]
            for cell in rng.sample(pool, min(per_role, len(pool))):
                mutated = copy.deepcopy(table)
                cols = mutated[role].setdefault(cell.table, [])
                if allowed:
                    cols.remove(cell.column)
                else:
                    cols.append(cell.column)
                yield Mutant(operator, str(cell), _with_table(code, mutated))


def _each(
    code: str, pick: Callable[[ast.AST], bool], change: Callable[[ast.AST], ast.AST | None]
) -> Iterator[tuple[int, str]]:
    """(index, code) with the index-th node `pick` accepts replaced by `change(node)`."""
    count = sum(1 for n in ast.walk(ast.parse(code)) if pick(n))
    for index in range(count):
        tree = ast.parse(code)
        target = [n for n in ast.walk(tree) if pick(n)][index]
        new = change(target)
        if new is None:
            continue
        for parent in ast.walk(tree):
            for field, value in ast.iter_fields(parent):
                if value is target:
                    setattr(parent, field, new)
                elif isinstance(value, list) and any(v is target for v in value):
                    at = next(i for i, v in enumerate(value) if v is target)
                    value[at : at + 1] = new if isinstance(new, list) else [new]
        yield index, ast.unparse(ast.fix_missing_locations(tree))


def _flip(node: ast.AST) -> ast.AST | None:
    assert isinstance(node, ast.Compare)
    if type(node.ops[0]) not in _FLIP:
        return None
    return ast.Compare(node.left, [_FLIP[type(node.ops[0])]()], node.comparators)


def _negate(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.If)
    return ast.If(ast.UnaryOp(ast.Not(), node.test), node.body, node.orelse)


def _verdict(node: ast.AST) -> ast.AST | None:
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    reason = node.args[-1] if node.args else ast.Constant("mutant")
    if node.func.id == "allow":
        accessed = ast.Name("accessed", ast.Load())
        return ast.Call(ast.Name("deny", ast.Load()), [accessed, reason], [])
    return ast.Call(ast.Name("allow", ast.Load()), [reason], [])


def _reworded(node: ast.AST) -> ast.AST:
    """The same verdict with another reason: an equivalent mutant (verification must trust
    it, or it refuses correct programs)."""
    assert isinstance(node, ast.Call)
    return ast.Call(node.func, [*node.args[:-1], ast.Constant("reworded")], node.keywords)


def _is_verdict(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and (node.func.id in ("allow", "deny"))
    )


_PARTS = {"agent_input": "agent_output", "agent_output": "agent_input"}


def _is_event_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in _PARTS


def _other_part(node: ast.AST) -> ast.AST:
    """A reader given the other part of the event (the identity read from the output...)."""
    assert isinstance(node, ast.Name)
    return ast.Name(_PARTS[node.id], ast.Load())


def program_mutants(code: str) -> Iterator[Mutant]:
    """Flipped comparisons, negated conditions, dropped branches, swapped verdicts, a reader
    given the wrong part of the event, renamed roles, always-allow / always-deny."""
    for i, new in _each(code, lambda n: isinstance(n, ast.Compare), _flip):
        yield Mutant("flipped comparison", f"comparison {i}", new)
    for i, new in _each(code, lambda n: isinstance(n, ast.If), _negate):
        yield Mutant("negated condition", f"condition {i}", new)
    for keep in ("body", "orelse"):
        for i, new in _each(
            code, lambda n: isinstance(n, ast.If), lambda n, k=keep: getattr(n, k) or [ast.Pass()]
        ):  # type: ignore[misc]
            yield Mutant("dropped branch", f"if {i} keeps its {keep} only", new)
    for i, new in _each(code, _is_verdict, _verdict):
        yield Mutant("swapped verdict", f"verdict {i}", new)
    for i, new in _each(code, _is_verdict, _reworded):
        yield Mutant("reworded reason", f"verdict {i}", new)
    for i, new in _each(code, _is_event_text, _other_part):
        yield Mutant("wrong part of the event", f"event text {i}", new)
    yield from _renamed_roles(code)
    yield from _always(code)


def _renamed_roles(code: str) -> Iterator[Mutant]:
    roles = table_node(ast.parse(code))
    count = len(roles.value.keys) if roles is not None and isinstance(roles.value, ast.Dict) else 0
    for index in range(count):
        tree = ast.parse(code)
        node = table_node(tree)
        assert node is not None and isinstance(node.value, ast.Dict)
        key = node.value.keys[index]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            shown = repr(key.value)
            key.value += "s"
            yield Mutant("renamed role", shown, ast.unparse(tree))


def _always(code: str) -> Iterator[Mutant]:
    if "assign(" in code:  # a predicate program: the policy model decides, not a verdict
        yield from _predicate_mutants(code)
        return
    tables = [n for n in (table_node(ast.parse(code), t) for t in ("PERMISSIONS", "RULES")) if n]
    table = ast.unparse(tables[0]) if tables else ""
    if "ehr_accessed_columns" in code:
        read, denied = "accessed = ehr_accessed_columns(agent_output)\n", "accessed"
    else:
        read, denied = "", "['always']"
    yield Mutant("always allow", "allow", f"{table}\n{read}allow('always')\n")
    yield Mutant("always deny", "deny", f"{table}\n{read}deny({denied}, 'always')\n")


def mutants(
    code: str,
    per_role: int = 4,
    seed: int = 0,
    model: PolicyModel | None = None,
    permissions: dict[str, dict[str, list[str]]] | None = None,
) -> list[Mutant]:
    """Every mutant of `code`, distinct from it and from each other.

    `model`: the policy model a predicate program assigns (its single-cell and
    single-condition mutants, :mod:`predicate_mutants`); `permissions`: the request's access
    table, which says which cells those probe.
    """
    from benchmarks.predicate_mutants import predicate_mutants  # imports this module

    found: dict[str, Mutant] = {}
    made = [
        *cell_mutants(code, per_role, random.Random(seed)),
        *rule_mutants(code),
        *program_mutants(code),
        *ignored_mutants(code),
    ]
    if model is not None:
        made += predicate_mutants(code, model, permissions, per_role, random.Random(seed))
    for mutant in made:
        if mutant.code.strip() != code.strip() and mutant.code not in found:
            found[mutant.code] = mutant
    return list(found.values())


# --------------------------------------------------------------------------- rule tables

_OP_FLIP = {"==": "!=", "!=": "==", ">=": ">", ">": ">=", "<": "<=", "<=": "<"}


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    return f"{value}x"


def rule_mutants(code: str) -> Iterator[Mutant]:
    """The RULES table with one condition of one rule changed, or one rule dropped.

    Its comparison flipped across the edge (`>=` to `>`), its value changed, its category
    or its fact swapped with the next rule's, the rule dropped.
    """
    node = table_node(ast.parse(code), "RULES")
    if node is None:
        return
    rows: list[dict[str, Any]] = ast.literal_eval(node.value)
    for i, row in enumerate(rows):
        after = rows[(i + 1) % len(rows)]
        changes: dict[str, Any] = {
            "op": _OP_FLIP.get(str(row.get("op")), "=="),
            "value": _changed(row.get("value")),
        }
        for key in ("category", "tool", "field"):
            if key in row and after.get(key) != row[key]:
                changes[key] = after[key]
        for key, new in changes.items():
            mutated = copy.deepcopy(rows)
            mutated[i][key] = new
            yield Mutant(
                "rule changed",
                f"rule {i} {key} {row.get(key)!r} -> {new!r}",
                _with_literal(code, "RULES", mutated),
            )
        yield Mutant(
            "rule dropped", f"rule {i}", _with_literal(code, "RULES", rows[:i] + rows[i + 1 :])
        )


def _with_literal(code: str, name: str, value: Any) -> str:
    tree = ast.parse(code)
    node = table_node(tree, name)
    assert node is not None, f"the program holds no {name} literal"
    node.value = ast.parse(repr(value), mode="eval").body
    return ast.unparse(tree)


# --------------------------------------------------------------------------- ignored parts

EMPTY_READS = {
    "parse_task": "''",
    "seeact_final_action": "{}",
    "parse_user_info": "{}",
    "parse_identity": "''",
    "parse_question": "''",
    "ehr_accessed_columns": "{}",
}
"""What a program that ignores a reader's result would read instead."""
ACTION_PARTS = ("value", "element_text")


def ignored_mutants(code: str) -> Iterator[Mutant]:
    """A reader's result ignored, or one part of the web action (its value, its element).

    The program that reads the category from the task alone (`seeact_final_action(...)`
    ignored) is the one the rule oracles once trusted.
    """
    for reader, empty in EMPTY_READS.items():
        pick = _reader_call(reader)
        for i, new in _each(code, pick, lambda n, e=empty: ast.parse(e, mode="eval").body):
            yield Mutant("reader ignored", f"{reader} {i}", new)
    for part in ACTION_PARTS:

        def without(node: ast.AST, part: str = part) -> ast.AST:
            text = f"{{k: v for k, v in {ast.unparse(node)}.items() if k != {part!r}}}"
            return ast.parse(text, mode="eval").body

        for i, new in _each(code, _reader_call("seeact_final_action"), without):
            yield Mutant("action part ignored", f"{part} {i}", new)


def _reader_call(name: str) -> Callable[[ast.AST], bool]:
    return lambda n: (
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and (n.func.id == name)
    )


def _predicate_mutants(code: str) -> Iterator[Mutant]:
    """A predicate program's assignments negated, one predicate dropped, or none assigned."""

    def negated(node: ast.AST) -> ast.AST | None:
        assert isinstance(node, ast.Call)
        if len(node.args) != 2:  # noqa: PLR2004 - assign(name, value)
            return None
        value = ast.UnaryOp(ast.Not(), node.args[1])
        return ast.Call(node.func, [node.args[0], value], node.keywords)

    for i, new in _each(code, _reader_call("assign"), negated):
        yield Mutant("predicate negated", f"assign {i}", new)
    yield Mutant("nothing assigned", "no predicate assigned", "pass\n")
