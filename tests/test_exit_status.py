"""One exit-status table for every command, run over each edge (docs/reference/exit-status.md).

0 done / allowed, 1 denied / the check failed, 2 input or a setting it could not read (and
evidence it refused to read), 3 `eval` mostly failed closed, 130 interrupted. A script or a
hook must be able to tell a denial from a typo without reading the output.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from guardagent.cli import main
from tests.guards import MakeGuard

HERE = Path(__file__).parent
NURSE_IN = "Identity: nursing\nQuestion: what is the cost of the last stay of patient 001-1?"
ADULT_IN = "Task: Book a double room at a hotel in Lisbon\nUser information:\n   age: 40"
TRACE = HERE / "traces" / "b01_rent_openai.json"
UNSAT = HERE / "policies" / "unsat.yaml"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "send_email",
            "description": "Send mail.",
            "parameters": {"type": "object", "properties": {"to": {"type": "string"}}},
        },
    }
]
VERIFY = [
    "policy",
    "verify",
    "tool-calls",
    "--assign",
    "calls_transfer_funds=true",
    "--assign",
    "transfer_amount_over_1000=true",
]


def _files(tmp: Path) -> None:
    """The inputs the edges name as {tmp}/NAME."""
    (tmp / "cases.jsonl").write_text(
        json.dumps({"id": "x", "agent_input": NURSE_IN, "agent_output": "no code", "label": 1})
        + "\n"
    )
    (tmp / "bad.jsonl").write_text('{"id": "y", "label": 0}\n')
    (tmp / "prog.py").write_text("allow('x')\n")
    (tmp / "reads.py").write_text("ehr_accessed_columns(agent_output)\nallow('x')\n")
    (tmp / "none-given.py").write_text("x = 1\n")
    (tmp / "tools-utf8.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    (tmp / "tools-utf16.json").write_bytes(json.dumps(TOOLS).encode("utf-16"))
    (tmp / "tools-utf8-bom.json").write_bytes(json.dumps(TOOLS).encode("utf-8-sig"))
    (tmp / "not-json.json").write_text("[{")


# (name, argv, environment, expected status). Only offline paths: no model, no network.
EDGES: list[tuple[str, list[str], dict[str, str], int]] = [
    # check: 0 allowed, 1 denied, 2 input (or evidence) it could not read
    (
        "check oversized event",
        ["check", "--profile", "mind2web-sc", "--input", ADULT_IN, "--output", "x" * 400],
        {"GUARDAGENT_MAX_EVENT_CHARS": "200"},
        2,
    ),
    (
        "check oversized trace",
        ["check", "--profile", "assistant-trace", "--trace", str(TRACE)],
        {"GUARDAGENT_MAX_TRACE_BYTES": "200"},
        2,
    ),
    (
        "check missing file",
        ["check", "--profile", "eicu-ac", "--input", NURSE_IN, "--output", "@{tmp}/missing.txt"],
        {},
        2,
    ),
    (
        "check unknown profile",
        ["check", "--profile", "nope", "--input", "a", "--output", "b"],
        {},
        2,
    ),
    (
        "check bad setting",
        ["check", "--profile", "eicu-ac", "--input", "a", "--output", "b"],
        {"GUARDAGENT_MAX_EVENT_CHARS": "many"},
        2,
    ),
    # eval: 2 on bad input whichever argument is wrong
    ("eval unknown profile", ["eval", "--profile", "nope", "--out", "{tmp}/r"], {}, 2),
    (
        "eval missing cases",
        ["eval", "--profile", "eicu-ac", "--cases", "{tmp}/none.jsonl", "--out", "{tmp}/r"],
        {},
        2,
    ),
    (
        "eval malformed cases",
        ["eval", "--profile", "eicu-ac", "--cases", "{tmp}/bad.jsonl", "--out", "{tmp}/r"],
        {},
        2,
    ),
    ("eval no benchmark", ["eval", "--profile", "tool-calls", "--out", "{tmp}/r"], {}, 2),
    (
        "eval baseline offline",
        [
            "eval",
            "--profile",
            "eicu-ac",
            "--method",
            "baseline",
            "--cases",
            "{tmp}/cases.jsonl",
            "--out",
            "{tmp}/r",
        ],
        {},
        2,
    ),
    ("eval bad option", ["eval", "--profile", "eicu-ac", "--k", "0", "--out", "{tmp}/r"], {}, 2),
    (
        "eval mostly failed closed",
        [
            "eval",
            "--profile",
            "eicu-ac",
            "--cases",
            "{tmp}/cases.jsonl",
            "--out",
            "{tmp}/r",
            "--quiet",
            "--no-plots",
        ],
        {},
        3,
    ),
    # run-program, export-cases, profile, memory, serve: 2 on input they could not read
    (
        "run-program unknown profile",
        ["run-program", "{tmp}/prog.py", "--profile", "nope", "--input", "a", "--output", "b"],
        {},
        2,
    ),
    (
        "run-program unreadable event",
        [
            "run-program",
            "{tmp}/reads.py",
            "--profile",
            "eicu-ac",
            "--input",
            NURSE_IN,
            "--output",
            "no code here",
        ],
        {},
        2,
    ),
    (
        "run-program verdict",
        ["run-program", "{tmp}/prog.py", "--profile", "eicu-ac", "--input", "a", "--output", "b"],
        {},
        0,
    ),
    (
        "run-program no verdict",
        [
            "run-program",
            "{tmp}/none-given.py",
            "--profile",
            "eicu-ac",
            "--input",
            "a",
            "--output",
            "b",
        ],
        {},
        1,
    ),
    (
        "run-program missing program",
        ["run-program", "{tmp}/none.py", "--profile", "eicu-ac", "--input", "a", "--output", "b"],
        {},
        2,
    ),
    (
        "export-cases unknown profile",
        ["export-cases", "--profile", "nope", "--out", "{tmp}/x.jsonl"],
        {},
        2,
    ),
    (
        "export-cases no benchmark",
        ["export-cases", "--profile", "tool-calls", "--out", "{tmp}/x.jsonl"],
        {},
        2,
    ),
    ("profile check unknown", ["profile", "check", "{tmp}/no-profile"], {}, 2),
    (
        "profile new not json",
        ["profile", "new", "p", "--tools", "{tmp}/not-json.json", "--out", "{tmp}/p"],
        {},
        2,
    ),
    (
        "profile new utf-8",
        ["profile", "new", "p", "--tools", "{tmp}/tools-utf8.json", "--out", "{tmp}/p"],
        {},
        0,
    ),
    (
        "profile new utf-16",
        ["profile", "new", "p", "--tools", "{tmp}/tools-utf16.json", "--out", "{tmp}/p"],
        {},
        0,
    ),
    (
        "profile new utf-8 bom",
        ["profile", "new", "p", "--tools", "{tmp}/tools-utf8-bom.json", "--out", "{tmp}/p"],
        {},
        0,
    ),
    (
        "memory info unknown profile",
        ["memory", "info", "--profile", "nope", "--memory-dir", "{tmp}/m"],
        {},
        2,
    ),
    (
        "memory clear unknown profile",
        ["memory", "clear", "--profile", "nope", "--yes", "--memory-dir", "{tmp}/m"],
        {},
        2,
    ),
    ("serve bad setting", ["serve"], {"GUARDAGENT_POOL_SIZE": "many"}, 2),
    # policy: verify decides (0 allow, 1 deny); check / diff fail with 1; unreadable is 2
    ("policy verify allow", [*VERIFY, "--assign", "user_is_verified=true"], {}, 0),
    ("policy verify deny", [*VERIFY, "--assign", "user_is_verified=false"], {}, 1),
    ("policy verify open", [*VERIFY, "--assign", "user_is_verified=open"], {}, 1),
    (
        "policy verify undeclared",
        ["policy", "verify", "tool-calls", "--assign", "ghost=true"],
        {},
        2,
    ),
    ("policy verify missing", ["policy", "verify", "{tmp}/none.yaml"], {}, 2),
    ("policy check errors", ["policy", "check", str(UNSAT)], {}, 1),
    ("policy check missing", ["policy", "check", "{tmp}/none.yaml"], {}, 2),
    ("policy diff differ", ["policy", "diff", str(UNSAT), "tool-calls"], {}, 1),
    ("policy diff missing", ["policy", "diff", "{tmp}/none.yaml", "tool-calls"], {}, 2),
    ("policy review missing", ["policy", "review", "{tmp}/none.yaml"], {}, 2),
    (
        "policy optimize missing",
        ["policy", "optimize", "{tmp}/none.yaml", "--out", "{tmp}/o.yaml"],
        {},
        2,
    ),
    (
        "policy extract no model",
        ["policy", "extract", "{tmp}/prog.py", "--out", "{tmp}/o.yaml"],
        {},
        2,
    ),
]


@pytest.mark.parametrize(
    ("argv", "env", "expected"), [e[1:] for e in EDGES], ids=[e[0] for e in EDGES]
)
def test_every_command_exits_by_the_table(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    env: dict[str, str],
    expected: int,
) -> None:
    _files(tmp_path)
    monkeypatch.setenv("GUARDAGENT_MEMORY_DIR", str(tmp_path / "memory"))
    monkeypatch.setenv("GUARDAGENT_DATA", str(tmp_path / "no-data"))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == expected, (args[:3], result.output[-600:], result.exception)
    assert "Traceback" not in result.output


@pytest.mark.parametrize("size_env", ["GUARDAGENT_MAX_EVENT_CHARS", "GUARDAGENT_MAX_TRACE_BYTES"])
def test_oversized_evidence_is_unreadable_with_its_reason(
    monkeypatch: pytest.MonkeyPatch, size_env: str
) -> None:
    """An event or a trace over the limit: both denied, both naming why in `unreadable`."""
    monkeypatch.setenv(size_env, "200")
    if size_env == "GUARDAGENT_MAX_EVENT_CHARS":
        args = ["check", "--profile", "mind2web-sc", "--input", ADULT_IN, "--output", "y" * 300]
    else:
        args = ["check", "--profile", "assistant-trace", "--trace", str(TRACE)]
    result = CliRunner().invoke(main, [*args, "--fields", "allowed,unreadable,error"])
    shown = json.loads(result.output)
    assert shown["allowed"] is False and result.exit_code == 2
    assert [u["reason"] for u in shown["unreadable"]] in (["oversized_event"], ["trace_too_large"])
    assert shown["error"]


@pytest.mark.parametrize(
    "command", ["check", "eval", "run-program", "export-cases", "profile", "memory", "serve"]
)
def test_every_help_shows_the_table(command: str) -> None:
    args = [command, "--help"] if command not in ("profile", "memory") else [command, "--help"]
    shown = CliRunner().invoke(main, args).output
    assert "Exit status" in shown and "130" in shown, shown


@pytest.mark.parametrize("command", ["check", "verify", "diff", "extract", "review"])
def test_every_policy_help_shows_the_table(command: str) -> None:
    shown = CliRunner().invoke(main, ["policy", command, "--help"]).output
    assert "Exit status" in shown and "130" in shown, shown


SLOW_START = """
import sys, time
import guardagent.eval.benchmarks as benchmarks

def slow(profile):
    sys.stderr.write("starting\\n"); sys.stderr.flush()
    time.sleep(60)

benchmarks.load_benchmark = slow
from guardagent.cli import main
sys.argv[0] = "guardagent"
main()
"""


@pytest.mark.parametrize("where", ["start-up", "import"])
def test_ctrl_c_during_eval_start_up_exits_130(tmp_path: Path, where: str) -> None:
    """Ctrl-C before the first decision: 130 like Ctrl-C during the run, and no traceback."""
    env = {
        **os.environ,
        "GUARDAGENT_MEMORY_DIR": str(tmp_path / "m"),
        "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]),
    }
    args = ["eval", "--profile", "mind2web-sc", "--out", str(tmp_path / "r"), "--quiet"]
    if where == "start-up":
        cmd = [sys.executable, "-c", SLOW_START, *args]
    else:
        cmd = [sys.executable, "-m", "guardagent.entry", *args]
    # The import variant cannot see where the child is: on a loaded machine the signal may
    # land before or while the interpreter starts (not this code's), so it tries three delays.
    seen = []
    for delay in (0.5, 1.5, 3.0) if where == "import" else (0.0,):
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            if where == "start-up":
                assert proc.stderr is not None
                assert proc.stderr.readline() == "starting\n"
            else:
                time.sleep(delay)  # python is up; the command's imports are under way
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=60)
        finally:
            proc.kill()
        assert "Traceback" not in stderr
        seen.append((proc.returncode, stderr))
        if proc.returncode == 130:
            break
    assert seen[-1][0] == 130, seen


@pytest.fixture(scope="module")
def guard(make_guard: MakeGuard) -> object:
    return make_guard("mind2web-sc")


@pytest.mark.parametrize(
    ("limit", "input_chars", "output_chars"),
    [
        (100, 0, 101),
        (100, 101, 0),
        (100, 50, 51),
        (1, 1, 1),
        (5000, 4000, 1001),
        (100, 100, 0),
        (100, 60, 40),
        (5000, 2500, 2500),
    ],
)
def test_an_event_over_the_limit_and_only_such_an_event_is_oversized(
    guard: Any, limit: int, input_chars: int, output_chars: int
) -> None:
    decision = guard.check("i" * input_chars, "o" * output_chars, max_event_chars=limit)
    over = input_chars + output_chars > limit
    reasons = [u["reason"] for u in decision.unreadable]
    assert ("oversized_event" in reasons) is over, (limit, input_chars, output_chars)
    if over:
        assert decision.allowed is False and reasons == ["oversized_event"]
        assert f"{input_chars + output_chars:,} characters" in decision.unreadable[0]["detail"]
        assert decision.llm_calls == 0
