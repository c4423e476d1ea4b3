"""The `check --server` fast path (no click) against the click command it stands in for.

`guardagent` (:mod:`guardagent.entry`) hands the plain form of `check --server` to
:mod:`guardagent.service.hook`; everything else runs click. The two must not be told apart:
the same options, the same stdout, stderr and exit status for every call, plain or not
(differential, over a corpus of calls against one service). The socket HTTP reader is
checked against `http.client`'s on generated answers.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.context import GuardContext
from guardagent.service.settings import ServiceSettings
from guardagent.service.wire import WireError, read_response
from tests.pg_server import free_port
from tests.service_thread import serving
from tests.test_cli_task import OTHER_ORDER, TASK
from tests.test_service_app import ADULT, MINOR, OUTPUT

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "hook-token"
TRACE = ROOT / "tests" / "traces" / "i02_exfil_langchain.json"
FAST = "import sys; from guardagent.entry import main; sys.argv[0] = 'guardagent'; main()"
CLICK = "import sys; from guardagent.cli import main; main(prog_name='guardagent')"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    service = ServiceSettings(guard=GuardContext(profile="assistant-trace"), service_token=TOKEN)
    with serving(service) as base:
        yield base


def run(code: str, args: list[str], stdin: bytes = b"", token: str = TOKEN) -> Any:
    env = {**os.environ, "GUARDAGENT_SERVICE_TOKEN": token}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        input=stdin,
        env=env,
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("hook")
    paths = {
        "latin1": ("input.txt", ADULT.replace("Lisbon", "Lisb\u00f6n").encode("latin-1")),
        "utf16": ("trace16.json", TRACE.read_text(encoding="utf-8").encode("utf-16")),
        "task": ("task.yaml", json.dumps(TASK).encode()),
        "consent": ("consent.json", b'[{"tool": "send_email", "decision": "approve"}]'),
        "notlist": ("consent2.json", b'{"tool": "x"}'),
    }
    for name, data in paths.values():
        (root / name).write_bytes(data)
    return {key: str(root / name) for key, (name, _) in paths.items()} | {"dir": str(root)}


def corpus(url: str, f: dict[str, str]) -> list[tuple[list[str], bytes, str]]:
    s, m2w, trace = (
        ["--server", url],
        ["--profile", "mind2web-sc"],
        ["--profile", "assistant-trace"],
    )
    event = [*m2w, "--input", ADULT, "--output", OUTPUT]
    return [
        (["check", *s, *event], b"", TOKEN),
        (["check", *s, *m2w, "--input", MINOR, "--output", OUTPUT, "--quiet"], b"", TOKEN),
        (["check", *event, "--fields=allowed,reason", f"--server={url}"], b"", TOKEN),
        (["check", *s, *m2w, "--input", "@" + f["latin1"], "--output", OUTPUT], b"", TOKEN),
        (["check", *s, *m2w, "--input", "@-", "--output", OUTPUT], ADULT.encode(), TOKEN),
        (
            ["check", *s, *trace, "--trace", str(TRACE), "--fields", "allowed,violations"],
            b"",
            TOKEN,
        ),
        (["check", *s, *trace, "--trace", "-", "--fields", "allowed"], TRACE.read_bytes(), TOKEN),
        (
            [
                "check",
                *s,
                *trace,
                "--trace",
                f["utf16"],
                "--fields",
                "reason",
                "--thread-id",
                "h1",
                "--idempotency-key",
                "k1",
            ],
            b"",
            TOKEN,
        ),
        (
            [
                "check",
                *s,
                *trace,
                "--trace",
                str(TRACE),
                "--consent",
                f["consent"],
                "--fields",
                "allowed",
            ],
            b"",
            TOKEN,
        ),
        (
            [
                "check",
                *s,
                "--profile",
                "browser-trace",
                "--trace",
                str(OTHER_ORDER),
                "--task",
                f["task"],
                "--fields",
                "allowed,reason",
            ],
            b"",
            TOKEN,
        ),
        (["check", *s, *event], b"", "wrong-token"),  # refused: 401
        (["check", *s, *m2w, "--trace", str(TRACE)], b"", TOKEN),  # no trace policy: 400
        (["check", "--server", f"http://127.0.0.1:{free_port()}", *event], b"", TOKEN),
        # not plain: click answers, the fast path must not
        (["check", *s, *event, "--fields", "allowd"], b"", TOKEN),
        (["check", *s, *trace, "--trace", f["dir"] + "/absent.json"], b"", TOKEN),
        (["check", *s, *trace, "--trace", str(TRACE), "--consent", f["notlist"]], b"", TOKEN),
        (["check", *s, *trace, "--trace", str(TRACE), "--task", f["dir"]], b"", TOKEN),
        (["check", *s, *event, "--model", "openai:gpt-4o"], b"", TOKEN),
        (["check", *s, *event, "--trace", str(TRACE)], b"", TOKEN),
        (["check", *s, *event, "--help"], b"", TOKEN),
        (["check", *s, *event, "--frobnicate"], b"", TOKEN),
        (["check", "--server", "ftp://x", *event], b"", TOKEN),
        (["check", *s, *m2w, "--input", "@" + f["dir"] + "/none", "--output", OUTPUT], b"", TOKEN),
        (["check", *s, *event, "--quiet", "--quiet"], b"", TOKEN),
    ]


def test_the_fast_path_and_click_answer_every_call_alike(url: str, files: dict[str, str]) -> None:
    for args, stdin, token in corpus(url, files):
        run(CLICK, args, stdin, token)  # warm: the service's memory answers both alike
        fast, slow = run(FAST, args, stdin, token), run(CLICK, args, stdin, token)
        shown = " ".join(a[:30] for a in args[1:])
        assert (fast.returncode, timeless(fast.stdout), fast.stderr) == (
            slow.returncode,
            timeless(slow.stdout),
            slow.stderr,
        ), shown
        assert fast.returncode in (0, 1, 2), (shown, fast.stderr)


def timeless(stdout: bytes) -> bytes:
    """The printed JSON without `latency_ms` (the service's timing of each request)."""
    try:
        shown = json.loads(stdout)
    except ValueError:
        return stdout
    if isinstance(shown, dict):
        shown.pop("latency_ms", None)
    return json.dumps(shown).encode()


def test_plain_calls_import_no_click(url: str, files: dict[str, str]) -> None:
    probe = (
        "import sys\nfrom guardagent.entry import main\nsys.argv[0] = 'guardagent'\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
        "heavy = [m for m in ('click', 'http.client', 'email', 'ssl', 'langgraph', "
        "'pydantic', 'yaml') if m in sys.modules]\nsys.stderr.write(repr((code, heavy)))"
    )
    for args, stdin, token in corpus(url, files)[:10]:
        if "--task" in args:
            continue  # a YAML-looking task file may import PyYAML; this one is JSON
        out = run(probe, args, stdin, token)
        assert out.stderr.decode().endswith("[])"), (args[:4], out.stderr[-300:])


def _parse_with_http_client(data: bytes) -> tuple[int, bytes]:
    import http.client

    class Sock:
        def makefile(self, *a: Any, **k: Any) -> io.BytesIO:
            return io.BytesIO(data)

    response = http.client.HTTPResponse(Sock())  # type: ignore[arg-type]
    response.begin()
    return response.status, response.read()


@settings(max_examples=200, deadline=None)
@given(
    status=st.integers(200, 599).filter(lambda s: s not in (204, 304)),  # no content: below
    body=st.binary(max_size=3000),
    chunks=st.lists(st.integers(1, 700), max_size=6),
    framing=st.sampled_from(["length", "chunked", "close"]),
    extra=st.lists(
        st.tuples(
            st.from_regex(r"X-[A-Za-z]{1,8}", fullmatch=True), st.text("abc ;=,", max_size=20)
        ),
        max_size=4,
    ),
)
def test_the_socket_reader_agrees_with_http_client(
    status: int, body: bytes, chunks: list[int], framing: str, extra: list[tuple[str, str]]
) -> None:
    head = [
        f"HTTP/1.1 {status} Whatever",
        "Content-Type: application/json",
        *(f"{k}: {v.strip()}" for k, v in extra),
    ]
    if framing == "length":
        payload = body
        head.append(f"Content-Length: {len(body)}")
    elif framing == "chunked":
        head.append("Transfer-Encoding: chunked")
        parts, at = [], 0
        for size in chunks:
            piece = body[at : at + size]
            at += size
            if piece:
                parts.append(b"%x\r\n%s\r\n" % (len(piece), piece))
        if body[at:]:
            parts.append(b"%x;ext=1\r\n%s\r\n" % (len(body[at:]), body[at:]))
        payload = b"".join(parts) + b"0\r\nX-Trailer: t\r\n\r\n"
    else:
        payload = body
    data = ("\r\n".join(head) + "\r\n\r\n").encode() + payload
    ours = read_response(io.BytesIO(data))
    assert (ours[0], ours[2]) == _parse_with_http_client(data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_the_socket_reader_meets_any_bytes_with_an_answer_or_a_wire_error(data: bytes) -> None:
    try:
        status, headers, body = read_response(io.BytesIO(b"HTTP/1.1 200 OK\r\n" + data))
    except WireError:
        return
    assert status == 200 and isinstance(headers, dict) and isinstance(body, bytes)


def test_bounded_heads_truncated_bodies_and_non_http_are_wire_errors() -> None:
    for data in (
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 2x0 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\n" + b"X-A: " + b"a" * 70_000 + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"",
    ):
        with pytest.raises(WireError):
            read_response(io.BytesIO(data))
    status, _, body = read_response(
        io.BytesIO(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
    )
    assert (status, body) == (200, b"{}")
    for framing in (b"Content-Length: 1\r\n\r\nx", b"Transfer-Encoding: chunked\r\n\r\n1\r\nx\r\n"):
        status, _, body = read_response(io.BytesIO(b"HTTP/1.1 204 No Content\r\n" + framing))
        assert (status, body) == (204, b""), "a 204 has no content (RFC 9112 6.3)"


def test_the_fast_path_knows_every_option_of_check_and_every_decision_field() -> None:
    from guardagent.cli import main
    from guardagent.decision import GuardDecision
    from guardagent.service.client import DECISION_FIELDS
    from guardagent.service.hook import FLAG_OPTIONS, LEFT_TO_CLICK, VALUE_OPTIONS

    check = main.commands["check"]
    import click

    names = {o for p in check.get_params(click.Context(check)) for o in p.opts}
    assert names == set(VALUE_OPTIONS) | set(FLAG_OPTIONS) | LEFT_TO_CLICK
    dests = {p.opts[0]: p.name for p in check.params}
    assert all(dests[o] == d for o, d in {**VALUE_OPTIONS, **FLAG_OPTIONS}.items())
    assert tuple(GuardDecision.model_fields) == DECISION_FIELDS


def test_evidence_the_guard_could_not_read_exits_two_here_and_through_the_service(
    url: str, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from guardagent.cli import main

    bad = tmp_path / "bad.json"
    bad.write_text('{"messages": [', encoding="utf-8")
    args = [
        "check",
        "--profile",
        "assistant-trace",
        "--trace",
        str(bad),
        "--fields",
        "allowed,unreadable",
    ]
    local = CliRunner().invoke(main, args)
    served = run(FAST, [*args, "--server", url])
    assert local.exit_code == served.returncode == 2, (local.output, served.stderr)
    assert json.loads(served.stdout) == json.loads(local.stdout)


def test_a_plain_utf8_call_imports_no_typing(url: str, files: dict[str, str]) -> None:
    """The hook's usual call (UTF-8 files and arguments) skips `typing` (~2.5 ms of its start).

    A call that must decode another encoding imports the shared reader
    (:mod:`guardagent.readers.textio`), and one with a consent or task file the host-file
    reader (:mod:`guardagent.policy.task_file`), and typing with them: not this test's calls.
    """
    probe = (
        "import sys\nfrom guardagent.entry import main\nsys.argv[0] = 'guardagent'\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
        "sys.stderr.write(repr((code, 'typing' in sys.modules)))"
    )
    plain = [
        c
        for c in corpus(url, files)[:10]
        if not any(f in c[0] for f in (files["utf16"], "@" + files["latin1"]))
        and "--task" not in c[0]
        and "--consent" not in c[0]
    ]
    assert len(plain) >= 6
    for args, stdin, token in plain:
        out = run(probe, args, stdin, token)
        assert out.stderr.decode().endswith("False)"), (args[:4], out.stderr[-300:])
