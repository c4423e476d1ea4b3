"""Where a replica keeps what replicas share: Postgres when configured, else this process.

With `GUARDAGENT_DATABASE_URL` a replica opens two fixed-size pools on it (no connection opened
while a request waits; 2 x `GUARDAGENT_POOL_SIZE` connections per replica): one for thread locks
(held for a whole run, so it is kept apart: a lock holder never waits for a connection that
lock waiters hold) and one for `AsyncPostgresSaver`, short queries and the transactions that
record decisions; each connection is checked before use and a lost one reconnected every
second (:mod:`guardagent.service.pools`), and a probe on a connection of its own tells
`/readyz` whether threads work (:mod:`guardagent.service.readiness`). The schema (LangGraph's
checkpoint tables, the threads' heads and the idempotency table) is created, or upgraded in
place (:meth:`PostgresHeads.setup`), under an advisory lock, so replicas that start together
do not race (polled: see :func:`_setup_lock`). Without a database everything lives in this
process, which is right for one replica only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from guardagent.service.heads import MemoryHeads, PostgresHeads
from guardagent.service.idempotency import Decisions, MemoryDecisions, PostgresDecisions
from guardagent.service.locks import (
    LOCK_NAMESPACE,
    LocalLocks,
    LockBusy,
    Locks,
    PostgresLocks,
    release_all,
)
from guardagent.service.readiness import DatabaseProbe, InProcess, ThreadsProbe
from guardagent.service.settings import ServiceSettings
from guardagent.service.threads import ThreadStore, saver_serde

_OPEN_SECONDS = 30.0


@dataclass(frozen=True)
class Stores:
    """A replica's locks, stored decisions, threads, and whether threads work now."""

    locks: Locks
    decisions: Decisions
    threads: ThreadStore
    probe: ThreadsProbe


async def _setup_lock(conn: Any) -> None:
    """Take the schema lock by polling, never by waiting inside a statement.

    LangGraph's migrations build indexes `CONCURRENTLY`, which waits for every open
    transaction: a replica blocked in `pg_advisory_lock` is one, and would wait for the very
    replica whose index build waits for it.
    """
    deadline = time.monotonic() + _OPEN_SECONDS
    while True:
        cur = await conn.execute(
            "SELECT pg_try_advisory_lock(hashtext(%s), hashtext(%s))",
            (LOCK_NAMESPACE, "setup:schema"),
        )
        row = await cur.fetchone()
        if row and row[0]:
            return
        if time.monotonic() > deadline:
            raise LockBusy(f"another replica kept the schema lock for {_OPEN_SECONDS:g} s")
        await asyncio.sleep(0.1)


@asynccontextmanager
async def open_stores(settings: ServiceSettings) -> AsyncIterator[Stores]:
    """The replica's stores for its lifetime; pools close (after in-flight work) on exit."""
    if not settings.database_url:
        yield Stores(
            LocalLocks(settings.lock_wait_seconds),
            MemoryDecisions(),
            ThreadStore(InMemorySaver(serde=saver_serde()), heads=MemoryHeads()),
            InProcess(),
        )
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row

    from guardagent.service.pools import PromptPool

    url, size = settings.database_url, settings.pool_size
    data_pool = PromptPool(
        url,
        min_size=size,
        max_size=size,
        open=False,
        name="guardagent-data",
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
    )
    lock_pool = PromptPool(
        url,
        min_size=size,
        max_size=size,
        open=False,
        name="guardagent-locks",
        kwargs={"autocommit": True},
        reset=release_all,
    )
    await data_pool.open(wait=True, timeout=_OPEN_SECONDS)
    try:
        await lock_pool.open(wait=True, timeout=_OPEN_SECONDS)
        try:
            saver = AsyncPostgresSaver(data_pool, serde=saver_serde())
            async with lock_pool.connection() as conn:
                await _setup_lock(conn)
                try:
                    await saver.setup()
                    await PostgresHeads.setup(conn)
                    await PostgresDecisions.setup(conn)
                finally:
                    await conn.execute("SELECT pg_advisory_unlock_all()")

            savers = [
                saver,
                *(
                    AsyncPostgresSaver(data_pool, serde=saver_serde())
                    for _ in range(max(0, size // 2 - 1))
                ),
            ]
            async with DatabaseProbe(url).running() as probe:
                yield Stores(
                    PostgresLocks(lock_pool, settings.lock_wait_seconds),
                    PostgresDecisions(),
                    ThreadStore(*savers, heads=PostgresHeads(data_pool, saver_serde())),
                    probe,
                )
        finally:
            await lock_pool.close()
    finally:
        await data_pool.close()
