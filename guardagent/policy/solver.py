"""Rule formulas as z3 terms, and the per-rule solvers verification asks.

Every verdict about a rule comes from z3 (satisfiability under assumptions), never from
evaluating the rule as a Python boolean: an open predicate is simply left out of the
assumptions, so "violated under every completion" is an unsat answer, not a guess.

A z3 context is not thread-safe, while guard graphs run nodes on several threads. Each
compiled policy therefore owns its own `z3.Context` and a lock: every use of the policy's
terms happens under `CompiledPolicy.lock`, and code that creates z3 temporaries does its
work in a helper called under the lock, so the temporaries are also freed under it (freeing
a z3 object touches its context). Different policies never share a context, so they verify
in parallel, and a policy's terms die with it without racing anyone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import z3

from guardagent.policy.formula import And, Const, Formula, Iff, Implies, Not, Or, Var
from guardagent.policy.model import PolicyModel, Rule

Z3Bool = Any
"""A z3 boolean term (z3 ships no type information)."""


def to_z3(formula: Formula, bools: Mapping[str, Z3Bool], ctx: Any = None) -> Z3Bool:
    """The z3 term of a formula; `bools` maps each predicate name to its z3 constant.

    `ctx` is the z3 context of the constants (None: z3's default context).
    """
    if isinstance(formula, Var):
        return bools[formula.name]
    if isinstance(formula, Const):
        return z3.BoolVal(formula.value, ctx)
    if isinstance(formula, Not):
        return z3.Not(to_z3(formula.operand, bools, ctx))
    if isinstance(formula, And):
        return z3.And(*[to_z3(o, bools, ctx) for o in formula.operands])
    if isinstance(formula, Or):
        return z3.Or(*[to_z3(o, bools, ctx) for o in formula.operands])
    if isinstance(formula, Implies):
        return z3.Implies(to_z3(formula.left, bools, ctx), to_z3(formula.right, bools, ctx))
    assert isinstance(formula, Iff)
    return to_z3(formula.left, bools, ctx) == to_z3(formula.right, bools, ctx)


Outcome = Literal["holds", "violated", "open"]


@dataclass
class RuleCheck:
    """What z3 says about one rule under a partial assignment.

    Attributes:
        outcome: ``holds`` (under every completion of the open predicates), ``violated``
            (under every completion), or ``open`` (holds under some, violated under others).
        deciding: For holds/violated, a small set of the given values that already forces
            the outcome (z3's unsat core over the assumptions).
        witness: For ``open``, one completion of the rule's open predicates violating it.
    """

    outcome: Outcome
    deciding: dict[str, bool] = field(default_factory=dict)
    witness: dict[str, bool] = field(default_factory=dict)


MAX_KEPT_CHECKS = 1_024
"""Checks kept per rule (see :meth:`RuleSolver.check`); the table starts over when full."""


class RuleSolver:
    """Two incremental solvers for one rule: one asserting it, one asserting its negation.

    Checking "can the rule hold / fail given these values" is then a single `check` with
    the values as assumptions, and the unsat core names the values that decided it.
    """

    def __init__(
        self, term: Z3Bool, names: tuple[str, ...], lits: _Literals, lock: threading.RLock
    ) -> None:
        self.names = names
        self._lits = lits
        self._lock = lock
        self._holds = z3.Solver(ctx=lits.ctx)
        self._holds.set("core.minimize", True)
        self._holds.add(term)
        self._fails = z3.Solver(ctx=lits.ctx)
        self._fails.set("core.minimize", True)
        self._fails.add(z3.Not(term))
        self._kept: dict[tuple[tuple[str, bool], ...], RuleCheck] = {}

    def check(self, values: Mapping[str, bool]) -> RuleCheck:
        """Decide the rule with `values` fixed and the rule's other predicates open.

        Kept per assignment of the rule's own predicates (the whole input of the check; at
        most :data:`MAX_KEPT_CHECKS` of them): a guard sees the same few assignments call
        after call, and a z3 check costs about 0.1 ms. Each caller gets its own copy.
        """
        key = tuple((n, bool(values[n])) for n in self.names if n in values)
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                found = self._check(values)
                if len(self._kept) >= MAX_KEPT_CHECKS:
                    self._kept.clear()
                self._kept[key] = found
        return RuleCheck(found.outcome, dict(found.deciding), dict(found.witness))

    def _check(self, values: Mapping[str, bool]) -> RuleCheck:
        assumptions = [self._lits.literal(n, values[n]) for n in self.names if n in values]
        # Most rules hold, so that is asked first: one check for them.
        if self._fails.check(*assumptions) == z3.unsat:
            return RuleCheck("holds", self._lits.decode(self._fails.unsat_core()))
        if self._holds.check(*assumptions) == z3.unsat:
            return RuleCheck("violated", self._lits.decode(self._holds.unsat_core()))
        return RuleCheck("open", witness=self._witness(assumptions, values))

    def _witness(self, assumptions: list[Z3Bool], values: Mapping[str, bool]) -> dict[str, bool]:
        """The first violating completion in the order false < true, name by name.

        Canonical, so the same event always reports the same witness (a model z3 happens to
        return can depend on what the incremental solver saw before).
        """
        chosen = list(assumptions)
        witness: dict[str, bool] = {}
        for name in self.names:
            if name in values:
                continue
            for value in (False, True):
                literal = self._lits.literal(name, value)
                if self._fails.check(*chosen, literal) == z3.sat:
                    chosen.append(literal)
                    witness[name] = value
                    break
        return witness


class _Literals:
    """Pre-built assumption literals per predicate, and the way back from an unsat core."""

    def __init__(self, names: Iterable[str], ctx: Any) -> None:
        self.ctx = ctx
        self.bools: dict[str, Z3Bool] = {n: z3.Bool(n, ctx) for n in names}
        self._pos = dict(self.bools)
        self._neg = {n: z3.Not(b) for n, b in self.bools.items()}
        self._back: dict[int, tuple[str, bool]] = {}
        for n in self.bools:
            self._back[self._pos[n].get_id()] = (n, True)
            self._back[self._neg[n].get_id()] = (n, False)

    def literal(self, name: str, value: bool) -> Z3Bool:
        return self._pos[name] if value else self._neg[name]

    def decode(self, core: Iterable[Z3Bool]) -> dict[str, bool]:
        out: dict[str, bool] = {}
        for lit in core:
            found = self._back.get(lit.get_id())
            if found is not None:
                out[found[0]] = found[1]
        return out


class CompiledPolicy:
    """A policy model's predicates and rules as z3 terms, built once per model.

    The *effective* term of a rule is its logic, guarded by its explicit `actions` when it
    lists any (`OR(actions) IMPLIES logic`): such a rule only binds when one of its actions
    is taken, which is what attaching a rule to an action means.
    """

    def __init__(self, model: PolicyModel) -> None:
        self.model = model
        self.ctx = z3.Context()
        self.lock = threading.RLock()
        names = [p.name for p in model.predicates]
        names += [n for n in model.undefined if n not in names]  # the checker still reasons
        self.lits = _Literals(names, self.ctx)
        self.bools = self.lits.bools
        self.terms: dict[str, Z3Bool] = {r.id: self._effective(r) for r in model.rules}
        self.tree_terms: list[Z3Bool] = [
            z3.Implies(self.bools[child], self.bools[parent])
            for child, parent in model.tree.parents.items()
            if parent is not None and parent in self.bools
        ]
        self._rule_solvers: dict[str, RuleSolver] = {}

    def true(self, value: bool = True) -> Z3Bool:
        """A boolean constant in this policy's context."""
        return z3.BoolVal(value, self.ctx)

    def fresh(self, name: str) -> Z3Bool:
        """A new boolean constant in this policy's context (for trackers, choices)."""
        return z3.Bool(name, self.ctx)

    def _effective(self, rule: Rule) -> Z3Bool:
        term = to_z3(rule.formula, self.bools, self.ctx)
        if rule.actions:
            return z3.Implies(z3.Or(*[self.bools[a] for a in rule.actions]), term)
        return term

    def names_of(self, rule: Rule) -> tuple[str, ...]:
        """Predicates of the effective term: the logic's and the explicit actions."""
        return tuple(dict.fromkeys([*rule.predicates, *rule.actions]))

    def rule_solver(self, rule_id: str) -> RuleSolver:
        """The (cached) incremental solvers of one rule."""
        solver = self._rule_solvers.get(rule_id)
        if solver is None:
            rule = self.model.by_id[rule_id]
            with self.lock:
                solver = self._rule_solvers.get(rule_id)
                if solver is None:
                    solver = RuleSolver(
                        self.terms[rule_id], self.names_of(rule), self.lits, self.lock
                    )
                    self._rule_solvers[rule_id] = solver
        return solver


_compiled_lock = threading.Lock()
_SLOT = "_z3_compiled"


def compiled(model: PolicyModel) -> CompiledPolicy:
    """The compiled form of `model`, built on first use and kept with the model.

    It is stored in the (frozen) model's instance dict, like a cached property, so it
    lives exactly as long as the model and costs no hashing of the model to find.
    """
    found = model.__dict__.get(_SLOT)
    if isinstance(found, CompiledPolicy):
        return found
    with _compiled_lock:
        found = model.__dict__.get(_SLOT)
        if not isinstance(found, CompiledPolicy):
            found = CompiledPolicy(model)
            model.__dict__[_SLOT] = found
    return found
