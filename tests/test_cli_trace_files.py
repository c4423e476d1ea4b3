"""`guardagent check --trace`: corrupt or misplaced state files end in a denial or a one-line error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from guardagent.cli import main

TRACE = Path(__file__).parent / "traces" / "b01_rent_openai.json"


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return {"GUARDAGENT_TRACE_KEY": "k" * 64, "GUARDAGENT_MEMORY_DIR": str(tmp_path / "mem")}


@pytest.mark.parametrize("content", [b"{bad", b"\xff\xfe{\x00", b"[1, 2]", b""])
def test_a_corrupt_state_file_is_denied_as_unreadable_state(
    tmp_path: Path, env: dict[str, str], content: bytes
) -> None:
    state = tmp_path / "state.json"
    state.write_bytes(content)
    result = CliRunner().invoke(
        main,
        ["check", "--profile", "assistant-trace", "--trace", str(TRACE), "--state", str(state)],
        env=env,
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    decision = json.loads(result.output)
    assert decision["allowed"] is False
    assert "unreadable_state" in decision["reason"]
    assert state.read_bytes() == content  # nothing is written over it on a denial


def test_directories_where_files_are_expected_say_so(tmp_path: Path, env: dict[str, str]) -> None:
    runner = CliRunner()
    for args in (["--trace", str(tmp_path)], ["--trace", str(TRACE), "--state", str(tmp_path)]):
        result = runner.invoke(main, ["check", "--profile", "assistant-trace", *args], env=env)
        assert result.exit_code == 2, result.output
        assert "directory" in result.output
        assert "Traceback" not in result.output
