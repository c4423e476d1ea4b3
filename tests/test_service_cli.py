"""`guardagent check --server URL`: the JSON and the exit status of a local check.

The service runs in this process (uvicorn in a thread, on a loopback port, no database); the
CLI talks to it over HTTP like a shell hook would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from guardagent.cli import main
from guardagent.context import GuardContext
from guardagent.service.client import GuardClient, ServiceError
from guardagent.service.settings import ServiceSettings
from tests.pg_server import free_port
from tests.service_thread import serving
from tests.test_service_app import ADULT, MINOR, OUTPUT

TRACES = Path(__file__).parent / "traces"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serving(ServiceSettings(guard=GuardContext(profile="mind2web-sc"))) as base:
        yield base


def _check(url: str, *args: str) -> Any:
    return CliRunner().invoke(main, ["check", "--server", url, "--profile", "mind2web-sc", *args])


def test_exit_status_is_zero_on_allow_and_one_on_deny(url: str) -> None:
    allowed = _check(url, "--input", ADULT, "--output", OUTPUT)
    assert allowed.exit_code == 0, allowed.output
    assert json.loads(allowed.output)["allowed"] is True
    denied = _check(url, "--input", MINOR, "--output", OUTPUT, "--quiet")
    assert denied.exit_code == 1
    shown = json.loads(denied.output)
    assert shown["allowed"] is False and "program" not in shown


def test_fields_and_thread_reach_the_service(url: str) -> None:
    result = _check(
        url,
        "--input",
        MINOR,
        "--output",
        OUTPUT,
        "--fields",
        "allowed,label",
        "--thread-id",
        "cli-thread",
        "--idempotency-key",
        "cli-1",
    )
    assert json.loads(result.output) == {"allowed": False, "label": 1}
    again = _check(
        url,
        "--input",
        MINOR,
        "--output",
        OUTPUT,
        "--fields",
        "allowed,label",
        "--thread-id",
        "cli-thread",
        "--idempotency-key",
        "cli-1",
    )
    assert again.output == result.output
    assert len(GuardClient(url).thread("cli-thread")["decisions"]) == 1
    typo = _check(url, "--input", MINOR, "--output", OUTPUT, "--fields", "allowd")
    assert typo.exit_code == 2 and "unknown field" in typo.output


def test_input_the_service_cannot_read_exits_two(url: str, tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"messages": []}))
    result = _check(url, "--trace", str(trace))  # mind2web-sc has no trace policy
    assert result.exit_code == 2 and "trace" in result.output
    missing = _check(url, "--trace", str(tmp_path / "absent.json"))
    assert missing.exit_code == 2 and "no such file" in missing.output


def test_deployment_options_are_refused_with_server(url: str) -> None:
    for extra in (
        ["--model", "openai:gpt-4o"],
        ["--memory-dir", "/tmp/m"],
        ["--base-url", "http://127.0.0.1:1/v1"],
    ):
        result = _check(url, "--input", ADULT, "--output", OUTPUT, *extra)
        assert result.exit_code == 2 and "with --server" in result.output, extra


def test_an_unreachable_service_denies(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "check",
            "--server",
            f"http://127.0.0.1:{free_port()}",
            "--profile",
            "mind2web-sc",
            "--input",
            ADULT,
            "--output",
            OUTPUT,
        ],
    )
    assert result.exit_code == 1
    shown = json.loads(result.stdout)
    assert shown["allowed"] is False and "unreachable" in shown["error"]
    with pytest.raises(ServiceError, match="unreachable"):
        GuardClient(f"http://127.0.0.1:{free_port()}").check(ADULT, OUTPUT)


def test_a_client_with_retries_sends_one_key_for_all_tries(
    url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from guardagent.service import client as client_module

    client = GuardClient(url, retries=2)
    sent: list[Any] = []
    original = client_module.exchange

    def flaky(*args: Any) -> Any:
        sent.append(json.loads(args[5]))
        if len(sent) == 1:
            raise ConnectionResetError("reset")
        return original(*args)

    monkeypatch.setattr(client_module, "exchange", flaky)
    decision = client.check(ADULT, OUTPUT, thread_id="retry-thread")
    assert decision["allowed"] is True
    assert len(sent) == 2 and sent[0]["idempotency_key"] == sent[1]["idempotency_key"]
