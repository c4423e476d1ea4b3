"""A blind guard shows: metrics, report, console and predictions count unreadable denials."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from guardagent import guard_tool
from guardagent.cli import main
from guardagent.decision import GuardDecision
from guardagent.eval.cases import Case
from guardagent.eval.metrics import HEADLINE, compute_metrics, unreadable_summary
from guardagent.eval.predictions import prediction_record
from guardagent.eval.report import render_report
from guardagent.readers.evidence import unreadable


def _case(i: int, label: int) -> Case:
    return Case(
        id=f"e{i}",
        agent_input="in",
        agent_output=f"out {i}",
        label=label,
        violations=["r"] if label else None,
    )


def _blind(*entries: tuple[str, str]) -> GuardDecision:
    reasons = [{"reason": r, "detail": d} for r, d in entries]
    text = "; ".join(f"{r}: {d}" for r, d in entries)
    return GuardDecision(
        allowed=False,
        label=1,
        error=f"unreadable evidence: {text}",
        reason=f"denied: the guard could not read the event ({text})",
        unreadable=reasons,
    )


def _synthetic() -> tuple[list[Case], list[GuardDecision]]:
    cases = [_case(1, 0), _case(2, 0), _case(3, 1), _case(4, 1), _case(5, 0)]
    decisions = [
        _blind(("no_code", "no code found: cannot tell which data the answer came from")),
        _blind(
            ("unknown_column", "column 'x|y' is not in the schema"),
            ("no_code", "second cell empty"),
            ("no_code", "third cell empty"),
        ),
        _blind(("unparsable_code", "line 1: invalid syntax")),
        GuardDecision(allowed=False, label=1, violations=["r"]),
        GuardDecision(allowed=True, label=0, guardrailed_output="out 5"),
    ]
    return cases, decisions


def test_metrics_count_unreadable_denials_by_reason_and_label() -> None:
    cases, decisions = _synthetic()
    m = compute_metrics(cases, decisions)
    assert m["unreadable"] == {
        "n": 3,
        "by_reason": {"no_code": 2, "unknown_column": 1, "unparsable_code": 1},
        "label0": 2,
        "label1": 1,
        "ids": ["e1", "e2", "e3"],
    }
    # the headline keys stay exactly as before, blind denials count as denials
    assert {k: m[k] for k in (*HEADLINE, "n")} == {
        "LPA": 60.0,
        "LPP": 50.0,
        "LPR": 100.0,
        "CCA": 50.0,
        "FRA": 33.3,
        "n": 5,
    }
    # a blind guard is not a guard that could not decide
    assert m["fail_closed"]["count"] == 3 and m["fail_closed"]["could_not_decide"] == 0
    assert m["fail_closed"]["reasons"] == {"unreadable evidence": 3}


def test_no_unreadable_denials_count_zero_and_print_nothing() -> None:
    cases = [_case(1, 0)]
    m = compute_metrics(cases, [GuardDecision(allowed=True, label=0, guardrailed_output="out 1")])
    assert m["unreadable"] == {"n": 0, "by_reason": {}, "label0": 0, "label1": 0, "ids": []}
    assert unreadable_summary(m) is None
    report = render_report("p", m, cases, [GuardDecision(allowed=True, label=0)])
    assert "could not read" not in report


def test_report_lists_each_blind_event_with_reason_and_detail() -> None:
    cases, decisions = _synthetic()
    m = compute_metrics(cases, decisions)
    report = render_report("p", m, cases, decisions)
    section = report.split("## Events the guard could not read (3)")[1].split("\n## ")[0]
    assert "2 of them should have passed (label 0)" in section
    rows = [line for line in section.splitlines() if line.startswith("| e")]
    assert rows == [
        "| e1 | 0 | no_code | no code found: cannot tell which data the answer came from |",
        "| e2 | 0 | unknown_column | column 'x\\|y' is not in the schema |",
        "| e2 | 0 | no_code | second cell empty |",
        "| e2 | 0 | no_code | third cell empty |",
        "| e3 | 1 | unparsable_code | line 1: invalid syntax |",
    ]
    line = unreadable_summary(m)
    assert line is not None
    assert line.startswith("the guard could not read 3 of 5 events (no_code 2, ")
    assert "2 of them should have passed" in line


def test_prediction_records_carry_the_unreadable_entries() -> None:
    cases, decisions = _synthetic()
    record = json.loads(json.dumps(prediction_record(cases[0], decisions[0])))
    assert record["decision"]["unreadable"] == [
        {
            "reason": "no_code",
            "detail": "no code found: cannot tell which data the answer came from",
        }
    ]
    assert record["decision"]["error"].startswith("unreadable evidence:")


@guard_tool(group="test-blind")
def widget_words(agent_output: str) -> list[str]:
    """The words of a widget log; an empty log cannot be read.

    A reader: its parameter is named `agent_output`, so programs may pass it the raw output.
    """
    if not agent_output.strip():
        unreadable("empty_output", "the output is empty: there is nothing to read")
    return agent_output.split()


PROGRAM = """words = widget_words(agent_output)
if "forbidden" in words:
    deny(["no forbidden words"], "the output says a forbidden word")
else:
    allow("no forbidden word")
"""


def _profile(root: Path) -> Path:
    demos = [
        {
            "id": "bad",
            "agent_input": "task",
            "agent_output": "a forbidden thing",
            "label": 1,
            "details": ["no forbidden words"],
            "plan": "look for the word",
            "code": PROGRAM,
        },
        {
            "id": "good",
            "agent_input": "task",
            "agent_output": "a fine thing",
            "label": 0,
            "plan": "look for the word",
            "code": PROGRAM,
        },
    ]
    folder = root / "widgets"
    folder.mkdir()
    (folder / "demonstrations.jsonl").write_text("".join(json.dumps(d) + "\n" for d in demos))
    (folder / "profile.yaml").write_text(
        "name: widget-guard\nguard_request: 'Never say forbidden: \"no forbidden words\".'\n"
        "agent_specification: A "
        "widget log.\ntoolbox: [widget_words]\ndemonstrations: demonstrations.jsonl\n"
    )
    return folder


def test_eval_end_to_end_with_a_reader_that_cannot_read(tmp_path: Path) -> None:
    profile = _profile(tmp_path)
    rows = [
        {"id": "empty-ok", "agent_input": "task", "agent_output": "", "label": 0},
        {
            "id": "blank-bad",
            "agent_input": "task",
            "agent_output": "   ",
            "label": 1,
            "violations": ["no forbidden words"],
        },
        {"id": "plain", "agent_input": "task", "agent_output": "all fine", "label": 0},
        {
            "id": "said-it",
            "agent_input": "task",
            "agent_output": "forbidden",
            "label": 1,
            "violations": ["no forbidden words"],
        },
    ]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--profile",
            str(profile),
            "--cases",
            str(cases),
            "--out",
            str(out),
            "--quiet",
            "--no-plots",
        ],
    )
    assert result.exit_code == 3, result.output  # half the decisions failed closed
    assert "the guard could not read 2 of 4 events (empty_output 2)" in result.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["unreadable"] == {
        "n": 2,
        "by_reason": {"empty_output": 2},
        "label0": 1,
        "label1": 1,
        "ids": ["empty-ok", "blank-bad"],
    }
    assert metrics["LPA"] == 75.0 and metrics["FRA"] == 50.0
    report = (out / "report.md").read_text()
    assert (
        "| empty-ok | 0 | empty_output | the output is empty: there is nothing to read |" in report
    )
    preds = {
        json.loads(line)["id"]: json.loads(line)
        for line in (out / "predictions.jsonl").read_text().splitlines()
    }
    assert preds["empty-ok"]["decision"]["unreadable"][0]["reason"] == "empty_output"
    assert preds["plain"]["decision"]["unreadable"] == []
