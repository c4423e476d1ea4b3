"""A database outage, a stall and a restart: what still works, and what a client is told (issue 35, 4).

One replica (uvicorn in this process) on a PostgreSQL from the machine's binaries (skipped,
saying why, where absent); the database is stopped and started again (`pg_ctl`), or every one
of its processes is stopped with SIGSTOP and resumed (:mod:`tests.pg_faults`). Seen failing
before the fix: `/readyz` was 503 for the whole outage (stateless decisions still worked) and
hung on a stall; thread requests were answered 200 "busy" (never retried) during an outage
and hung on a stall; after a restart the first requests took dead pooled connections (503).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from guardagent.service.client import GuardClient
from guardagent.service.settings import ServiceSettings
from guardagent.service.wire import exchange
from tests.pg_faults import stalled, start_postgres, stop_postgres
from tests.pg_server import PostgresUnavailable, running_postgres
from tests.service_thread import serving

pytestmark = pytest.mark.slow  # server tests (CI runs them: `pytest -q` selects every marker)

TRACES = Path(__file__).parent / "traces"
MESSAGES = json.loads((TRACES / "i02_exfil_langchain.json").read_text())["messages"]
WAIT = 40.0
"""A generous bound for a state to show on a loaded machine (not a measure)."""


@pytest.fixture(scope="module")
def pg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("outages")
    try:
        with running_postgres(root) as url:
            yield url
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL to test outages on: {exc}")


@pytest.fixture(scope="module")
def base(pg: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    memory = tmp_path_factory.mktemp("outages-memory")
    settings = ServiceSettings.from_env(
        {
            "GUARDAGENT_DATABASE_URL": pg,
            "GUARDAGENT_PROFILE": "assistant-trace",
            "GUARDAGENT_MEMORY_DIR": str(memory),
            "GUARDAGENT_POOL_SIZE": "6",
            "GUARDAGENT_LOCK_WAIT_SECONDS": "2",
            "GUARDAGENT_REQUEST_SECONDS": "4",
        }
    )
    with serving(settings) as url:
        yield url


def _call(
    base: str, method: str, path: str, body: Any = None, timeout: float = 30.0
) -> tuple[int, dict[str, str], Any]:
    """One exchange: status, headers, decoded JSON (the test reads headers too)."""
    host, port = base.removeprefix("http://").split(":")
    data = None if body is None else json.dumps(body).encode()
    status, headers, raw = exchange(
        "http", host, int(port), method, path, data, {"Content-Type": "application/json"}, timeout
    )
    return status, headers, json.loads(raw)


def _ready(base: str, query: str = "") -> tuple[int, Any]:
    try:
        status, _, body = _call(base, "GET", "/readyz" + query, timeout=10.0)
    except OSError as exc:  # no answer in time is no readiness
        return 0, {"error": str(exc)}
    return status, body


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not seen within {WAIT:g} s")
        time.sleep(0.2)


def _threads(base: str) -> str | None:
    body = _ready(base)[1]
    return body.get("threads") if isinstance(body, dict) else None


def _on_thread(base: str, thread: str) -> tuple[int, dict[str, str], Any]:
    return _call(base, "POST", "/v1/decide/trace", {"messages": MESSAGES[:2], "thread_id": thread})


def _stateless(base: str) -> Any:
    return GuardClient(base, timeout=30).check_trace_raw(MESSAGES[:2])


def _assert_retryable_denial(answer: tuple[int, dict[str, str], Any]) -> None:
    status, headers, body = answer
    assert status == 503, (status, body)
    assert (
        body["allowed"] is False and body["label"] == 1 and body["reason"].startswith("denied: ")
    ), body
    assert headers.get("retry-after", "").isdigit(), headers


def test_readiness_names_what_works(base: str) -> None:
    status, body = _ready(base)
    assert status == 200
    assert body["status"] == "ready"
    assert body["stateless"] == "ok" and body["threads"] == "ok", body
    assert _ready(base, "?require=threads")[0] == 200


def test_a_stopped_database_leaves_stateless_decisions_and_asks_thread_callers_to_retry(
    pg: str,
    base: str,
) -> None:
    assert _on_thread(base, "t-outage")[0] == 200
    stop_postgres(pg)
    try:
        _until(lambda: _threads(base) not in (None, "ok"), "readiness naming threads down")
        status, body = _ready(base)
        assert status == 200 and body["status"] == "degraded", body
        assert body["stateless"] == "ok", "stateless decisions need no database"
        assert _ready(base, "?require=threads")[0] == 503
        assert _stateless(base)["allowed"] is True
        for _ in range(4):  # never a 200 "busy" denial the client takes as final
            _assert_retryable_denial(_on_thread(base, "t-outage"))
    finally:
        start_postgres(pg)
    _until(lambda: _threads(base) == "ok", "readiness naming threads up again")
    status, _, decision = _on_thread(base, "t-outage")
    assert status == 200 and decision["allowed"] is True


def test_a_restarted_database_costs_no_request(pg: str, base: str) -> None:
    """Every pooled connection died in the restart: each is checked before use, none fails."""
    for _ in range(3):  # every connection of the pools has served
        assert _on_thread(base, "t-restart")[0] == 200
    stop_postgres(pg)
    start_postgres(pg)
    answers = [_on_thread(base, "t-restart") for _ in range(8)]
    assert [a[0] for a in answers] == [200] * 8, [a[2].get("reason") for a in answers]
    history = GuardClient(base).thread("t-restart")
    assert history["linear"] is True and len(history["decisions"]) == 11


def test_a_stalled_database_ends_thread_requests_at_the_deadline(pg: str, base: str) -> None:
    assert _on_thread(base, "t-stall")[0] == 200
    with stalled(pg):
        _until(lambda: _threads(base) not in (None, "ok"), "readiness naming threads down")
        assert _ready(base)[0] == 200
        assert _stateless(base)["allowed"] is True
        try:
            answer = _on_thread(base, "t-stall")  # the server's deadline, well before 30 s
        except OSError as exc:  # pragma: no cover - the failure this test is for
            raise AssertionError(f"no answer while the database stalls: {exc}") from None
        _assert_retryable_denial(answer)
        assert "GUARDAGENT_REQUEST_SECONDS" in answer[2]["reason"]
    _until(lambda: _threads(base) == "ok", "readiness naming threads up again")
    status, _, decision = _on_thread(base, "t-stall")
    assert status == 200 and decision["allowed"] is True, decision
    assert GuardClient(base).thread("t-stall")["linear"] is True


def test_a_client_of_two_replicas_keeps_deciding_when_one_stops(
    pg: str,
    base: str,
    tmp_path: Path,
) -> None:
    """The client names both replicas; once the first is gone its requests go to the other,
    with the same idempotency key, and the thread keeps one history of what was answered."""
    settings = ServiceSettings.from_env(
        {
            "GUARDAGENT_DATABASE_URL": pg,
            "GUARDAGENT_PROFILE": "assistant-trace",
            "GUARDAGENT_MEMORY_DIR": str(tmp_path),
            "GUARDAGENT_POOL_SIZE": "2",
            "GUARDAGENT_LOCK_WAIT_SECONDS": "2",
        }
    )
    answers = []
    with serving(settings) as first:
        client = GuardClient([first, base], timeout=30)
        answers.append(client.check_trace_raw(MESSAGES[:2], thread_id="t-failover"))
    # the first replica is gone: the next call fails over, the ones after start at the other
    answers += [client.check_trace_raw(MESSAGES[:2], thread_id="t-failover") for _ in range(3)]
    assert [a["allowed"] for a in answers] == [True] * 4
    history = GuardClient(base).thread("t-failover")
    assert history["linear"] is True and len(history["decisions"]) == 4
