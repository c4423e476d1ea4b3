"""A drain a load balancer can see: on SIGTERM, not ready and still serving (issue 35, 5).

A real replica (`python -m guardagent.service`, the `guardagent serve` command, no database)
is sent SIGTERM while a client keeps one connection alive and sends on it. Seen failing before
the fix: the listener closed at once and the kept-alive connection was cut, so the client's
next request got no answer. Now, for `GUARDAGENT_DRAIN_SECONDS`, `/readyz` answers 503
"draining" while every request is still answered, each answer closing its connection (so the
client, or a load balancer, reconnects elsewhere); then the replica exits.
"""

from __future__ import annotations

import http.client
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pg_server import free_port, start_replica, stop, wait_ready
from tests.test_service_app import ADULT, OUTPUT

pytestmark = pytest.mark.slow  # a server subprocess

DRAIN = 8.0


@pytest.fixture()
def replica(tmp_path: Path) -> Iterator[tuple[Any, int]]:
    port, log = free_port(), tmp_path / "replica.log"
    proc = start_replica(
        port,
        {
            "GUARDAGENT_PROFILE": "mind2web-sc",
            "GUARDAGENT_DRAIN_SECONDS": str(DRAIN),
            "GUARDAGENT_MEMORY_DIR": str(tmp_path / "memory"),
        },
        log,
    )
    try:
        wait_ready(proc, port, log)
        yield proc, port
    finally:
        stop(proc, signal.SIGKILL)


def _decide(conn: http.client.HTTPConnection) -> tuple[int, str, Any]:
    conn.request(
        "POST",
        "/v1/decide/event",
        body=json.dumps({"input": ADULT, "output": OUTPUT}),
        headers={"Content-Type": "application/json"},
    )
    answer = conn.getresponse()
    return answer.status, answer.getheader("connection", ""), json.loads(answer.read())


def _ready(port: int) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/readyz")
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()


def test_a_terminated_replica_drains_before_it_closes(replica: tuple[Any, int]) -> None:
    proc, port = replica
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    status, connection, decision = _decide(conn)
    assert status == 200 and decision["allowed"] is True
    assert connection.lower() != "close", "kept alive before the signal"
    sock = conn.sock
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)  # the signal is handled (the drain has DRAIN s; this is well inside)
    answers = [_decide(conn) for _ in range(3)]  # the first on the kept-alive connection
    assert sock is not None and conn.sock is None or conn.sock is not sock, (
        "the answer during the drain closed the kept-alive connection"
    )
    assert [(s, d["allowed"]) for s, _, d in answers] == [(200, True)] * 3
    assert all(c.lower() == "close" for _, c, _ in answers), "each closes its connection"
    status, body = _ready(port)
    assert status == 503 and body["status"] == "draining"
    assert proc.wait(DRAIN + 60) == 0, "the drain ends, and the replica exits"


def test_a_second_signal_ends_the_drain(tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "replica.log"
    proc = start_replica(
        port,
        {
            "GUARDAGENT_PROFILE": "mind2web-sc",
            "GUARDAGENT_DRAIN_SECONDS": "3600",
            "GUARDAGENT_MEMORY_DIR": str(tmp_path / "memory"),
        },
        log,
    )
    try:
        wait_ready(proc, port, log)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert _ready(port)[0] == 503, "draining"
        assert proc.poll() is None, "still serving: the drain has an hour"
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)  # well before the hour: the second signal ended the drain
    finally:
        stop(proc, signal.SIGKILL)
