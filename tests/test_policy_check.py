"""`policy check`: planted defects are found, the shipped policy models are clean, CLI exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from guardagent.authoring.cli import policy as policy_cli
from guardagent.policy.check import check_model, check_policy
from guardagent.policy.model import load_policy_text, shipped_policies

HERE = Path(__file__).parent / "policies"


def by_code(report, code):
    return [f for f in report.findings if f.code == code]


@pytest.mark.parametrize("name", ["eicu-ac", "mind2web-sc", "tool-calls"])
def test_shipped_policy_models_are_clean(name):
    report = check_policy(Path(__file__).parents[1] / "guardagent" / "policies" / f"{name}.yaml")
    assert report.ok
    assert report.codes("error") == [] and report.codes("warning") == []
    assert name in shipped_policies()


def test_the_shieldagent_example_is_clean():
    report = check_policy(HERE / "reddit_profile.yaml")
    assert report.findings == []
    assert report.stats["action_tree_depth"] == 3


def test_planted_warnings_are_all_found():
    report = check_policy(HERE / "planted.yaml")
    assert report.ok  # warnings only
    forbidden = {f.predicates[0]: f for f in by_code(report, "forbidden_action")}
    assert set(forbidden) == {"refund", "delete_account"}
    assert set(forbidden["refund"].rules) == {"receipt-needed", "receipt-forbidden"}
    assert forbidden["delete_account"].rules == ("never-delete",)
    [conflict] = by_code(report, "conflict")
    assert set(conflict.rules) == {"receipt-needed", "receipt-forbidden"}
    assert conflict.predicates == ("refund",)
    [redundant] = by_code(report, "redundant_rule")
    assert redundant.rules == ("no-weekend-checkout-with-receipt", "no-weekend-checkout")
    [merge] = by_code(report, "interchangeable_predicates")
    assert merge.predicates == ("coupon_valid", "coupon_unexpired")
    assert {f.predicates[0] for f in by_code(report, "unused_predicate")} == {
        "archive",
        "loyalty_member",
    }
    [declared] = by_code(report, "declared_forbidden_permitted")
    assert declared.predicates == ("gift_wrap",)
    assert by_code(report, "unknown_tool")[0].predicates == ("store_open",)
    assert by_code(report, "bad_expression")[0].predicates == ("loyalty_member",)
    assert [f.rules for f in by_code(report, "global_rule")] == [("coupons-are-checked",)]
    assert conflict.location == f"{HERE / 'planted.yaml'}:38:5"


def test_unsatisfiable_hard_rules_are_an_error_naming_a_minimal_set():
    report = check_policy(HERE / "unsat.yaml")
    assert not report.ok
    [unsat] = by_code(report, "unsat_hard_rules")
    assert set(unsat.rules) == {"must-review", "reviewed-means-approved", "never-approved"}
    assert "publish-needs-approval" not in unsat.rules  # minimal: not every rule is to blame


def test_undefined_predicates_and_syntax_errors_are_errors_with_positions():
    undefined = check_policy(HERE / "undefined.yaml")
    [finding] = undefined.errors
    assert finding.code == "undefined_predicate" and finding.predicates == ("signed_off",)
    assert finding.location.endswith("undefined.yaml:11:41")
    broken = check_policy(HERE / "syntax_error.yaml")
    [finding] = broken.errors
    assert finding.code == "load_error" and finding.location.endswith("syntax_error.yaml:13:28")


def test_duplicate_rules_are_pruned_once_and_soft_rules_enforced_by_hard_ones_are_info():
    text = """
format: guardagent-policy/1
name: dup
version: "1"
predicates:
  - {name: act, kind: action}
  - {name: ok, kind: condition}
rules:
  - {id: first, logic: act IMPLIES ok}
  - {id: second, logic: NOT ok IMPLIES NOT act}
  - {id: soft, logic: act IMPLIES ok, hard: false}
"""
    report = check_model(load_policy_text(text, "dup.yaml", strict=False))
    redundant = by_code(report, "redundant_rule")
    assert [(f.rules[0], f.severity) for f in redundant] == [("first", "warning"), ("soft", "info")]
    assert redundant[0].rules == ("first", "second")


def test_a_conflict_between_three_rules_is_one_minimal_set():
    text = """
format: guardagent-policy/1
name: three
version: "1"
predicates:
  - {name: act, kind: action}
  - {name: x, kind: condition}
  - {name: y, kind: condition}
rules:
  - {id: r1, logic: act IMPLIES x}
  - {id: r2, logic: act IMPLIES y}
  - {id: r3, logic: act IMPLIES NOT (x AND y)}
  - {id: unrelated, logic: act IMPLIES x OR y}
"""
    report = check_model(load_policy_text(text, "three.yaml"))
    [conflict] = by_code(report, "conflict")
    assert set(conflict.rules) == {"r1", "r2", "r3"}


def test_cli_exit_codes_and_json():
    runner = CliRunner()
    ok = runner.invoke(policy_cli, ["check", "tool-calls"])
    assert ok.exit_code == 0 and "OK: 0 error(s), 0 warning(s)" in ok.output
    planted = runner.invoke(policy_cli, ["check", str(HERE / "planted.yaml")])
    assert planted.exit_code == 0 and "10 warning(s)" in planted.output
    assert "planted.yaml:11:5: warning: the policy forbids 'refund' outright" in planted.output
    bad = runner.invoke(policy_cli, ["check", str(HERE / "unsat.yaml"), "--json"])
    assert bad.exit_code == 1
    data = json.loads(bad.output)
    assert data["ok"] is False and data["errors"] == 1
    assert data["findings"][0]["code"] == "unsat_hard_rules"
    assert data["stats"]["rules"] == 4
    missing = runner.invoke(policy_cli, ["check", "no/such/policy.yaml"])
    assert missing.exit_code == 2 and "cannot read" in missing.output
