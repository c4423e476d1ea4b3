"""Human sign-off on extracted rules, and policy diffs explained in rule terms.

Extraction and refinement only propose; people decide. Each rule carries a review state
(``proposed`` / ``approved`` / ``edited`` / ``rejected``, :data:`~guardagent.policy.model.
REVIEW_STATES`) and the verbatim span it came from, so a reviewer reads the source next to
the logic. Decisions are written back to the policy file through the loader, so an edit
with a typo or an undeclared predicate is refused with its position instead of saved.
`diff_policies` tells what changed between two versions as a reviewer thinks of it: rules
added, removed, logic changed (and whether z3 finds the new logic stricter, looser or
equivalent), review decisions, predicates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import z3

from guardagent.policy.formula import variables
from guardagent.policy.grammar import LogicSyntaxError, parse_logic
from guardagent.policy.model import (
    PolicyError,
    PolicyIssue,
    PolicyModel,
    Rule,
    dump_policy,
    load_policy_text,
)
from guardagent.policy.solver import to_z3

Decision = Literal["approve", "reject", "edit"]


@dataclass(frozen=True)
class ReviewDecision:
    """One reviewer decision: approve or reject a rule, or replace its logic."""

    rule_id: str
    decision: Decision
    logic: str | None = None


def pending(model: PolicyModel) -> list[Rule]:
    """Rules awaiting a decision (``review: proposed``)."""
    return [r for r in model.rules if r.review == "proposed"]


def review_summary(model: PolicyModel) -> dict[str, int]:
    """How many rules are in each review state (``unreviewed``: hand-written, no state)."""
    out = {"proposed": 0, "approved": 0, "edited": 0, "rejected": 0, "unreviewed": 0}
    for rule in model.rules:
        out[rule.review or "unreviewed"] += 1
    return out


def rule_card(rule: Rule) -> str:
    """One rule for a reviewer: id, state, logic, policy text, source and its verbatim span."""
    lines = [f"[{rule.review or 'unreviewed'}] {rule.id}", f"  logic:  {rule.logic}"]
    if rule.policy:
        lines.append(f"  policy: {rule.policy}")
    if rule.source:
        lines.append(f"  source: {rule.source}")
    if rule.span:
        lines.append(f'  text:   "{rule.span}"')
    return "\n".join(lines)


def apply_decisions(model: PolicyModel, decisions: Iterable[ReviewDecision]) -> PolicyModel:
    """The model with the decisions recorded (validated by the loader).

    Raises:
        PolicyError: an unknown rule id, an edit without logic, or logic that does not
            parse or names undeclared predicates.
    """
    rules = {r.id: r for r in model.rules}
    issues: list[PolicyIssue] = []
    for d in decisions:
        rule = rules.get(d.rule_id)
        if rule is None:
            issues.append(PolicyIssue(f"no rule {d.rule_id!r} in {model.path or model.name}"))
            continue
        if d.decision == "approve":
            rules[d.rule_id] = dataclasses.replace(rule, review="approved")
        elif d.decision == "reject":
            rules[d.rule_id] = dataclasses.replace(rule, review="rejected")
        else:
            if not d.logic:
                issues.append(PolicyIssue(f"edit of {d.rule_id!r} needs --logic"))
                continue
            try:
                formula = parse_logic(d.logic)
            except LogicSyntaxError as exc:
                issues.append(
                    PolicyIssue(f"edit of {d.rule_id!r}: {exc.message} (column {exc.column})")
                )
                continue
            rules[d.rule_id] = dataclasses.replace(
                rule, logic=" ".join(d.logic.split()), formula=formula, review="edited"
            )
    if issues:
        raise PolicyError(issues)
    draft = dataclasses.replace(model, rules=tuple(rules[r.id] for r in model.rules))
    return load_policy_text(dump_policy(draft), model.path or "<policy>")


# --------------------------------------------------------------------------- diff


Relation = Literal["equivalent", "stricter", "looser", "different"]


def relation(old: Rule, new: Rule) -> Relation:
    """How the new logic relates to the old, decided by z3.

    ``stricter``: the new rule forbids everything the old one did, and more; ``looser``:
    the reverse; ``different``: neither implies the other.
    """
    ctx = z3.Context()
    names = {*variables(old.formula), *variables(new.formula), *old.actions, *new.actions}
    bools = {n: z3.Bool(n, ctx) for n in names}

    def term(rule: Rule) -> z3.BoolRef:
        body = to_z3(rule.formula, bools, ctx)
        if rule.actions:
            return z3.Implies(z3.Or(*[bools[a] for a in rule.actions]), body)
        return body

    def implies(a: z3.BoolRef, b: z3.BoolRef) -> bool:
        solver = z3.Solver(ctx=ctx)
        solver.add(a, z3.Not(b))
        return bool(solver.check() == z3.unsat)

    t_old, t_new = term(old), term(new)
    forward, backward = implies(t_new, t_old), implies(t_old, t_new)
    if forward and backward:
        return "equivalent"
    if forward:
        return "stricter"
    return "looser" if backward else "different"


@dataclass(frozen=True)
class Change:
    """One difference between two policy versions."""

    kind: str
    subject: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind:<16} {self.subject}: {self.detail}"


def diff_policies(old: PolicyModel, new: PolicyModel) -> list[Change]:
    """What changed from `old` to `new`, in rule terms (see the module docstring)."""
    changes: list[Change] = []
    for key in ("name", "version", "threshold", "approved_only"):
        a, b = getattr(old, key), getattr(new, key)
        if a != b:
            changes.append(Change("setting", key, f"{a!r} -> {b!r}"))
    old_preds, new_preds = old.by_name, new.by_name
    for name, pred in new_preds.items():
        if name not in old_preds:
            changes.append(Change("predicate added", name, f"{pred.kind}: {pred.description}"))
        elif old_preds[name].kind != pred.kind:
            changes.append(Change("predicate kind", name, f"{old_preds[name].kind} -> {pred.kind}"))
        elif old_preds[name].description != pred.description:
            changes.append(Change("predicate text", name, pred.description))
    for name, pred in old_preds.items():
        if name not in new_preds:
            changes.append(Change("predicate removed", name, pred.kind))
    old_rules, new_rules = old.by_id, new.by_id
    for rule_id, rule in new_rules.items():
        before = old_rules.get(rule_id)
        if before is None:
            changes.append(Change("rule added", rule_id, f"{rule.logic} [{rule.review or '-'}]"))
            continue
        if before.formula != rule.formula or before.actions != rule.actions:
            changes.append(
                Change(
                    "rule logic",
                    rule_id,
                    f"{before.logic} -> {rule.logic} ({relation(before, rule)})",
                )
            )
        if before.review != rule.review:
            changes.append(
                Change("rule review", rule_id, f"{before.review or '-'} -> {rule.review or '-'}")
            )
        if before.hard != rule.hard:
            changes.append(
                Change("rule hardness", rule_id, "hard -> soft" if before.hard else "soft -> hard")
            )
        for key in ("policy", "remediation", "source", "span"):
            if getattr(before, key) != getattr(rule, key):
                changes.append(Change(f"rule {key}", rule_id, getattr(rule, key) or "(removed)"))
    for rule_id, rule in old_rules.items():
        if rule_id not in new_rules:
            changes.append(Change("rule removed", rule_id, rule.logic))
    return changes
