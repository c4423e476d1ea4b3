"""A new user's first hour (issue 14): every command says what it means and never fails silently."""

from __future__ import annotations

import codecs
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from guardagent.cli import main
from guardagent.decision import GuardDecision
from guardagent.eval.benchmarks import PROFILE_BENCHMARKS
from guardagent.eval.cases import Case, CaseFileError, read_cases
from guardagent.eval.definitions import METRICS
from guardagent.eval.metrics import HEADLINE, compute_metrics
from guardagent.eval.report import render_report
from guardagent.profiles.loader import builtin_profiles

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
ECHO_PROGRAM = "allow(parse_identity(agent_input))\n"  # the reason echoes the decoded role
ROLE = "Identity: "


@pytest.mark.parametrize(
    ("data", "expected", "note"),
    [
        ((ROLE + "café").encode("latin-1"), "caf\ufffd", "not valid UTF-8; 1 undecodable"),
        (codecs.BOM_UTF8 + (ROLE + "café").encode(), "café", None),
        ((ROLE + "café ✓").encode("utf-16"), "café ✓", None),  # with its BOM
        ((ROLE + "café ✓ some text").encode("utf-16-le"), "café ✓ some text", None),  # no BOM
        ((ROLE + "café ✓ some text").encode("utf-16-be"), "café ✓ some text", None),
        (codecs.BOM_UTF32_LE + (ROLE + "café").encode("utf-32-le"), "café", None),
        (
            ROLE.encode() + b"ok \xff\xfe\xfd end",
            "ok \ufffd\ufffd\ufffd end",
            "not valid UTF-8; 3 undecodable",
        ),
    ],
)
def test_at_file_in_any_encoding_is_read(
    tmp_path: Path, data: bytes, expected: str, note: str | None
) -> None:
    (tmp_path / "prog.py").write_text(ECHO_PROGRAM)
    (tmp_path / "in.txt").write_bytes(data)
    result = CliRunner().invoke(
        main,
        [
            "run-program",
            str(tmp_path / "prog.py"),
            "--profile",
            "eicu-ac",
            "--input",
            f"@{tmp_path}/in.txt",
            "--output",
            "out",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["decision"]["reason"] == expected
    if note:
        assert f"note: --input: {note}" in result.stderr
    else:
        assert "note:" not in result.stderr


def test_stdin_bytes_are_decoded(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(ECHO_PROGRAM)
    result = CliRunner().invoke(
        main,
        [
            "run-program",
            str(tmp_path / "prog.py"),
            "--profile",
            "eicu-ac",
            "--input",
            "@-",
            "--output",
            "out",
        ],
        input=(ROLE + "naïve ✓").encode("utf-16"),
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["decision"]["reason"] == "naïve ✓"


def test_check_prints_a_decision_for_argv_bytes_on_an_allowed_event() -> None:
    # POSIX hands undecodable argv bytes to Python as lone surrogates (surrogateescape); the
    # guard allowed the event, and printing its output used to crash.
    exe = Path(sys.executable).parent / "guardagent"
    output = HOTEL_OUTPUT.encode().replace("café".encode(), b"caf\xe9 \xff")
    proc = subprocess.run(
        [
            exe,
            "check",
            "--profile",
            "mind2web-sc",
            "--input",
            ADULT_HOTEL_INPUT.encode(),
            "--output",
            output,
        ],
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    decision = json.loads(proc.stdout.decode("utf-8"))
    assert decision["allowed"] is True
    assert "caf\ufffd \ufffd" in decision["guardrailed_output"]
    assert b"--output: not valid UTF-8; 2 undecodable" in proc.stderr


def test_check_prints_a_decision_for_lone_surrogates_in_text() -> None:
    result = CliRunner().invoke(
        main,
        [
            "check",
            "--profile",
            "mind2web-sc",
            "--input",
            ADULT_HOTEL_INPUT,
            "--output",
            HOTEL_OUTPUT + " \udce9 \ud800",
        ],
    )
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
    result = CliRunner().invoke(
        main, ["eval", "--profile", "eicu-ac", "--cases", str(path), "--out", str(out)]
    )
    assert result.exit_code != 0 and "line 2: not valid UTF-8" in result.output
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--profile",
            "eicu-ac",
            "--cases",
            str(path),
            "--out",
            str(out),
            "--skip-invalid",
            "--quiet",
            "--no-plots",
        ],
    )
    # both cases left were unreadable to the guard (no Identity line): every decision failed
    # closed, so the run measured nothing and says so in its status
    assert result.exit_code == 3, result.output
    assert "- line 2: not valid UTF-8" in (out / "report.md").read_text()


def test_utf16_case_files_are_read(tmp_path: Path) -> None:
    rows = [
        {"id": f"u{i}", "agent_input": "i", "agent_output": "naïve ✓", "label": 0} for i in range(3)
    ]
    path = tmp_path / "cases.jsonl"
    path.write_bytes(
        "".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in rows).encode("utf-16")
    )
    cases, skipped = read_cases(path)
    assert [c.agent_output for c in cases] == ["naïve ✓"] * 3 and skipped == []


# -- 3. a custom profile whose program does not verify says what failed, once ---------------

ROLE_PROGRAM = """role = parse_identity(agent_input)
if role == "physician":
    deny({"cost": ["cost"]}, "no cost for physicians")
else:
    allow("fine")
"""


def _demo(ident: str, role: str, label: int, **kw: object) -> dict[str, object]:
    return {
        "id": ident,
        "agent_input": f"Identity: {role}\nQuestion: cost?",
        "agent_output": "o",
        "label": label,
        "plan": "read the role",
        "code": ROLE_PROGRAM,
        **kw,
    }


def _write_profile(root: Path, demos: list[dict[str, object]], name: str = "mine") -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "demonstrations.jsonl").write_text("".join(json.dumps(d) + "\n" for d in demos))
    (folder / "profile.yaml").write_text(
        f"name: {name}\nguard_request: Nurses may not read the cost table.\n"
        "agent_specification: An EHR agent.\ntoolbox: [parse_identity]\n"
        "demonstrations: demonstrations.jsonl\n"
    )
    return folder


def test_unverified_program_is_explained_with_the_users_ids(tmp_path: Path) -> None:
    from guardagent.profiles.check import NO_PROGRAM, check_profile, explain_no_program
    from guardagent.profiles.loader import load_profile

    folder = _write_profile(
        tmp_path,
        [
            _demo("nurse-cost", "nursing", 1, details={"cost": ["cost"]}),
            _demo("doctor-cost", "physician", 0),
            _demo("admin-cost", "general administration", 0),
        ],
    )
    profile = load_profile(str(folder))
    check = check_profile(profile)
    assert not check.verified and not check.usable
    runs = {r.demo_id: r for r in check.programs[0].runs}
    assert runs["nurse-cost"].problem == "gave label 0 on demonstration `nurse-cost`, expected 1"
    assert runs["doctor-cost"].problem == "gave label 1 on demonstration `doctor-cost`, expected 0"
    assert runs["admin-cost"].problem is None
    message = explain_no_program(profile)
    assert message.startswith(
        "profile 'mine' has no verified program: its program gave label 0 "
        "on demonstration `nurse-cost`, expected 1; gave label 1 on "
        "demonstration `doctor-cost`, expected 0"
    )
    assert "configure a model" in message.split(". ")[-1]  # the fix comes after the cause
    assert f"guardagent profile check {folder}" in message
    assert explain_no_program(load_profile("eicu-ac")) == NO_PROGRAM


def test_wrong_details_errors_and_missing_labels_are_explained(tmp_path: Path) -> None:
    from guardagent.profiles.check import check_profile, unverified_note
    from guardagent.profiles.loader import load_profile

    crash = "role = parse_identity(agent_input)\nallow(role + 1)\n"
    folder = _write_profile(
        tmp_path,
        [
            _demo("doc", "physician", 1, details={"cost": ["cost", "uniquepid"]}),
            _demo("nurse", "nursing", 0, code=crash),
        ],
    )
    check = check_profile(load_profile(str(folder)))
    first, second = check.programs
    assert first.holders == ["doc"] and second.holders == ["nurse"]
    assert first.runs[0].problem == (
        'denied demonstration `doc` with {"cost": ["cost"]}, '
        'expected {"cost": ["cost", "uniquepid"]}'
    )
    assert second.runs[1].problem is not None
    assert second.runs[1].problem.startswith(
        "failed on demonstration `nurse`: RuntimeError: TypeError: can only concatenate str"
    )
    note = unverified_note(load_profile(str(folder)))
    assert note is not None and "the program of demonstration `doc` denied" in note
    assert "the program of demonstration `nurse` " in note

    only_denials = _write_profile(
        tmp_path, [_demo("doc", "physician", 1, details={"cost": ["cost"]})], name="half"
    )
    check = check_profile(load_profile(str(only_denials)))
    assert check.programs[0].runs[0].problem is None  # right on its one demonstration...
    assert (
        "verification needs demonstrations of both an allowed (label 0) and a denied "
        "(label 1) event; the profile has label 1 only"  # ...but that proves nothing
        in check.programs[0].problems
    )
    assert not check.verified


def test_check_on_an_unverified_profile_says_what_failed_once(tmp_path: Path) -> None:
    folder = _write_profile(
        tmp_path,
        [
            _demo("nurse-cost", "nursing", 1, details={"cost": ["cost"]}),
            _demo("admin", "general administration", 0),
        ],
    )
    result = CliRunner().invoke(
        main,
        [
            "check",
            "--profile",
            str(folder),
            "--input",
            "Identity: nursing\nQuestion: cost?",
            "--output",
            "o",
            "--memory-dir",
            str(tmp_path / "memory"),
        ],
    )
    assert result.exit_code == 1, result.output  # denied
    decision = json.loads(result.stdout)
    assert decision["allowed"] is False
    assert decision["error"].startswith(
        "profile 'mine' has no verified program: its program "
        "gave label 0 on demonstration `nurse-cost`, expected 1"
    )
    notes = [line for line in result.stderr.splitlines() if "nurse-cost" in line]
    assert len(notes) <= 1  # said once, by the user's id, never by a content hash


def test_profile_check_command_prints_a_table_and_fails(tmp_path: Path) -> None:
    folder = _write_profile(
        tmp_path,
        [
            _demo("nurse-cost", "nursing", 1, details={"cost": ["cost"]}),
            _demo("doctor-ok", "general administration", 0),
        ],
    )
    result = CliRunner().invoke(main, ["profile", "check", str(folder)])
    assert result.exit_code == 1
    assert "program 1 (in nurse-cost, doctor-ok; 5 lines): NOT VERIFIED" in result.output
    row = next(line for line in result.output.splitlines() if "nurse-cost " in line)
    assert row.split()[:5] == ["nurse-cost", "deny", '{"cost":', '["cost"]}', "allow"]
    assert "FAIL: gave label 0 on demonstration `nurse-cost`, expected 1" in row
    assert "0 of 1 program(s) verified" in result.output

    good = CliRunner().invoke(main, ["profile", "check", "mind2web-sc"])
    assert good.exit_code == 0, good.output
    assert "1 of 1 program(s) verified" in good.output and "FAIL" not in good.output


def test_profile_errors_speak_in_the_profiles_terms(tmp_path: Path) -> None:
    no_code = _demo("nurse-cost", "nursing", 1)
    del no_code["code"]
    folder = _write_profile(tmp_path, [no_code, _demo("two", "nursing", 3)])
    result = CliRunner().invoke(main, ["profile", "check", str(folder)])
    assert result.exit_code == 2  # a profile that does not load: input it could not read
    assert result.output == (
        f"Error: {folder}/profile.yaml: invalid profile:\n"
        "  - demonstration 1 (id 'nurse-cost'): no `code`: give its guard program as `code` "
        "(the program's text) or `program` (a file next to profile.yaml)\n"
        "  - demonstration 2 (id 'two'): `label`: Input should be less than or equal to 1\n"
    )
    (folder / "demonstrations.jsonl").write_text('{"id": "x"}\n{"id": \n')
    result = CliRunner().invoke(
        main, ["check", "--profile", str(folder), "--input", "i", "--output", "o"]
    )
    assert result.exit_code == 2  # check: a profile it could not read (1 means denied)
    assert f"{folder}/demonstrations.jsonl line 2: not valid JSON" in result.output


# -- 4. no silent defaults, no silent failures ------------------------------------------------


# an EHRAgent log eicu-ac can read (a code cell touching no table): its events are decided
READABLE_EHR_OUTPUT = 'Knowledge:\n- k\nSolution:\n{\n"cell": "answer = 1"\n}\n1\nTERMINATE'


def _cases_file(path: Path, n: int = 2) -> Path:
    rows = [
        {
            "id": f"x{i}",
            "agent_input": "Identity: nursing\nQuestion: cost?",
            "agent_output": READABLE_EHR_OUTPUT,
            "label": 0,
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_baseline_against_a_dead_server_fails_loudly(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--profile",
            "eicu-ac",
            "--method",
            "baseline",
            "--model",
            "gpt-4o",
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "--cases",
            str(_cases_file(tmp_path / "c.jsonl", 1)),
            "--out",
            str(out),
            "--quiet",
            "--no-plots",
        ],
    )
    assert result.exit_code == 3, result.output
    assert "WARNING: 1 of 1 decisions (100.0%) failed closed" in result.stderr
    assert "most common reason: baseline model failed (1)" in result.stderr
    metrics = json.loads((out / "metrics.json").read_text())  # the files are still written
    assert metrics["fail_closed"]["could_not_decide"] == 1
    assert metrics["fail_closed"]["first_error"].startswith("baseline model failed: ")


def test_an_unverified_profile_fails_the_eval_and_a_threshold_can_allow_it(tmp_path: Path) -> None:
    folder = _write_profile(
        tmp_path,
        [
            _demo("nurse-cost", "nursing", 1, details={"cost": ["cost"]}),
            _demo("admin", "general administration", 0),
        ],
    )
    cases = _cases_file(tmp_path / "c.jsonl")
    args = ["eval", "--profile", str(folder), "--cases", str(cases), "--quiet", "--no-plots"]
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "a")])
    assert result.exit_code == 3 and "2 of 2 decisions (100.0%) failed closed" in result.stderr
    result = CliRunner().invoke(
        main, [*args, "--out", str(tmp_path / "b"), "--max-failed-closed", "1"]
    )
    assert result.exit_code == 3  # every decision failed: still at the threshold
    assert compute_metrics([], [])["fail_closed"]["could_not_decide"] == 0


def test_a_few_failures_do_not_fail_the_eval() -> None:
    from guardagent.eval.metrics import failed_closed_warning

    cases = [Case(id=f"c{i}", agent_input="i", agent_output="o", label=0) for i in range(4)]
    ok = GuardDecision(allowed=True, label=0, guardrailed_output="o")
    stuck = GuardDecision(allowed=False, label=1, error="program failed after 3 attempt(s): x")
    blind = GuardDecision(
        allowed=False,
        label=1,
        error="unreadable evidence: no_code: none",
        unreadable=[{"reason": "no_code", "detail": "none"}],
    )
    assert failed_closed_warning(compute_metrics(cases, [ok, ok, ok, stuck])) is None
    assert failed_closed_warning(compute_metrics(cases, [ok, ok, stuck, stuck])) is not None
    # a blind guard failed closed too: a run that could read nothing measured nothing
    assert failed_closed_warning(compute_metrics(cases, [ok, ok, ok, blind])) is None
    warning = failed_closed_warning(compute_metrics(cases, [ok, blind, blind, blind]))
    assert warning is not None and "3 of 4" in warning and "3 of them" in warning
    assert failed_closed_warning(compute_metrics(cases, [ok, ok, ok, stuck]), 0.25) is not None


def test_a_wrong_guardagent_data_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GUARDAGENT_DATA", str(tmp_path / "nowhere"))
    result = CliRunner().invoke(
        main, ["eval", "--profile", "mind2web-sc", "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 2
    assert f"GUARDAGENT_DATA={tmp_path / 'nowhere'} holds no benchmark data" in result.output
    result = CliRunner().invoke(
        main, ["export-cases", "--profile", "eicu-ac", "--out", str(tmp_path / "x.jsonl")]
    )
    assert result.exit_code == 2 and "holds no benchmark data" in result.output


def test_rerun_into_an_interrupted_out_dir_is_refused(tmp_path: Path) -> None:
    cases = _cases_file(tmp_path / "c.jsonl", 3)
    out = tmp_path / "run"
    args = [
        "eval",
        "--profile",
        "eicu-ac",
        "--cases",
        str(cases),
        "--out",
        str(out),
        "--quiet",
        "--no-plots",
    ]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0
    assert "what LPA, LPP, LPR, CCA and FRA mean: report.md, or guardagent eval --help" in " ".join(
        first.stderr.split()
    )  # the console points to the definitions
    assert CliRunner().invoke(main, args).exit_code == 0  # a finished run may be replaced
    partial = (out / "predictions.jsonl").read_text().splitlines()[:2]
    (out / "predictions.jsonl").unlink()
    (out / "predictions.partial.jsonl").write_text("\n".join(partial) + "\n")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "holds 2 decision(s) of an interrupted run" in result.output
    assert "--resume" in result.output and "--overwrite" in result.output
    assert (out / "predictions.partial.jsonl").is_file()  # nothing was dropped
    result = CliRunner().invoke(main, [*args, "--resume"])
    assert result.exit_code == 0 and "resumed 2 decisions" in result.stderr
    (out / "predictions.partial.jsonl").write_text("\n".join(partial) + "\n")
    result = CliRunner().invoke(main, [*args, "--overwrite"])
    assert result.exit_code == 0 and "resumed" not in result.stderr


def test_run_program_exits_non_zero_without_a_verdict(tmp_path: Path) -> None:
    prog = tmp_path / "p.py"
    base = ["run-program", str(prog), "--profile", "eicu-ac", "--input", "i", "--output", "o"]
    for source, error in [
        ("import os\nallow('x')\n", "import"),  # rejected before running
        ("x = 1 / 0\n", "ZeroDivisionError"),  # failed
        ("while True:\n    pass\n", "imit"),  # timed out / killed
        ("x = 1\n", "NoVerdict"),  # ran, decided nothing
    ]:
        prog.write_text(source)
        result = CliRunner().invoke(main, [*base, "--timeout", "1"])
        out = json.loads(result.stdout)
        assert result.exit_code == 1, source
        assert out["ok"] is False and out["decision"] is None and error in out["error"], out
    prog.write_text("deny({'cost': ['cost']}, 'no')\n")
    assert CliRunner().invoke(main, base).exit_code == 0  # a denial is a verdict


@pytest.mark.parametrize(
    "command",
    [
        ["eval", "--out", "unused"],
        ["export-cases", "--out", "unused.jsonl"],
        ["check", "--input", "i", "--output", "o"],
    ],
)
def test_a_mistyped_profile_is_unknown_with_the_known_names(command: list[str]) -> None:
    result = CliRunner().invoke(main, [command[0], "--profile", "eicu_ac", *command[1:]])
    assert result.exit_code == 2  # every command: input it could not read (1 means denied)
    assert "unknown profile 'eicu_ac'" in result.output
    assert ", ".join(builtin_profiles()) in result.output
    assert "--cases" not in result.output


def test_a_profile_without_a_benchmark_says_so(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["eval", "--profile", "tool-calls", "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 2
    shipped = ", ".join(PROFILE_BENCHMARKS)
    assert "eicu-ac, " in shipped and "mind2web-sc" in shipped
    assert (
        f"profile 'tool-calls' ships no benchmark (only {shipped} do); pass --cases FILE.jsonl"
    ) in result.output
    result = CliRunner().invoke(
        main, ["export-cases", "--profile", "tool-calls", "--out", str(tmp_path / "x.jsonl")]
    )
    assert result.exit_code == 2
    assert f"ships no benchmark to export (only {shipped} do)" in result.output


# -- 5. cold start: nothing heavy is imported before it is needed -----------------------------

# The last four are fine for check (readers, decisions) but cost --help about 0.3 s.
HEAVY = (
    "langgraph",
    "chromadb",
    "matplotlib",
    "langchain_openai",
    "openai",
    "langchain",
    "pydantic",
    "numpy",
    "sqlglot",
    "z3",
)
PROBE = """import json, sys
from guardagent.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
heavy = sorted(p for p in {heavy!r} if p in sys.modules)
print("\\nHEAVY=" + json.dumps(heavy))
"""


def _heavy_after(args: list[str], tmp_path: Path) -> list[str]:
    env = {**os.environ, "GUARDAGENT_MEMORY_DIR": str(tmp_path / "memory")}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    marker = [line for line in proc.stdout.splitlines() if line.startswith("HEAVY=")]
    assert marker, proc.stderr
    return list(json.loads(marker[0].removeprefix("HEAVY=")))


def test_help_imports_nothing_heavy(tmp_path: Path) -> None:
    assert _heavy_after(["--help"], tmp_path) == []
    assert _heavy_after(["eval", "--help"], tmp_path) == []


def test_offline_check_and_eval_import_no_model_client_and_no_plotting(tmp_path: Path) -> None:
    heavy = _heavy_after(
        [
            "check",
            "--profile",
            "mind2web-sc",
            "--input",
            ADULT_HOTEL_INPUT,
            "--output",
            HOTEL_OUTPUT,
            "--quiet",
        ],
        tmp_path,
    )
    assert "langgraph" in heavy  # the guard graph itself is the one thing check needs
    assert not {"matplotlib", "langchain_openai", "openai", "langchain"} & set(heavy)
    cases = _cases_file(tmp_path / "c.jsonl", 1)
    heavy = _heavy_after(
        [
            "eval",
            "--profile",
            "eicu-ac",
            "--cases",
            str(cases),
            "--out",
            str(tmp_path / "run"),
            "--quiet",
            "--no-plots",
        ],
        tmp_path,
    )
    assert "matplotlib" not in heavy and "openai" not in heavy


def test_check_with_a_shipped_program_opens_no_memory(tmp_path: Path) -> None:
    heavy = _heavy_after(
        [
            "check",
            "--profile",
            "mind2web-sc",
            "--input",
            ADULT_HOTEL_INPUT,
            "--output",
            HOTEL_OUTPUT,
            "--quiet",
        ],
        tmp_path,
    )
    assert "chromadb" not in heavy
    assert not (tmp_path / "memory").exists()


def test_loading_a_profile_does_not_open_the_memory_stack() -> None:
    code = (
        "import sys; from guardagent.profiles.loader import load_profile; "
        "p = load_profile('eicu-ac'); print(len(p.demonstrations), "
        "'chromadb' in sys.modules, 'langgraph' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["3", "False", "False"]


def test_check_quiet_and_fields() -> None:
    args = [
        "check",
        "--profile",
        "mind2web-sc",
        "--input",
        ADULT_HOTEL_INPUT,
        "--output",
        HOTEL_OUTPUT,
    ]
    full = json.loads(CliRunner().invoke(main, args).stdout)
    assert full["program"]
    quiet = json.loads(CliRunner().invoke(main, [*args, "--quiet"]).stdout)
    assert "program" not in quiet and quiet["allowed"] == full["allowed"]
    picked = CliRunner().invoke(main, [*args, "--fields", "allowed, reason"])
    assert list(json.loads(picked.stdout)) == ["allowed", "reason"]
    bad = CliRunner().invoke(main, [*args, "--fields", "allowed,verdict"])
    assert bad.exit_code == 2 and "unknown field(s) verdict" in bad.output


# -- 6. where the state lives ---------------------------------------------------------------


def test_memory_info_and_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory_dir = tmp_path / "memory"
    monkeypatch.setenv("GUARDAGENT_MEMORY_DIR", str(memory_dir))
    runner = CliRunner()
    result = runner.invoke(main, ["memory", "info"])
    assert result.exit_code == 0
    assert result.output == (
        f"memory: {memory_dir} (local directory)\n"
        "  nothing stored yet: it is created on first use\n"
    )
    assert not memory_dir.exists()  # looking does not create it

    cases = str(_cases_file(tmp_path / "c.jsonl", 1))
    for profile, where in (("mind2web-sc", tmp_path / "other"), ("eicu-ac", memory_dir)):
        seeded = runner.invoke(
            main,
            [
                "eval",
                "--profile",
                profile,
                "--cases",
                cases,
                "--out",
                str(tmp_path / profile),
                "--quiet",
                "--no-plots",
                "--memory-dir",
                str(where),
            ],
        )  # an eval seeds its memory
        # mind2web-sc cannot read an EHR log: its only decision failed closed (exit 3)
        assert seeded.exit_code == (3 if profile == "mind2web-sc" else 0), seeded.output
    info = json.loads(runner.invoke(main, ["memory", "info", "--json"]).stdout)
    assert info["location"] == str(memory_dir) and info["exists"]
    assert [c["name"].split(".")[0] for c in info["collections"]] == ["guardagent-eicu-ac"]
    demos = 3
    assert info["records"] == demos and info["collections"][0]["verified_programs"] == 1
    text = runner.invoke(main, ["memory", "info", "--profile", "eicu-ac"]).output
    assert f"{demos} record(s), 1 verified program(s); {demos} of the profile as it is now" in text

    refused = runner.invoke(main, ["memory", "clear", "--profile", "eicu-ac"])
    assert refused.exit_code == 1 and "run again with --yes" in refused.output
    assert json.loads(runner.invoke(main, ["memory", "info", "--json"]).stdout)["records"] == demos
    done = runner.invoke(main, ["memory", "clear", "--profile", "eicu-ac", "--yes"])
    assert done.exit_code == 0
    assert done.output == f"deleted {demos} record(s) of profile eicu-ac from {memory_dir}\n"
    assert json.loads(runner.invoke(main, ["memory", "info", "--json"]).stdout)["records"] == 0
    again = runner.invoke(main, ["memory", "clear", "--profile", "eicu-ac", "--yes"])
    assert again.exit_code == 0 and "nothing to clear" in again.output
    # --memory-dir wins over the environment
    other = json.loads(
        runner.invoke(
            main, ["memory", "info", "--json", "--memory-dir", str(tmp_path / "other")]
        ).stdout
    )
    assert [c["name"].split(".")[0] for c in other["collections"]] == ["guardagent-mind2web-sc"]


def test_memory_commands_name_unknown_profiles(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["memory", "clear", "--profile", "eicu_ac", "--yes", "--memory-dir", str(tmp_path)]
    )
    assert result.exit_code == 2 and "unknown profile 'eicu_ac'" in result.output


# -- 7. small things ------------------------------------------------------------------------


def test_report_shows_each_deciding_program_once_and_links_it() -> None:
    cases = [
        Case(id=f"w{i}", agent_input="i", agent_output="o", label=1, violations=["r"])
        for i in range(4)
    ]
    program_a = "# program A\n" + "x = 1\n" * 200 + "allow('a')\n"
    program_b = "# program B\nallow('b')\n"
    decisions = [
        GuardDecision(
            allowed=True,
            label=0,
            guardrailed_output="o",
            program=program_a,
            program_source="memory",
        ),
        GuardDecision(
            allowed=True,
            label=0,
            guardrailed_output="o",
            program=program_b,
            program_source="generated",
        ),
        GuardDecision(
            allowed=True,
            label=0,
            guardrailed_output="o",
            program=program_a,
            program_source="memory",
        ),
        GuardDecision(allowed=False, label=1, error="no verified program"),
    ]
    report = render_report("p", compute_metrics(cases, decisions), cases, decisions)
    assert report.count("# program A") == 1 and report.count("# program B") == 1
    assert report.count("x = 1") == 200  # shown in full, not clipped
    links = [line for line in report.splitlines() if line.startswith("- program that decided")]
    assert links == [
        f"- program that decided: [program 1](#program-1) (memory, {len(program_a)} chars)",
        f"- program that decided: [program 2](#program-2) (generated, {len(program_b)} chars)",
        f"- program that decided: [program 1](#program-1) (memory, {len(program_a)} chars)",
        "- program that decided: none (no program ran)",
    ]
    programs = report.split("## Programs that decided them")[1]
    assert programs.index('<a id="program-1"></a>') < programs.index("# program A")
    assert programs.index('<a id="program-2"></a>') < programs.index("# program B")


def test_per_rule_plot_wraps_long_names_instead_of_cutting_them() -> None:
    from guardagent.eval.plots import breakdown_figure

    rule = (
        "User must be in certain countries to search movies/musics/video and must also be "
        "a member of the streaming service"
    )
    cases = [
        Case(
            id="a",
            agent_input="i",
            agent_output="o",
            label=1,
            violations=[rule],
            meta={"rule": rule},
        ),
        Case(id="b", agent_input="i", agent_output="o", label=0, meta={"rule": "none"}),
    ]
    decisions = [
        GuardDecision(allowed=False, label=1, violations=[rule]),
        GuardDecision(allowed=True, label=0, guardrailed_output="o"),
    ]
    fig = breakdown_figure(compute_metrics(cases, decisions), "rule")
    labels = [tick.get_text() for tick in fig.axes[0].get_yticklabels()]
    assert labels[1] == "none"
    assert "\n" in labels[0] and " ".join(labels[0].split()) == rule
    assert "..." not in labels[0]


def test_json_errors_say_at_once() -> None:
    from guardagent.eval.cases import parse_case_line

    with pytest.raises(ValueError) as err:
        parse_case_line('{"id": "unterminated')
    assert str(err.value) == "not valid JSON (Unterminated string starting at column 8)"
    with pytest.raises(ValueError) as err:
        parse_case_line('{"id": }')
    assert str(err.value) == "not valid JSON (Expecting value at column 8)"
