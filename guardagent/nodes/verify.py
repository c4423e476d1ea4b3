"""verify: check the executed program's predicate assignments against the profile's policy model.

Runs after a clean `execute` when the profile names a policy model. The program assigned
predicates through `assign(...)`; this node decides every rule of the event's circuits with
z3 (:func:`guardagent.policy.verify.verify_event`) and hands `decide` the parts of the
decision: allowed, violations, reason, per-rule results, safety probability, remediation.

Contract:

- input: ``state["execution"]["predicates"]`` (``{name: {"value": bool | None,
  "probability": float | None}}``, re-validated by the sandbox) and the profile's policy
  model (``profile.policy_model``, a path relative to the profile or a shipped name);
- output: ``{"policy_verdict": PolicyVerdict}``, or ``{"error": ...}`` when the assignments
  cannot be verified (an undeclared predicate, a contradicted action tree, nothing assigned)
  or the policy model does not load, which `decide` turns into a fail-closed denial;
- without a policy model, the rules derived from the guard request
  (:mod:`guardagent.counterfactuals.derived`) verify a program that assigned predicates;
- a profile with neither passes through unchanged (``{}``).
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.counterfactuals.derived import derived_policy
from guardagent.nodes.runtime import context_of, profile_of
from guardagent.nodes.state import GuardState
from guardagent.policy.model import PolicyError
from guardagent.policy.runs import profile_policy, verify_execution


def verify(state: GuardState, runtime: Runtime[GuardContext]) -> dict[str, Any]:
    """Verify the executed program's assignments against the profile's policy model."""
    profile = profile_of(context_of(runtime))
    try:
        model = profile_policy(profile) or derived_policy(profile)
    except PolicyError as exc:
        return {"error": f"the profile's policy model does not load: {exc}"}
    if model is None:
        return {}
    threshold = getattr(profile, "safety_threshold", None)
    trace = context_of(runtime).trace_assignments
    return verify_execution(state.get("execution"), model, threshold=threshold, trace=trace)


def after_verify(state: GuardState) -> Literal["remember", "decide"]:
    """A generated program still verifies against the demonstrations before it decides."""
    if state.get("error"):
        return "decide"
    return "remember" if state.get("program_source") == "generated" else "decide"
