"""A database an older guardagent set up is upgraded in place; a newer one is refused.

Version 1 (before threads had heads) kept LangGraph's checkpoint tables and the idempotency
keys; the head of a thread was its highest checkpoint id. The first replica of version 2 adds
the heads and takes each thread's head to be what the older replicas took it to be. A thread
an older replica writes after that (it does not know heads) is refused, never read from a
guess; a database of a newer schema stops the replica with a message saying so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardagent.service.heads import SCHEMA_VERSION, Headless, SchemaTooNew
from tests.pg_server import PostgresUnavailable, running_postgres
from tests.test_service_sequence import MESSAGES, _ask, _rewritten, replica


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("schema")
    try:
        with running_postgres(root) as url:
            yield url
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL to test schema upgrades on: {exc}")


def _database(server: str, name: str) -> str:
    """A fresh database on `server`; its URL."""
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server.rsplit("/", 1)[0] + f"/{name}"


def _sql(url: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def test_a_version_1_database_is_upgraded_in_place(server: str, tmp_path: Path) -> None:
    url = _database(server, "upgrade_in_place")

    async def made_by_version_1() -> None:
        async with replica(url, tmp_path / "old") as old:
            for upto in (2, 4):
                assert (await _ask(old, MESSAGES[:upto], "t-old")).body["allowed"] is True

    asyncio.run(made_by_version_1())
    _sql(url, "DROP TABLE guardagent_thread_heads", "DROP TABLE guardagent_schema")

    async def continued() -> tuple[dict[str, Any], Any, Any, dict[str, Any]]:
        async with replica(url, tmp_path / "new") as new:
            upgraded = await new.threads.history("t-old")
            rewrite = await _ask(new, _rewritten(6, 3), "t-old")
            honest = await _ask(new, MESSAGES[:6], "t-old")
            return upgraded, rewrite, honest, await new.threads.history("t-old")

    upgraded, rewrite, honest, after = asyncio.run(continued())
    assert upgraded["linear"] is True and upgraded["seq"] == 2
    assert [d["allowed"] for d in upgraded["decisions"]] == [True, True]
    assert rewrite.body["allowed"] is False and "trace_rewritten" in rewrite.body["reason"], (
        "the upgraded head is the thread's latest index: the rewrite of message 3 is caught"
    )
    assert honest.body["allowed"] is True
    assert after["linear"] is True and after["seq"] == 4
    import psycopg

    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version FROM guardagent_schema").fetchone() == (SCHEMA_VERSION,)


def test_a_thread_an_older_replica_wrote_after_the_upgrade_is_refused(
    server: str, tmp_path: Path
) -> None:
    url = _database(server, "older_writer")

    async def run() -> tuple[Any, BaseException | None]:
        async with replica(url, tmp_path / "r") as new:
            # what a version-1 replica does: the latest checkpoint by id, no head
            await new.threads.graph.aupdate_state(
                {"configurable": {"thread_id": "t-orphan"}},
                {"kind": "event", "decision": {"allowed": True}, "request": None},
                as_node="record",
            )
            answer = await _ask(new, MESSAGES[:2], "t-orphan")
            try:
                await new.threads.history("t-orphan")
            except Headless as exc:
                return answer, exc
            return answer, None

    answer, refused = asyncio.run(run())
    assert answer.status == 503 and answer.body["allowed"] is False
    assert "no head" in answer.body["reason"] and "older" in answer.body["reason"]
    assert refused is not None


def test_a_database_of_a_newer_schema_is_refused(server: str, tmp_path: Path) -> None:
    url = _database(server, "newer_schema")

    async def start() -> None:
        async with replica(url, tmp_path / "r"):
            pass

    asyncio.run(start())
    _sql(url, f"UPDATE guardagent_schema SET version = {SCHEMA_VERSION + 1}")
    with pytest.raises(SchemaTooNew, match="upgrade the replica"):
        asyncio.run(start())
