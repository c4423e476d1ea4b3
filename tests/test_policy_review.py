"""Human sign-off (issue 13): review states and spans in the policy format, `policy review`
decisions, `policy diff` in rule terms, and `approved_only`: rejected and pending rules
never guard."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from guardagent.authoring.cli import policy
from guardagent.authoring.review import ReviewDecision, apply_decisions, diff_policies, relation
from guardagent.policy.model import (
    PolicyError,
    dump_policy,
    guarding_model,
    load_policy,
    load_policy_text,
)
from guardagent.policy.runs import profile_policy
from guardagent.policy.verify import verify_event

POLICY = """format: guardagent-policy/1
name: support
version: '1'
approved_only: true
predicates:
  - {name: refund, kind: action}
  - {name: export_data, kind: action}
  - {name: verified, kind: condition}
  - {name: dpo_approval, kind: condition}
rules:
  - id: refund-verified
    logic: refund IMPLIES verified
    source: p.md#refunds:p1
    span: Refunds only for verified customers.
    review: proposed
  - id: export-dpo
    logic: export_data IMPLIES dpo_approval
    source: p.md#export:p1
    span: Exports need the DPO's approval.
    review: proposed
  - id: never-export
    logic: NOT export_data
    source: p.md#export:p2
    span: We used to forbid exports.
    review: proposed
"""

REFUND = {
    "refund": {"value": True, "probability": None},
    "verified": {"value": False, "probability": None},
}
EXPORT = {
    "export_data": {"value": True, "probability": None},
    "dpo_approval": {"value": True, "probability": None},
}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    file = tmp_path / "policy.yaml"
    file.write_text(POLICY)
    return file


def test_review_fields_round_trip_and_are_validated(path: Path) -> None:
    model = load_policy(path)
    assert model.approved_only and model.by_id["export-dpo"].span.startswith("Exports")
    assert load_policy_text(dump_policy(model), str(path)) == model
    with pytest.raises(PolicyError, match="review must be one of"):
        load_policy_text(POLICY.replace("review: proposed", "review: maybe", 1), "x.yaml")


def test_review_lists_pending_rules_with_their_source_text(path: Path) -> None:
    result = CliRunner().invoke(policy, ["review", str(path)])
    assert result.exit_code == 0
    assert "[proposed] refund-verified" in result.output
    assert 'text:   "Refunds only for verified customers."' in result.output
    assert "source: p.md#refunds:p1" in result.output
    assert "3 proposed" in result.output


def test_review_records_decisions(path: Path) -> None:
    result = CliRunner().invoke(
        policy,
        [
            "review",
            str(path),
            "--approve",
            "refund-verified",
            "--reject",
            "never-export",
            "--edit",
            "export-dpo",
            "--logic",
            "export_data IMPLIES dpo_approval AND verified",
        ],
    )
    assert result.exit_code == 0, result.output
    model = load_policy(path)
    assert [r.review for r in model.rules] == ["approved", "edited", "rejected"]
    assert model.by_id["export-dpo"].logic == "export_data IMPLIES dpo_approval AND verified"
    assert "1 approved, 1 edited, 1 rejected" in result.output


@pytest.mark.parametrize(
    ("logic", "message"),
    [
        ("export_data IMPLIES AND", "export-dpo"),
        ("export_data IMPLIES manager_ok", "undefined predicate 'manager_ok'"),
    ],
)
def test_an_invalid_edit_is_refused_and_nothing_is_written(
    path: Path, logic: str, message: str
) -> None:
    result = CliRunner().invoke(
        policy,
        [
            "review",
            str(path),
            "--approve",
            "refund-verified",
            "--edit",
            "export-dpo",
            "--logic",
            logic,
        ],
    )
    assert result.exit_code == 2 and message in result.output
    assert path.read_text() == POLICY


def test_unknown_rule_is_refused(path: Path) -> None:
    with pytest.raises(PolicyError, match="no rule 'nope'"):
        apply_decisions(load_policy(path), [ReviewDecision("nope", "approve")])


def test_diff_explains_changes_in_rule_terms(path: Path, tmp_path: Path) -> None:
    old = load_policy(path)
    new = apply_decisions(
        old,
        [
            ReviewDecision("refund-verified", "approve"),
            ReviewDecision("export-dpo", "edit", "export_data IMPLIES dpo_approval AND verified"),
        ],
    )
    new_text = dump_policy(new).replace(
        "- id: never-export\n  logic: NOT export_data\n",
        "- id: dpo-needed\n  logic: NOT dpo_approval IMPLIES NOT export_data\n",
    )
    (tmp_path / "new.yaml").write_text(new_text)
    changes = [str(c) for c in diff_policies(old, load_policy(tmp_path / "new.yaml"))]
    assert any("rule review" in c and "refund-verified: proposed -> approved" in c for c in changes)
    assert any("rule logic" in c and "(stricter)" in c for c in changes)
    assert any(c.startswith("rule removed") and "never-export" in c for c in changes)
    assert any(c.startswith("rule added") and "dpo-needed" in c for c in changes)
    cli = CliRunner().invoke(policy, ["diff", str(path), str(tmp_path / "new.yaml")])
    assert cli.exit_code == 1 and "rule removed" in cli.output
    same = CliRunner().invoke(policy, ["diff", str(path), str(path)])
    assert same.exit_code == 0 and "no changes" in same.output


def test_relation_is_decided_by_z3(path: Path) -> None:
    model = load_policy(path)
    rule = model.by_id["export-dpo"]
    looser = apply_decisions(
        model,
        [ReviewDecision("export-dpo", "edit", "export_data AND verified IMPLIES dpo_approval")],
    )
    same = apply_decisions(
        model, [ReviewDecision("export-dpo", "edit", "NOT dpo_approval IMPLIES NOT export_data")]
    )
    assert relation(rule, looser.by_id["export-dpo"]) == "looser"
    assert relation(rule, same.by_id["export-dpo"]) == "equivalent"


def test_approved_only_guards_with_signed_off_rules_only(path: Path) -> None:
    pending = load_policy(path)
    # Nothing approved yet: no rule guards, and the refund is not denied by a pending rule.
    assert guarding_model(pending).rules == ()
    reviewed = apply_decisions(
        pending,
        [ReviewDecision("refund-verified", "approve"), ReviewDecision("never-export", "reject")],
    )
    path.write_text(dump_policy(reviewed))
    guarded = profile_policy(SimpleNamespace(policy_model=str(path), root=None))
    assert guarded is not None and [r.id for r in guarded.rules] == ["refund-verified"]
    assert not verify_event(guarded, REFUND).allowed  # approved rule guards
    assert verify_event(guarded, EXPORT).allowed  # rejected `NOT export_data` does not


def test_rejected_rules_never_guard_even_without_approved_only(path: Path) -> None:
    text = POLICY.replace("approved_only: true\n", "")
    model = apply_decisions(
        load_policy_text(text, str(path)), [ReviewDecision("never-export", "reject")]
    )
    path.write_text(dump_policy(model))
    guarded = profile_policy(SimpleNamespace(policy_model=str(path), root=None))
    assert guarded is not None
    assert [r.id for r in guarded.rules] == ["refund-verified", "export-dpo"]  # pending guard
    assert verify_event(guarded, EXPORT).allowed
    # A profile can ask for approved rules only, whatever the policy says.
    strict = profile_policy(SimpleNamespace(policy_model=str(path), root=None, approved_only=True))
    assert strict is not None and strict.rules == ()
    # `policy check` judges the policy without its rejected rules; `verify` guards likewise.
    check = CliRunner().invoke(policy, ["check", str(path)])
    assert check.exit_code == 0, check.output
    assert "forbid" not in check.output
