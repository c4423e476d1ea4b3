"""The shipped profiles as policy models: same decisions as their programs, from the same facts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.integrations.events import tool_call_event
from guardagent.policy.model import load_policy
from guardagent.policy.parity import parity, tool_calls_case
from guardagent.policy.shipped import (
    WEB_ACTIONS,
    eicu_ac_predicates,
    mind2web_sc_predicates,
    tool_calls_predicates,
)
from guardagent.policy.verify import verify_event
from guardagent.profiles import load_profile
from guardagent.readers.eicu_schema import EICU_COLUMNS
from guardagent.readers.evidence import UnreadableEvidence
from guardagent.tools.rules import check_rules, check_tool_rules

EICU = load_policy("eicu-ac")
WEB = load_policy("mind2web-sc")
TOOLS = load_policy("tool-calls")


def test_eicu_policy_grants_exactly_the_programs_permission_table():
    permissions = load_profile("eicu-ac").policy("PERMISSIONS")
    checked = 0
    for role in [*permissions, "janitor"]:
        for table, cols in EICU_COLUMNS.items():
            for col in sorted(cols):
                verdict = verify_event(
                    EICU, eicu_ac_predicates(role, {table: [col]}), remediation=False
                )
                may = col in permissions.get(role, {}).get(table, [])
                assert verdict.allowed == may, (role, table, col, verdict.reason)
                if not may:
                    assert verdict.violations == {table: [col]}
                checked += 1
    assert checked == 4 * sum(len(c) for c in EICU_COLUMNS.values())


def test_eicu_violations_list_every_inaccessible_column_by_table():
    verdict = verify_event(
        EICU,
        eicu_ac_predicates(
            "nursing",
            {
                "diagnosis": ["diagnosisname", "icd9code"],
                "lab": ["labresult", "labid"],
                "patient": ["age"],
            },
        ),
    )
    assert verdict.violations == {"diagnosis": ["diagnosisname", "icd9code"], "lab": ["labid"]}
    assert {r.id for r in verdict.denying()} == {"table-diagnosis", "no-row-ids"}
    remedy = verdict.remediation.remedies[0]
    assert {c.predicate for c in remedy.changes} == {
        "reads_diagnosis_diagnosisname",
        "reads_diagnosis_icd9code",
        "reads_lab_labid",
    }


def test_eicu_column_outside_the_policy_is_unreadable():
    with pytest.raises(UnreadableEvidence, match="column_outside_policy"):
        eicu_ac_predicates("physician", {"lab": ["labcolour"]})


facts = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 40),
    st.floats(allow_nan=True),
    st.sampled_from(["yes", "true", "admin", "alcohol", "", "17"]),
)


def users(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(keys), facts, max_size=len(keys))


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([*WEB_ACTIONS, "other", "HOTEL"]),
    users(["age", "domestic", "dr_license", "vaccine", "membership"]),
)
def test_mind2web_policy_decides_like_the_rule_table(category, user):
    rules = load_profile("mind2web-sc").policy("RULES")
    program = check_rules(user, category, rules)
    verdict = verify_event(WEB, mind2web_sc_predicates(category, user))
    assert verdict.allowed == (not program)
    assert verdict.violations == program


calls = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(
                ["transfer_funds", "delete_file", "place_order", "lookup", " Delete_File "]
            ),
            "args": st.dictionaries(
                st.sampled_from(["amount", "category", "to"]), facts, max_size=3
            ),
        }
    ),
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(calls, users(["verified", "role", "age"]))
def test_tool_policy_decides_like_the_rule_table_and_always_offers_a_remedy(pending, user):
    rules = load_profile("tool-calls").policy("RULES")
    program: list[str] = []
    for call in pending:  # as the profile's program: every call, each text once
        program += [t for t in check_tool_rules(call, user, rules) if t not in program]
    verdict = verify_event(TOOLS, tool_calls_predicates(pending, user))
    assert verdict.allowed == (not program)
    assert sorted(verdict.violations) == sorted(program)
    if not verdict.allowed:  # every denial of the tool-call profile comes with a remedy
        assert verdict.remediation.feasible and verdict.remediation.remedies
        assert verdict.remediation.texts


def test_tool_call_events_through_both_paths():
    events = [
        tool_call_event(
            "transfer_funds", {"amount": 5000, "to": "acct-9"}, [], {"verified": False}
        ),
        tool_call_event("transfer_funds", {"amount": 50, "to": "acct-9"}, [], {"verified": False}),
        tool_call_event("delete_file", {"path": "/tmp/x"}, [], {"role": "analyst"}),
        tool_call_event("place_order", {"category": "alcohol"}, [], {}),
        tool_call_event("place_order", {"category": "books"}, [], {"age": 19}),
    ]
    results = [tool_calls_case(str(i), *e) for i, e in enumerate(events)]
    assert [r.policy.label for r in results] == [1, 0, 1, 1, 0]
    assert all(r.same for r in results)
    open_age = results[3].verdict
    [rule] = open_age.denying()
    assert rule.status == "possibly_violated" and rule.open == ["user_age_21_or_over"]


@pytest.mark.parametrize("profile", ["eicu-ac", "mind2web-sc"])
def test_shared_benchmarks_get_the_same_labels_and_violations_on_both_paths(profile):
    benchmarks = pytest.importorskip("guardagent.eval.benchmarks")
    try:
        cases = benchmarks.load_benchmark(profile)
    except FileNotFoundError:
        pytest.skip("shared benchmark data not available")
    results = parity(profile, [(c.id, c.agent_input, c.agent_output) for c in cases])
    assert len(results) == len(cases)
    different = [(r.id, r.program, r.policy) for r in results if not r.same]
    assert different == []
    denied = [r for r in results if r.policy.label == 1 and r.verdict is not None]
    assert denied and all(r.verdict.denying() for r in denied)  # each names its rule(s)
    assert all(r.verdict.remediation is not None for r in denied)


def test_tool_call_profile_demonstrations_through_both_paths():
    demos = load_profile("tool-calls").demonstrations
    results = [tool_calls_case(d.id, d.agent_input, d.agent_output) for d in demos]
    assert all(r.same for r in results), [
        (r.id, r.program, r.policy) for r in results if not r.same
    ]
    assert [r.policy.label for r in results] == [d.label for d in demos]
    assert all(r.verdict.remediation.remedies for r in results if r.policy.label == 1)
