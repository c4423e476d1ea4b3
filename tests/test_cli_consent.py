"""`guardagent check --trace` with consent and state: the deployment's environment and key.

Seen failing before the fix: `check` ignored `GUARDAGENT_TRACE_KEY` (and every other
`GUARDAGENT_*` setting), so it accepted an unsigned consent file and wrote an unsigned state
file with the key set, and `--consent` / `--state` ran without any key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from guardagent.cli import main
from guardagent.trace import Consent
from guardagent.trace.predicates.ledger import LEDGER_FIELD
from guardagent.trace.thread.state import verify
from tests.test_consent_binding import paid_and_asked_again
from tests.test_trace_wiring import TRACES, trace_profile

KEY = "cli deployment key"
PAYMENT = TRACES / "i01_inbox_iban_openai.json"
ATTACK = {"iban": "GB82WEST12345698765432", "amount": 4950, "subject": "deposit"}


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(trace_profile(tmp_path_factory.mktemp("profile")))


def run(profile: str, *args: str, key: str | None = KEY, **env: str) -> Result:
    environ = {"GUARDAGENT_TRACE_KEY": key or "", **env}
    return CliRunner().invoke(
        main, ["check", "--profile", profile, *args, "--fields", "allowed,reason"], env=environ
    )


def write(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def one_line_error(result: Result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


def test_consent_and_state_need_the_deployment_key(profile: str, tmp_path: Path) -> None:
    consent = write(tmp_path / "consent.json", [])
    for option, value in (("--consent", consent), ("--state", str(tmp_path / "s.json"))):
        line = one_line_error(run(profile, "--trace", str(PAYMENT), option, value, key=None))
        assert option in line and "GUARDAGENT_TRACE_KEY" in line and "export" in line
    assert not (tmp_path / "s.json").exists()


def test_an_unsigned_consent_file_is_refused_with_the_key_set(profile: str, tmp_path: Path) -> None:
    record = Consent("send_money", args=ATTACK, thread="t1")
    unsigned = write(tmp_path / "unsigned.json", [record.to_json()])
    line = one_line_error(
        run(profile, "--trace", str(PAYMENT), "--consent", unsigned, "--thread-id", "t1")
    )
    assert "record 1" in line and "not signed" in line
    other_key = write(tmp_path / "other.json", [record.signed(b"another key")])
    assert "not signed" in one_line_error(
        run(profile, "--trace", str(PAYMENT), "--consent", other_key, "--thread-id", "t1")
    )
    for bad in ("{not json", '{"tool": "x"}', '[{"tool": "x", "uses": 0}]'):
        (tmp_path / "bad.json").write_text(bad, encoding="utf-8")
        one_line_error(
            run(profile, "--trace", str(PAYMENT), "--consent", str(tmp_path / "bad.json"))
        )


def test_state_is_written_signed_and_an_approval_is_used_once(profile: str, tmp_path: Path) -> None:
    signed = write(
        tmp_path / "consent.json",
        [Consent("send_money", args=ATTACK, thread="t1").signed(KEY.encode())],
    )
    state = tmp_path / "thread.json"
    first = run(
        profile,
        "--trace",
        str(PAYMENT),
        "--consent",
        signed,
        "--state",
        str(state),
        "--thread-id",
        "t1",
    )
    assert first.exit_code == 0, first.output
    assert json.loads(first.output)["allowed"] is True
    saved = json.loads(state.read_text(encoding="utf-8"))
    assert verify({k: v for k, v in saved.items() if k != LEDGER_FIELD}, KEY.encode())
    assert verify(saved[LEDGER_FIELD], KEY.encode()) and saved[LEDGER_FIELD]["thread"] == "t1"
    doc = paid_and_asked_again(json.loads(PAYMENT.read_text(encoding="utf-8")))
    again = run(
        profile,
        "--trace",
        write(tmp_path / "again.json", doc),
        "--consent",
        signed,
        "--state",
        str(state),
    )  # the thread's id comes from its state
    assert again.exit_code == 1, again.output  # denied
    assert json.loads(again.output)["allowed"] is False, "the approval was used"
    moved = run(profile, "--trace", str(PAYMENT), "--state", str(state), "--thread-id", "t2")
    assert json.loads(moved.output)["allowed"] is False, "a state of another thread"


def test_check_reads_every_guardagent_setting_from_the_environment(profile: str) -> None:
    benign = str(TRACES / "b04_share_openai.json")
    assert json.loads(run(profile, "--trace", benign).output)["allowed"] is True
    small = run(profile, "--trace", benign, GUARDAGENT_MAX_TRACE_BYTES="50")
    assert small.exit_code == 2, small.output  # a trace it could not read (too large)
    shown = json.loads(small.output)
    assert shown["allowed"] is False and "trace_too_large" in shown["reason"]
    line = one_line_error(run(profile, "--trace", benign, GUARDAGENT_MAX_TRACE_BYTES="lots"))
    assert "GUARDAGENT_MAX_TRACE_BYTES" in line


def test_approvals_need_the_state_that_counts_their_uses(profile: str, tmp_path: Path) -> None:
    """Seen failing before: with no --state each check started from no ledger, so a record
    approving one payment (uses 1) approved it again on every check whose trace did not show
    the earlier run (a history trimmed by the host, or the same step checked again: three
    checks in a row exited 0; with --state the second is denied, as through the service and
    the middleware, which keep the thread's ledger). A consent file with records now needs
    --state; an empty one does not."""
    signed = write(
        tmp_path / "consent.json",
        [Consent("send_money", args=ATTACK, thread="t1").signed(KEY.encode())],
    )
    for _ in range(2):
        line = one_line_error(
            run(profile, "--trace", str(PAYMENT), "--consent", signed, "--thread-id", "t1")
        )
        assert "--state" in line and "uses" in line
    empty = write(tmp_path / "empty.json", [])
    assert run(profile, "--trace", str(PAYMENT), "--consent", empty).exit_code == 1
