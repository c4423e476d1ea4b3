"""Safety probability: how likely every hard rule of the event's circuits holds.

Predicates are treated as independent Bernoulli variables: a certain value (probability 1)
is a constant; a value assigned with probability p is true with probability p (false with
1 - p when the assigned value is false); an open predicate is true with probability 1/2 (no
information). The probability that the rules hold is then a weighted model count over the
uncertain predicates, computed by exact enumeration of their 2^k completions, vectorised with
numpy, up to `EXACT_LIMIT` uncertain predicates, and by Monte Carlo above, with the Hoeffding
bound stated in the result.

Two numbers are reported, as in ShieldAgent's certification step: the probability if the
event's actions are executed, and if they are not (every matched action switched off). The
policy's threshold applies to the first.

The formulas are evaluated here over our own syntax tree, not by z3: counting up to a million
completions one solver call at a time would be far too slow. The tests check on random
formulas that this evaluation agrees with z3 on every completion.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from guardagent.policy.event import EventValues
from guardagent.policy.formula import And, Const, Formula, Iff, Implies, Not, Or, Var, variables
from guardagent.policy.model import PolicyModel, Rule
from guardagent.policy.results import SafetyProbability

EXACT_LIMIT = 20
"""Up to this many uncertain predicates the count is exact (2^20 completions, ~0.2 s)."""

EPSILON = 0.01
DELTA = 0.05
SAMPLES = math.ceil(math.log(2 / DELTA) / (2 * EPSILON**2))
"""Hoeffding: with this many samples the estimate is within EPSILON with prob. 1 - DELTA."""

OPEN_PRIOR = 0.5

Column = NDArray[np.bool_] | bool


def effective_formula(rule: Rule) -> Formula:
    """The rule's logic, guarded by its explicit actions (as the solver reads it)."""
    if not rule.actions:
        return rule.formula
    guard: Formula = (
        Var(rule.actions[0]) if len(rule.actions) == 1 else Or(tuple(Var(a) for a in rule.actions))
    )
    return Implies(guard, rule.formula)


def evaluate(formula: Formula, env: Mapping[str, Column]) -> Column:
    """The formula's truth over columns of completions (numpy arrays or plain booleans)."""
    if isinstance(formula, Var):
        return env[formula.name]
    if isinstance(formula, Const):
        return formula.value
    if isinstance(formula, Not):
        return np.logical_not(evaluate(formula.operand, env))
    if isinstance(formula, And | Or):
        combine = np.logical_and if isinstance(formula, And) else np.logical_or
        result = evaluate(formula.operands[0], env)
        for operand in formula.operands[1:]:
            result = combine(result, evaluate(operand, env))
        return result
    if isinstance(formula, Implies):
        left, right = evaluate(formula.left, env), evaluate(formula.right, env)
        return np.logical_or(np.logical_not(left), right)
    assert isinstance(formula, Iff)
    left, right = evaluate(formula.left, env), evaluate(formula.right, env)
    return np.equal(left, right)


def _p_true(ev: EventValues, name: str) -> float:
    """Probability that `name` is true, from its assigned value and confidence."""
    value = ev.values[name]
    if value is None:
        return OPEN_PRIOR
    p = ev.confidence.get(name, 1.0)
    return p if value else 1.0 - p


def _base(
    model: PolicyModel, ev: EventValues, names: set[str], execute: bool
) -> tuple[dict[str, bool], dict[str, float], dict[str, tuple[str, ...]]]:
    """(certain values, uncertain P(true), derived actions -> their sources)."""
    tree = model.tree
    certain: dict[str, bool] = {}
    uncertain: dict[str, float] = {}
    derived: dict[str, tuple[str, ...]] = {}
    for name in sorted(names):
        pred = model.by_name[name]
        if pred.kind == "condition":
            p = _p_true(ev, name)
            if p in (0.0, 1.0):
                certain[name] = p == 1.0
            else:
                uncertain[name] = p
            continue
        # An action's value is its own (direct) value OR any descendant's.
        sources = tuple(a for a in (name, *tree.descendants(name)) if a in ev.direct)
        derived[name] = sources
        for source in sources:
            p = _p_true(ev, source) if execute else 0.0
            if p in (0.0, 1.0):
                certain[f"direct:{source}"] = p == 1.0
            else:
                uncertain[f"direct:{source}"] = p
    return certain, uncertain, derived


_KEPT: dict[tuple[object, ...], tuple[tuple[float, bool], list[Formula]]] = {}
MAX_KEPT = 4096
"""Probabilities kept (then forgotten all at once): most events of a deployment repeat a
few patterns of predicate values."""


def _probability(
    rules: list[Formula],
    certain: dict[str, bool],
    uncertain: dict[str, float],
    derived: dict[str, tuple[str, ...]],
    exact_limit: int,
    seed: int,
) -> tuple[float, bool]:
    """(P(all rules hold), exact?), kept by everything it is a function of.

    The formulas by identity (the entry holds them, so an id stays theirs), the values and
    probabilities in order (the sampler draws in that order).
    """
    key = (
        tuple(map(id, rules)),
        tuple(certain.items()),
        tuple(uncertain.items()),
        tuple(derived.items()),
        exact_limit,
        seed,
    )
    kept = _KEPT.get(key)
    if kept is not None:
        return kept[0]
    found = _computed(rules, certain, uncertain, derived, exact_limit, seed)
    if len(_KEPT) >= MAX_KEPT:
        _KEPT.clear()
    _KEPT[key] = (found, rules)
    return found


def _computed(
    rules: list[Formula],
    certain: dict[str, bool],
    uncertain: dict[str, float],
    derived: dict[str, tuple[str, ...]],
    exact_limit: int,
    seed: int,
) -> tuple[float, bool]:
    """(P(all rules hold), exact?), counted over the possible worlds or sampled."""
    names = list(uncertain)
    k = len(names)
    env: dict[str, Column] = dict(certain)
    weights: NDArray[np.float64] | None = None
    exact = k <= exact_limit
    if k:
        if exact:
            rows = np.arange(2**k, dtype=np.int64)
            weights = np.ones(2**k)
            for j, name in enumerate(names):
                column = ((rows >> j) & 1).astype(bool)
                env[name] = column
                p = uncertain[name]
                weights *= np.where(column, p, 1.0 - p)
        else:
            rng = np.random.default_rng(seed)
            for name in names:
                env[name] = rng.random(SAMPLES) < uncertain[name]
    for action, sources in derived.items():
        value: Column = False
        for source in sources:
            value = np.logical_or(value, env[f"direct:{source}"])
        env[action] = value
    holds: Column = True
    for formula in rules:
        holds = np.logical_and(holds, evaluate(formula, env))
    if not k:
        return (1.0 if bool(holds) else 0.0), True
    mask = np.broadcast_to(np.asarray(holds, dtype=bool), (2**k if exact else SAMPLES,))
    if exact:
        assert weights is not None
        return float(np.clip(weights[mask].sum(), 0.0, 1.0)), True
    return float(mask.mean()), False


def safety_probability(
    model: PolicyModel,
    ev: EventValues,
    threshold: float | None = None,
    *,
    exact_limit: int = EXACT_LIMIT,
    seed: int = 0,
) -> SafetyProbability:
    """P(every hard rule of the event's circuits holds), executing and not executing.

    Args:
        model: The policy model.
        ev: The event's values (from :func:`guardagent.policy.event.event_values`).
        threshold: Overrides the policy's threshold.
        exact_limit: Uncertain predicates up to which the count is exact.
        seed: Seed of the sampler (results are reproducible).
    """
    rules = [effective_formula(model.by_id[r]) for r in ev.circuit if model.by_id[r].hard]
    names: set[str] = set()
    for formula in rules:
        names.update(variables(formula))
    results: dict[bool, tuple[float, bool]] = {}
    uncertain_names: set[str] = set()
    for execute in (True, False):
        certain, uncertain, derived = _base(model, ev, names, execute)
        uncertain_names.update(n.removeprefix("direct:") for n in uncertain)
        results[execute] = _probability(rules, certain, uncertain, derived, exact_limit, seed)
    p_exec, exact_exec = results[True]
    p_skip, exact_skip = results[False]
    exact = exact_exec and exact_skip
    return SafetyProbability(
        execute=round(p_exec, 12),
        not_execute=round(p_skip, 12),
        margin=round(p_exec - p_skip, 12),
        threshold=model.threshold if threshold is None else threshold,
        method="exact" if exact else "sampled",
        error_bound=0.0 if exact else EPSILON,
        confidence=1.0 if exact else 1.0 - DELTA,
        samples=0 if exact else SAMPLES,
        uncertain=sorted(uncertain_names),
    )
