"""Every request has a server-side deadline, and every 503 tells the client when to retry (issue 35, 4).

In one process, no database: the guard's run is made to hang (or fail) where the service calls
it. Seen failing before the fix: a hung run held the request (and its thread's lock) for as
long as it hung, and a 503 carried no Retry-After.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from guardagent.service.app import create_app
from guardagent.service.decider import Decider
from guardagent.service.heads import HeadMoved
from guardagent.service.locks import LockBusy
from guardagent.service.requests import parse_request
from guardagent.service.settings import ServiceSettings
from tests.test_service_app import ADULT, OUTPUT

TRACES = Path(__file__).parent / "traces"
MESSAGES = json.loads((TRACES / "i02_exfil_langchain.json").read_text())["messages"]
HANG_SECONDS = 30.0


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    settings = ServiceSettings.from_env(
        {
            "GUARDAGENT_PROFILE": "mind2web-sc",
            "GUARDAGENT_REQUEST_SECONDS": "0.5",
            "GUARDAGENT_MEMORY_DIR": str(tmp_path_factory.mktemp("deadline-memory")),
        }
    )
    with TestClient(create_app(settings)) as c:
        decider = c.app.state.decider  # warm the trace profile: its first run is not the test
        warm = parse_request("trace", {"profile": "assistant-trace", "messages": MESSAGES[:2]})
        assert c.portal.call(decider.decide, warm).status == 200
        yield c


REQUESTS = [
    ("event", {"input": ADULT, "output": OUTPUT}),
    ("event", {"input": ADULT, "output": OUTPUT, "thread_id": "t-event"}),
    ("event", {"input": ADULT, "output": OUTPUT, "idempotency_key": "k-event"}),
    ("trace", {"profile": "assistant-trace", "messages": MESSAGES[:2]}),
    (
        "trace",
        {
            "profile": "assistant-trace",
            "messages": MESSAGES[:2],
            "thread_id": "t-trace",
            "idempotency_key": "k-trace",
        },
    ),
]


def _hang_once(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The next guard run hangs; later ones run as usual. Returns the runs' outcomes."""
    real = Decider._run
    runs: list[str] = []

    async def run(self: Decider, *args: Any, **kw: Any) -> Any:
        if not runs:
            runs.append("hung")
            try:
                await asyncio.sleep(HANG_SECONDS)
            except asyncio.CancelledError:
                runs.append("cancelled")
                raise
        runs.append("ran")
        return await real(self, *args, **kw)

    monkeypatch.setattr(Decider, "_run", run)
    return runs


@pytest.mark.parametrize("kind, body", REQUESTS)
def test_a_hung_run_ends_at_the_deadline_and_frees_its_thread(
    client: Any,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    body: dict[str, Any],
) -> None:
    runs = _hang_once(monkeypatch)
    late = client.post(f"/v1/decide/{kind}", json=body)
    assert late.status_code == 503, late.json()
    assert late.headers.get("retry-after", "").isdigit()
    denial = late.json()
    assert denial["allowed"] is False and denial["label"] == 1
    assert "GUARDAGENT_REQUEST_SECONDS" in denial["reason"]
    again = client.post(f"/v1/decide/{kind}", json=body)  # the same thread, the same key
    assert again.status_code == 200 and again.json()["allowed"] is True, again.json()
    assert "Idempotent-Replayed" not in again.headers, "the late request was not decided"
    assert runs[:2] == ["hung", "cancelled"] and runs[-1] == "ran"


@pytest.mark.parametrize(
    "failure",
    [
        HeadMoved("the thread moved on"),
        OSError("connection to the database lost"),
        RuntimeError("a bug"),
        TimeoutError("the database did not answer"),
    ],
)
def test_every_503_is_a_denial_with_a_retry_after(
    client: Any, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    async def run(self: Decider, *args: Any, **kw: Any) -> Any:
        raise failure

    monkeypatch.setattr(Decider, "_run", run)
    answer = client.post(
        "/v1/decide/event", json={"input": ADULT, "output": OUTPUT, "thread_id": "t-503"}
    )
    assert answer.status_code == 503, answer.json()
    assert answer.headers.get("retry-after", "").isdigit()
    assert answer.json()["allowed"] is False


def test_a_database_that_gives_no_connection_is_an_outage_not_a_busy_thread() -> None:
    """The lock pool's timeout is an outage (503, retry), a held thread a denial (200)."""
    from guardagent.service.locks import PostgresLocks

    class NoConnections:
        def connection(self, timeout: float) -> Any:
            from psycopg_pool import PoolTimeout

            raise PoolTimeout("couldn't get a connection after 0.1 sec")

    async def take() -> None:
        async with PostgresLocks(NoConnections(), 0.1).hold(["thread:t"]):
            pass

    with pytest.raises(Exception) as caught:
        asyncio.run(take())
    from guardagent.service.outages import ServiceUnavailable

    assert isinstance(caught.value, ServiceUnavailable)
    assert not isinstance(caught.value, LockBusy), "not answered as a busy thread (200)"


def test_a_profile_slower_to_build_than_the_deadline_is_built_once_and_then_served(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request past its deadline leaves the guard it was building to finish: the next
    request finds it, instead of each starting (and abandoning) the build again."""
    real = Decider._build
    builds: list[str] = []

    def build(self: Decider, ref: str) -> Any:
        builds.append(ref)
        import time

        time.sleep(1.5)  # a build slower than the deadline
        return real(self, ref)

    monkeypatch.setattr(Decider, "_build", build)
    settings = ServiceSettings.from_env(
        {
            "GUARDAGENT_PROFILE": "mind2web-sc",
            "GUARDAGENT_REQUEST_SECONDS": "0.5",
            "GUARDAGENT_MEMORY_DIR": str(tmp_path),
        }
    )
    with TestClient(create_app(settings)) as c:
        answers = []
        for _ in range(40):
            answer = c.post(
                "/v1/decide/trace", json={"profile": "assistant-trace", "messages": MESSAGES[:2]}
            )
            answers.append(answer.status_code)
            if answer.status_code == 200:
                break
    assert answers[0] == 503 and answers[-1] == 200, answers
    assert builds.count(settings.guard.profile) == 1
    assert len(builds) == 2, "the trace profile was built once"


def test_a_hung_history_read_ends_at_the_deadline(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from guardagent.service.threads import ThreadStore

    async def history(self: ThreadStore, thread_id: str, limit: int = 1000) -> Any:
        await asyncio.sleep(HANG_SECONDS)

    monkeypatch.setattr(ThreadStore, "history", history)
    answer = client.get("/v1/threads/t-event")
    assert answer.status_code == 503 and answer.headers.get("retry-after", "").isdigit()
    assert "did not finish" in answer.json()["error"]


@pytest.mark.parametrize(
    "name, raw, value",
    [
        ("REQUEST_SECONDS", "2.5", 2.5),
        ("DRAIN_SECONDS", "0", 0.0),
        ("DRAIN_SECONDS", "-0", 0.0),
        ("DRAIN_SECONDS", "15", 15.0),
        ("REQUEST_SECONDS", "0", None),
        ("REQUEST_SECONDS", "nan", None),
        ("DRAIN_SECONDS", "-1", None),
        ("DRAIN_SECONDS", "inf", None),
        ("DRAIN_SECONDS", "soon", None),
    ],
)
def test_the_deadline_and_the_drain_are_settings(name: str, raw: str, value: float | None) -> None:
    env = {f"GUARDAGENT_{name}": raw}
    if value is None:
        with pytest.raises(ValueError, match=f"GUARDAGENT_{name}"):
            ServiceSettings.from_env(env)
        return
    assert getattr(ServiceSettings.from_env(env), name.lower()) == value
