"""`policy optimize`: verifiability refinement and redundancy pruning, to a fixed point.

ShieldAgent's structure optimisation (supplement, Table-r.1, Figures r.1-r.3, r.7-r.9),
with the solver deciding what a model may only propose:

- **Redundancy pruning** (offline): predicates that are the same (same kind, and the same
  words in their names or the same description; or conditions interchangeable in every rule
  whose names overlap) are merged; a hard rule is dropped when z3 proves it implied by the
  other hard rules that apply whenever it applies (so no action's circuit loses anything);
  predicates no rule uses any more go.
- **Verifiability refinement** (needs a model): the model proposes splits of compound rules
  and concrete predicates for vague ones, defining each replaced predicate over the new
  ones. A proposal is kept only if z3 proves the new rules imply the old rule (with the
  definitions substituted) and the hard rules stay satisfiable: refinement never weakens.

Each step's counts (and the mean vagueness, when a model scores the rules) are recorded
per iteration, for the JSON statistics and the plot (:func:`plot_stats`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import z3
from pydantic import BaseModel, Field

from guardagent.authoring.answers import DEFAULT_ATTEMPTS, ask_json
from guardagent.authoring.extract import PredicateSpec
from guardagent.authoring.prompts import (
    REFINE_SYSTEM,
    REFINE_USER,
    VAGUENESS_SYSTEM,
    VAGUENESS_USER,
)
from guardagent.llm import ModelCallError
from guardagent.policy.formula import (
    Formula,
    Var,
    render,
    substitute,
)
from guardagent.policy.formula import variables as names_in
from guardagent.policy.grammar import LogicSyntaxError, parse_logic
from guardagent.policy.model import PolicyModel, Predicate, Rule, dump_policy, load_policy_text
from guardagent.policy.solver import to_z3

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

Step = Literal["extracted", "refinement", "pruning"]

BATCH = 20
"""Rules per refinement or scoring question."""

_STOP = frozenset(
    {
        "a",
        "an",
        "the",
        "of",
        "to",
        "is",
        "on",
        "in",
        "for",
        "with",
        "by",
        "has",
        "be",
        "are",
        "and",
        "or",
    }
)


# --------------------------------------------------------------------------- formulas


class _Z3:
    """A private z3 context for one question over a set of predicate names."""

    def __init__(self, parents: dict[str, str | None]) -> None:
        self.ctx = z3.Context()
        self.bools: dict[str, Any] = {}
        self.parents = parents

    def var(self, name: str) -> Any:
        if name not in self.bools:
            self.bools[name] = z3.Bool(name, self.ctx)
        return self.bools[name]

    def term(self, rule: Rule) -> Any:
        for name in (*names_in(rule.formula), *rule.actions):
            self.var(name)
        body = to_z3(rule.formula, self.bools, self.ctx)
        if rule.actions:
            return z3.Implies(z3.Or(*[self.var(a) for a in rule.actions]), body)
        return body

    def valid(self, premises: Sequence[Any], conclusion: Any) -> bool:
        """Whether the premises (with the action tree) imply the conclusion."""
        solver = z3.Solver(ctx=self.ctx)
        solver.add(*premises, z3.Not(conclusion))
        solver.add(*self.tree())
        return bool(solver.check() == z3.unsat)

    def satisfiable(self, terms: Sequence[Any]) -> bool:
        solver = z3.Solver(ctx=self.ctx)
        solver.add(*terms, *self.tree())
        return bool(solver.check() == z3.sat)

    def tree(self) -> list[Any]:
        return [
            z3.Implies(self.bools[c], self.var(p))
            for c, p in self.parents.items()
            if p is not None and c in self.bools
        ]


def _parents(predicates: Iterable[Predicate]) -> dict[str, str | None]:
    return {p.name: p.parent for p in predicates if p.kind == "action"}


# --------------------------------------------------------------------------- state


@dataclass
class _State:
    """The policy being optimised: predicates by name, rules in order."""

    base: PolicyModel
    predicates: dict[str, Predicate]
    rules: list[Rule]

    @classmethod
    def of(cls, model: PolicyModel) -> _State:
        return cls(model, {p.name: p for p in model.predicates}, list(model.rules))

    def model(self) -> PolicyModel:
        """Through the loader, so every step leaves a policy the format accepts."""
        draft = dataclasses.replace(
            self.base, predicates=tuple(self.predicates.values()), rules=tuple(self.rules)
        )
        return load_policy_text(dump_policy(draft), self.base.path or "<optimized>")

    def key(self) -> str:
        return dump_policy(
            dataclasses.replace(
                self.base, predicates=tuple(self.predicates.values()), rules=tuple(self.rules)
            )
        )

    def active(self) -> list[Rule]:
        return [r for r in self.rules if r.review != "rejected"]

    def rename(self, old: str, new: str) -> None:
        for i, rule in enumerate(self.rules):
            if old in names_in(rule.formula) or old in rule.actions:
                formula = substitute(rule.formula, {old: Var(new)})
                actions = tuple(dict.fromkeys(new if a == old else a for a in rule.actions))
                self.rules[i] = _with_formula(rule, formula, actions=actions)
        for name, pred in list(self.predicates.items()):
            if pred.parent == old:
                self.predicates[name] = dataclasses.replace(pred, parent=new)
        self.predicates.pop(old, None)

    def used(self) -> set[str]:
        used = {n for r in self.rules for n in (*names_in(r.formula), *r.actions)}
        parents = {p.parent for p in self.predicates.values() if p.name in used and p.parent}
        while parents - used:
            used |= parents
            parents = {p.parent for p in self.predicates.values() if p.name in used and p.parent}
        return used


def _with_formula(rule: Rule, formula: Formula, **changes: Any) -> Rule:
    return dataclasses.replace(rule, formula=formula, logic=render(formula), **changes)


# --------------------------------------------------------------------------- pruning


def _tokens(name: str) -> frozenset[str]:
    words = [w.rstrip("s") if len(w) > 3 else w for w in re.split(r"[_\W]+", name.lower()) if w]
    return frozenset(w for w in words if w not in _STOP)


def _same_meaning(p: Predicate, q: Predicate) -> bool:
    """Same kind and place in the tree, and the same words in the name or description."""
    if p.kind != q.kind or p.parent != q.parent or p.target != q.target:
        return False
    if _tokens(p.name) == _tokens(q.name):
        return True
    dp, dq = " ".join(p.description.lower().split()), " ".join(q.description.lower().split())
    return bool(dp) and dp == dq


def _interchangeable(state: _State, p: str, q: str) -> bool:
    """Swapping p and q leaves every rule equivalent (and they occur in the same rules)."""
    rules = [r for r in state.active() if {p, q} & set(names_in(r.formula))]
    if any(not {p, q} <= set(names_in(r.formula)) for r in rules) or not rules:
        return False
    z = _Z3(_parents(state.predicates.values()))
    for rule in rules:
        term = z.term(rule)
        swapped = z3.substitute(term, (z.var(p), z.var(q)), (z.var(q), z.var(p)))
        if not z.valid([term], swapped):
            return False
    return True


def merge_predicates(state: _State) -> list[str]:
    """Merge predicates that mean the same; returns ``"q -> p"`` for each merge."""
    merged: list[str] = []
    changed = True
    while changed:
        changed = False
        for p, q in itertools.combinations(list(state.predicates.values()), 2):
            same = _same_meaning(p, q)
            if not same and p.kind == "condition" == q.kind:
                overlap = _tokens(p.name) & _tokens(q.name)
                union = _tokens(p.name) | _tokens(q.name)
                same = (
                    bool(union)
                    and len(overlap) / len(union) >= 0.5
                    and _interchangeable(state, p.name, q.name)
                )
            if same:
                state.rename(q.name, p.name)
                merged.append(f"{q.name} -> {p.name}")
                changed = True
                break
    return merged


def _applies(state: _State, rule: Rule) -> frozenset[str] | None:
    """Actions whose circuit holds the rule (with their descendants); None: every event."""
    named = [
        n
        for n in (*names_in(rule.formula), *rule.actions)
        if state.predicates.get(n) is not None and state.predicates[n].kind == "action"
    ]
    if not named:
        return None
    model_tree = _parents(state.predicates.values())
    out = set(named)
    grew = True
    while grew:
        extra = {c for c, p in model_tree.items() if p in out and c not in out}
        out |= extra
        grew = bool(extra)
    return frozenset(out)


def drop_implied(state: _State) -> list[dict[str, Any]]:
    """Drop hard rules implied by the other hard rules that apply whenever they apply.

    Candidates are tried from the last rule back, rules a human signed off last, so the
    earlier, reviewed statement of a requirement is the one kept.
    """
    dropped: list[dict[str, Any]] = []
    order = sorted(
        (r for r in state.active() if r.hard),
        key=lambda r: (r.review in ("approved", "edited"), -state.rules.index(r)),
    )
    for rule in order:
        scope = _applies(state, rule)
        support = [
            s
            for s in state.active()
            if s.hard
            and s.id != rule.id
            and ((sa := _applies(state, s)) is None or (scope is not None and scope <= sa))
        ]
        z = _Z3(_parents(state.predicates.values()))
        terms = {s.id: z.term(s) for s in support}
        if not z.valid(list(terms.values()), z.term(rule)):
            continue
        needed = list(terms)
        for sid in list(needed):  # a minimal set of rules that imply it, for the report
            trial = [t for t in needed if t != sid]
            if z.valid([terms[t] for t in trial], z.term(rule)):
                needed = trial
        state.rules.remove(rule)
        dropped.append({"rule": rule.id, "implied_by": needed})
    return dropped


def drop_unused(state: _State) -> list[str]:
    """Remove predicates no rule uses any more."""
    used = state.used()
    gone = [n for n in state.predicates if n not in used]
    for name in gone:
        del state.predicates[name]
    return gone


def prune(state: _State) -> dict[str, Any]:
    """One redundancy-pruning step."""
    merged = merge_predicates(state)
    dropped = drop_implied(state)
    unused = drop_unused(state)
    return {"merged": merged, "dropped": dropped, "removed_predicates": unused}


# --------------------------------------------------------------------------- refinement


class RefinedRule(BaseModel):
    """A rule of a refinement."""

    logic: str
    policy: str = ""
    remediation: str = ""


class Proposal(BaseModel):
    """A refinement of one rule."""

    rule: str
    definitions: dict[str, str] = Field(default_factory=dict)
    predicates: list[PredicateSpec] = Field(default_factory=list)
    rules: list[RefinedRule] = Field(min_length=1)


class Proposals(BaseModel):
    """The model's answer to a refinement question."""

    proposals: list[Proposal]


class Scores(BaseModel):
    """The model's vagueness scores."""

    scores: dict[str, float]


def _predicate_lines(state: _State) -> str:
    return "\n".join(f"* {p.name} ({p.kind}): {p.description}" for p in state.predicates.values())


def _rule_lines(rules: Sequence[Rule], *, sources: bool) -> str:
    lines = []
    for r in rules:
        line = f"- {r.id}: {r.logic} -- {r.policy or '(no text)'}"
        if sources and r.span:
            line += f' -- source: "{r.span}"'
        lines.append(line)
    return "\n".join(lines)


def _proposal_problems(state: _State, answer: Proposals) -> list[str]:
    """Structural problems the model can fix (unknown rule, bad logic, undeclared names)."""
    errors: list[str] = []
    ids = {r.id for r in state.rules}
    for i, prop in enumerate(answer.proposals):
        where = f"proposals[{i}]"
        if prop.rule not in ids:
            errors.append(f"{where}.rule {prop.rule!r} is not a rule id")
        kinds = {n: p.kind for n, p in state.predicates.items()}
        for pred in prop.predicates:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", pred.name):
                errors.append(f"{where}: predicate name {pred.name!r} is not an identifier")
            elif kinds.get(pred.name, pred.kind) != pred.kind:
                errors.append(f"{where}: predicate {pred.name!r} is a {kinds[pred.name]}")
            kinds.setdefault(pred.name, pred.kind)
        texts = [(f"{where}.definitions[{k}]", v) for k, v in prop.definitions.items()]
        texts += [(f"{where}.rules[{j}].logic", r.logic) for j, r in enumerate(prop.rules)]
        for name in prop.definitions:
            if name not in state.predicates:
                errors.append(f"{where}.definitions: {name!r} is not a predicate of the policy")
        for what, text in texts:
            try:
                formula = parse_logic(text)
            except LogicSyntaxError as exc:
                errors.append(f"{what} {text!r}: {exc.message} (column {exc.column})")
                continue
            missing = [n for n in names_in(formula) if n not in kinds]
            if missing:
                errors.append(f"{what} uses undeclared predicate(s) {', '.join(missing)}")
    return errors


def apply_proposal(state: _State, prop: Proposal) -> str | None:
    """Apply one proposal if z3 shows it does not weaken the policy; else the reason."""
    old = next((r for r in state.rules if r.id == prop.rule), None)
    if old is None:
        return f"rule {prop.rule!r} is no longer in the policy"
    definitions = {k: parse_logic(v) for k, v in prop.definitions.items()}
    for name, body in definitions.items():
        if set(names_in(body)) & set(definitions):
            return f"definition of {name!r} uses a predicate it replaces"
    new_preds = {
        p.name: Predicate(p.name, p.kind, p.description.strip())
        for p in prop.predicates
        if p.name not in state.predicates
    }
    for name in definitions:
        kind = state.predicates[name].kind
        used = [
            n
            for n in names_in(definitions[name])
            if (new_preds.get(n) or state.predicates.get(n)) is not None
        ]
        bad = [n for n in used if (new_preds.get(n) or state.predicates[n]).kind != kind]
        if kind == "action" and bad:
            return f"action {name!r} must be defined over actions, not {', '.join(bad)}"
    fresh = []
    for k, spec in enumerate(prop.rules, 1):
        formula = parse_logic(spec.logic)
        fresh.append(
            dataclasses.replace(
                old,
                id=f"{old.id}.{k}",
                formula=formula,
                logic=render(formula),
                policy=spec.policy.strip() or old.policy,
                remediation=spec.remediation.strip() or old.remediation,
                review="proposed" if old.review is not None else None,
            )
        )
    parents = _parents([*state.predicates.values(), *new_preds.values()])
    z = _Z3(parents)
    target = z.term(_with_formula(old, substitute(old.formula, definitions)))
    if not z.valid([z.term(r) for r in fresh], target):
        return (
            f"the refined rules do not imply {old.id!r} ({old.logic}) under the "
            "definitions: the refinement would weaken the policy"
        )
    rest = [
        _with_formula(r, substitute(r.formula, definitions)) for r in state.rules if r.id != old.id
    ]
    hard = [z.term(r) for r in (*rest, *fresh) if r.hard and r.review != "rejected"]
    if not z.satisfiable(hard):
        return "the refined rules contradict the other hard rules"
    ids = {r.id for r in rest}
    if any(r.id in ids for r in fresh):
        return "the refined rule ids clash with existing rules"
    index = state.rules.index(old)
    state.rules = [
        _with_formula(r, substitute(r.formula, definitions))
        if set(definitions) & set(names_in(r.formula))
        else r
        for r in state.rules
    ]
    state.rules[index : index + 1] = fresh
    state.predicates.update(new_preds)
    for name in definitions:
        state.predicates.pop(name, None)
    return None


def refine(state: _State, model: BaseChatModel, attempts: int) -> dict[str, Any]:
    """One verifiability-refinement step: ask per batch of rules, keep what z3 accepts."""
    accepted: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    errors: list[str] = []
    rules = state.active()
    for start in range(0, len(rules), BATCH):
        batch = [r for r in rules[start : start + BATCH] if r in state.rules]
        if not batch:
            continue
        user = REFINE_USER.format(
            predicates=_predicate_lines(state), rules=_rule_lines(batch, sources=True)
        )
        answer = ask_json(
            model,
            REFINE_SYSTEM,
            user,
            Proposals,
            lambda a: _proposal_problems(state, a),
            attempts=attempts,
            run_name="guardagent.policy.refine",
        )
        if answer.value is None:
            errors += answer.errors
            continue
        for prop in answer.value.proposals:
            reason = apply_proposal(state, prop)
            if reason is None:
                accepted.append(
                    {
                        "rule": prop.rule,
                        "into": [f"{prop.rule}.{k}" for k in range(1, len(prop.rules) + 1)],
                        "definitions": prop.definitions,
                    }
                )
            else:
                rejected.append(
                    {"rule": prop.rule, "reason": reason, "rules": [r.logic for r in prop.rules]}
                )
    return {"accepted": accepted, "rejected": rejected, "errors": errors}


class _Scorer:
    """Mean vagueness of the rules, asking the model only about rules it has not scored."""

    def __init__(self, model: BaseChatModel, attempts: int) -> None:
        self.model = model
        self.attempts = attempts
        self.cache: dict[str, float] = {}
        self.errors: list[str] = []

    def mean(self, state: _State) -> float | None:
        rules = state.active()
        todo = [r for r in rules if r.logic not in self.cache]
        for start in range(0, len(todo), BATCH):
            batch = todo[start : start + BATCH]
            wanted = {r.id for r in batch}

            def complete(a: Scores, wanted: set[str] = wanted) -> list[str]:
                missing = sorted(wanted - set(a.scores))
                bad = [k for k, v in a.scores.items() if not 0.0 <= v <= 1.0]
                return ([f"no score for rule(s) {', '.join(missing)}"] if missing else []) + [
                    f"score of {k} must be between 0 and 1" for k in bad
                ]

            user = VAGUENESS_USER.format(
                predicates=_predicate_lines(state), rules=_rule_lines(batch, sources=False)
            )
            answer = ask_json(
                self.model,
                VAGUENESS_SYSTEM,
                user,
                Scores,
                complete,
                attempts=self.attempts,
                run_name="guardagent.policy.vagueness",
            )
            if answer.value is None:
                self.errors += answer.errors
                continue
            for r in batch:
                self.cache[r.logic] = answer.value.scores[r.id]
        scored = [self.cache[r.logic] for r in rules if r.logic in self.cache]
        return round(sum(scored) / len(scored), 4) if scored and len(scored) == len(rules) else None


# --------------------------------------------------------------------------- the loop


@dataclass
class StepStats:
    """The policy's size after one step."""

    iteration: int
    step: Step
    predicates: int
    rules: int
    vagueness: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Optimization:
    """The optimised policy and how it got there."""

    model: PolicyModel
    text: str
    steps: list[StepStats]
    converged: bool
    used_model: bool

    def to_json(self) -> dict[str, Any]:
        """The statistics file's content."""
        first, last = self.steps[0], self.steps[-1]
        return {
            "policy": self.model.name,
            "converged": self.converged,
            "refinement": self.used_model,
            "before": {
                "predicates": first.predicates,
                "rules": first.rules,
                "vagueness": first.vagueness,
            },
            "after": {
                "predicates": last.predicates,
                "rules": last.rules,
                "vagueness": last.vagueness,
            },
            "steps": [dataclasses.asdict(s) for s in self.steps],
        }


def optimize_policy(
    policy: PolicyModel,
    model: BaseChatModel | None = None,
    *,
    max_iterations: int = 10,
    attempts: int = DEFAULT_ATTEMPTS,
    score: bool = True,
) -> Optimization:
    """Refine (with a model) and prune until nothing changes or `max_iterations` is reached.

    With a model and `score`, the model also scores each rule's vagueness (0 concrete,
    1 vague) after every step; unchanged rules are not asked about again.

    Raises:
        ModelCallError: the model cannot be reached.
    """
    state = _State.of(policy)
    scorer = _Scorer(model, attempts) if model is not None and score else None

    def record(iteration: int, step: Step, details: dict[str, Any]) -> None:
        steps.append(
            StepStats(
                iteration,
                step,
                len(state.predicates),
                len(state.active()),
                scorer.mean(state) if scorer else None,
                details,
            )
        )

    steps: list[StepStats] = []
    record(0, "extracted", {})
    converged = False
    for iteration in range(1, max_iterations + 1):
        before = state.key()
        if model is not None:
            record(iteration, "refinement", refine(state, model, attempts))
        record(iteration, "pruning", prune(state))
        if state.key() == before:
            converged = True
            break
    if scorer is not None and scorer.errors:
        steps[-1].details["scoring_errors"] = scorer.errors
    final = state.model()
    return Optimization(final, dump_policy(final), steps, converged, model is not None)


# --------------------------------------------------------------------------- output


def write_stats(result: Optimization, path: Path) -> None:
    """The per-iteration statistics as JSON."""
    path.write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")


def plot_stats(result: Optimization, path: Path) -> None:
    """Rules, predicates and (when scored) vagueness per iteration, like Figures r.1-r.3.

    Orange bars: after each verifiability-refinement step; blue: after each pruning step.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    metrics = [("rules", "# rules"), ("predicates", "# predicates")]
    if any(s.vagueness is not None for s in result.steps):
        metrics.append(("vagueness", "mean vagueness"))
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4))
    colours = {"extracted": "#999999", "refinement": "#ff7f0e", "pruning": "#1f77b4"}
    for ax, (key, label) in zip(axes, metrics, strict=True):
        for step in result.steps:
            value = getattr(step, key)
            if value is None:
                continue
            offset = {"extracted": 0.0, "refinement": -0.2, "pruning": 0.2}[step.step]
            ax.bar(
                step.iteration + offset,
                value,
                width=0.4 if step.iteration else 0.6,
                color=colours[step.step],
            )
        ax.set_xticks(sorted({s.iteration for s in result.steps}))
        ax.set_xlabel("iteration")
        ax.set_title(label)
    handles = [Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
    fig.legend(
        handles,
        ["extracted", "verifiability refinement", "redundancy pruning"],
        loc="lower center",
        ncol=3,
        frameon=False,
    )
    fig.suptitle(f"Policy structure optimisation: {result.model.name}")
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = [
    "ModelCallError",
    "Optimization",
    "StepStats",
    "optimize_policy",
    "plot_stats",
    "write_stats",
    "substitute",
    "apply_proposal",
    "prune",
]
