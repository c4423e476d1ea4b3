"""What a replica can do now, for `/readyz`: stateless decisions, and decisions on threads.

A decision without a thread or idempotency key needs only the warm guard; one with either
needs the database too. So readiness names both, and a database outage does not take away
what still works:

===========  ========  ==================================================================
status       HTTP      meaning
===========  ========  ==================================================================
starting     503       the guard is not warm yet
draining     503       SIGTERM: finishing its requests, about to close
ready        200       stateless decisions and threads both work
degraded     200       stateless decisions work; threads do not (``threads`` says why);
                       ``/readyz?require=threads`` answers 503 instead
===========  ========  ==================================================================

The database's state comes from a probe (:class:`DatabaseProbe`) on a connection of its own,
once a second, each bounded in time, so a stalled database shows as down within seconds
and a probe never waits for a pool busy with requests (a full pool is load, not an outage).
The probe's result is read by `/readyz` at once: a load balancer's check never waits on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

from guardagent.service.outages import within

log = logging.getLogger("guardagent.service")

PROBE_EVERY_SECONDS = 1.0
PROBE_WITHIN_SECONDS = 2.0
OK = "ok"


class ThreadsProbe(Protocol):
    """Whether decisions on threads can be made now."""

    def threads(self) -> str:
        """``"ok"``, or what is wrong (``"down: ..."``)."""


class InProcess:
    """Threads kept in this process: they work whenever the replica does."""

    def threads(self) -> str:
        """Always ``"ok"``."""
        return OK


class DatabaseProbe:
    """The database as seen on a connection of the probe's own, checked every second.

    Args:
        url: The database's URL.
        every: Seconds between checks.
        bound: Seconds a check (connecting included) may take before the database counts
            as down (a stalled server answers nothing; a cancelled query is left to end on
            its own, :func:`within`).
    """

    def __init__(
        self, url: str, every: float = PROBE_EVERY_SECONDS, bound: float = PROBE_WITHIN_SECONDS
    ) -> None:
        self.url, self.every, self.bound = url, every, bound
        self._state = "down: not checked yet"
        self._conn: Any = None

    def threads(self) -> str:
        """The last check's result."""
        return self._state

    async def check(self) -> None:
        """Check once, and record the result."""
        try:
            await within(self._select(), self.bound, "the database probe")
        except Exception as exc:  # any failure, the deadline's too: down, saying why
            self._conn = None  # a late check closes its connection itself (_select)
            if self._state == OK:
                log.warning("database down for threads: %s", exc)
            self._state = f"down: {type(exc).__name__}: {str(exc)[:200]}"
            return
        if self._state != OK:
            log.info("database up for threads")
        self._state = OK

    async def _select(self) -> None:
        import psycopg

        conn = self._conn
        if conn is None or conn.closed:
            conn = self._conn = await psycopg.AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=max(1, round(self.bound))
            )
        try:
            await conn.execute("SELECT 1")
        except BaseException:  # failed or cancelled: this connection is not used again
            with contextlib.suppress(Exception):
                await conn.close()
            raise

    async def _loop(self) -> None:
        while True:
            started = time.monotonic()
            await self.check()
            await asyncio.sleep(max(0.0, self.every - (time.monotonic() - started)))

    @asynccontextmanager
    async def running(self) -> AsyncIterator[DatabaseProbe]:
        """Check now, then every `every` seconds in the background, for the block."""
        await self.check()
        task = asyncio.create_task(self._loop(), name="guardagent-database-probe")
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    await self._conn.close()


def readiness(
    *, warm: bool, draining: bool, threads: str, require_threads: bool
) -> tuple[int, dict[str, Any]]:
    """`/readyz`'s status and body (see the module's table)."""
    if draining or not warm:
        return 503, {
            "status": "draining" if draining else "starting",
            "stateless": "down",
            "threads": "down",
        }
    body = {"status": "ready" if threads == OK else "degraded", "stateless": OK, "threads": threads}
    return (503 if require_threads and threads != OK else 200), body
