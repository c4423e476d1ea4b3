"""The guard service as a network peer: a client that sends its body slowly is cut off.

A request's body is read only after its token checks, but a caller that holds the token (or
any caller of a service without one) could start a request and send its body a byte at a
time: the connection, and the memory of what was read, stayed for as long as it liked.
Seen failing before the fix: no answer came within 8 s for a body that stalled after its
first bytes; now the service answers 408 once `GUARDAGENT_BODY_SECONDS` have passed.

The replica runs as a subprocess on 127.0.0.1 and is stopped by its PID.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg_server import free_port, start_replica, stop, wait_ready


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    root = tmp_path_factory.mktemp("peer")
    number, log = free_port(), root / "service.log"
    proc = start_replica(
        number,
        {
            "GUARDAGENT_PROFILE": "mind2web-sc",
            "GUARDAGENT_BODY_SECONDS": "1",
            "GUARDAGENT_MEMORY_DIR": str(root / "memory"),
        },
        log,
    )
    try:
        wait_ready(proc, number, log)
        yield number
    finally:
        stop(proc)


def _answer(sock: socket.socket, seconds: float) -> bytes:
    sock.settimeout(seconds)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except TimeoutError:
        pass
    return data


def test_a_body_that_stalls_is_refused_in_time(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/decide/event HTTP/1.1\r\nHost: x\r\nContent-Type: "
            b'application/json\r\nContent-Length: 1000\r\n\r\n{"input": "'
        )
        head = _answer(sock, 8)  # nothing in 8 s (the body time is far less) is no answer
    assert head.startswith(b"HTTP/1.1 408"), head[:200]


def test_a_body_sent_in_time_is_decided(port: int, tmp_path: Path) -> None:
    body = b'{"input": "Task: x", "output": "y"}'
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/decide/event HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n" % len(body)
        )
        for i in range(0, len(body), 10):  # slowly, but within the time
            sock.sendall(body[i : i + 10])
            time.sleep(0.05)
        head = _answer(sock, 30)
    assert head.startswith(b"HTTP/1.1 200"), head[:200]


def _post(port: int, body: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/decide/event HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n%s" % (len(body), body)
        )
        data = b""
        sock.settimeout(60)
        while chunk := sock.recv(65536):
            data += chunk
    return data


def test_a_body_giving_a_key_twice_is_refused(port: int) -> None:
    """A key given twice (one JSON reader keeps the first, another the last: a proxy that
    checked the first `profile` or `user_facts` saw another request than the guard) is
    refused, 400. Seen failing before: it was decided, with the last value of the key.
    NaN in the facts is refused as the Python API refuses it (a task or a trace holding NaN
    goes to the guard, as a local check's file does)."""
    event = b'"input": "Task: x", "output": "y"'
    for body in (
        b'{%s, "profile": "tool-calls", "profile": "mind2web-sc"}' % event,
        b'{%s, "user_facts": {"age": 40, "age": 16}}' % event,
        b'{%s, "user_facts": {"age": NaN}}' % event,
        b'{%s, "user_facts": {"age": -Infinity}}' % event,
    ):
        answer = _post(port, body)
        assert answer.startswith(b"HTTP/1.1 400"), (body, answer[:300])
    assert _post(port, b"{%s}" % event).startswith(b"HTTP/1.1 200")


def test_serving_beyond_loopback_without_a_token_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen failing before: `serve --host 0.0.0.0` with no token started without a word,
    though anyone reaching the port then gets decisions and reads every thread's."""
    from click.testing import CliRunner

    import guardagent.service.serve as serve_module
    from guardagent.cli import main

    started: list[str] = []
    monkeypatch.setattr(serve_module, "serve", lambda host, port, **kw: started.append(host))
    monkeypatch.delenv("GUARDAGENT_SERVICE_TOKEN", raising=False)
    for host, warned in (
        ("0.0.0.0", True),
        ("10.1.2.3", True),
        ("guard.internal", True),
        ("127.0.0.1", False),
        ("::1", False),
        ("localhost", False),
    ):
        result = CliRunner().invoke(main, ["serve", "--host", host])
        assert result.exit_code == 0 and started[-1] == host, result.output
        assert ("GUARDAGENT_SERVICE_TOKEN" in result.output) is warned, (host, result.output)
    monkeypatch.setenv("GUARDAGENT_SERVICE_TOKEN", "a-token-for-the-test")
    assert "warning" not in CliRunner().invoke(main, ["serve", "--host", "0.0.0.0"]).output
