"""The mutation self-test in CI (issue 34): on both shipped profiles and in every oracle
situation (its table, its policy model, rules derived from its request), no mutant of the
shipped program that changes a decision is trusted through the model path, and the shipped
program itself is (the control).

The full run is `benchmarks/bench_mutants.py`; here one mutant per operator and situation.
"""

from __future__ import annotations

import pytest

from benchmarks.bench_mutants import CONTROL, Mutant, mutants, run
from guardagent.profiles import load_profile

PROGRAM = load_profile("eicu-ac").demonstrations[0].code


def one_per_operator(found: list[Mutant]) -> list[Mutant]:
    picked: dict[str, Mutant] = {}
    for mutant in found:
        picked.setdefault(mutant.operator, mutant)
    return list(picked.values())


def test_every_operator_makes_distinct_mutants_of_the_shipped_program():
    found = mutants(PROGRAM, per_role=2, seed=1)
    operators = {m.operator for m in found}
    assert operators == {
        "cell added",
        "cell removed",
        "flipped comparison",
        "negated condition",
        "dropped branch",
        "swapped verdict",
        "renamed role",
        "always allow",
        "always deny",
        "wrong part of the event",
        "reworded reason",
        "reader ignored",
    }
    assert len({m.code for m in found}) == len(found)
    assert all(m.code.strip() != PROGRAM.strip() for m in found)
    assert sum(m.operator.startswith("cell") for m in found) == 2 * 2 * 3  # per role, both ways


@pytest.mark.timeout(1200)  # 12 programs through the model path: minutes on a loaded machine
def test_no_mutant_that_changes_a_decision_is_trusted_and_the_control_is():
    outcomes = run("eicu-ac", per_role=1, seed=7, only=one_per_operator)
    control = [o for o in outcomes if o.mutant.operator == CONTROL]
    assert len(control) == 1 and control[0].trusted and control[0].equivalent
    [reworded] = [o for o in outcomes if o.mutant.operator == "reworded reason"]
    assert reworded.trusted and reworded.equivalent  # no correct program is refused
    mutated = [o for o in outcomes if o.mutant.operator not in (CONTROL, "reworded reason")]
    assert len(mutated) == 11
    survivors = [o.mutant.what for o in mutated if o.trusted and not o.equivalent]
    assert survivors == []
    assert all(not o.equivalent for o in mutated)  # each of these changes some decision


# --------------------------------------------------------------------------- rule oracles


SITUATIONS = [
    ("mind2web-sc", "table"),
    ("mind2web-sc", "policy"),
    ("mind2web-sc", "derived"),
    ("eicu-ac", "policy"),
    ("eicu-ac", "derived"),
]
"""Every situation but eicu-ac's table (the test above, which also pins its operator count)."""


@pytest.mark.timeout(1200)  # the derived situations build their suite from the derivation
@pytest.mark.parametrize(("profile", "oracle"), SITUATIONS)
def test_no_mutant_is_trusted_against_rule_policy_and_derived_oracles(profile, oracle):
    """Regression (seen failing on mind2web-sc: the program that reads the category from
    the task alone, `seeact_final_action(...)` ignored, was trusted and allowed a purchase
    the action named under a task that named none)."""
    outcomes = run(profile, per_role=1, seed=7, only=one_per_operator, oracle=oracle)
    [control] = [o for o in outcomes if o.mutant.operator == CONTROL]
    assert control.trusted and control.equivalent  # the shipped program still verifies
    for reworded in [o for o in outcomes if o.mutant.operator == "reworded reason"]:
        assert reworded.trusted and reworded.equivalent  # no correct program is refused
    mutated = [o for o in outcomes if o.mutant.operator not in (CONTROL, "reworded reason")]
    operators = {o.mutant.operator for o in mutated}
    assert {"reader ignored", "wrong part of the event"} <= operators
    if oracle == "policy":  # single cells and conditions of the policy model
        aimed = {
            "eicu-ac": {"read skipped for one role", "role dropped for one read"},
            "mind2web-sc": {"fact skipped under one category"},
        }[profile]
        assert {"predicate skipped", *aimed} <= operators
    survivors = [
        f"{o.mutant.operator}: {o.mutant.what}" for o in mutated if o.trusted and not o.equivalent
    ]
    assert survivors == []


def test_the_operators_make_rule_table_and_ignored_part_mutants():
    program = load_profile("mind2web-sc").demonstrations[0].code
    found = mutants(program)
    operators = {m.operator for m in found}
    assert {"rule changed", "rule dropped", "reader ignored", "action part ignored"} <= operators
    assert sum(m.operator == "rule dropped" for m in found) == 6
    ignored = [m for m in found if m.operator == "reader ignored" and "seeact" in m.what]
    assert ignored and all("seeact_final_action" not in m.code for m in ignored)
    policy = load_profile("mind2web-sc-policy").demonstrations[0].code
    assert "predicate negated" in {m.operator for m in mutants(policy)}


def test_predicate_programs_get_mutants_aimed_at_one_cell_or_condition():
    from benchmarks.bench_mutants import _permissions
    from guardagent.policy.runs import profile_policy

    ehr = load_profile("eicu-ac-policy")
    found = mutants(ehr.demonstrations[0].code, 2, 0, profile_policy(ehr), _permissions("eicu-ac"))
    count = {
        op: sum(m.operator == op for m in found)
        for op in ("read skipped for one role", "role dropped for one read")
    }
    assert count == {"read skipped for one role": 6, "role dropped for one read": 6}  # 2 x 3 roles
    web = load_profile("mind2web-sc-policy")
    found = mutants(web.demonstrations[0].code, 2, 0, profile_policy(web))
    facts = [m for m in found if m.operator == "fact skipped under one category"]
    assert facts and all("category ==" in m.code for m in facts)
