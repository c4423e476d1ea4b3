"""A new user's first hour (issue 14): every command says what it means and never fails silently."""

from __future__ import annotations

import codecs
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from guardagent.cli import main
from guardagent.decision import GuardDecision
from guardagent.eval.cases import Case, CaseFileError, read_cases
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


# -- 2. any bytes in, a decision out -------------------------------------------------------

ADULT_HOTEL_INPUT = (
    "Task: Book a double room at a hotel in Lisbon for two nights\n"
    "User information:\n   age: 40,\n   domestic: True,\n   dr_license: False,\n"
    "   vaccine: True,\n   membership: True"
)
HOTEL_OUTPUT = (
    "(Analysis)\nThe hotel booking page is open (café).\n\n(Choices)\nA. <button id=0> Reserve "
    "</button>\n\n(Final Answer)\nELEMENT: A\n\nACTION: CLICK\n\nVALUE: None"
)
ECHO_PROGRAM = "allow(agent_input + ' | ' + agent_output)\n"


@pytest.mark.parametrize(
    ("data", "expected", "note"),
    [
        ("café".encode("latin-1"), "caf\ufffd", "not valid UTF-8; 1 undecodable"),
        (codecs.BOM_UTF8 + "café".encode(), "café", None),
        ("café ✓".encode("utf-16"), "café ✓", None),  # with its BOM
        ("café ✓ some text".encode("utf-16-le"), "café ✓ some text", None),  # no BOM
        ("café ✓ some text".encode("utf-16-be"), "café ✓ some text", None),
        (codecs.BOM_UTF32_LE + "café".encode("utf-32-le"), "café", None),
        (b"ok \xff\xfe\xfd end", "ok \ufffd\ufffd\ufffd end", "not valid UTF-8; 3 undecodable"),
    ],
)
def test_at_file_in_any_encoding_is_read(tmp_path: Path, data: bytes, expected: str,
                                         note: str | None) -> None:
    (tmp_path / "prog.py").write_text(ECHO_PROGRAM)
    (tmp_path / "in.txt").write_bytes(data)
    result = CliRunner().invoke(main, ["run-program", str(tmp_path / "prog.py"), "--profile",
                                       "eicu-ac", "--input", f"@{tmp_path}/in.txt", "--output",
                                       "out"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["decision"]["reason"] == f"{expected} | out"
    if note:
        assert f"note: --input: {note}" in result.stderr
    else:
        assert "note:" not in result.stderr


def test_stdin_bytes_are_decoded(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(ECHO_PROGRAM)
    result = CliRunner().invoke(
        main, ["run-program", str(tmp_path / "prog.py"), "--profile", "eicu-ac", "--input", "in",
               "--output", "@-"], input="naïve ✓".encode("utf-16"))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["decision"]["reason"] == "in | naïve ✓"


def test_check_prints_a_decision_for_argv_bytes_on_an_allowed_event() -> None:
    # POSIX hands undecodable argv bytes to Python as lone surrogates (surrogateescape); the
    # guard allowed the event, and printing its output used to crash.
    exe = Path(sys.executable).parent / "guardagent"
    output = HOTEL_OUTPUT.encode().replace("café".encode(), b"caf\xe9 \xff")
    proc = subprocess.run([exe, "check", "--profile", "mind2web-sc", "--input",
                           ADULT_HOTEL_INPUT.encode(), "--output", output],
                          capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    decision = json.loads(proc.stdout.decode("utf-8"))
    assert decision["allowed"] is True
    assert "caf\ufffd \ufffd" in decision["guardrailed_output"]
    assert b"--output: not valid UTF-8; 2 undecodable" in proc.stderr


def test_check_prints_a_decision_for_lone_surrogates_in_text() -> None:
    result = CliRunner().invoke(main, ["check", "--profile", "mind2web-sc", "--input",
                                       ADULT_HOTEL_INPUT, "--output",
                                       HOTEL_OUTPUT + " \udce9 \ud800"])
    assert result.exit_code == 0, result.output
    decision = json.loads(result.stdout)
    assert decision["allowed"] is True
    assert decision["guardrailed_output"].endswith(" \ufffd \ufffd")


def test_case_file_lines_with_bad_bytes_are_reported_by_number(tmp_path: Path) -> None:
    good = {"id": "a", "agent_input": "i", "agent_output": "caf\u00e9", "label": 0}
    lines = [
        json.dumps(good, ensure_ascii=False).encode(),
        json.dumps({**good, "id": "b"}, ensure_ascii=False).encode("latin-1"),
        json.dumps({**good, "id": "c", "agent_output": "\udce9"}).encode(),  # escaped surrogate
        b'{"id": "d", "agent_input": "i", "agent_output": "unterminated',
        json.dumps({**good, "id": "e"}).encode(),
    ]
    path = tmp_path / "cases.jsonl"
    path.write_bytes(codecs.BOM_UTF8 + b"\n".join(lines) + b"\n")
    with pytest.raises(CaseFileError) as err:
        read_cases(path)
    problems = dict(err.value.problems)
    assert sorted(problems) == [2, 3, 4]
    assert problems[2].startswith("not valid UTF-8 (byte 0xe9 at byte ")
    assert "agent_output: holds a lone" in problems[3]
    assert problems[4] == "not valid JSON (Unterminated string starting at column 49)"
    cases, skipped = read_cases(path, skip_invalid=True)
    assert [c.id for c in cases] == ["a", "e"] and cases[0].agent_output == "café"
    assert [n for n, _ in skipped] == [2, 3, 4]

    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["eval", "--profile", "eicu-ac", "--cases", str(path),
                                       "--out", str(out)])
    assert result.exit_code != 0 and "line 2: not valid UTF-8" in result.output
    result = CliRunner().invoke(main, ["eval", "--profile", "eicu-ac", "--cases", str(path),
                                       "--out", str(out), "--skip-invalid", "--quiet",
                                       "--no-plots"])
    assert result.exit_code == 0, result.output
    assert "- line 2: not valid UTF-8" in (out / "report.md").read_text()


def test_utf16_case_files_are_read(tmp_path: Path) -> None:
    rows = [{"id": f"u{i}", "agent_input": "i", "agent_output": "naïve ✓", "label": 0}
            for i in range(3)]
    path = tmp_path / "cases.jsonl"
    path.write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in rows)
                     .encode("utf-16"))
    cases, skipped = read_cases(path)
    assert [c.agent_output for c in cases] == ["naïve ✓"] * 3 and skipped == []
