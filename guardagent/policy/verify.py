"""Verify one event against a policy model: per-rule verdicts from z3, then the decision.

Given the predicates a guard program assigned, every rule of the event's circuits (the rules
of its actions, their ancestors, and the rules attached to no action) is decided by z3 with
the assigned values as assumptions and the unassigned ones open:

- ``holds``: the rule holds under every completion of the open predicates;
- ``violated``: it fails under every completion;
- ``possibly_violated``: it fails under some completion; the result names the open
  predicates whose values would settle it and one violating completion;
- ``not_applicable``: the rule is in no circuit of the event.

A hard rule that is violated or possibly violated denies (fail closed). Otherwise the safety
probability is compared with the policy's threshold. A denial comes with the remedies the
optimiser computed and the rules' remediation texts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from guardagent.policy.event import EventValues, VerificationError, event_values
from guardagent.policy.model import PolicyModel, Rule
from guardagent.policy.probability import safety_probability
from guardagent.policy.remediation import remediate
from guardagent.policy.results import PolicyVerdict, RuleResult
from guardagent.policy.solver import compiled

__all__ = ["VerificationError", "verify_event", "verify_values"]


def _values_text(values: Mapping[str, bool]) -> str:
    return ", ".join(f"{n} = {str(v).lower()}" for n, v in values.items())


def _explain(
    rule: Rule,
    status: str,
    deciding: dict[str, bool],
    open_names: list[str],
    witness: dict[str, bool],
) -> str:
    text = (rule.explanation or rule.policy or rule.logic).rstrip(". ")
    if status == "violated":
        because = f" (because {_values_text(deciding)})" if deciding else " (it can never hold)"
        return f"Violates {rule.id}: {text}{because}."
    if status == "possibly_violated":
        verb = "is" if len(open_names) == 1 else "are"
        return (
            f"May violate {rule.id}: {text}; not settled until {', '.join(open_names)} "
            f"{verb} known (violated if {_values_text(witness)})."
        )
    return ""


def _rule_result(model: PolicyModel, rule: Rule, ev: EventValues) -> RuleResult:
    comp = compiled(model)
    fixed = {n: v for n in comp.names_of(rule) if (v := ev.values.get(n)) is not None}
    check = comp.rule_solver(rule.id).check(fixed)
    status = {"holds": "holds", "violated": "violated", "open": "possibly_violated"}[check.outcome]
    open_names = list(check.witness) if check.outcome == "open" else []
    deciding = check.deciding if check.outcome != "open" else fixed
    denies = status != "holds"
    return RuleResult(
        id=rule.id,
        status="holds"
        if status == "holds"
        else ("violated" if status == "violated" else "possibly_violated"),
        hard=rule.hard,
        logic=rule.logic,
        policy=rule.policy,
        deciding=deciding,
        open=open_names,
        witness=check.witness,
        explanation=_explain(rule, status, deciding, open_names, check.witness),
        remediation=rule.remediation if denies else "",
        risk_types=list(rule.risk_types),
        source=rule.source,
    )


def _not_applicable(rule: Rule) -> RuleResult:
    """A rule outside the event's circuits (built unvalidated: every field is ours)."""
    return RuleResult.model_construct(
        id=rule.id,
        status="not_applicable",
        hard=rule.hard,
        logic=rule.logic,
        policy=rule.policy,
        deciding={},
        open=[],
        witness={},
        explanation="",
        remediation="",
        risk_types=list(rule.risk_types),
        source=rule.source,
    )


def _violations(
    model: PolicyModel, ev: EventValues, denying: list[RuleResult]
) -> list[str] | dict[str, list[str]]:
    if model.violations == "rules":
        return list(dict.fromkeys(r.policy or r.id for r in denying))
    tree = model.tree
    grouped: dict[str, set[str]] = {}
    for result in denying:
        covered = set(model.rule_actions(model.by_id[result.id]))
        for action in ev.direct:
            target = model.by_name[action].target
            if target is None:
                continue
            if action in covered or covered.intersection(tree.ancestors(action)):
                group, item = target.split(".", 1)
                grouped.setdefault(group, set()).add(item)
    return {g: sorted(items) for g, items in sorted(grouped.items())}


def verify_values(
    model: PolicyModel,
    ev: EventValues,
    *,
    threshold: float | None = None,
    remediation: bool = True,
    probability: bool = True,
) -> PolicyVerdict:
    """:func:`verify_event` on values already read with `event_values`."""
    in_circuit = set(ev.circuit)
    results = [
        _rule_result(model, rule, ev) if rule.id in in_circuit else _not_applicable(rule)
        for rule in model.rules
    ]
    denying = [r for r in results if r.denies]
    safety = safety_probability(model, ev, threshold) if probability else None
    used_open = sorted({n for r in results for n in r.open})
    allowed = not denying and not (safety is not None and safety.below_threshold)
    if denying:
        ids = ", ".join(r.id for r in denying)
        reason = f"denied by {ids}: " + "; ".join(
            r.explanation.removeprefix(f"Violates {r.id}: ").removeprefix(f"May violate {r.id}: ")
            for r in denying
        )
    elif not allowed and safety is not None:
        reason = (
            f"denied: the probability that every hard rule holds if executed is "
            f"{safety.execute:.3f}, below the threshold {safety.threshold} (uncertain: "
            f"{', '.join(safety.uncertain)})"
        )
    else:
        applicable = sum(1 for r in results if r.status != "not_applicable")
        reason = (
            f"every rule of the matched circuits holds ({applicable} rule(s) over "
            f"{', '.join(ev.matched) or 'no action'})"
        )
    fix = None
    if denying and remediation:
        fix = remediate(model, ev, denying=[r.id for r in denying])
    return PolicyVerdict(
        policy=f"{model.name}@{model.version}",
        allowed=allowed,
        violations=_violations(model, ev, denying)
        if denying
        else ({} if model.violations == "targets" else []),
        reason=reason,
        matched_actions=list(ev.matched),
        open_predicates=used_open,
        rules=results,
        safety_probability=safety,
        remediation=fix,
    )


def verify_event(
    model: PolicyModel,
    assignments: Mapping[str, Any],
    *,
    threshold: float | None = None,
    remediation: bool = True,
    probability: bool = True,
    expected: Iterable[str] | None = None,
) -> PolicyVerdict:
    """Verify one event's predicate assignments against a policy model.

    Args:
        model: The policy model (loaded strictly: every predicate declared).
        assignments: What the guard program assigned: ``{name: {"value": bool | None,
            "probability": float | None}}`` (the recorder's JSON), or ``{name: bool | None}``.
        threshold: Safety-probability threshold; default the policy's.
        remediation: Compute remedies for a denial.
        probability: Compute the safety probability.
        expected: Predicates the caller's assigner always assigns; one missing from
            `assignments` is open, an action included (the rule cannot be settled, so it
            denies), not "action not taken". Default: the policy's trace-bound predicates
            (``assign: {trace: ...}``), which the host assigns on every trace call.

    Returns:
        The decision parts: allowed, violations, reason, per-rule results, safety
        probability and remediation.

    Raises:
        VerificationError: assignments the policy cannot take (an undeclared predicate, an
            action assigned false under a descendant assigned true). Callers deny.
    """
    wanted = model.trace_bindings if expected is None else expected
    missing = {name: None for name in wanted if name not in assignments}
    return verify_values(
        model,
        event_values(model, {**assignments, **missing}),
        threshold=threshold,
        remediation=remediation,
        probability=probability,
    )
