"""`guardagent check --server URL` against the local `check`: the same input, the same answer.

A guard service (`python -m guardagent.service`, a subprocess on 127.0.0.1, stopped by PID)
and the local command run with the same deployment settings; every input below goes through
both, and the exit status and the printed JSON (without `latency_ms`) must be equal. The
inputs are the shipped traces and events, and the same ones carried in other bytes: other
Unicode encodings, a byte-order mark, bytes that are not text, NaN, duplicate keys, a
truncated document, nesting, a trace over the size limit in bytes but not in characters.

Seen failing before the fix: a trace file holding a byte that is not UTF-8 was denied here
(``unparsable_trace``, exit 2) and allowed through the service (exit 0: the client sent it
with U+FFFD in place of the byte); a UTF-16 file or one with a NUL byte was denied with
another reason. (A trace over `max_trace_bytes` in bytes but not in characters was already
denied alike: the reader sizes what it reads in bytes; the test keeps it so.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardagent.cli import main
from tests.pg_server import free_port, start_replica, stop, wait_ready
from tests.test_service_app import ADULT, MINOR, OUTPUT

TRACES = Path(__file__).parent / "traces"
KEY = "differential deployment key"
MAX_TRACE = 12_000
ENV = {"GUARDAGENT_TRACE_KEY": KEY, "GUARDAGENT_MAX_TRACE_BYTES": str(MAX_TRACE)}
BENIGN = TRACES / "b01_rent_openai.json"  # allowed by assistant-trace


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("differential")
    port = free_port()
    log = root / "service.log"
    env = {
        **ENV,
        "GUARDAGENT_PROFILE": "assistant-trace",
        "GUARDAGENT_MEMORY_DIR": str(root / "memory"),
    }
    proc = start_replica(port, env, log)
    try:
        wait_ready(proc, port, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def both(url: str, args: list[str]) -> tuple[tuple[int, Any], tuple[int, Any]]:
    """(exit status, printed JSON) of the local check and of the same call with --server."""
    runner = CliRunner()
    local = runner.invoke(main, ["check", *args], env=ENV)
    served = runner.invoke(main, ["check", *args, "--server", url], env=ENV)
    return (local.exit_code, shown(local.stdout)), (served.exit_code, shown(served.stdout))


def shown(stdout: str) -> Any:
    try:
        value = json.loads(stdout)
    except ValueError:
        return stdout.strip()  # an error line: its text must agree too
    if isinstance(value, dict):
        value.pop("latency_ms", None)
    return value


def trace_call(url: str, path: Path, profile: str = "assistant-trace") -> None:
    local, served = both(url, ["--profile", profile, "--trace", str(path)])
    assert served == local, path.name
    assert local[0] in (0, 1, 2)


def variants(text: str) -> dict[str, bytes]:
    """The same trace in other bytes, and broken in the ways a file can be."""
    raw = text.encode("utf-8")
    accented = text.replace("a", "\u00e4", 3)
    return {
        "utf8": raw,
        "bom": b"\xef\xbb\xbf" + raw,
        "utf16": text.encode("utf-16"),
        "utf16le-no-bom": text.encode("utf-16-le"),
        "utf32": text.encode("utf-32"),
        "latin1": accented.encode("latin-1"),
        "lone-byte": raw.replace(b"a", b"a\xff", 1),
        "overlong-slash": raw.replace(b"/", b"\xc0\xaf", 1),
        "nul": raw.replace(b" ", b"\x00", 1),
        "escaped-surrogate": raw.replace(b"a", b"\\ud800", 1),
        "nan": raw.replace(b"{", b'{"x": NaN, ', 1),
        "infinity": raw.replace(b"{", b'{"x": -Infinity, ', 1),
        "duplicate-messages": raw.replace(b"{", b'{"messages": [], ', 1),
        "truncated": raw[: len(raw) // 2],
        "empty": b"",
        "crlf": raw.replace(b"\n", b"\r\n"),
        "deep": b"[" * 5000 + b"]" * 5000,
        "wide-chars": text.replace("Dana", "\u4e2d" * 5000, 1).encode("utf-8"),
    }


def test_shipped_traces_are_decided_alike(url: str) -> None:
    for path in sorted(TRACES.glob("*.json")):
        trace_call(url, path)
    for path in sorted((TRACES / "browser").glob("*.json")):
        trace_call(url, path, "browser-trace")


@pytest.mark.parametrize("source", ["b01_rent_openai.json", "i02_exfil_langchain.json"])
def test_a_trace_in_any_bytes_is_decided_alike(url: str, tmp_path: Path, source: str) -> None:
    text = (TRACES / source).read_text(encoding="utf-8")
    for name, data in variants(text).items():
        path = tmp_path / f"{name}.json"
        path.write_bytes(data)
        local, served = both(
            url,
            [
                "--profile",
                "assistant-trace",
                "--trace",
                str(path),
                "--fields",
                "allowed,reason,unreadable",
            ],
        )
        assert served == local, name


def test_a_wide_trace_over_the_byte_limit_is_denied_both_ways(url: str, tmp_path: Path) -> None:
    text = BENIGN.read_text(encoding="utf-8").replace("Dana", "\u4e2d" * 5000, 1)
    assert len(text) < MAX_TRACE < len(text.encode("utf-8"))
    path = tmp_path / "wide.json"
    path.write_text(text, encoding="utf-8")
    local, served = both(url, ["--profile", "assistant-trace", "--trace", str(path)])
    assert served == local and local[0] == 2
    assert local[1]["unreadable"][0]["reason"] == "trace_too_large"


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(at=st.integers(0, 4000), data=st.binary(min_size=1, max_size=4))
def test_bytes_put_anywhere_in_a_trace_are_decided_alike(
    url: str, tmp_path: Path, at: int, data: bytes
) -> None:
    raw = BENIGN.read_bytes()
    path = tmp_path / "mutated.json"
    path.write_bytes(raw[:at] + data + raw[at:])
    local, served = both(
        url,
        [
            "--profile",
            "assistant-trace",
            "--trace",
            str(path),
            "--fields",
            "allowed,reason,unreadable",
        ],
    )
    assert served == local


def test_events_in_any_bytes_are_decided_alike(url: str, tmp_path: Path) -> None:
    for text in (ADULT, MINOR):
        for name, data in {
            "utf8": text.encode(),
            "bom": b"\xef\xbb\xbf" + text.encode(),
            "utf16": text.encode("utf-16"),
            "latin1": text.replace("Lisbon", "Lisb\u00f6n").encode("latin-1"),
            "lone-byte": text.encode().replace(b"age", b"a\xffge"),
        }.items():
            path = tmp_path / f"{name}.txt"
            path.write_bytes(data)
            local, served = both(
                url, ["--profile", "mind2web-sc", "--input", "@" + str(path), "--output", OUTPUT]
            )
            assert served == local, name


PAYMENT = TRACES / "i01_inbox_iban_openai.json"  # denied without a reviewer's approval
ATTACK = {"iban": "GB82WEST12345698765432", "amount": 4950, "subject": "deposit"}


def test_consent_files_are_judged_alike(url: str, tmp_path: Path) -> None:
    from guardagent.trace import Consent

    def record(name: str) -> Consent:
        return Consent("send_money", args=ATTACK, thread=f"t-{name}")

    files = {
        "signed": [record("signed").signed(KEY.encode())],
        "unsigned": [record("unsigned").to_json()],
        "other-key": [record("other-key").signed(b"another deployment's key")],
        "not-a-list": record("not-a-list").to_json(),
        "bad-record": [{"tool": "send_money", "uses": 0}],
        "empty": [],
    }
    runner = CliRunner()
    for name, data in files.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        args = [
            "check",
            "--profile",
            "assistant-trace",
            "--trace",
            str(PAYMENT),
            "--consent",
            str(path),
            "--thread-id",
            f"t-{name}",
            "--fields",
            "allowed,reason",
        ]
        # the local thread's state is a file; the service keeps the thread's itself
        local = runner.invoke(main, [*args, "--state", str(tmp_path / f"{name}.state")], env=ENV)
        served = runner.invoke(main, [*args, "--server", url], env=ENV)
        assert (served.exit_code, shown(served.stdout)) == (local.exit_code, shown(local.stdout)), (
            name
        )
        if name == "signed":  # used once: the second check of the thread is denied, both ways
            again = runner.invoke(main, [*args, "--state", str(tmp_path / "signed.state")], env=ENV)
            served_again = runner.invoke(main, [*args, "--server", url], env=ENV)
            assert local.exit_code == 0 and again.exit_code == served_again.exit_code == 1
    signed = both(
        url,
        [
            "--profile",
            "assistant-trace",
            "--trace",
            str(PAYMENT),
            "--consent",
            str(tmp_path / "signed.json"),
            "--thread-id",
            "t-signed-again",
        ],
    )[1]
    assert signed[0] == 1  # an approval counts only in the thread it names


def test_a_service_without_a_key_takes_no_consent_records(tmp_path: Path) -> None:
    from guardagent.trace import Consent

    path = tmp_path / "unsigned.json"
    path.write_text(json.dumps([Consent("send_money", args=ATTACK, thread="t1").to_json()]))
    port, log = free_port(), tmp_path / "service.log"
    proc = start_replica(
        port,
        {
            "GUARDAGENT_PROFILE": "assistant-trace",
            "GUARDAGENT_MEMORY_DIR": str(tmp_path / "memory"),
        },
        log,
    )
    try:
        wait_ready(proc, port, log)
        served = CliRunner().invoke(
            main,
            [
                "check",
                "--profile",
                "assistant-trace",
                "--trace",
                str(PAYMENT),
                "--consent",
                str(path),
                "--thread-id",
                "t1",
                "--server",
                f"http://127.0.0.1:{port}",
            ],
        )
    finally:
        stop(proc)
    local = CliRunner().invoke(
        main,
        [
            "check",
            "--profile",
            "assistant-trace",
            "--trace",
            str(PAYMENT),
            "--consent",
            str(path),
            "--thread-id",
            "t1",
        ],
    )
    assert local.exit_code == served.exit_code == 2, served.output
    assert "GUARDAGENT_TRACE_KEY" in served.output and '"allowed": true' not in served.output


def test_task_files_are_judged_alike(url: str, tmp_path: Path) -> None:
    from tests.test_cli_task import OTHER_ORDER, TASK, THIS_ORDER

    tasks = {
        "task": json.dumps(TASK),
        "yaml": "name: t\nparams: {}\n",
        "list": "[1]",
        "nan": '{"name": "t", "params": {"x": NaN}}',
        "unknown": '{"a": 1}',
        "utf16": json.dumps(TASK),
    }
    for name, text in tasks.items():
        path = tmp_path / f"{name}.task"
        path.write_bytes(text.encode("utf-16" if name == "utf16" else "utf-8"))
        for trace in (OTHER_ORDER, THIS_ORDER):
            local, served = both(
                url,
                [
                    "--profile",
                    "browser-trace",
                    "--trace",
                    str(trace),
                    "--task",
                    str(path),
                    "--fields",
                    "allowed,reason",
                ],
            )
            assert served == local, (name, trace.name)


def test_thread_ids_the_service_refuses_are_refused_here_too(url: str) -> None:
    """Seen failing before: `--thread-id ""` (or one over 256 characters) was decided here
    (exit 0) and refused by the service (400, exit 2)."""
    for thread in ("", "x" * 257, "t" * 256):
        local, served = both(
            url,
            [
                "--profile",
                "assistant-trace",
                "--trace",
                str(BENIGN),
                "--thread-id",
                thread,
                "--fields",
                "allowed",
            ],
        )
        assert served[0] == local[0], len(thread)
        assert local[0] == (0 if thread else 2) if len(thread) <= 256 else local[0] == 2


@pytest.mark.parametrize(
    "profile",
    ["eicu-ac", "eicu-ac-policy", "mind2web-sc-policy", "tool-calls", "tool-calls-policy"],
)
def test_shipped_demonstrations_are_decided_alike(url: str, tmp_path: Path, profile: str) -> None:
    """Each built-in profile's own demonstrations, and each in UTF-16 and with a byte that
    is not text, through both paths."""
    from guardagent.profiles.loader import load_profile

    for demo in load_profile(profile).demonstrations:
        for name in ("utf8", "utf16", "byte"):
            paths = []
            for part, text in (("in", demo.agent_input), ("out", demo.agent_output)):
                path = tmp_path / f"{demo.id}-{name}-{part}.txt"
                path.write_bytes(_encoded(text, name))
                paths.append("@" + str(path))
            local, served = both(
                url,
                [
                    "--profile",
                    profile,
                    "--input",
                    paths[0],
                    "--output",
                    paths[1],
                    "--fields",
                    "allowed,violations,reason",
                ],
            )
            assert served == local, (demo.id, name)


def _encoded(text: str, how: str) -> bytes:
    if how == "utf16":
        return text.encode("utf-16")
    raw = text.encode("utf-8")
    return raw.replace(b" ", b" \xff", 1) if how == "byte" else raw


def test_messages_sent_as_text_are_sized_in_bytes_too(url: str) -> None:
    """`messages` may be JSON text as well as JSON: its size is its bytes', as a trace's
    (a guard of what holds already: the reader sizes what it reads in bytes)."""
    from guardagent.service.client import GuardClient

    document = json.loads(BENIGN.read_text(encoding="utf-8").replace("Dana", "\u4e2d" * 5000, 1))
    text = json.dumps(document["messages"], ensure_ascii=False)
    assert len(text) < MAX_TRACE < len(text.encode("utf-8"))
    decision = GuardClient(url).check_trace(
        text, document.get("proposed_call"), profile="assistant-trace"
    )
    assert decision["allowed"] is False
    assert decision["unreadable"][0]["reason"] == "trace_too_large"


def test_rules_applied_lists_the_same_rules(url: str) -> None:
    for path in sorted(TRACES.glob("*.json"))[:6]:
        local, served = both(
            url,
            [
                "--profile",
                "assistant-trace",
                "--trace",
                str(path),
                "--rules",
                "applied",
                "--fields",
                "allowed,rules,reason",
            ],
        )
        assert served == local, path.name
