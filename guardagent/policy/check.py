"""`policy check`: what z3 can prove about a policy model before it guards anything.

Errors (the policy cannot be used as it is): a file that does not load, rules that use
undeclared predicates, hard rules that cannot all hold at once. Warnings (the policy works
but probably not as meant): an action the rules forbid outright, rules that conflict when
their action is taken, redundant rules (implied by the others: prunable), unused
predicates, interchangeable predicates (merge candidates), `assign` entries naming unknown
toolbox functions or unparsable expressions, trace predicates naming a tool argument that no
labelled tool has (a typo that would never fire). Every finding names the rules and predicates
involved and, when there is one, the position in the file.
"""

from __future__ import annotations

import ast
import itertools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import z3

from guardagent.policy.formula import Const, Implies
from guardagent.policy.model import PolicyError, PolicyModel, Rule, load_policy
from guardagent.policy.solver import CompiledPolicy, Z3Bool, compiled

Severity = Literal["error", "warning", "info"]

MAX_CONFLICT_SETS = 5
"""Minimal conflicting rule sets reported per forbidden action."""


@dataclass(frozen=True)
class Finding:
    """One thing the checker found.

    Attributes:
        severity: ``error`` makes `policy check` exit non-zero; ``warning``/``info`` do not.
        code: Stable identifier (``unsat_hard_rules``, ``forbidden_action``, ``conflict``,
            ``redundant_rule``, ``undefined_predicate``, ``unused_predicate``,
            ``interchangeable_predicates``, ...).
        message: One readable sentence.
        rules: Ids of the rules involved.
        predicates: Names of the predicates involved.
        location: ``file:line:col`` when the finding points at one place.
    """

    severity: Severity
    code: str
    message: str
    rules: tuple[str, ...] = ()
    predicates: tuple[str, ...] = ()
    location: str | None = None


@dataclass
class CheckReport:
    """Everything `policy check` found, plus the policy's size and how long it took."""

    path: str
    name: str = ""
    version: str = ""
    findings: list[Finding] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        """Findings that make the policy unusable."""
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        """Findings that deserve a look."""
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        """True when there is no error (warnings allowed)."""
        return not self.errors

    def codes(self, severity: Severity | None = None) -> list[str]:
        """The finding codes, optionally of one severity (handy in tests)."""
        return [f.code for f in self.findings if severity is None or f.severity == severity]


class _Tracked:
    """One solver holding every hard rule behind its own tracker literal.

    Asking "do these rules hold together (with this extra fact)" is a `check` with their
    trackers as assumptions; the unsat core names the rules responsible.
    """

    def __init__(self, comp: CompiledPolicy, rules: Sequence[Rule]) -> None:
        self.solver = z3.Solver(ctx=comp.ctx)
        self.solver.add(*comp.tree_terms)
        self.track: dict[str, Z3Bool] = {}
        self.back: dict[int, str] = {}
        self.negated: dict[str, Z3Bool] = {}
        self.order = {rule.id: i for i, rule in enumerate(rules)}
        for rule in rules:
            t = comp.fresh(f"__rule__{rule.id}")
            n = comp.fresh(f"__not_rule__{rule.id}")
            self.solver.add(z3.Implies(t, comp.terms[rule.id]))
            self.solver.add(z3.Implies(n, z3.Not(comp.terms[rule.id])))
            self.track[rule.id] = t
            self.negated[rule.id] = n
            self.back[t.get_id()] = rule.id

    def sat(self, rule_ids: Iterable[str], *extra: Z3Bool) -> bool:
        return bool(self.solver.check(*[self.track[r] for r in rule_ids], *extra) == z3.sat)

    def core(self, rule_ids: Iterable[str], *extra: Z3Bool) -> list[str] | None:
        """None when satisfiable, else the rules in z3's unsat core."""
        if self.solver.check(*[self.track[r] for r in rule_ids], *extra) == z3.sat:
            return None
        return [self.back[c.get_id()] for c in self.solver.unsat_core() if c.get_id() in self.back]

    def minimal(self, core: list[str], *extra: Z3Bool) -> list[str]:
        """Shrink an unsat core to a minimal one (deletion: each rule left is needed).

        The result is in policy order, so reports are stable.
        """
        kept = sorted(core, key=self.order.__getitem__)
        for rule_id in list(kept):
            trial = [r for r in kept if r != rule_id]
            if not self.sat(trial, *extra):
                kept = trial
        return kept


def _conflict_sets(tracked: _Tracked, rule_ids: list[str], extra: Z3Bool) -> list[list[str]]:
    """Up to MAX_CONFLICT_SETS distinct minimal unsat subsets of `rule_ids` with `extra`."""
    first = tracked.core(rule_ids, extra)
    if first is None:
        return []
    found = [tracked.minimal(first, extra)]
    frontier = [found[0]]
    while frontier and len(found) < MAX_CONFLICT_SETS:
        mus = frontier.pop(0)
        for dropped in mus:
            rest = [r for r in rule_ids if r != dropped]
            core = tracked.core(rest, extra)
            if core is None:
                continue
            other = tracked.minimal(core, extra)
            if sorted(other) not in [sorted(f) for f in found]:
                found.append(other)
                frontier.append(other)
                if len(found) >= MAX_CONFLICT_SETS:
                    break
    return found


def _undefined(model: PolicyModel) -> list[Finding]:
    out = []
    for name, uses in sorted(model.undefined.items()):
        rules = tuple(dict.fromkeys(r for r, _ in uses))
        where = next((str(loc) for _, loc in uses if loc is not None), None)
        out.append(
            Finding(
                "error",
                "undefined_predicate",
                f"predicate {name!r} is used by rule(s) {', '.join(rules)} but never declared",
                rules,
                (name,),
                where,
            )
        )
    return out


def _loc(model: PolicyModel, rule_id: str) -> str | None:
    loc = model.by_id[rule_id].location
    return str(loc) if loc else None


def _satisfiability(model: PolicyModel, tracked: _Tracked, hard: list[str]) -> list[Finding]:
    core = tracked.core(hard)
    if core is None:
        return []
    mus = tracked.minimal(core)
    return [
        Finding(
            "error",
            "unsat_hard_rules",
            f"the hard rules cannot all hold at once: {', '.join(mus)} contradict each other "
            "(whatever the predicates' values)",
            tuple(mus),
            location=_loc(model, mus[0]) if mus else None,
        )
    ]


def _actions(
    model: PolicyModel, comp: CompiledPolicy, tracked: _Tracked, hard: list[str]
) -> list[Finding]:
    """Each action still permitted under some assignment of the conditions; conflicts."""
    out: list[Finding] = []
    conflicts_seen: set[tuple[str, ...]] = set()
    for action in model.actions:
        pred = model.by_name[action]
        taken = comp.bools[action]
        sets = _conflict_sets(tracked, hard, taken)
        where = str(pred.location) if pred.location else None
        if not sets:
            if not pred.permitted:
                out.append(
                    Finding(
                        "warning",
                        "declared_forbidden_permitted",
                        f"action {action!r} is declared never permitted, but the hard rules "
                        "permit it under some conditions",
                        (),
                        (action,),
                        where,
                    )
                )
            continue
        described = "; ".join("{" + ", ".join(s) + "}" for s in sets)
        if pred.permitted:
            out.append(
                Finding(
                    "warning",
                    "forbidden_action",
                    f"the policy forbids {action!r} outright: no assignment of the conditions "
                    f"permits it (responsible rule sets: {described})",
                    tuple(dict.fromkeys(itertools.chain.from_iterable(sets))),
                    (action,),
                    where,
                )
            )
        for mus in sets:
            key = tuple(sorted(mus))
            if len(mus) < 2 or key in conflicts_seen:
                continue
            conflicts_seen.add(key)
            out.append(
                Finding(
                    "warning" if pred.permitted else "info",
                    "conflict",
                    f"rules {', '.join(mus)} cannot all hold when {action!r} is taken",
                    tuple(mus),
                    (action,),
                    _loc(model, mus[0]),
                )
            )
    return out


def _allowance(rule: Rule) -> bool:
    """``action IMPLIES TRUE``: written on purpose to say the action may always run.

    The scaffold offers it for harmless reads; a rule that holds by construction is pruned
    only when it says nothing, so this one is noted, not warned about.
    """
    formula = rule.formula
    return (
        isinstance(formula, Implies)
        and isinstance(formula.right, Const)
        and formula.right.value is True
    )


def _redundant(model: PolicyModel, tracked: _Tracked, hard: list[str]) -> list[Finding]:
    """Rules implied by the (remaining) hard rules; greedy, so all flagged can go together."""
    out: list[Finding] = []
    remaining = list(hard)
    for rule in model.rules:
        others = [r for r in remaining if r != rule.id]
        core = tracked.core(others, tracked.negated[rule.id])
        if core is None:
            continue
        implied_by = tracked.minimal(core, tracked.negated[rule.id])
        if rule.hard:
            remaining = others
        if not implied_by and _allowance(rule):
            out.append(
                Finding(
                    "info",
                    "redundant_rule",
                    f"rule {rule.id!r} always holds: it states that its "
                    "action is allowed (an explicit allowance)",
                    (rule.id,),
                    location=_loc(model, rule.id),
                )
            )
            continue
        by = ", ".join(implied_by) if implied_by else "nothing (it always holds)"
        what = "hard rules" if implied_by else ""
        out.append(
            Finding(
                "warning" if rule.hard else "info",
                "redundant_rule",
                f"rule {rule.id!r} is implied by {what + ' ' if what else ''}{by}: it can be pruned"
                + ("" if rule.hard else " (a soft rule the hard rules already enforce)"),
                (rule.id, *implied_by),
                location=_loc(model, rule.id),
            )
        )
    return out


def _unused(model: PolicyModel) -> list[Finding]:
    used = {n for r in model.rules for n in r.predicates} | {
        a for r in model.rules for a in r.actions
    }
    out: list[Finding] = []
    tree = model.tree
    for pred in model.predicates:
        if pred.name in used:
            continue
        if pred.kind == "action":
            family = (pred.name, *tree.ancestors(pred.name), *tree.descendants(pred.name))
            if any(model.circuits.get(a) for a in family):
                continue  # it brings (or is brought by) actions that have rules
            why = "no rule names it, its ancestors or its descendants"
        else:
            why = "no rule names it"
        out.append(
            Finding(
                "warning",
                "unused_predicate",
                f"predicate {pred.name!r} is unused: {why}",
                predicates=(pred.name,),
                location=str(pred.location) if pred.location else None,
            )
        )
    return out


def _distinct_facts(model: PolicyModel, p: str, q: str) -> bool:
    """Whether `p` and `q` are known to be different facts, whatever the rules do with them.

    Actions reporting different targets are (merging would lose the target), and so are two
    trace predicates with different expressions: the host computes each from the trace, so
    ``called_before("a")`` and ``called_before("b")`` are not synonyms even when every rule
    treats them alike (``a OR b``).
    """
    pp, pq = model.by_name[p], model.by_name[q]
    if pp.target is not None and pq.target is not None and pp.target != pq.target:
        return True
    ap, aq = pp.assigned_by, pq.assigned_by
    return (
        ap is not None
        and aq is not None
        and ap.kind == aq.kind == "trace"
        and ap.text.strip() != aq.text.strip()
    )


def _swap_keeps(
    comp: CompiledPolicy, checker: Any, rule_ids: Sequence[str], p: str, q: str
) -> bool:
    """Whether swapping `p` and `q` leaves every one of the rules equivalent (z3)."""
    bp, bq = comp.bools[p], comp.bools[q]
    for rule_id in rule_ids:
        term = comp.terms[rule_id]
        checker.push()
        checker.add(term != z3.substitute(term, (bp, bq), (bq, bp)))
        same = checker.check() == z3.unsat
        checker.pop()
        if not same:
            return False
    return True


def _interchangeable(model: PolicyModel, comp: CompiledPolicy) -> list[Finding]:
    """Groups of predicates any two of which can swap leaving every rule equivalent.

    Only predicates of the same kind (and, for actions, the same parent) that occur in the
    same rules can qualify, and never two known to be different facts
    (:func:`_distinct_facts`). Swapping is an equivalence (two swaps that keep the rules
    compose into a third), so each new predicate is tried against one member of each group
    found so far, and a group of n is one finding, not n(n-1)/2.
    """
    appears: dict[str, list[str]] = {}
    for rule in model.rules:
        for name in comp.names_of(rule):
            appears.setdefault(name, []).append(rule.id)
    candidates: dict[tuple[Any, ...], list[str]] = {}
    for name, rule_ids in appears.items():
        pred = model.by_name.get(name)
        if pred is None:
            continue
        candidates.setdefault((pred.kind, pred.parent, tuple(rule_ids)), []).append(name)
    out: list[Finding] = []
    checker = z3.Solver(ctx=comp.ctx)
    for (_, _, rule_ids), names in candidates.items():
        groups: list[list[str]] = []
        for name in names:
            home = next(
                (
                    g
                    for g in groups
                    if not _distinct_facts(model, g[0], name)
                    and all(not _distinct_facts(model, m, name) for m in g)
                    and _swap_keeps(comp, checker, rule_ids, g[0], name)
                ),
                None,
            )
            if home is None:
                groups.append([name])
            else:
                home.append(name)
        for group in (g for g in groups if len(g) > 1):
            first = model.by_name[group[0]]
            listed = ", ".join(repr(n) for n in group)
            what = "are interchangeable" if len(group) == 2 else "are all interchangeable"
            out.append(
                Finding(
                    "warning",
                    "interchangeable_predicates",
                    f"predicates {listed} {what} in every rule ({', '.join(rule_ids)}): merge "
                    "candidates",
                    tuple(rule_ids),
                    tuple(group),
                    str(first.location) if first.location else None,
                )
            )
    return out


def _assignments(model: PolicyModel) -> list[Finding]:
    from guardagent.tools import DEFAULT_TOOLBOX  # registers the built-in functions

    out: list[Finding] = []
    for pred in model.predicates:
        how = pred.assigned_by
        where = str(pred.location) if pred.location else None
        if how is None:
            continue
        if how.kind == "tool" and how.text not in DEFAULT_TOOLBOX:
            out.append(
                Finding(
                    "warning",
                    "unknown_tool",
                    f"predicate {pred.name!r} is assigned by {how.text!r}, which is not a toolbox "
                    "function",
                    predicates=(pred.name,),
                    location=where,
                )
            )
        elif how.kind == "expression":
            try:
                ast.parse(how.text, mode="eval")
            except SyntaxError as exc:
                out.append(
                    Finding(
                        "warning",
                        "bad_expression",
                        f"predicate {pred.name!r}: assign expression does not parse ({exc.msg})",
                        predicates=(pred.name,),
                        location=where,
                    )
                )
    return out


def _arguments(model: PolicyModel) -> list[Finding]:
    """Labels without `args`, and trace predicates naming an argument no tool declares.

    ``arg_from_user("recipent")`` holds for every call (no value to trace), so a typo turns a
    rule off without a sound; with the tools' argument names in the labels it is found here.
    """
    if model.labels is None:
        return []
    from guardagent.trace.predicates import unknown_arguments

    out: list[Finding] = []
    labels = model.labels
    for tool, label in [*labels.tools.items(), *labels.patterns]:
        if label.args is None and not label.other_args:
            out.append(
                Finding(
                    "warning",
                    "label_without_args",
                    f"tool {tool!r}: its label lists no `args`, so every call of it with an "
                    "argument is denied (undeclared_argument); list the argument names under "
                    "`args` (`guardagent profile init --tools` fills them) or set "
                    "`other_args: allow`",
                )
            )
    for name, expression in model.trace_bindings.items():
        pred = model.by_name[name]
        try:
            problems = unknown_arguments({name: expression}, model.labels)
        except SyntaxError:
            continue  # reported when the expression is bound
        for problem in problems:
            out.append(
                Finding(
                    "warning",
                    "unknown_argument",
                    f"predicate {name!r} ({expression}): {problem.split(': ', 1)[-1]}; check the "
                    "spelling or add the argument to the tool's `args` in `labels`",
                    predicates=(name,),
                    location=str(pred.location) if pred.location else None,
                )
            )
    return out


def _globals(model: PolicyModel) -> list[Finding]:
    return [
        Finding(
            "info",
            "global_rule",
            f"rule {rule_id!r} names no action: it applies to every event",
            (rule_id,),
            location=_loc(model, rule_id),
        )
        for rule_id in model.global_rules
    ]


def _solver_checks(model: PolicyModel, comp: CompiledPolicy, hard: list[str]) -> list[Finding]:
    tracked = _Tracked(comp, model.rules)
    unsat = _satisfiability(model, tracked, hard)
    if unsat:
        return unsat  # everything else would follow from the contradiction
    return _actions(model, comp, tracked, hard) + _redundant(model, tracked, hard)


def check_model(model: PolicyModel) -> CheckReport:
    """Run every check on a loaded model (loaded with ``strict=False`` to see undefined names)."""
    start = time.perf_counter()
    report = CheckReport(path=model.path or "", name=model.name, version=model.version)
    report.findings += _undefined(model)
    comp = compiled(model)
    hard_rules = [r for r in model.rules if r.hard]
    hard = [r.id for r in hard_rules]
    with comp.lock:  # z3 temporaries live and die inside the helpers, under the lock
        report.findings += _solver_checks(model, comp, hard)
        report.findings += _interchangeable(model, comp)
    report.findings += _unused(model)
    report.findings += _assignments(model)
    report.findings += _arguments(model)
    report.findings += _globals(model)
    order = {"error": 0, "warning": 1, "info": 2}
    report.findings.sort(key=lambda f: order[f.severity])
    report.stats = {
        "predicates": len(model.predicates),
        "conditions": len(model.predicates) - len(model.actions),
        "actions": len(model.actions),
        "rules": len(model.rules),
        "hard_rules": len(hard),
        "action_tree_depth": model.tree.depth,
        "seconds": round(time.perf_counter() - start, 3),
    }
    return report


def check_policy(path: str | Path) -> CheckReport:
    """Load and check a policy file; load errors come back as error findings."""
    try:
        model = load_policy(path, strict=False)
    except PolicyError as exc:
        report = CheckReport(path=str(path))
        report.findings = [
            Finding(
                "error",
                "load_error",
                issue.message,
                location=str(issue.location) if issue.location else None,
            )
            for issue in exc.issues
        ]
        return report
    return check_model(model)
