"""The program path and the policy path, decided from the same reader output.

The shipped profiles guard with programs that compare reader facts with a literal table
(`check_access`, `check_rules`, `check_tool_rules`). Their policy models must decide the
same events the same way. Both paths here start from one call of the readers per event, so
a difference can only come from the decision logic, never from reading the event twice (the
readers are the same in both paths and are measured elsewhere).

An event a reader cannot read (`UnreadableEvidence`) is denied by both paths before any
decision logic runs; it is reported as such and compared trivially.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from guardagent.policy.model import PolicyModel, load_policy
from guardagent.policy.results import PolicyVerdict
from guardagent.policy.shipped import (
    eicu_ac_predicates,
    mind2web_sc_predicates,
    tool_calls_predicates,
)
from guardagent.policy.verify import verify_event
from guardagent.profiles.verification import same_details
from guardagent.readers.ehragent import ehr_accessed_columns, parse_identity
from guardagent.readers.evidence import UnreadableEvidence
from guardagent.readers.seeact import parse_task, seeact_final_action, web_action_category
from guardagent.readers.toolcall import parse_tool_calls
from guardagent.readers.user_facts import parse_user_info
from guardagent.tools.rules import check_access, check_rules, check_tool_rules

Violations = list[str] | dict[str, list[str]]


@dataclass(frozen=True)
class PathDecision:
    """A label (1 = denied) and what was violated, as a decision would carry them."""

    label: int
    violations: Violations


@dataclass
class ParityCase:
    """One event decided both ways."""

    id: str
    program: PathDecision
    policy: PathDecision
    unreadable: str | None = None
    verdict: PolicyVerdict | None = field(default=None, repr=False)

    @property
    def same(self) -> bool:
        """Same label and same violations (as sets, the way CCA compares them)."""
        return self.program.label == self.policy.label and same_details(
            self.program.violations, self.policy.violations
        )


@lru_cache(maxsize=8)
def _policy(name: str) -> PolicyModel:
    return load_policy(name)


@lru_cache(maxsize=8)
def _table(profile: str, name: str) -> Any:
    from guardagent.profiles import load_profile

    return load_profile(profile).policy(name)


def _decide(
    case_id: str, read: Callable[[], tuple[PathDecision, dict[str, bool | None]]], policy: str
) -> ParityCase:
    try:
        program, predicates = read()
    except UnreadableEvidence as exc:
        denied = PathDecision(1, [])
        return ParityCase(case_id, denied, denied, unreadable=str(exc))
    verdict = verify_event(_policy(policy), predicates)
    policy_decision = PathDecision(0 if verdict.allowed else 1, verdict.violations)
    return ParityCase(case_id, program, policy_decision, verdict=verdict)


def eicu_ac_case(case_id: str, agent_input: str, agent_output: str) -> ParityCase:
    """One EHRAgent event through both paths."""

    def read() -> tuple[PathDecision, dict[str, bool | None]]:
        role = parse_identity(agent_input)
        accessed = ehr_accessed_columns(agent_output)
        permissions = _table("eicu-ac", "PERMISSIONS")
        predicates = eicu_ac_predicates(role, accessed)
        if role not in permissions:  # the program denies everything accessed
            return PathDecision(1, accessed), predicates
        blocked = check_access(accessed, permissions[role])
        return PathDecision(1 if blocked else 0, blocked), predicates

    return _decide(case_id, read, "eicu-ac")


def mind2web_sc_case(case_id: str, agent_input: str, agent_output: str) -> ParityCase:
    """One SeeAct event through both paths."""

    def read() -> tuple[PathDecision, dict[str, bool | None]]:
        user = parse_user_info(agent_input)
        category = web_action_category(parse_task(agent_input), seeact_final_action(agent_output))
        violated = check_rules(user, category, _table("mind2web-sc", "RULES"))
        return PathDecision(1 if violated else 0, violated), mind2web_sc_predicates(category, user)

    return _decide(case_id, read, "mind2web-sc")


def tool_calls_case(case_id: str, agent_input: str, agent_output: str) -> ParityCase:
    """One tool-call event through both paths."""

    def read() -> tuple[PathDecision, dict[str, bool | None]]:
        user = parse_user_info(agent_input)
        calls = parse_tool_calls(agent_output)
        rules = _table("tool-calls", "RULES")
        violated: list[str] = []
        for call in calls:  # as the profile's program: every call, texts once, in order
            violated += [t for t in check_tool_rules(call, user, rules) if t not in violated]
        return PathDecision(1 if violated else 0, violated), tool_calls_predicates(calls, user)

    return _decide(case_id, read, "tool-calls")


CASES: dict[str, Callable[[str, str, str], ParityCase]] = {
    "eicu-ac": eicu_ac_case,
    "mind2web-sc": mind2web_sc_case,
    "tool-calls": tool_calls_case,
}


def parity(profile: str, events: Iterable[tuple[str, str, str]]) -> list[ParityCase]:
    """Every `(id, agent_input, agent_output)` event of `profile` through both paths."""
    decide = CASES[profile]
    return [
        decide(case_id, agent_input, agent_output) for case_id, agent_input, agent_output in events
    ]
