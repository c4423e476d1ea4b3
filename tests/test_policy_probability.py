"""Safety probability: hand-computed weighted model counts, sampling bound, evaluator vs z3."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import z3
from hypothesis import given, settings

from guardagent.policy.event import event_values
from guardagent.policy.model import load_policy_text
from guardagent.policy.probability import EPSILON, evaluate, safety_probability
from guardagent.policy.solver import to_z3
from guardagent.policy.verify import verify_event
from tests.test_policy_grammar import NAMES, formulas

POLICY = load_policy_text(
    """
format: guardagent-policy/1
name: prob
version: "1"
threshold: 0.5
predicates:
  - {name: a, kind: action}
  - {name: b, kind: action}
  - {name: c1, kind: condition}
  - {name: c2, kind: condition}
  - {name: c3, kind: condition, probability: 0.9}
rules:
  - {id: r1, logic: c1 IMPLIES NOT a}
  - {id: r2, logic: a AND NOT c1 IMPLIES c2}
  - {id: r3, logic: c3 IMPLIES NOT b}
  - {id: soft, logic: a IMPLIES c3, hard: false}
""",
    "prob.yaml",
)


def p(value, probability=None):
    return {"value": value, "probability": probability}


def prob(assigned, **kw):
    return safety_probability(POLICY, event_values(POLICY, assigned), **kw)


def test_independent_uncertain_conditions_multiply():
    # r1 holds iff c1 is false (0.8); r2 holds iff c2 is true (0.7), given c1 false.
    result = prob({"a": True, "c1": p(False, 0.8), "c2": p(True, 0.7)})
    assert result.execute == pytest.approx(0.8 * 0.7)
    assert result.not_execute == 1.0  # without a, both rules hold whatever c1, c2
    assert result.margin == pytest.approx(0.56 - 1.0)
    assert result.method == "exact" and result.error_bound == 0.0
    assert result.uncertain == ["c1", "c2"]


def test_an_open_condition_counts_one_half():
    assert prob({"a": True, "c1": None, "c2": True}).execute == pytest.approx(0.5)


def test_shared_predicates_are_counted_jointly_not_per_rule():
    # P(c1)=0.3 (assigned true with 0.3 confidence... i.e. false with 0.7): r1 needs c1 false;
    # r2 then needs c2. P = P(!c1) * P(c2) = 0.7 * 0.6; per-rule products would say
    # P(r1) * P(r2) = 0.7 * (1 - 0.7 * 0.4) = 0.504.
    result = prob({"a": True, "c1": p(False, 0.7), "c2": p(True, 0.6)})
    assert result.execute == pytest.approx(0.42)


def test_an_uncertain_action_weighs_both_ways():
    # a is true with 0.6; c1 true for sure: r1 holds only when a is false.
    assert prob({"a": p(True, 0.6), "c1": True, "c2": True}).execute == pytest.approx(0.4)


def test_the_policy_default_probability_applies_when_the_program_gives_none():
    # c3 declares probability 0.9 (a calibrated model answer): assigned false without a
    # probability, it is false with 0.9, and r3 holds with 0.9.
    assert prob({"b": True, "c3": False}).execute == pytest.approx(0.9)
    assert prob({"b": True, "c3": p(False, 1.0)}).execute == 1.0  # the program's own wins
    assert event_values(POLICY, {"c3": True}).confidence["c3"] == 0.9
    assert event_values(POLICY, {"c1": True}).confidence["c1"] == 1.0  # no default: certain


def test_soft_rules_are_not_counted():
    assert prob({"a": True, "c1": False, "c2": True, "c3": False}).execute == 1.0


def test_below_the_threshold_denies_even_when_every_rule_holds_as_assigned():
    verdict = verify_event(POLICY, {"a": True, "c1": p(False, 0.7), "c2": p(True, 0.6)})
    assert all(r.status in ("holds", "not_applicable") for r in verdict.rules if r.hard)
    assert not verdict.allowed
    assert verdict.safety_probability.execute == pytest.approx(0.42)
    assert "0.420, below the threshold 0.5" in verdict.reason
    assert verify_event(
        POLICY, {"a": True, "c1": p(False, 0.7), "c2": p(True, 0.6)}, threshold=0.4
    ).allowed


def _many(k):
    preds = "".join(f"  - {{name: c{i}, kind: condition}}\n" for i in range(k))
    rules = "".join(f"  - {{id: r{i}, logic: c{i} IMPLIES NOT a}}\n" for i in range(k))
    return load_policy_text(
        "format: guardagent-policy/1\nname: many\nversion: '1'\n"
        "predicates:\n  - {name: a, kind: action}\n" + preds + "rules:\n" + rules,
        "many.yaml",
    )


def test_sampling_above_the_exact_limit_stays_within_its_stated_bound():
    model = _many(24)
    assigned = {"a": True, **{f"c{i}": p(False, 0.99) for i in range(24)}}
    result = safety_probability(model, event_values(model, assigned))
    assert result.method == "sampled" and result.samples > 18000
    assert result.error_bound == EPSILON and result.confidence == 0.95
    assert abs(result.execute - 0.99**24) <= result.error_bound


def test_exact_and_sampled_agree_on_the_same_count():
    model = _many(12)
    assigned = {"a": True, **{f"c{i}": p(False, 0.95) for i in range(12)}}
    ev = event_values(model, assigned)
    exact = safety_probability(model, ev)
    sampled = safety_probability(model, ev, exact_limit=4)
    assert exact.method == "exact" and exact.execute == pytest.approx(0.95**12)
    assert sampled.method == "sampled"
    assert abs(sampled.execute - exact.execute) <= sampled.error_bound


@settings(max_examples=100, deadline=None)
@given(formulas())
def test_the_vectorised_evaluator_agrees_with_z3_on_every_completion(formula):
    rows = list(itertools.product((False, True), repeat=len(NAMES)))
    env = {n: np.array([r[i] for r in rows]) for i, n in enumerate(NAMES)}
    values = np.broadcast_to(np.asarray(evaluate(formula, env)), (len(rows),))
    bools = {n: z3.Bool(n) for n in NAMES}
    term = to_z3(formula, bools)
    for row, value in zip(rows, values, strict=True):
        pairs = [(bools[n], z3.BoolVal(v)) for n, v in zip(NAMES, row, strict=True)]
        assert z3.is_true(z3.simplify(z3.substitute(term, *pairs))) == bool(value)


def test_threshold_comes_from_the_policy():
    assert prob({"a": True, "c1": False, "c2": True}).threshold == 0.5
    assert math.isclose(prob({"a": True, "c1": False, "c2": True}, threshold=0.9).threshold, 0.9)
