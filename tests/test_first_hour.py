"""A new user's first hour (issue 14): every command says what it means and never fails silently."""

from __future__ import annotations

from click.testing import CliRunner

from guardagent.cli import main
from guardagent.decision import GuardDecision
from guardagent.eval.cases import Case
from guardagent.eval.definitions import METRICS
from guardagent.eval.metrics import HEADLINE, compute_metrics
from guardagent.eval.report import render_report

# -- 1. metrics are defined once, in words -------------------------------------------------


def test_every_headline_metric_has_one_definition() -> None:
    assert HEADLINE == ("LPA", "LPP", "LPR", "CCA", "FRA")
    assert tuple(METRICS) == HEADLINE
    for name, meaning in METRICS.values():
        assert name and len(meaning.split()) >= 8


def test_eval_help_defines_the_metrics() -> None:
    result = CliRunner().invoke(main, ["eval", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    for key, (name, meaning) in METRICS.items():
        assert f"{key} ({name}): {meaning}" in text
    assert "Label 1 means deny" in text
    assert max(len(line) for line in result.output.splitlines()) <= 80


def test_report_header_defines_the_metrics() -> None:
    cases = [Case(id="a", agent_input="i", agent_output="o", label=0)]
    decisions = [GuardDecision(allowed=True, label=0, guardrailed_output="o")]
    report = render_report("p", compute_metrics(cases, decisions), cases, decisions)
    head = report.split("## ")[0]  # before the first section: headline and definitions
    for key, (name, meaning) in METRICS.items():
        assert f"| {key} ({name}) | {meaning} |" in head
