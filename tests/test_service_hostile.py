"""Hostile or careless callers of the service, and the client reading what the service says.

Seen failing before the fixes (issue 35, items 6 and 7): an id holding a NUL byte or a lone
surrogate reached the database (503 with its error text on Postgres), an empty or over-long
id was refused by the decide routes but read by ``/v1/threads/{id}``; a retry that added
``"profile": null`` or named the default profile got 409; a Content-Length or chunk size in
digits `int()` reads but HTTP does not (``²``, ``+5``, ``5_0``, ``0x5``) gave a traceback or
another framing than other readers; a 12 MB trace gave "unreachable: connection reset" (exit
1) although the service answered 413; an https answer was read whole, past the body bound.
"""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from guardagent.cli import main
from guardagent.context import GuardContext
from guardagent.service import wire
from guardagent.service.app import create_app
from guardagent.service.client import GuardClient, ServiceError
from guardagent.service.requests import BadRequest, checked_id
from guardagent.service.settings import ServiceSettings
from tests.pg_server import free_port, stop
from tests.service_thread import serving
from tests.test_service_app import ADULT, OUTPUT, TOKEN

BAD_IDS = ["", "a\x00b", "\x00", "x" * 257, "t-\ud800", "\udcff", "ok\udfff"]
"""Ids every route refuses: empty, too long, a NUL (no database text holds it), a lone
surrogate (not UTF-8)."""


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    settings = ServiceSettings(guard=GuardContext(profile="mind2web-sc"), service_token=TOKEN)
    with TestClient(create_app(settings), headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        yield c


def _post(client: Any, path: str, body: dict[str, Any]) -> Any:
    # json= would refuse a lone surrogate client-side: send the escaped JSON as the host would
    import json

    return client.post(
        path, content=json.dumps(body).encode("ascii"), headers={"Content-Type": "application/json"}
    )


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize("field", ["thread_id", "idempotency_key"])
def test_a_bad_id_is_refused_with_400_by_the_decide_routes(
    client: Any, bad: str, field: str
) -> None:
    event = _post(client, "/v1/decide/event", {"input": ADULT, "output": OUTPUT, field: bad})
    trace = _post(
        client, "/v1/decide/trace", {"profile": "assistant-trace", "messages": [], field: bad}
    )
    for answer in (event, trace):
        assert answer.status_code == 400, answer.text
        assert field in answer.json()["error"]


@pytest.mark.parametrize("bad", [b for b in BAD_IDS if b.isascii() or "\x00" in b])
def test_a_bad_id_is_refused_with_400_by_the_thread_route(client: Any, bad: str) -> None:
    answer = client.get("/v1/threads/" + urllib.parse.quote(bad, safe=""))
    assert answer.status_code == 400, answer.text
    assert "thread_id" in answer.json()["error"]


def test_the_thread_route_reads_a_good_id_as_the_decide_route_wrote_it(client: Any) -> None:
    name = "chat/42 é ☃"
    _post(client, "/v1/decide/event", {"input": ADULT, "output": OUTPUT, "thread_id": name})
    answer = client.get("/v1/threads/" + urllib.parse.quote(name, safe=""))
    assert answer.status_code == 200 and len(answer.json()["decisions"]) == 1


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_one_validation_decides_every_id(value: str) -> None:
    bad = (
        not value
        or len(value) > 256
        or "\x00" in value
        or any("\ud800" <= ch <= "\udfff" for ch in value)
    )
    if bad:
        with pytest.raises(BadRequest, match="thread_id"):
            checked_id("thread_id", value, 256)
    else:
        assert checked_id("thread_id", value, 256) == value


def test_a_retry_naming_the_default_profile_or_null_is_the_same_request(client: Any) -> None:
    body = {"input": ADULT, "output": OUTPUT}
    first = _post(client, "/v1/decide/event", {**body, "idempotency_key": "k-prof"})
    assert first.status_code == 200
    for extra in (
        {"profile": None},
        {"profile": "mind2web-sc"},
        {"profile": None, "user_facts": None, "thread_id": None},
    ):
        retry = _post(client, "/v1/decide/event", {**body, **extra, "idempotency_key": "k-prof"})
        assert retry.status_code == 200, (extra, retry.text)
        assert retry.headers.get("Idempotent-Replayed") == "true"
        assert retry.json() == first.json()
    other = _post(
        client, "/v1/decide/event", {**body, "profile": "tool-calls", "idempotency_key": "k-prof"}
    )
    assert other.status_code == 409, "another profile is another request"
    named = _post(
        client,
        "/v1/decide/trace",
        {"profile": "assistant-trace", "messages": [], "task": None, "idempotency_key": "k-t"},
    )
    again = _post(
        client,
        "/v1/decide/trace",
        {"profile": "assistant-trace", "messages": [], "idempotency_key": "k-t"},
    )
    assert named.status_code == again.status_code == 200
    assert again.headers.get("Idempotent-Replayed") == "true"


LENGTHS = ["\u00b2", "\u00b9\u00b2", "+5", "-0", "5_0", " 5 5", "0x5", "\u00bd", "9" * 5000]


@pytest.mark.parametrize("length", LENGTHS)
def test_a_content_length_http_does_not_read_is_a_wire_error(length: str) -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: " + length.encode("latin-1") + b"\r\n\r\n"
    with pytest.raises(wire.WireError):
        wire.read_response(io.BytesIO(head + b"hello" * 20))


@pytest.mark.parametrize("size", ["0x5", "+5", "5_0", "-5", "\u00b2", " ", ""])
def test_a_chunk_size_http_does_not_read_is_a_wire_error(size: str) -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunks = size.encode("latin-1") + b"\r\n" + b"h" * 80 + b"\r\n0\r\n\r\n"
    with pytest.raises(wire.WireError):
        wire.read_response(io.BytesIO(head + chunks))


def test_a_trace_over_the_limit_is_too_big_not_unreachable(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b'{"messages": [' + b'"' + b"x" * (12 * 1024 * 1024) + b'"]}')
    settings = ServiceSettings(
        guard=GuardContext(profile="assistant-trace"), max_request_bytes=100_000
    )
    with serving(settings) as base:
        for _ in range(3):
            with pytest.raises(ServiceError) as caught:
                GuardClient(base, timeout=30).check_trace(trace=big.read_bytes())
            assert caught.value.status == 413, caught.value
        run = CliRunner().invoke(
            main, ["check", "--server", base, "--profile", "assistant-trace", "--trace", str(big)]
        )
        assert run.exit_code == 2, run.output
        assert "unreachable" not in run.output


TLS_BIG = r"""
import socket, ssl, sys
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
server = socket.create_server(("127.0.0.1", int(sys.argv[1])))
framing = sys.argv[4]
while True:
    raw, _ = server.accept()
    try:
        conn = context.wrap_socket(raw, server_side=True)
        request = b""
        while b"\r\n\r\n" not in request:
            request += conn.recv(65536)
        head, _, body = request.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        while len(body) < length:
            body += conn.recv(65536)
        head = b"HTTP/1.1 200 OK\r\n"
        if framing == "length":
            head += b"Content-Length: 3000000\r\n"
        conn.sendall(head + b"Connection: close\r\n\r\n")
        for _ in range(30):
            conn.sendall(b" " * 100000)
        conn.close()
    except OSError:
        raw.close()
"""


@pytest.mark.parametrize("framing", ["length", "close"])
def test_an_https_answer_is_bounded_like_an_http_one(
    tmp_path: Any, framing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
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
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    monkeypatch.setattr(wire, "MAX_BODY_BYTES", 1_000_000)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", TLS_BIG, str(port), str(cert), str(key), framing]
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        with pytest.raises(ServiceError, match="over 1000000 bytes|Content-Length"):
            GuardClient(f"https://127.0.0.1:{port}", timeout=20).check("in", "out")
    finally:
        stop(proc)


LATIN1 = st.characters(min_codepoint=0x20, max_codepoint=0xFF)


@settings(max_examples=400, deadline=None)
@given(st.text(LATIN1, min_size=1, max_size=12), st.sampled_from(["length", "chunk"]))
def test_any_framing_number_is_ascii_digits_or_a_wire_error(number: str, framing: str) -> None:
    """Whatever the number says: an answer framed by its ASCII digits, or a WireError."""
    if framing == "length":
        head = b"HTTP/1.1 200 OK\r\nContent-Length: " + number.encode("latin-1") + b"\r\n\r\n"
        rest = b"x" * 64
    else:
        head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        rest = number.encode("latin-1") + b"\r\n" + b"x" * 64 + b"\r\n0\r\n\r\n"
    try:
        _, _, body = wire.read_response(io.BytesIO(head + rest))
    except wire.WireError:
        return
    digits = number.strip().split(";")[0].strip() if framing == "chunk" else number.strip()
    alphabet = "0123456789abcdefABCDEF" if framing == "chunk" else "0123456789"
    assert digits and all(ch in alphabet for ch in digits), (number, body[:20])
