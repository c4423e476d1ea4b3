"""Counterfactual verification of policy-model profiles: the oracle decides with z3.

A policy profile's program has no rule table; the expected decision of a counterfactual is
what `verify_event` gives on the trusted predicate function's values over the trusted
readers. These tests check that oracle against the table oracles of the program profiles,
its coverage of every rule, and that it refuses programs the demonstrations alone accept.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import guardagent.profiles as profiles_pkg
from guardagent import GuardAgent
from guardagent.counterfactuals import request_suite
from guardagent.counterfactuals.events import Event
from guardagent.counterfactuals.oracles import oracle_for
from guardagent.counterfactuals.policy_oracle import PolicyOracle
from guardagent.counterfactuals.probes import category_table, comparisons, tool_table
from guardagent.policy.model import load_policy
from guardagent.policy.programs import PROGRAMS, TOOLBOXES
from guardagent.profiles import builtin_profiles, load_profile
from guardagent.profiles.verification import program_problems, same_details, verify_program

BUILTIN = Path(profiles_pkg.__file__).parent
POLICY_PROFILES = ["eicu-ac-policy", "mind2web-sc-policy", "tool-calls-policy"]


def policy_copy(tmp_path: Path, builtin: str, keep: list[str], name: str) -> Path:
    """A copy of a built-in policy profile with only the demonstrations named in `keep`."""
    src, root = BUILTIN / builtin, tmp_path / name
    shutil.copytree(src, root)
    demos = [json.loads(line) for line in (src / "demonstrations.jsonl").read_text().splitlines()]
    kept = [d for d in demos if d["id"] in keep]
    (root / "demonstrations.jsonl").write_text("".join(json.dumps(d) + "\n" for d in kept))
    text = (src / "profile.yaml").read_text().replace(f"name: {builtin}", f"name: {name}")
    (root / "profile.yaml").write_text(text)
    return root


def original_ids(program_profile: str) -> list[str]:
    return [d.id for d in load_profile(program_profile).demonstrations]


# --------------------------------------------------------------------------- shipped profiles


def test_the_policy_profiles_are_built_in_and_ship_the_policy_programs():
    assert {"eicu-ac-policy", "mind2web-sc-policy"} <= set(builtin_profiles())
    for name in ("eicu-ac", "mind2web-sc"):
        profile = load_profile(f"{name}-policy")
        assert profile.policy_model == name
        assert {d.code for d in profile.demonstrations} == {PROGRAMS[name]}
        assert set(TOOLBOXES[name]) <= set(profile.toolbox)


@pytest.mark.parametrize("name", POLICY_PROFILES)
def test_policy_programs_verify_on_counterfactuals_that_violate_every_rule(name):
    profile = load_profile(name)
    assert program_problems(profile.demonstrations[0].code, profile) == []
    suite = request_suite(profile)
    assert suite.kind.startswith("policy model") and suite.problems == ()
    assert {c.label for c in suite.cases} == {0, 1}
    oracle = oracle_for(profile)
    assert isinstance(oracle, PolicyOracle)
    events = [Event(d.agent_input, d.agent_output) for d in profile.demonstrations]
    events += [Event(c.agent_input, c.agent_output) for c in suite.cases]
    violated = {rule for e in events for rule in oracle.decide(e).rules}
    assert violated == set(oracle.rules())
    assert len(oracle.rules()) == len(oracle.model.rules)


def test_policy_profiles_verify_offline_and_decide_from_memory(tmp_path):
    for name in ("eicu-ac-policy", "mind2web-sc-policy"):
        demo = next(d for d in load_profile(name).demonstrations if d.label == 1)
        decision = GuardAgent(name, memory_dir=str(tmp_path / name)).check(
            demo.agent_input, demo.agent_output
        )
        assert decision.program_source == "memory" and decision.error is None
        assert decision.label == 1 and same_details(decision.violations, demo.details)
        assert any(r.status == "violated" for r in decision.rules)


@pytest.mark.parametrize(
    "program, policy",
    [
        ("eicu-ac", "eicu-ac-policy"),
        ("mind2web-sc", "mind2web-sc-policy"),
        ("tool-calls", "tool-calls-policy"),
    ],
)
def test_the_policy_oracle_decides_every_table_counterfactual_as_the_table(program, policy):
    """The table oracle's events (from the program profile) decided by the policy oracle."""
    oracle = oracle_for(load_profile(policy))
    assert isinstance(oracle, PolicyOracle)
    cases = request_suite(load_profile(program)).cases
    assert len(cases) >= 10 and {c.label for c in cases} == {0, 1}
    for case in cases:
        got = oracle.decide(Event(case.agent_input, case.agent_output))
        assert got.label == case.label, case.name
        assert case.label == 0 or same_details(got.details, case.details), case.name


def test_counterfactual_labels_come_from_the_policy_model_not_the_demonstrations():
    cases = {c.name: c for c in request_suite(load_profile("mind2web-sc-policy")).cases}
    minor = cases["headphones-cart: task 'hotel', age 17"]
    assert minor.label == 1 and minor.details == ["User aged under 18 cannot book a hotel"]
    assert cases["headphones-cart: task 'hotel', age 18"].label == 0  # the rule's edge
    assert cases["pickup-truck-rental: dr_license True"].label == 0
    missing = cases["pickup-truck-rental: dr_license missing"]
    assert missing.label == 1  # an open predicate: possibly violated, denied
    ehr = {c.name: c for c in request_suite(load_profile("eicu-ac-policy")).cases}
    assert ehr["administration-cost: identity nursing"].details == {
        "cost": ["cost", "patienthealthsystemstayid"]
    }
    assert ehr["nursing-allergies: identity physician"].label == 0
    unlisted = ehr["administration-ventilation-count: identity unlisted role"]
    assert unlisted.label == 1 and set(unlisted.details) == {"patient", "treatment"}


# --------------------------------------------------------------------------- refusals


AGE_BLIND = """\
user = parse_user_info(agent_input)
category = web_action_category(parse_task(agent_input), seeact_final_action(agent_output))
for name, value in mind2web_sc_predicates(category, user).items():
    if name != "user_age_under_18":
        assign(name, value)
assign("user_age_under_18", False)
"""

UNKNOWN_AS_ADMINISTRATION = """\
role = parse_identity(agent_input)
if role != "physician" and role != "nursing":
    role = "general administration"
for name, value in eicu_ac_predicates(role, ehr_accessed_columns(agent_output)).items():
    assign(name, value)
"""


def test_a_program_right_on_the_demonstrations_fails_the_policy_request(tmp_path):
    from guardagent.policy.runs import profile_policy

    three = load_profile(
        str(policy_copy(tmp_path, "mind2web-sc-policy", original_ids("mind2web-sc"), "m2w-three"))
    )
    assert (
        verify_program(
            AGE_BLIND, three.demos(verified=False), three.tools(), policy=profile_policy(three)
        )
        == []
    )
    problems = program_problems(AGE_BLIND, three)
    assert any("task 'hotel', age 17: label 0, expected 1" in p for p in problems), problems
    ehr = load_profile("eicu-ac-policy")
    assert (
        verify_program(
            UNKNOWN_AS_ADMINISTRATION,
            ehr.demos(verified=False),
            ehr.tools(),
            policy=profile_policy(ehr),
        )
        == []
    )
    problems = program_problems(UNKNOWN_AS_ADMINISTRATION, ehr)
    assert any("identity unlisted role" in p for p in problems), problems


def test_three_demonstrations_suffice_once_every_access_cell_is_probed(tmp_path):
    """Each identity reading its denied columns violates every rule (issue 34's cell probes)."""
    three = load_profile(
        str(policy_copy(tmp_path, "eicu-ac-policy", original_ids("eicu-ac"), "eicu-three-cells"))
    )
    assert request_suite(three).problems == ()
    assert program_problems(PROGRAMS["eicu-ac"], three) == []


def test_rules_that_no_event_violates_leave_the_request_uncovered(tmp_path, monkeypatch):
    import guardagent.counterfactuals.policy_oracle as policy_oracle
    import guardagent.counterfactuals.suite as suite

    monkeypatch.setattr(policy_oracle, "cell_edits", lambda *a: iter(()))  # identity flips only
    import guardagent.profiles.verification as verification

    monkeypatch.setattr(suite, "_SUITES", {})  # not the suite built with the cell probes
    monkeypatch.setattr(verification, "_PROBLEMS", {})  # nor what it verified
    three = load_profile(
        str(policy_copy(tmp_path, "eicu-ac-policy", original_ids("eicu-ac"), "eicu-three"))
    )
    [gap] = [p for p in request_suite(three).problems if "no demonstration" in p]
    assert any("access cells" in p for p in request_suite(three).problems)
    assert "No role may read a table's internal row id." in gap
    assert "Only physicians and nurses may read lab.labname." in gap
    assert "Only physicians may read the diagnosis table." not in gap  # a demonstration's
    assert "Only general administration staff may read the cost table." not in gap  # a flip's
    problems = program_problems(PROGRAMS["eicu-ac"], three)
    assert any(p.startswith("the request is not covered") for p in problems)


def test_demonstrations_the_policy_model_labels_otherwise_are_reported(tmp_path):
    root = policy_copy(tmp_path, "mind2web-sc-policy", original_ids("mind2web-sc"), "m2w-lie")
    demos = [json.loads(line) for line in (root / "demonstrations.jsonl").read_text().splitlines()]
    demos[0]["label"], demos[0]["details"] = 0, []  # the truck rental "allowed"
    (root / "demonstrations.jsonl").write_text("".join(json.dumps(d) + "\n" for d in demos))
    problems = request_suite(load_profile(str(root))).problems
    assert any(
        "policy model 'mind2web-sc' gives demonstration pickup-truck-rental label 1" in p
        for p in problems
    ), problems


# --------------------------------------------------------------------------- probes


def test_comparisons_are_read_from_assignment_expressions():
    [age] = comparisons("18 > parse_user_info(agent_input).get('age')")
    assert (age.reader, age.keys, age.op, age.value) == ("parse_user_info", ("age",), "<", 18)
    found = comparisons(
        "any(c['args']['amount'] > 1000 for c in parse_tool_calls(agent_output) "
        "if c['name'] == 'transfer_funds')"
    )
    [name, amount] = found
    assert (name.keys, name.value) == (("name",), "transfer_funds")
    assert (amount.reader, amount.keys, amount.op, amount.value) == (
        "parse_tool_calls",
        ("args", "amount"),
        ">",
        1000,
    )
    assert amount.where == (name,)
    assert comparisons("user['age'] <") == []  # does not parse: no probe, never a guess
    assert comparisons("parse_user_info(x)['age'] < limit") == []  # no literal to probe


def test_probe_tables_match_the_program_profiles_rule_tables():
    web = {
        (r["category"], r["field"], r["violation"])
        for r in load_profile("mind2web-sc").policy("RULES")
    }
    assert {
        (r["category"], r["field"], r["violation"])
        for r in category_table(load_policy("mind2web-sc"))
    } == web
    tools = {
        (r["tool"], r["field"], r["violation"], tuple(c["arg"] for c in r.get("when", [])))
        for r in load_profile("tool-calls").policy("RULES")
    }
    assert {
        (r["tool"], r["field"], r["violation"], tuple(c["arg"] for c in r["when"]))
        for r in tool_table(load_policy("tool-calls"))
    } == tools
