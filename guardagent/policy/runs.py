"""A guard program's run under a policy model: verify its assignments, build the decision.

The pieces the graph's `verify` node, `decide` and program verification share, kept free of
the graph so that verification (which the graph's nodes import) can use them too:

- :func:`profile_policy` / :func:`needs_verify`: the policy model a profile names;
- :func:`verify_execution`: a run's assignments against the model, as the node's update;
- :func:`decision_parts`: the `GuardDecision` fields from a policy verdict;
- :func:`execution_verdict`: what a run decides with its policy model applied (for code
  that judges programs by their verdicts).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from guardagent.policy.event import VerificationError
from guardagent.policy.model import (
    PolicyModel,
    guarding_model,
    load_policy,
    policy_digest,
    resolve_policy,
)
from guardagent.policy.recorder import PredicateError, PredicateRecorder
from guardagent.policy.results import PolicyVerdict
from guardagent.tools.verdict import Verdict

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
    """The policy model a profile names (loaded strictly, once per version of the file), or None.

    Only the rules that guard are kept (:func:`guarding_model`): rejected rules never, and
    under `approved_only` (the policy's own setting, or the profile's ``approved_only``
    attribute) only rules a human approved or edited.

    Raises:
        PolicyError: the named file does not load (the profile is broken: deny loudly).
    """
    name = getattr(profile, "policy_model", None)
    if not name:
        return None
    path = resolve_policy(getattr(profile, "root", None), str(name))
    approved_only = bool(getattr(profile, "approved_only", False))
    stat = path.stat()  # an edited file is a new policy: cached by its state, not its path
    # the file's identity (device, inode: whatever a link points to) and version; no
    # resolve(), which stats every folder of the path on every call
    key = f"{path}|{stat.st_dev}|{stat.st_ino}|{stat.st_size}|{stat.st_mtime_ns}|{approved_only}"
    with _models_lock:
        model = _models.get(key)
    if model is None:
        model = guarding_model(load_policy(path), approved_only=approved_only)
        with _models_lock:
            _models[key] = model
    return model


def predicates_of(execution: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run's assignments, re-validated (the sandbox already did; this is cheap)."""
    raw = (execution or {}).get("predicates") or {}
    return dict(PredicateRecorder.from_json(raw))


def verify_execution(
    execution: Mapping[str, Any] | None,
    model: PolicyModel,
    *,
    threshold: float | None = None,
    trace: Mapping[str, bool | None] | None = None,
) -> dict[str, Any]:
    """The node's update for one execution (pure: no runtime needed; tested directly).

    `trace` holds the predicates the host assigned from the conversation (the policy's
    ``assign: {trace: ...}`` ones); a program that assigns one of them too is an error.
    A trace-bound predicate is never taken from a program (written by a model from an
    attacker-influenced event): without the host's reading of a trace (the served graph) it
    stays open, so a rule that needs it denies.
    """
    try:
        assignments = predicates_of(execution)
        for name, value in (trace or {}).items():
            if name in assignments:
                return {"error": f"the program assigned {name!r}, which the trace assigns"}
            assignments[name] = {"value": value, "probability": None}
        for name in model.trace_bindings.keys() - (trace or {}).keys():
            assignments.pop(name, None)  # open: only the host's trace reading assigns it
        if not assignments:
            return {"error": NOTHING_ASSIGNED}
        from guardagent.policy.verify import verify_event  # z3: only when a policy decides

        verdict = verify_event(model, assignments, threshold=threshold)
    except (VerificationError, PredicateError) as exc:
        return {"error": f"policy verification failed: {exc}"}
    return {"policy_verdict": verdict}


def execution_verdict(
    execution: Mapping[str, Any], model: PolicyModel | None, *, threshold: float | None = None
) -> tuple[Verdict | None, str | None]:
    """What one run decides once its policy model is applied: (verdict, None) or (None, error).

    For code that judges programs by their verdicts (verification on demonstrations and
    counterfactuals): without a policy model it is the run's own verdict; with one, the
    verdict `decide` would build from the run (policy and program combined). `threshold` is
    the profile's safety threshold, as the `verify` node applies it (None: the model's).
    """
    if not execution.get("ok"):
        return None, str(execution.get("error"))
    own = execution.get("verdict")
    if model is None:
        return (own, None) if own is not None else (None, "the program gave no verdict")
    update = verify_execution(execution, model, threshold=threshold)
    if "error" in update:
        return None, str(update["error"])
    parts = decision_parts(update["policy_verdict"], own)
    return Verdict(
        allowed=parts["allowed"], violations=parts["violations"], reason=parts["reason"]
    ), None


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
