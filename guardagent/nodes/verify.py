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
  cannot be verified (an undeclared predicate, a contradicted action tree, nothing assigned),
  which `decide` turns into a fail-closed denial;
- a profile without a policy model passes through unchanged (``{}``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Literal

from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.graph.state import GuardState
from guardagent.nodes.runtime import context_of, profile_of
from guardagent.policy.event import VerificationError
from guardagent.policy.model import (
    PolicyError,
    PolicyModel,
    load_policy,
    policy_digest,
    resolve_policy,
)
from guardagent.policy.recorder import PredicateError, PredicateRecorder
from guardagent.policy.results import PolicyVerdict
from guardagent.policy.verify import verify_event

NOTHING_ASSIGNED = (
    "the program assigned no predicate of the policy model; a policy program must assign "
    "the predicates it reads (assign(name, value))"
)

_models: dict[str, PolicyModel] = {}
_models_lock = threading.Lock()


def needs_verify(profile: Any) -> bool:
    """Whether runs under `profile` go through `verify` (it names a policy model)."""
    return bool(getattr(profile, "policy_model", None))


def policy_fingerprint(profile: Any) -> str:
    """A digest of the policy model file a profile names ("" when none).

    Part of the profile's fingerprint, so programs verified under one policy model are not
    reused under an edited one.
    """
    name = getattr(profile, "policy_model", None)
    if not name:
        return ""
    return policy_digest(resolve_policy(getattr(profile, "root", None), str(name)))


def profile_policy(profile: Any) -> PolicyModel | None:
    """The policy model a profile names (loaded strictly, once per file), or None.

    Raises:
        PolicyError: the named file does not load (the profile is broken: deny loudly).
    """
    name = getattr(profile, "policy_model", None)
    if not name:
        return None
    path = resolve_policy(getattr(profile, "root", None), str(name))
    key = str(path.resolve())
    with _models_lock:
        model = _models.get(key)
    if model is None:
        model = load_policy(path)
        with _models_lock:
            _models[key] = model
    return model


def predicates_of(execution: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run's assignments, re-validated (the sandbox already did; this is cheap)."""
    raw = (execution or {}).get("predicates") or {}
    return dict(PredicateRecorder.from_json(raw))


def verify_execution(
    execution: Mapping[str, Any] | None, model: PolicyModel, *, threshold: float | None = None
) -> dict[str, Any]:
    """The node's update for one execution (pure: no runtime needed; tested directly)."""
    try:
        assignments = predicates_of(execution)
        if not assignments:
            return {"error": NOTHING_ASSIGNED}
        verdict = verify_event(model, assignments, threshold=threshold)
    except (VerificationError, PredicateError) as exc:
        return {"error": f"policy verification failed: {exc}"}
    return {"policy_verdict": verdict}


def verify(state: GuardState, runtime: Runtime[GuardContext]) -> dict[str, Any]:
    """Verify the executed program's assignments against the profile's policy model."""
    profile = profile_of(context_of(runtime))
    try:
        model = profile_policy(profile)
    except PolicyError as exc:
        return {"error": f"the profile's policy model does not load: {exc}"}
    if model is None:
        return {}
    threshold = getattr(profile, "safety_threshold", None)
    return verify_execution(state.get("execution"), model, threshold=threshold)


def after_verify(state: GuardState) -> Literal["remember", "decide"]:
    """A generated program still verifies against the demonstrations before it decides."""
    if state.get("error"):
        return "decide"
    return "remember" if state.get("program_source") == "generated" else "decide"


def decision_parts(
    policy: PolicyVerdict, program_verdict: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The `GuardDecision` fields from a policy verdict (and the program's own, if any).

    The event passes only if the policy allows it and the program, when it also gave a
    verdict, allowed it too; a program's own denial keeps its violations and reason.
    """
    program_denies = program_verdict is not None and not program_verdict["allowed"]
    allowed = policy.allowed and not program_denies
    if not policy.allowed or program_verdict is None:
        violations: Any = policy.violations
        reason = policy.reason
    else:
        violations = program_verdict["violations"]
        reason = str(program_verdict["reason"])
    safety = policy.safety_probability
    return {
        "allowed": allowed,
        "label": 0 if allowed else 1,
        "violations": [] if allowed else violations,
        "reason": reason,
        "rules": policy.rules,
        "safety_probability": None if safety is None else safety.execute,
        "remediation": policy.remediation,
    }
