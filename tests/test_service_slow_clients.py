"""Slow clients before authentication cannot hold the replica's descriptors (issue 35, item 6).

uvicorn has no deadline for a request head: a client trickling one header byte every few
seconds held its connection for as long as it liked, and 1,100 such clients exhausted a
replica with 1,024 descriptors before any token was checked. Seen failing before the fix: no
slow connection was ever closed. Now a head has `header_seconds` to arrive (from the
connection, or from the previous answer on a kept-alive one), and at most
`max_pending_connections` wait for theirs at once (past it, the one waiting longest goes),
while a client whose head arrives at once still gets in.

Raw sockets on 127.0.0.1 only, bounded counts and times.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import time
from collections.abc import Iterator

import pytest
from uvicorn.protocols.http.h11_impl import H11Protocol

from guardagent.context import GuardContext
from guardagent.service import connections, serve
from guardagent.service.client import GuardClient
from guardagent.service.settings import ServiceSettings
from tests.service_thread import serving

HEAD_SECONDS, PENDING = 1.0, 20


@pytest.fixture(scope="module", params=["auto", "h11"])
def port(request: pytest.FixtureRequest) -> Iterator[int]:
    """The service as deployed (uvicorn's pick: httptools here), and on h11 (without it)."""
    settings = ServiceSettings(
        guard=GuardContext(profile="mind2web-sc"),
        header_seconds=HEAD_SECONDS,
        max_pending_connections=PENDING,
    )
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "h11":
            bounded = functools.partial(connections.head_bounded, base=H11Protocol)
            patch.setattr(serve, "head_bounded", bounded)
        with serving(settings) as base:
            yield int(base.rsplit(":", 1)[1])


def test_a_protocol_without_the_hooks_stops_the_start() -> None:
    with pytest.raises(TypeError, match="cannot bound request heads"):
        connections.head_bounded(1.0, 10, base=asyncio.Protocol)


def _closed(sock: socket.socket, wait: float) -> bool:
    """Whether the service closed `sock` within `wait` seconds (what it sent first is read)."""
    deadline = time.monotonic() + wait
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            data = sock.recv(65536)
        except TimeoutError:
            return False
        except ConnectionError:
            return True
        if not data:
            return True
    return False


def _healthy(port: int) -> bool:
    status, answer, _ = GuardClient(f"http://127.0.0.1:{port}", timeout=5).request(
        "GET", "/healthz"
    )
    return status == 200 and answer == {"status": "ok"}


def _trickle(sock: socket.socket, head: bytes) -> int | None:
    """Send `head` a byte per 0.2 s; how many bytes went before the service closed, or None.

    The whole head takes far longer than the header time (~90 bytes: 18 s against 1 s), so a
    close before half of it went is the header deadline acting, not the head's end: a count,
    which a loaded machine only makes smaller (each wait is at least 0.2 s), not a time.
    """
    for sent, byte in enumerate(head, start=1):
        try:
            sock.sendall(bytes([byte]))
        except ConnectionError:
            return sent - 1
        if _closed(sock, 0.2):
            return sent
    return None


def test_a_trickled_head_is_closed_after_the_header_time(port: int) -> None:
    head = b"POST /v1/decide/event HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 40
    assert len(head) * 0.2 > 10 * HEAD_SECONDS
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sent = _trickle(sock, head)
    assert sent is not None, "a head trickled past the header time was never closed"
    assert sent < len(head) // 2, f"closed only after {sent} of {len(head)} bytes"


def test_a_head_after_a_kept_alive_answer_has_the_same_deadline(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(5)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        head = b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 40
        sent = _trickle(sock, head)
    assert sent is not None and sent < len(head) // 2, (sent, len(head))


def test_slow_clients_past_the_cap_are_shed_and_a_prompt_one_gets_in(port: int) -> None:
    slow = []
    try:
        for _ in range(3 * PENDING):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"P")
            slow.append(sock)
        time.sleep(0.2)
        assert _healthy(port), "a client whose head arrives at once is served"
        shed = sum(_closed(s, 0.05) for s in slow)
        assert shed >= 2 * PENDING - 1, f"only {shed} of {len(slow)} slow clients were shed"
        time.sleep(HEAD_SECONDS + 0.5)
        assert all(_closed(s, 0.5) for s in slow), "every slow head is closed in the end"
        assert _healthy(port)
    finally:
        for sock in slow:
            sock.close()


def test_a_prompt_request_is_unaffected(port: int) -> None:
    for _ in range(5):
        assert _healthy(port)


def test_the_settings_come_from_the_environment() -> None:
    settings = ServiceSettings.from_env(
        {"GUARDAGENT_HEADER_SECONDS": "2.5", "GUARDAGENT_MAX_PENDING_CONNECTIONS": "64"}
    )
    assert (settings.header_seconds, settings.max_pending_connections) == (2.5, 64)
    for name, value in (
        ("HEADER_SECONDS", "0"),
        ("HEADER_SECONDS", "inf"),
        ("MAX_PENDING_CONNECTIONS", "0"),
        ("MAX_PENDING_CONNECTIONS", "x"),
    ):
        with pytest.raises(ValueError, match=f"GUARDAGENT_{name}"):
            ServiceSettings.from_env({f"GUARDAGENT_{name}": value})
