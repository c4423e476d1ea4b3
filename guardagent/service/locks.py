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
  Requests for one key *inside a replica* first take turns on an asyncio lock (they hold no
  connection while they wait), and a run that ends while another of the replica waits for
  the same key hands the connection, lock still held, to it (at most :data:`HANDOVERS` in a
  row, then the lock is let go so other replicas get their turn), with its :class:`Turn`'s
  baton (the head the last run wrote): a hot thread costs the database one lock per burst,
  not a lock and a lock wait per request. A session that dies while its lock is handed on
  is noticed as any lost lock is: by the head's compare-and-set on the next write.
- :class:`LocalLocks`: asyncio locks, for a single replica without a database.

Keys are taken in sorted order, so two requests that share two keys cannot deadlock; a hash
collision between two keys only makes them wait for each other.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from guardagent.service.outages import ServiceUnavailable

LOCK_NAMESPACE = "guardagent"
"""First key of every advisory lock (``hashtext``ed), apart from other users of the database."""


class LockBusy(Exception):
    """The wait for a thread's lock ran out.

    No connection to take it on is an outage instead
    (:class:`~guardagent.service.outages.ServiceUnavailable`).
    """


@dataclass(frozen=True)
class Turn:
    """A held lock: the session it is held on (None in memory), and its baton.

    The baton is what the runs of one unbroken hold of the lock tell each other (a handed-on
    lock keeps it; a lock taken afresh starts with an empty one): while the lock was never
    let go, what the previous run wrote is still what the database holds, unless the lock's
    session died, which the writes' compare-and-set catches.
    """

    conn: Any = None
    baton: dict[str, Any] = field(default_factory=dict)


class Locks(Protocol):
    """Hold the locks of `keys` for a block; the block gets its :class:`Turn`."""

    def hold(self, keys: Sequence[str]) -> Any:
        """An async context manager yielding the :class:`Turn` of the held locks."""


def _busy(key: str, wait: float) -> LockBusy:
    what = key.partition(":")
    return LockBusy(f"{what[0]} {what[2]!r} is busy with another run: waited {wait:g} s")


HANDOVERS = 16
"""Runs of one replica in a row that may hand a key's database lock on before letting it go."""


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

    def users(self, key: str) -> int:
        """How many of this process hold or wait for `key`."""
        return self._locks.get(key, (None, 0))[1]

    @asynccontextmanager
    async def hold(self, keys: Sequence[str]) -> AsyncIterator[Turn]:
        """Take every key's lock within the wait, in sorted order; release all on exit."""
        async with self.queue(keys, time.monotonic() + self.wait):
            yield Turn()

    @asynccontextmanager
    async def queue(self, keys: Sequence[str], deadline: float) -> AsyncIterator[None]:
        """Wait for every key's turn until `deadline`, in sorted order; release all on exit."""
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


@dataclass
class _Held:
    """A lock connection holding a key's advisory lock, and how many runs in a row used it."""

    entered: Any  # the pool's connection context, to give the connection back
    conn: Any
    runs: int = 1
    baton: dict[str, Any] = field(default_factory=dict)

    async def release(self, exc: BaseException | None = None) -> None:
        """Back to the pool, whose reset lets the lock go (a broken one is closed instead)."""
        await self.entered.__aexit__(type(exc) if exc else None, exc, None)


class PostgresLocks:
    """Session advisory locks, held on a connection of `pool` for the whole block."""

    def __init__(self, pool: Any, wait_seconds: float) -> None:
        self.pool = pool
        self.wait = wait_seconds
        self._turns = LocalLocks(wait_seconds)
        self._parked: dict[str, _Held] = {}

    @asynccontextmanager
    async def hold(self, keys: Sequence[str]) -> AsyncIterator[Turn]:
        """Take every key's lock within the wait; yields the connection that holds them.

        Inside the replica the keys' turn comes first (an asyncio lock, no connection held
        while waiting); then the connection the previous run of the key handed on, or a
        pool connection and the database's lock.
        """
        keys = sorted(set(keys))
        deadline = time.monotonic() + self.wait
        one = keys[0] if len(keys) == 1 else None
        try:
            async with self._turns.queue(keys, deadline):
                held = self._parked.pop(one, None) if one is not None else None
                if held is not None and held.conn.closed:
                    await held.release()
                    held = None
                if held is None:
                    held = await self._take(keys, deadline)
                try:
                    yield Turn(held.conn, held.baton)
                except BaseException as exc:
                    await held.release(exc)
                    raise
                if (
                    one is not None
                    and held.runs < HANDOVERS
                    and self._turns.users(one) > 1
                    and not held.conn.closed
                ):
                    held.runs += 1
                    self._parked[one] = held  # the next run of this key here takes it
                else:
                    await held.release()
        finally:
            if one is not None and self._turns.users(one) == 0 and one in self._parked:
                await self._parked.pop(one).release()  # its waiter gave up: let the lock go

    async def _take(self, keys: list[str], deadline: float) -> _Held:
        """A pool connection holding every key's advisory lock, by `deadline`.

        Raises:
            ServiceUnavailable: no connection within the wait (the database, or the pool).
            LockBusy: a key held by another replica past the wait.
        """
        from psycopg import errors
        from psycopg_pool import PoolTimeout

        # Locks are freed when the connection goes back: the pool's reset runs
        # pg_advisory_unlock_all (a broken connection is closed, which frees them too).
        try:
            entered = self.pool.connection(timeout=max(0.001, deadline - time.monotonic()))
            conn = await entered.__aenter__()
        except PoolTimeout:  # the database is down, or every connection busy: retry (503)
            raise ServiceUnavailable(
                f"no database connection free for a lock within "
                f"{self.wait:g} s (GUARDAGENT_POOL_SIZE)",
            ) from None
        held = _Held(entered, conn)
        try:
            waited = False
            for key in keys:
                args = (LOCK_NAMESPACE, key)
                cur = await conn.execute(
                    "SELECT pg_try_advisory_lock(hashtext(%s), hashtext(%s))", args
                )
                row = await cur.fetchone()
                if row and row[0]:
                    continue  # free: one round trip
                left_ms = int((deadline - time.monotonic()) * 1000)
                if left_ms < 1:
                    raise _busy(key, self.wait)
                waited = True
                await conn.execute(
                    "SELECT set_config('lock_timeout', %s, false)", (f"{left_ms}ms",)
                )
                try:
                    await conn.execute("SELECT pg_advisory_lock(hashtext(%s), hashtext(%s))", args)
                except errors.LockNotAvailable:
                    raise _busy(key, self.wait) from None
            if waited:
                await conn.execute("RESET lock_timeout")
        except BaseException as exc:
            await held.release(exc)
            raise
        return held
