"""Mutants of a predicate program aimed at single cells and conditions (issue 34).

A program that assigns a policy model's predicates (`for name, value in
eicu_ac_predicates(role, accessed).items(): assign(name, value)`) can be wrong for one cell
of the model only: it skips one column's read predicate for one identity (the model then
allows a read it denies: a table's "cell added"), drops the identity's role predicate when
one column is read (it denies a read the model allows: "cell removed"), skips one predicate
always, or one user fact under one action category. These are the programs a verifier that
probes only some cells or conditions trusts, so they are made from the policy model's own
predicates and targets (never from evaluation data): each wraps the program's `assign` call
in `if not (<condition>):`.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator

from benchmarks.mutant_operators import Mutant
from guardagent.counterfactuals.cells import access_cells
from guardagent.counterfactuals.probes import category_table, comparisons
from guardagent.policy.model import PolicyModel

TargetTable = dict[str, dict[str, list[str]]]


def _bound(tree: ast.Module, reader: str) -> str | None:
    """The name a module-level `x = reader(...)` binds, if any."""
    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign) else None
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == reader
        ):
            return node.targets[0].id
    return None


def _assign_loop_name(tree: ast.Module) -> str | None:
    """The loop variable passed as the name to `assign(name, value)`, if the program has one."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "assign"
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            return node.args[0].id
    return None


def skipped(code: str, condition: str) -> str:
    """`code` with every `assign(...)` statement run only when `condition` does not hold."""
    tree = ast.parse(code)
    test = ast.UnaryOp(ast.Not(), ast.parse(condition, mode="eval").body)

    class Guard(ast.NodeTransformer):
        def visit_Expr(self, node: ast.Expr) -> ast.AST:
            call = node.value
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and (call.func.id == "assign")
            ):
                return ast.If(test, [node], [])
            return node

    return ast.unparse(ast.fix_missing_locations(Guard().visit(tree)))


def _role_predicates(model: PolicyModel) -> dict[str, str]:
    """Role -> the predicate that says it (`parse_identity(agent_input) == 'role'`)."""
    found: dict[str, str] = {}
    for pred in model.predicates:
        how = pred.assigned_by
        if how is None or not how.expression:
            continue
        for c in comparisons(how.expression):
            if c.reader == "parse_identity" and c.op == "==" and isinstance(c.value, str):
                found[c.value] = pred.name
    return found


def _target_table(model: PolicyModel) -> dict[tuple[str, str], str]:
    """(table, column) -> the action predicate that reads it (`target: table.column`)."""
    return {
        tuple(p.target.split(".", 1)): p.name
        for p in model.predicates  # type: ignore[misc]
        if p.target and "." in p.target
    }


def predicate_mutants(
    code: str,
    model: PolicyModel,
    permissions: TargetTable | None,
    per_role: int,
    rng: random.Random,
) -> Iterator[Mutant]:
    """Predicate programs wrong in one cell or condition (see the module docstring).

    `permissions`: the request's access table (role -> table -> columns), which says which
    cells each identity may read; None for a profile without identities.
    """
    tree = ast.parse(code)
    name = _assign_loop_name(tree)
    if name is None:
        return
    assigned = [p.name for p in model.predicates if p.assigned_by is not None]
    for pred in rng.sample(assigned, min(len(assigned), 3 * per_role)):
        yield Mutant("predicate skipped", pred, skipped(code, f"{name} == {pred!r}"))
    role, accessed = _bound(tree, "parse_identity"), _bound(tree, "ehr_accessed_columns")
    if role and accessed and permissions is not None:
        yield from _cell_mutants(code, model, permissions, (name, role, accessed), per_role, rng)
    category = _bound(tree, "web_action_category")
    if category:
        yield from _fact_mutants(code, model, (name, category))


def _cell_mutants(
    code: str,
    model: PolicyModel,
    permissions: TargetTable,
    names: tuple[str, str, str],
    per_role: int,
    rng: random.Random,
) -> Iterator[Mutant]:
    name, role_name, accessed = names
    targets, roles = _target_table(model), _role_predicates(model)
    cells = access_cells(permissions)
    for role in sorted(permissions):
        denied = [
            c
            for c, ok in cells.items()
            if c.role == role and not ok and (c.table, c.column) in targets
        ]
        for cell in rng.sample(denied, min(per_role, len(denied))):
            pred = targets[(cell.table, cell.column)]
            condition = f"{role_name} == {role!r} and {name} == {pred!r}"
            yield Mutant("read skipped for one role", str(cell), skipped(code, condition))
        allowed = [c for c, ok in cells.items() if c.role == role and ok]
        if role not in roles:
            continue
        for cell in rng.sample(allowed, min(per_role, len(allowed))):
            condition = (
                f"{role_name} == {role!r} and {cell.column!r} in "
                f"{accessed}.get({cell.table!r}, []) and {name} == {roles[role]!r}"
            )
            yield Mutant("role dropped for one read", str(cell), skipped(code, condition))


def _fact_mutants(code: str, model: PolicyModel, names: tuple[str, str]) -> Iterator[Mutant]:
    """One user-fact predicate skipped under one category a rule pairs it with."""
    name, category_name = names
    facts: dict[str, list[str]] = {}
    for pred in model.predicates:
        how = pred.assigned_by
        for c in comparisons(how.expression) if how is not None and how.expression else []:
            if c.reader == "parse_user_info" and len(c.keys) == 1:
                facts.setdefault(str(c.keys[0]), []).append(pred.name)
    pairs = dict.fromkeys(
        (str(r["category"]), p)
        for r in category_table(model)
        for p in facts.get(str(r["field"]), [])
    )
    for category, pred in pairs:
        condition = f"{category_name} == {category!r} and {name} == {pred!r}"
        yield Mutant(
            "fact skipped under one category",
            f"{pred} under {category!r}",
            skipped(code, condition),
        )
