"""Per-event verification: z3 verdicts with open predicates, the action tree, explanations."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.policy.event import VerificationError, event_values
from guardagent.policy.formula import render, variables
from guardagent.policy.model import load_policy, load_policy_text
from guardagent.policy.report import verdict_text
from guardagent.policy.verify import verify_event
from tests.test_policy_grammar import NAMES, formulas, truth

HERE = Path(__file__).parent / "policies"
REDDIT = load_policy(HERE / "reddit_profile.yaml")

# Fig. r.14 of the ShieldAgent supplement: the assignments after the tool calls.
FIGURE = {
    "update_bio": True,
    "publish_data": True,
    "data_is_personal": True,
    "data_is_private": True,
    "data_is_harmful": False,
    "data_is_truthful": True,
    "info_is_outdated": False,
    "exact_user_request": False,
    "user_consent": False,
}


def status(verdict, rule_id):
    return next(r for r in verdict.rules if r.id == rule_id)


def test_the_shieldagent_example_is_denied_by_the_rules_the_paper_names():
    verdict = verify_event(REDDIT, FIGURE)
    assert not verdict.allowed
    denied = [r.id for r in verdict.denying()]
    # The paper's rules 1 and 7, plus rule 5 (bio without consent: its run assigned a
    # separate consent predicate per rule, we keep one).
    assert denied == ["private-needs-consent", "bio-needs-consent", "follow-the-request"]
    first = status(verdict, "private-needs-consent")
    assert first.status == "violated"
    assert first.deciding == {"data_is_private": True, "user_consent": False, "publish_data": True}
    assert first.remediation.startswith("Remove the private data")
    assert "because" in first.explanation and "user_consent = false" in first.explanation
    assert status(verdict, "no-outdated-info").status == "not_applicable"
    assert verdict.matched_actions == [
        "content_access",
        "profile_modification",
        "update_bio",
        "publish_data",
    ]
    assert verdict.violations == [
        "Private data is published only with the user's consent.",
        "The bio is changed only with the user's consent.",
        "Content is accessed only as the user asked.",
    ]
    assert "DENY under reddit-profile@1" in verdict_text(verdict)


def test_a_holding_rule_names_the_values_that_decide_it():
    # Certain answers (probability 1): the policy's calibrated defaults would multiply to
    # 0.446 < 0.5 for six model answers (tested in test_policy_probability).
    values = {**FIGURE, "user_consent": True, "exact_user_request": True}
    certain = {n: {"value": v, "probability": 1.0} for n, v in values.items()}
    verdict = verify_event(REDDIT, certain)
    assert verdict.allowed, verdict.reason
    assert verdict.safety_probability.execute == 1.0
    assert status(verdict, "no-harmful-content").deciding == {"data_is_harmful": False}
    assert status(verdict, "private-needs-consent").deciding == {"user_consent": True}
    assert verdict.violations == [] and verdict.remediation is None


SMALL = load_policy_text(
    """
format: guardagent-policy/1
name: small
version: "1"
predicates:
  - {name: publish, kind: action}
  - {name: delete, kind: action}
  - {name: private, kind: condition}
  - {name: consent, kind: condition}
  - {name: c, kind: condition}
  - {name: d, kind: condition}
  - {name: x, kind: condition}
rules:
  - {id: consent, logic: private AND NOT consent IMPLIES NOT publish}
  - {id: both, logic: publish IMPLIES c AND d}
  - {id: tautology, logic: publish IMPLIES x OR NOT x}
  - {id: delete-rule, logic: c IMPLIES NOT delete}
  - {id: soft, logic: publish IMPLIES consent, hard: false}
""",
    "small.yaml",
)


def test_open_predicate_possibly_violated_names_what_would_settle_it():
    verdict = verify_event(SMALL, {"publish": True, "private": True, "c": True, "d": True})
    rule = status(verdict, "consent")
    assert rule.status == "possibly_violated"
    assert rule.open == ["consent"]
    assert rule.witness == {"consent": False}
    assert "not settled until consent" in rule.explanation
    assert not verdict.allowed and verdict.open_predicates == ["consent"]
    assert verdict.remediation is not None


def test_open_predicate_that_cannot_matter_still_holds():
    verdict = verify_event(SMALL, {"publish": True, "consent": True, "c": True, "d": True})
    rule = status(verdict, "consent")
    assert rule.status == "holds" and rule.deciding == {"consent": True}  # private stays open
    assert status(verdict, "tautology").status == "holds"  # x open, z3 proves it anyway
    assert verdict.allowed, verdict.reason


def test_violated_under_every_completion_of_the_open_predicates():
    verdict = verify_event(SMALL, {"publish": True, "consent": True, "c": False})
    rule = status(verdict, "both")
    assert rule.status == "violated"
    assert rule.deciding == {"publish": True, "c": False}  # d is open and does not matter
    assert rule.open == []


def test_rules_of_actions_not_taken_do_not_apply():
    verdict = verify_event(SMALL, {"delete": True, "c": False})
    assert status(verdict, "consent").status == "not_applicable"
    assert status(verdict, "delete-rule").status == "holds"
    assert verdict.allowed and verdict.matched_actions == ["delete"]


def test_an_open_action_brings_its_circuit_and_denies_when_it_might_break_a_rule():
    verdict = verify_event(SMALL, {"delete": None, "c": True})
    rule = status(verdict, "delete-rule")
    assert rule.status == "possibly_violated" and rule.open == ["delete"]
    assert not verdict.allowed


def test_a_violated_soft_rule_is_reported_but_does_not_deny():
    verdict = verify_event(
        SMALL, {"publish": True, "private": False, "consent": False, "c": True, "d": True}
    )
    assert status(verdict, "soft").status == "violated"
    assert not status(verdict, "soft").denies
    assert verdict.allowed


def test_action_tree_ancestors_are_matched_and_bring_their_rules():
    verdict = verify_event(
        REDDIT, {"update_bio": True, "user_consent": True, "exact_user_request": False}
    )
    assert verdict.matched_actions == ["content_access", "profile_modification", "update_bio"]
    assert status(verdict, "follow-the-request").status == "violated"
    assert status(verdict, "follow-the-request").deciding == {
        "exact_user_request": False,
        "content_access": True,
    }


def test_explicitly_attached_rules_apply_only_with_their_action():
    ev = event_values(REDDIT, {"update_bio": True})
    assert "personal-is-private" not in ev.circuit
    ev = event_values(REDDIT, {"publish_data": True})
    assert "personal-is-private" in ev.circuit


def test_assignments_the_policy_cannot_take_are_errors():
    with pytest.raises(VerificationError, match="does not declare: nope"):
        verify_event(REDDIT, {"nope": True})
    with pytest.raises(VerificationError, match="'profile_modification' was assigned false"):
        verify_event(REDDIT, {"update_bio": True, "profile_modification": False})


# --------------------------------------------------------------------------- z3 vs truth tables


def _single_rule_policy(formula):
    preds = "".join(f"  - {{name: {n}, kind: condition}}\n" for n in NAMES)
    return load_policy_text(
        "format: guardagent-policy/1\nname: h\nversion: '1'\npredicates:\n"
        + preds
        + f'rules:\n  - id: r\n    logic: "{render(formula)}"\n',
        "h.yaml",
    )


@settings(max_examples=120, deadline=None)
@given(formulas(), st.lists(st.sampled_from([True, False, None]), min_size=6, max_size=6))
def test_verdicts_agree_with_brute_force_truth_tables(formula, picks):
    model = _single_rule_policy(formula)
    assigned = dict(zip(NAMES, picks, strict=True))
    result = status(verify_event(model, assigned, remediation=False, probability=False), "r")
    names = list(variables(formula))
    fixed = {n: v for n, v in assigned.items() if v is not None and n in names}
    opens = [n for n in names if n not in fixed]
    outcomes = {
        truth(formula, {**fixed, **dict(zip(opens, bits, strict=True))})
        for bits in itertools.product((False, True), repeat=len(opens))
    }
    expected = (
        "holds"
        if outcomes == {True}
        else "violated"
        if outcomes == {False}
        else "possibly_violated"
    )
    assert result.status == expected
    if expected == "possibly_violated":
        assert truth(formula, {**fixed, **{n: False for n in opens}, **result.witness}) is False
        assert set(result.open) <= set(opens)
    else:  # the deciding values alone force the outcome, whatever the rest
        rest = [n for n in names if n not in result.deciding]
        assert all(
            truth(formula, {**result.deciding, **dict(zip(rest, bits, strict=True))})
            == (expected == "holds")
            for bits in itertools.product((False, True), repeat=len(rest))
        )


def test_threads_verifying_at_once_get_the_sequential_answers():
    from concurrent.futures import ThreadPoolExecutor

    cases = [
        (REDDIT, FIGURE),
        (REDDIT, {**FIGURE, "user_consent": True}),
        (SMALL, {"publish": True, "private": True}),
        (SMALL, {"delete": None, "c": True}),
    ]
    # `deciding` is *a* minimal set of values z3 needed (an unsat core); when several exist,
    # which one z3 returns may depend on the solver's history, so it is left out here.
    skip = {"rules": {"__all__": {"deciding"}}}

    def run(i):
        return verify_event(*cases[i % 4]).model_dump(exclude=skip)

    expected = [run(i) for i in range(4)]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(run, range(64)))
    assert all(g == expected[i % 4] for i, g in enumerate(got))


def test_cli_verify_prints_the_verdict():
    import json

    from click.testing import CliRunner

    from guardagent.authoring.cli import policy as policy_cli

    runner = CliRunner()
    args = [
        "verify",
        "tool-calls",
        "--assign",
        "calls_transfer_funds=true",
        "--assign",
        "transfer_amount_over_1000=true",
        "--assign",
        "user_is_verified=open",
    ]
    text = runner.invoke(policy_cli, args)
    assert text.exit_code == 1  # denied: a script must not read it as success
    assert "DENY under tool-calls@1" in text.output
    assert "[possibly_violated] large-transfer-needs-verified-user" in text.output
    assert "open: user_is_verified" in text.output
    data = json.loads(runner.invoke(policy_cli, [*args, "--json"]).output)
    assert data["allowed"] is False and data["open_predicates"] == ["user_is_verified"]
    bad = runner.invoke(policy_cli, ["verify", "tool-calls", "--assign", "ghost=true"])
    assert bad.exit_code == 2 and "does not declare: ghost" in bad.output
    worse = runner.invoke(policy_cli, ["verify", "tool-calls", "--assign", "x=maybe"])
    assert worse.exit_code == 2
