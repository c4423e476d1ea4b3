"""Policy models (ShieldAgent-style): predicates, rules and an action tree, verified with z3.

- :mod:`.model`: the YAML file format (load, dump, positions in errors);
- :mod:`.grammar` / :mod:`.formula`: rule logic (`NOT AND OR IMPLIES IFF`) and its syntax tree;
- :mod:`.solver`: formulas as z3 terms, per-rule solvers;
- :mod:`.check`: `policy check` (satisfiability, forbidden actions, conflicts, redundancy,
  undefined / unused / interchangeable predicates);
- :mod:`.recorder`: the `assign(name, value, probability)` call of guard programs;
- :mod:`.event`, :mod:`.verify`, :mod:`.probability`, :mod:`.remediation`: deciding one event;
- :mod:`.report`, :mod:`.cli`: output and the `guardagent policy` command group;
- :mod:`.shipped`, :mod:`.parity`: the shipped profiles as policy models.
"""

from guardagent.policy.check import CheckReport, Finding, check_model, check_policy
from guardagent.policy.event import VerificationError, event_values
from guardagent.policy.model import (
    PolicyError,
    PolicyModel,
    dump_policy,
    load_policy,
    load_policy_text,
)
from guardagent.policy.recorder import ASSIGN_NAMES, Assignment, PredicateError, PredicateRecorder
from guardagent.policy.results import (
    PolicyVerdict,
    Remediation,
    RuleResult,
    SafetyProbability,
)
from guardagent.policy.verify import verify_event

__all__ = [
    "ASSIGN_NAMES",
    "Assignment",
    "CheckReport",
    "Finding",
    "PolicyError",
    "PolicyModel",
    "PolicyVerdict",
    "PredicateError",
    "PredicateRecorder",
    "Remediation",
    "RuleResult",
    "SafetyProbability",
    "VerificationError",
    "check_model",
    "check_policy",
    "dump_policy",
    "event_values",
    "load_policy",
    "load_policy_text",
    "verify_event",
]
