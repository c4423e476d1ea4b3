"""A client of several replicas: a request that gets no decision goes to the next (issue 35, 4).

Fake replicas on 127.0.0.1 (a thread each) answer as a replica, a replica in an outage, a
proxy in front of a dead one, or a closed connection; one URL is a port nobody listens on.
Seen failing before the fix: `GuardClient` took one URL (a list or a comma was refused), so a
replica down was a denial, and `check --server` could name only one.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from contextlib import redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardagent.service import client as client_module
from guardagent.service.client import GuardClient, ServiceError
from tests.servers import free_port

DECISION = {"allowed": True, "label": 0, "reason": "allowed", "violations": []}
DENIAL = {"allowed": False, "label": 1, "reason": "denied: the database is down", "violations": []}
ANSWERS: dict[str, tuple[int, dict[str, str], bytes]] = {
    "decide": (200, {"Content-Type": "application/json"}, json.dumps(DECISION).encode()),
    "outage": (
        503,
        {"Content-Type": "application/json", "Retry-After": "3"},
        json.dumps(DENIAL).encode(),
    ),
    "proxy": (502, {"Content-Type": "text/html"}, b"<html>502 Bad Gateway</html>"),
    "bad": (400, {"Content-Type": "application/json"}, b'{"error": "not a request"}'),
    "conflict": (409, {"Content-Type": "application/json"}, b'{"error": "key reused"}'),
}
DOWN = ("refused", "reset")
"""Kinds that give no answer: a port nobody listens on, a connection closed unanswered."""
KINDS = [*ANSWERS, *DOWN]


class _Replica(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        server: Any = self.server
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        server.seen.append((self.command, self.path, json.loads(body) if body else None))
        if server.kind == "reset":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        status, headers, payload = ANSWERS[server.kind]
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(payload))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def replicas() -> Iterator[dict[str, tuple[str, list[Any]]]]:
    """One fake replica per kind: its URL and the requests it saw."""
    servers, found = [], {}
    for kind in KINDS:
        if kind == "refused":
            found[kind] = (f"http://127.0.0.1:{free_port()}", [])
            continue
        server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Replica)
        server.kind, server.seen = kind, []
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        found[kind] = (f"http://127.0.0.1:{server.server_address[1]}", server.seen)
    try:
        yield found
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


@pytest.fixture()
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(client_module.time, "sleep", slept.append)
    return slept


def _reset(replicas: dict[str, tuple[str, list[Any]]]) -> None:
    for _, seen in replicas.values():
        seen.clear()


def _expected(kinds: list[str]) -> tuple[int, Any]:
    """How many replicas are asked, and the outcome: a dict (returned) or a status (raised)."""
    for i, kind in enumerate(kinds):
        if kind == "decide":
            return i + 1, DECISION
        if kind in ("bad", "conflict"):
            return i + 1, ANSWERS[kind][0]
    last = kinds[-1]
    return len(kinds), DENIAL if last == "outage" else 502 if last == "proxy" else 0


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=4))
def test_a_request_goes_from_replica_to_replica_until_one_answers(
    replicas: dict[str, tuple[str, list[Any]]],
    no_sleep: list[float],
    kinds: list[str],
) -> None:
    _reset(replicas)
    client = GuardClient([replicas[k][0] for k in kinds], timeout=10)
    asked, outcome = _expected(kinds)
    try:
        got: Any = client.check_raw("input", "output", thread_id="t-1")
    except ServiceError as exc:
        got = exc.status
    assert got == outcome, (kinds, got)
    sent = [body for k in dict.fromkeys(kinds) if k != "refused" for _, _, body in replicas[k][1]]
    reached = [k for k in kinds[:asked] if k != "refused"]
    assert len(sent) == len(reached), "each replica up to the one that answered, once"
    assert len({body.get("idempotency_key") for body in sent}) <= 1, "one key for every try"
    if sent:  # with a replica to retry on, even the first try carries the key
        assert ("idempotency_key" in sent[0]) == (len(kinds) > 1), sent[0]
    assert no_sleep == [], "moving to another replica needs no pause"


def test_the_client_keeps_to_the_replica_that_answered(
    replicas: dict[str, tuple[str, list[Any]]],
) -> None:
    _reset(replicas)
    client = GuardClient(f"{replicas['refused'][0]}, {replicas['decide'][0]}", timeout=10)
    for _ in range(3):
        assert client.check_raw("input", "output") == DECISION
    assert len(replicas["decide"][1]) == 3
    assert client.thread("t-1") == DECISION, "reads go to the same replica"
    assert all("idempotency_key" not in body for _, _, body in replicas["decide"][1] if body), (
        "a stateless request is stored nowhere: no key, decided again if retried"
    )


def test_back_on_a_replica_the_client_waits_its_retry_after(
    replicas: dict[str, tuple[str, list[Any]]],
    no_sleep: list[float],
) -> None:
    _reset(replicas)
    one = GuardClient(replicas["outage"][0], retries=2, timeout=10)
    assert one.check_raw("input", "output", thread_id="t-1") == DENIAL
    assert no_sleep == [3.0, 3.0] and len(replicas["outage"][1]) == 3
    no_sleep.clear()
    two = GuardClient([replicas["outage"][0], replicas["proxy"][0]], retries=3, timeout=10)
    with pytest.raises(ServiceError) as caught:
        two.check_raw("input", "output", thread_id="t-1")
    assert caught.value.status == 502
    assert no_sleep == [3.0], "only the replica that asked for a pause makes the client wait"


@pytest.mark.parametrize(
    "url",
    [
        "",
        ",",
        "http://127.0.0.1:1,",
        "http://127.0.0.1:1,,http://127.0.0.1:2",
        "http://127.0.0.1:1,ftp://127.0.0.1:2",
        "http://127.0.0.1:1 http://127.0.0.1:2",
        [],
        ["http://127.0.0.1:1", "http://127.0.0.1:2,"],
    ],
)
def test_a_list_with_a_url_that_is_not_one_is_refused(url: Any) -> None:
    with pytest.raises(ValueError, match="service URL"):
        GuardClient(url)


def test_check_server_takes_several_replicas(replicas: dict[str, tuple[str, list[Any]]]) -> None:
    from click.testing import CliRunner

    from guardagent.cli import main
    from guardagent.service.hook import fast_check

    _reset(replicas)
    urls = f"{replicas['refused'][0]},{replicas['outage'][0]},{replicas['decide'][0]}"
    argv = [
        "check",
        "--server",
        urls,
        "--profile",
        "mind2web-sc",
        "--input",
        "a",
        "--output",
        "b",
        "--thread-id",
        "t-cli",
    ]
    shown = io.StringIO()
    with redirect_stdout(shown):
        assert fast_check(argv) == 0  # the hook's path
    assert json.loads(shown.getvalue())["allowed"] is True
    result = CliRunner().invoke(main, argv)  # click's path
    assert result.exit_code == 0, result.output
    keys = [body["idempotency_key"] for k in ("outage", "decide") for _, _, body in replicas[k][1]]
    assert len(keys) == 4 and keys[:2] == keys[2:] and keys[0] != keys[1], "one key per call"


def test_a_request_that_is_not_json_data_goes_to_no_replica(
    replicas: dict[str, tuple[str, list[Any]]],
) -> None:
    _reset(replicas)
    client = GuardClient([replicas["refused"][0], replicas["decide"][0]], timeout=10)
    with pytest.raises(ServiceError, match="not JSON data") as caught:
        client.check_trace_raw([object()], thread_id="t-1")
    assert caught.value.status == 0 and replicas["decide"][1] == []
