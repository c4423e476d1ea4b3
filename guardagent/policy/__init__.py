"""Policy models (ShieldAgent-style): predicates, rules and an action tree, verified with z3.

- :mod:`.model`: the YAML file format (load, dump, positions in errors);
- :mod:`.grammar` / :mod:`.formula`: rule logic (`NOT AND OR IMPLIES IFF`) and its syntax tree;
- :mod:`.solver`: formulas as z3 terms, per-rule solvers;
- :mod:`.check`: `policy check` (satisfiability, forbidden actions, conflicts, redundancy,
  undefined / unused / interchangeable predicates);
- :mod:`.recorder`: the `assign(name, value, probability)` call of guard programs;
- :mod:`.event`, :mod:`.verify`, :mod:`.probability`, :mod:`.remediation`: deciding one event;
- :mod:`.report`: output of checks and verdicts;
- :mod:`.shipped`, :mod:`.parity`: the shipped profiles as policy models.

Writing policy models (documents, extraction, refinement, review, rules derived from a guard
request, the `guardagent policy` commands) is :mod:`guardagent.authoring`.
"""

from __future__ import annotations

import importlib
from typing import Any

# Exports resolve on first use, so importing `guardagent.policy.recorder` (the sandbox
# binds `assign` from it, in the zygote too) does not load z3, lark or numpy.
_EXPORTS = {
    "CheckReport": "check",
    "Finding": "check",
    "check_model": "check",
    "check_policy": "check",
    "VerificationError": "event",
    "event_values": "event",
    "PolicyError": "model",
    "PolicyModel": "model",
    "dump_policy": "model",
    "load_policy": "model",
    "load_policy_text": "model",
    "ASSIGN_NAMES": "recorder",
    "Assignment": "recorder",
    "PredicateError": "recorder",
    "PredicateRecorder": "recorder",
    "PolicyVerdict": "results",
    "Remediation": "results",
    "RuleResult": "results",
    "SafetyProbability": "results",
    "verify_event": "verify",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'guardagent.policy' has no attribute {name!r}")
    return getattr(importlib.import_module(f"guardagent.policy.{module}"), name)
