"""`guardagent check --trace T --rules applied|all`: the CLI form of `check_trace(rules=...)`,
locally, through the guard service and through the hook's fast path."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from guardagent.cli import main
from guardagent.context import GuardContext
from guardagent.service.hook import fast_check, parse
from guardagent.service.settings import ServiceSettings
from tests.service_thread import serving

TRACE = Path(__file__).parent / "traces" / "b01_rent_openai.json"
PROFILE = "assistant-trace"


def _rules(result: Any) -> list[dict[str, Any]]:
    assert result.exit_code in (0, 1), result.output
    return list(json.loads(result.output)["rules"])


def _check(*args: str) -> Any:
    return CliRunner().invoke(
        main,
        ["check", "--profile", PROFILE, "--trace", str(TRACE), "--fields", "allowed,rules", *args],
    )


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serving(ServiceSettings(guard=GuardContext(profile=PROFILE))) as base:
        yield base


def test_rules_applied_keeps_only_the_rules_that_applied_and_all_is_the_default() -> None:
    every = _rules(_check())
    assert every == _rules(_check("--rules", "all"))
    assert any(r["status"] == "not_applicable" for r in every), "the example needs idle rules"
    applied = _rules(_check("--rules", "applied"))
    assert applied == [r for r in every if r["status"] != "not_applicable"] and applied


def test_rules_is_in_help_and_a_bad_value_or_no_trace_is_a_usage_error() -> None:
    runner = CliRunner()
    shown = runner.invoke(main, ["check", "--help"]).output
    assert "--rules [all|applied]" in shown
    assert _check("--rules", "some").exit_code == 2
    events = runner.invoke(
        main, ["check", "--profile", PROFILE, "--input", "a", "--output", "b", "--rules", "applied"]
    )
    assert events.exit_code == 2 and "--rules" in events.output


def test_rules_applied_through_the_service_and_the_hook_path(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    local = _rules(_check("--rules", "applied"))
    remote = _rules(_check("--server", url, "--rules", "applied"))
    assert [r["id"] for r in remote] == [r["id"] for r in local]
    assert len(_rules(_check("--server", url))) > len(remote)
    argv = ["check", "--server", url, "--profile", PROFILE, "--trace", str(TRACE)]
    assert parse([*argv, "--rules", "applied"]) == {**parse(argv), "rules": "applied"}  # type: ignore[dict-item]
    assert parse([*argv, "--rules", "bogus"]) is None  # click says what is wrong
    assert fast_check([*argv, "--rules", "applied", "--fields", "rules"]) in (0, 1)
    hooked = json.loads(capsys.readouterr().out)["rules"]
    assert [r["id"] for r in hooked] == [r["id"] for r in local]
