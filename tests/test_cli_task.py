"""`check --trace T --task FILE`, locally and through the guard service (issue 20 item 7).

The task file is the host's (JSON or YAML, any Unicode encoding, plain data only); the
service takes it from its caller, the host, and passes it to `check_trace(task=...)`. A task
that cannot be attached is a denial naming why; a file that is not data exits 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from starlette.testclient import TestClient

from guardagent.cli import main
from guardagent.context import GuardContext
from guardagent.policy.task_file import TaskFileError, parse_task_text, read_task_file
from guardagent.service.app import create_app
from guardagent.service.client import GuardClient
from guardagent.service.settings import ServiceSettings
from tests.service_thread import serving

BROWSER = Path(__file__).resolve().parent.parent / "guardagent/policies/examples/browser/traces"
OTHER_ORDER = BROWSER / "i08_task_other_order_openai.json"  # a click to order 5530
THIS_ORDER = BROWSER / "b04_task_order_openai.json"
TASK: dict[str, Any] = json.loads(OTHER_ORDER.read_text(encoding="utf-8"))["task"]


def _local(*args: str) -> Any:
    return CliRunner().invoke(
        main, ["check", "--profile", "browser-trace", "--fields", "allowed,reason,error", *args]
    )


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serving(ServiceSettings(guard=GuardContext(profile="browser-trace"))) as base:
        yield base


@pytest.mark.parametrize("form", ["json", "yaml", "utf-16"])
def test_the_task_file_scopes_the_local_check(tmp_path: Path, form: str) -> None:
    path = tmp_path / f"task.{form}"
    if form == "yaml":
        path.write_text(yaml.safe_dump(TASK), encoding="utf-8")
    else:
        path.write_bytes(json.dumps(TASK).encode("utf-16" if form == "utf-16" else "utf-8"))
    base = _local("--trace", str(OTHER_ORDER))
    assert json.loads(base.output)["allowed"] is True, "the base policy allows order 5530"
    scoped = _local("--trace", str(OTHER_ORDER), "--task", str(path))
    shown = json.loads(scoped.output)
    assert shown["allowed"] is False and "task-pages" in shown["reason"], shown
    assert json.loads(_local("--trace", str(THIS_ORDER), "--task", str(path)).output)["allowed"]


def test_a_task_that_cannot_be_attached_is_denied_naming_why(tmp_path: Path) -> None:
    for doc in (
        {"params": {"unused": 1}},
        ["not", "a", "mapping"],
        {"rules": [{"id": "x", "logic": "NOT no_such_predicate"}]},
    ):
        path = tmp_path / "task.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        shown = json.loads(_local("--trace", str(THIS_ORDER), "--task", str(path)).output)
        assert shown["allowed"] is False, doc
        assert "task policy cannot be attached" in shown["reason"], shown


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("a: !!python/object:os.system {}", "tag"),
        ("base: &b {params: {pages: [x]}}\nname: *b", "anchors"),
        ("{not json: [", "neither JSON nor YAML"),
        ("", "empty"),
        ("when: 2024-01-02", "JSON has no type"),
    ],
)
def test_a_task_file_that_is_not_plain_data_exits_two(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(text, encoding="utf-8")
    result = _local("--trace", str(THIS_ORDER), "--task", str(path))
    assert result.exit_code == 2 and says in result.output, result.output
    with pytest.raises(TaskFileError, match=says):
        read_task_file(str(path))


def test_task_file_errors_name_the_file_and_usage_needs_a_trace(tmp_path: Path) -> None:
    missing = _local("--trace", str(THIS_ORDER), "--task", str(tmp_path / "absent.json"))
    assert missing.exit_code == 2 and "absent.json" in missing.output
    folder = _local("--trace", str(THIS_ORDER), "--task", str(tmp_path))
    assert folder.exit_code == 2 and "directory" in folder.output
    alone = _local("--input", "a", "--output", "b", "--task", str(tmp_path / "t.json"))
    assert alone.exit_code == 2 and "go with --trace" in alone.output
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(TaskFileError):
        parse_task_text(deep)


def test_the_service_takes_the_task_from_its_caller(url: str, tmp_path: Path) -> None:
    client = GuardClient(url)
    trace = OTHER_ORDER.read_text(encoding="utf-8")
    assert client.check_trace(trace=trace, profile="browser-trace")["allowed"] is True
    scoped = client.check_trace(trace=trace, profile="browser-trace", task=TASK)
    assert scoped["allowed"] is False and "task-pages" in scoped["reason"]
    broken = client.check_trace(trace=trace, profile="browser-trace", task={"params": {"x": 1}})
    assert broken["allowed"] is False and "cannot be attached" in broken["reason"]
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(TASK), encoding="utf-8")
    remote = CliRunner().invoke(
        main,
        [
            "check",
            "--server",
            url,
            "--profile",
            "browser-trace",
            "--trace",
            str(OTHER_ORDER),
            "--task",
            str(path),
            "--fields",
            "allowed,reason",
        ],
    )
    assert remote.exit_code == 1 and "task-pages" in json.loads(remote.output)["reason"]
    local = _local("--trace", str(OTHER_ORDER), "--task", str(path))
    assert json.loads(local.output)["reason"] == json.loads(remote.output)["reason"]


def test_an_event_request_takes_no_task() -> None:
    settings = ServiceSettings(guard=GuardContext(profile="mind2web-sc"))
    with TestClient(create_app(settings)) as client:
        answer = client.post("/v1/decide/event", json={"input": "a", "output": "b", "task": TASK})
    assert answer.status_code == 400 and "task" in answer.json()["error"]


def test_a_task_file_with_bytes_that_are_not_text_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "task.json"
    path.write_bytes(json.dumps(TASK).encode("utf-8").replace(b"order", b"ord\xe9r", 1))
    result = _local("--trace", str(THIS_ORDER), "--task", str(path))
    assert result.exit_code == 2 and "not valid UTF-8" in result.output, result.output
