"""One run at a time per thread (and per idempotency key), across every replica.

Two replicas that run the same thread at once both read its last checkpoint and both write a
child of it: the thread's history forks, and one decision never saw the other. So a request
on a thread first takes the thread's lock, for the whole run, and waits a bounded time for
it; past that wait it is denied with the reason (:class:`LockBusy`), never run unlocked.

- :class:`PostgresLocks`: a session advisory lock ``pg_advisory_lock(ns, hashtext(key))`` on
  a connection of a dedicated pool (tried first without waiting; when taken, waited for with
  ``lock_timeout`` as the bound). The pool must reset returned connections with
  ``pg_advisory_unlock_all()``: :func:`release_all`. A replica that dies
  loses its connection, and Postgres drops its locks at once: no heartbeat to expire.
- :class:`LocalLocks`: asyncio locks, for a single replica without a database.

Keys are taken in sorted order, so two requests that share two keys cannot deadlock; a hash
collision between two keys only makes them wait for each other.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

from guardagent.service.outages import ServiceUnavailable

LOCK_NAMESPACE = "guardagent"
"""First key of every advisory lock (``hashtext``ed), apart from other users of the database."""


class LockBusy(Exception):
    """The wait for a thread's lock ran out.

    No connection to take it on is an outage instead
    (:class:`~guardagent.service.outages.ServiceUnavailable`).
    """


class Locks(Protocol):
    """Hold the locks of `keys` for a block; the block gets the lock's session (or None)."""

    def hold(self, keys: Sequence[str]) -> Any:
        """An async context manager yielding the session the locks are held on."""


def _busy(key: str, wait: float) -> LockBusy:
    what = key.partition(":")
    return LockBusy(f"{what[0]} {what[2]!r} is busy with another run: waited {wait:g} s")


class LocalLocks:
    """Per-key asyncio locks of one process (a single replica without Postgres)."""

    def __init__(self, wait_seconds: float) -> None:
        self.wait = wait_seconds
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def _ref(self, key: str, delta: int) -> asyncio.Lock:
        lock, users = self._locks.get(key) or (asyncio.Lock(), 0)
        if users + delta <= 0:
            self._locks.pop(key, None)  # the last user leaves: no lock kept per thread ever seen
        else:
            self._locks[key] = (lock, users + delta)
        return lock

    @asynccontextmanager
    async def hold(self, keys: Sequence[str]) -> AsyncIterator[None]:
        """Take every key's lock within the wait, in sorted order; release all on exit."""
        deadline = time.monotonic() + self.wait
        held: list[str] = []
        try:
            for key in sorted(set(keys)):
                lock = self._ref(key, +1)
                try:
                    await asyncio.wait_for(lock.acquire(), max(0.0, deadline - time.monotonic()))
                except BaseException as exc:  # timed out or cancelled: not held, not counted
                    self._ref(key, -1)
                    if isinstance(exc, TimeoutError):
                        raise _busy(key, self.wait) from None
                    raise
                held.append(key)
            yield None
        finally:
            for key in reversed(held):
                self._ref(key, 0).release()
                self._ref(key, -1)


async def release_all(conn: Any) -> None:
    """The lock pool's reset: a connection goes back holding no lock, whatever its user did."""
    await conn.execute("SELECT pg_advisory_unlock_all()")


class PostgresLocks:
    """Session advisory locks, held on a connection of `pool` for the whole block."""

    def __init__(self, pool: Any, wait_seconds: float) -> None:
        self.pool = pool
        self.wait = wait_seconds

    @asynccontextmanager
    async def hold(self, keys: Sequence[str]) -> AsyncIterator[Any]:
        """Take every key's lock within the wait; yields the connection that holds them."""
        from psycopg import errors
        from psycopg_pool import PoolTimeout

        deadline = time.monotonic() + self.wait
        try:
            # Locks are freed when the connection goes back: the pool's reset runs
            # pg_advisory_unlock_all (a broken connection is closed, which frees them too).
            async with self.pool.connection(timeout=self.wait) as conn:
                waited = False
                for key in sorted(set(keys)):
                    args = (LOCK_NAMESPACE, key)
                    cur = await conn.execute(
                        "SELECT pg_try_advisory_lock(hashtext(%s), hashtext(%s))", args)
                    row = await cur.fetchone()
                    if row and row[0]:
                        continue  # free: one round trip
                    left_ms = int((deadline - time.monotonic()) * 1000)
                    if left_ms < 1:
                        raise _busy(key, self.wait)
                    waited = True
                    await conn.execute("SELECT set_config('lock_timeout', %s, false)",
                                       (f"{left_ms}ms",))  # fmt: skip
                    try:
                        await conn.execute(
                            "SELECT pg_advisory_lock(hashtext(%s), hashtext(%s))", args)
                    except errors.LockNotAvailable:
                        raise _busy(key, self.wait) from None
                if waited:
                    await conn.execute("RESET lock_timeout")
                yield conn
        except PoolTimeout:  # the database is down, or every connection busy: retry (503)
            raise ServiceUnavailable(f"no database connection free for a lock within "
                                     f"{self.wait:g} s (GUARDAGENT_POOL_SIZE)",
                                     ) from None  # fmt: skip
