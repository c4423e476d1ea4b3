"""The caches that make trace decisions cheap are keyed by all their inputs and hand out copies.

A kept z3 check (per rule and assignment) and a kept argument reading (per string, region and
year) must give what a fresh computation gives, whatever was asked before them, and nothing a
caller does to a result may change the next caller's.
"""

from __future__ import annotations

import itertools

import pytest

from guardagent.policy import solver
from guardagent.policy.model import load_policy_text
from guardagent.policy.solver import compiled
from guardagent.trace.found import values
from guardagent.trace.found.values import read_argument

POLICY = load_policy_text(
    """
format: guardagent-policy/1
name: kept
version: "1"
predicates:
  - {name: publish, kind: action}
  - {name: private, kind: condition}
  - {name: consent, kind: condition}
rules:
  - {id: consent, logic: private AND NOT consent IMPLIES NOT publish}
""",
    "kept.yaml",
)


def _fresh(values_: dict[str, bool]) -> str:
    """The outcome from the rule's formula itself, no solver."""
    if all(n in values_ for n in ("publish", "private", "consent")):
        holds = not (values_["private"] and not values_["consent"]) or not values_["publish"]
        return "holds" if holds else "violated"
    return ""


def test_kept_rule_checks_match_every_assignment_and_are_copies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(solver, "MAX_KEPT_CHECKS", 3)  # the table starts over several times
    rule = compiled(POLICY).rule_solver("consent")
    names = ("publish", "private", "consent")
    for _ in range(2):  # the second round reads kept checks (or recomputes after a reset)
        for bits in itertools.product([False, True], repeat=3):
            assignment = dict(zip(names, bits, strict=True))
            check = rule.check(assignment)
            assert check.outcome == _fresh(assignment)
            check.deciding["publish"] = not assignment["publish"]  # a caller's edit...
            again = rule.check(assignment)
            assert again.deciding.get("publish") in (
                None,
                assignment["publish"],
            )  # ...stays its own
    assert len(rule._kept) <= 3
    open_check = rule.check({"publish": True, "private": True})
    assert open_check.outcome == "open" and open_check.witness == {"consent": False}


def test_kept_argument_readings_follow_year_and_region() -> None:
    values._cached_string.cache_clear()
    assert read_argument("14 may", year=2024)[0][0].keys == ("date:2024-05-14",)
    assert read_argument("14 may", year=2025)[0][0].keys == ("date:2025-05-14",)
    swiss = read_argument("044 668 18 00", region="CH")
    assert [v.kind for v, _ in swiss] == ["phone"]
    assert "phone" not in [v.kind for v, _ in read_argument("044 668 18 00", region=None)]
    swiss.clear()  # the caller's list is its own
    assert [v.kind for v, _ in read_argument("044 668 18 00", region="CH")] == ["phone"]


def test_long_arguments_are_read_but_not_kept() -> None:
    values._cached_string.cache_clear()
    long = "pay " + "x" * values.MAX_CACHED_CHARS + " to bob@example.com"
    found = read_argument(long)
    assert ("email:bob@example.com",) in [v.keys for v, _ in found]
    assert values._cached_string.cache_info().currsize == 0
