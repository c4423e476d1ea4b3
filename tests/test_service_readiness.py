"""`/readyz` names what works, and a draining replica closes each connection it answers on.

In one process, no database (issue 35, items 4 and 5). Seen failing before the fix: the body
was only ``{"status": ...}``, a database outage made the whole replica 503, and answers given
while draining kept their connections open.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from guardagent.context import GuardContext
from guardagent.service.app import create_app
from guardagent.service.settings import ServiceSettings
from tests.test_service_app import ADULT, OUTPUT


@given(
    warm=st.booleans(),
    draining=st.booleans(),
    threads=st.sampled_from(["ok", "down: OperationalError: refused", "down: not checked yet"]),
    require_threads=st.booleans(),
)
def test_readiness_is_200_exactly_when_what_is_required_works(
    warm: bool, draining: bool, threads: str, require_threads: bool
) -> None:
    from guardagent.service.readiness import readiness

    status, body = readiness(
        warm=warm, draining=draining, threads=threads, require_threads=require_threads
    )
    serving = warm and not draining
    assert (status == 200) == (serving and (threads == "ok" or not require_threads))
    assert status in (200, 503)
    assert body["stateless"] == ("ok" if serving else "down")
    assert (body["threads"] == "ok") == (serving and threads == "ok")
    expected = (
        "draining"
        if draining
        else "starting"
        if not warm
        else "ready"
        if threads == "ok"
        else "degraded"
    )
    assert body["status"] == expected


class _Down:
    def threads(self) -> str:
        return "down: OperationalError: connection refused"


@pytest.fixture()
def client() -> Iterator[Any]:
    app = create_app(ServiceSettings(guard=GuardContext(profile="mind2web-sc")))
    with TestClient(app) as c:
        yield c


def test_a_replica_without_threads_still_serves_stateless_decisions(client: Any) -> None:
    assert client.get("/readyz").json() == {"status": "ready", "stateless": "ok", "threads": "ok"}
    client.app.state.probe = _Down()
    answer = client.get("/readyz")
    assert answer.status_code == 200 and answer.json()["status"] == "degraded"
    assert "refused" in answer.json()["threads"]
    assert client.get("/readyz?require=threads").status_code == 503
    assert client.get("/readyz?require=stateless").status_code == 200
    assert client.get("/readyz?require=everything").status_code == 400


def test_a_draining_replica_answers_and_closes_each_connection(client: Any) -> None:
    before = client.post("/v1/decide/event", json={"input": ADULT, "output": OUTPUT})
    assert before.headers.get("connection", "") != "close"
    client.app.state.draining = True
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.json()["status"] == "draining"
    answer = client.post("/v1/decide/event", json={"input": ADULT, "output": OUTPUT})
    assert answer.status_code == 200 and answer.json()["allowed"] is True
    assert answer.headers["connection"] == "close"
    assert ready.headers["connection"] == "close"
