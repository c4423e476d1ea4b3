"""The service's client takes a decision only from an answer that is one.

A hook's URL may reach something that is not the guard (a wrong port, a proxy's error page,
a service of another kind), or a guard answering a failure. Only a 200 whose `allowed` is a
JSON boolean, or the service's fail-closed 503 (`allowed: false`), is a decision; anything
else is no decision, and `check --server` denies. Seen failing before the fix: a 503, a
400 or a 404 whose JSON said ``"allowed": true`` was taken as an allowed decision (exit 0),
and ``"allowed": "false"`` (a string, true to Python) was handed to the caller as it came.

The answers come from a stub server started on 127.0.0.1 in its own process and stopped by
its PID.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from guardagent.cli import main
from guardagent.service.client import GuardClient, ServiceError
from tests.pg_server import free_port, stop
from tests.servers import wait_ready

STUB = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self._answer(200, b'{"status": "ok"}')
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with open(sys.argv[2], "rb") as handle:
            status, body = json.loads(handle.read())
        self._answer(status, body.encode())
    def _answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""

NOT_DECISIONS = [
    (503, {"allowed": True, "label": 0}),
    (400, {"allowed": True, "error": "x"}),
    (404, {"allowed": True}),
    (500, {"allowed": True}),
    (200, {"allowed": "false"}),
    (200, {"allowed": 1}),
    (200, {"allowed": None}),
    (200, {"allowed": True, "label": 1}),
    (200, [{"allowed": True}]),
]


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    answer = tmp_path_factory.mktemp("stub") / "answer.json"
    answer.write_text(json.dumps([200, "{}"]))
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", STUB, str(port), str(answer)])
    try:
        wait_ready(
            f"http://127.0.0.1:{port}/", proc, timeout=30, ready=lambda status: True, poll=0.05
        )

        def answers(status: int, body: Any) -> None:
            answer.write_text(json.dumps([status, json.dumps(body)]))

        yield f"http://127.0.0.1:{port}", answers
    finally:
        stop(proc)


@pytest.mark.parametrize(("status", "body"), NOT_DECISIONS)
def test_an_answer_that_is_not_a_decision_is_no_decision(
    stub: tuple[str, Any], status: int, body: Any
) -> None:
    url, answers = stub
    answers(status, body)
    with pytest.raises(ServiceError):
        GuardClient(url).check("input", "output", profile="mind2web-sc")
    result = CliRunner().invoke(
        main,
        ["check", "--server", url, "--profile", "mind2web-sc", "--input", "in", "--output", "out"],
    )
    assert result.exit_code in (1, 2), result.output
    assert '"allowed": true' not in result.output


def test_decisions_and_fail_closed_denials_still_come_through(stub: tuple[str, Any]) -> None:
    url, answers = stub
    for status, allowed in ((200, True), (200, False), (503, False)):
        answers(status, {"allowed": allowed, "label": int(not allowed), "reason": "r"})
        decision = GuardClient(url).check("input", "output", profile="mind2web-sc")
        assert decision["allowed"] is allowed
        result = CliRunner().invoke(
            main,
            [
                "check",
                "--server",
                url,
                "--profile",
                "mind2web-sc",
                "--input",
                "in",
                "--output",
                "out",
            ],
        )
        assert result.exit_code == (0 if allowed else 1), result.output


DRIP = r"""
import socket, sys, time
body = b'{"allowed": true, "label": 0, "reason": "slow"}'.ljust(60)
server = socket.create_server(("127.0.0.1", int(sys.argv[1])))
while True:
    conn, _ = server.accept()
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
    try:
        for byte in body:  # one byte at a time, each well within a per-read timeout
            time.sleep(0.25)
            conn.sendall(bytes([byte]))
    except OSError:
        pass
    conn.close()
"""


def test_a_service_that_answers_too_slowly_is_no_decision() -> None:
    """`timeout` bounds the whole answer: a peer sending a byte per 0.25 s (60 bytes, 15 s)
    used to be waited for to the end, each read within the timeout. Seen failing before."""
    slow_answer_is_no_decision("http", DRIP)


def test_a_request_that_is_not_json_data_is_no_decision(stub: tuple[str, Any]) -> None:
    """Seen failing before: a LangChain message object, bytes as an event's text, or a
    cycle in the facts raised TypeError / ValueError into the host instead of ServiceError
    (the one exception a caller of the client denies on)."""
    url, answers = stub
    answers(200, {"allowed": True, "label": 0})
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    client = GuardClient(url)
    with pytest.raises(ServiceError):
        client.check_trace([object()])
    with pytest.raises(ServiceError):
        client.check("input", b"output")  # type: ignore[arg-type]
    with pytest.raises(ServiceError):
        client.check("input", "output", user_facts=cyclic)


TLS_DRIP = r"""
import socket, ssl, sys, time
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
body = b'{"allowed": true, "label": 0, "reason": "slow"}'.ljust(60)
server = socket.create_server(("127.0.0.1", int(sys.argv[1])))
while True:
    raw, _ = server.accept()
    try:
        conn = context.wrap_socket(raw, server_side=True)
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
        for byte in body:
            time.sleep(0.25)
            conn.sendall(bytes([byte]))
        conn.close()
    except OSError:
        raw.close()
"""


def test_a_slow_service_over_https_is_no_decision_either(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same bound over `https://` (through `http.client`). Seen failing before: the
    dripping answer was waited for to its end (15 s) and taken."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    made = subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"openssl could not make a test certificate: {made.stderr[-200:]!r}")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the client trusts the test certificate
    slow_answer_is_no_decision("https", TLS_DRIP, str(cert), str(key))


def slow_answer_is_no_decision(scheme: str, server: str, *args: str) -> None:
    """Start the dripping `server` (its port, then `args`), and ask it within 1 s."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", server, str(port), *args])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        # Every byte comes within a read timeout: a client that bounded each read, not the
        # whole answer, would wait the 15 s and return the peer's "allowed" answer. So the
        # error is the outcome that shows the whole-answer bound acting (no clock needed).
        with pytest.raises(ServiceError):
            GuardClient(f"{scheme}://127.0.0.1:{port}", timeout=1.0).check("in", "out")
    finally:
        stop(proc)
