"""A thread's head: the per-thread sequence that orders its writes, never a replica's clock.

LangGraph names checkpoints by time (uuid6 from the writing process's clock) and takes the
highest id as a thread's latest. Across replicas that is wrong as soon as one clock is behind:
its checkpoints sort before older ones, the next run continues from a stale index, and a
rewritten conversation passes. And the thread lock alone does not fence a write: a replica
whose lock session died (`idle_session_timeout`, an admin, a network blip) still writes.

So each thread has one row, ``guardagent_thread_heads (thread_id, seq, checkpoint_id)``: the
checkpoint that *is* the thread's latest and how many writes led to it. A run reads the head
(:class:`Head`), decides on the state at that checkpoint, and writes its checkpoint and the
head's advance in one transaction, the advance a compare-and-set on the head it read
(:meth:`PostgresHeads.advance`). If the head moved (another replica wrote, because this one
lost its lock or raced it), the transaction rolls back: nothing is written and the run is
refused (:class:`HeadMoved`), to be read and decided again. The transaction is pipelined:
BEGIN, the compare-and-set, the idempotency key's row and the checkpoint go in one round
trip, the results are checked, then COMMIT (or ROLLBACK) in a second.

Schema: ``guardagent_schema`` holds the version of these tables. A database set up by an older
guardagent (no heads) is upgraded in place when the first new replica starts: every thread's
head is its highest checkpoint id, which is what the older replicas took it to be. A database
of a newer schema is refused with a clear message. Older replicas do not fence their writes,
so stop them before starting new ones; a thread such a replica started afterwards has
checkpoints and no head, and is refused (:class:`Headless`), never read from a guess.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

HEADS = "guardagent_thread_heads"
SCHEMA = "guardagent_schema"
SCHEMA_VERSION = 2
"""1: checkpoints and idempotency keys only (heads by clock); 2: heads by sequence."""


class Head(NamedTuple):
    """A thread's latest checkpoint and its sequence number (0 and None: a new thread)."""

    seq: int
    checkpoint_id: str | None


NEW_THREAD = Head(0, None)


class WriteRefused(Exception):
    """A write whose premise no longer holds: nothing was written; read and decide again."""


class HeadMoved(WriteRefused):
    """The thread's head is not the one the run read: another write landed meanwhile."""


class Headless(RuntimeError):
    """A thread with checkpoints but no head (written by an older replica after the upgrade)."""


class SchemaTooNew(RuntimeError):
    """The database was set up by a newer guardagent than this replica."""


@dataclass(frozen=True)
class Transaction:
    """One write's transaction: its connection, saver and pipeline (all None: in memory)."""

    conn: Any
    saver: Any
    pipeline: Any = None

    async def sync(self) -> None:
        """Have the results of every statement sent so far (one round trip in a pipeline).

        None if they are all in already (the checkpoint's write syncs the pipeline it shares);
        a pipeline that does not say so (another psycopg) is synced.
        """
        if self.pipeline is not None and getattr(self.pipeline, "result_queue", True):
            await self.pipeline.sync()


Advanced = Callable[[], Head]
"""The new head of an advance sent earlier, once its transaction synced; raises
:class:`HeadMoved` if the compare-and-set found another head."""


class Heads(Protocol):
    """Where heads live, and the transaction a write and its head's advance share."""

    async def read(self, thread_id: str, session: Any = None) -> Head:
        """The thread's head (:data:`NEW_THREAD` if it has none), on `session` if given."""

    def transaction(self) -> Any:
        """An async context manager of a :class:`Transaction`: all of it commits, or none."""

    async def check(self, tx: Transaction, thread_id: str, expected: Head) -> None:
        """Refuse early (:class:`HeadMoved`) where a write cannot be rolled back."""

    async def advance(
        self,
        tx: Transaction,
        thread_id: str,
        expected: Head,
        new_id: str,
    ) -> Advanced:
        """Send: make `new_id` the head if `expected` still is (see :data:`Advanced`)."""


class MemoryHeads:
    """Heads of one process (a single replica without Postgres, under its asyncio locks)."""

    def __init__(self) -> None:
        self._heads: dict[str, Head] = {}

    async def read(self, thread_id: str, session: Any = None) -> Head:
        """The thread's head (:data:`NEW_THREAD` if it has none)."""
        return self._heads.get(thread_id, NEW_THREAD)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        """No database: the store's own saver writes (no rollback; the local lock can't be lost)."""
        yield Transaction(None, None)

    async def check(self, tx: Transaction, thread_id: str, expected: Head) -> None:
        """Refuse before the saver writes: an in-memory write is not rolled back."""
        current = self._heads.get(thread_id, NEW_THREAD)
        if current != expected:
            raise _moved(thread_id, expected, current.seq)

    async def advance(
        self,
        tx: Transaction,
        thread_id: str,
        expected: Head,
        new_id: str,
    ) -> Advanced:
        """Make `new_id` the head if `expected` still is; else :class:`HeadMoved` at once."""
        current = self._heads.get(thread_id, NEW_THREAD)
        if current != expected:
            raise _moved(thread_id, expected, current.seq)
        self._heads[thread_id] = head = Head(expected.seq + 1, new_id)
        return lambda: head


def _moved(thread_id: str, expected: Head, seq: int | None) -> HeadMoved:
    now = "has another head" if seq is None else f"is at write {seq}"
    return HeadMoved(
        f"thread {thread_id[:80]!r} moved on while this run decided: it read write "
        f"{expected.seq}, the thread {now} (another replica wrote it)"
    )


class PostgresHeads:
    """Heads in ``guardagent_thread_heads``; writes in transactions on `pool`'s connections.

    Args:
        pool: The data pool (autocommit connections with dict rows).
        serde: The thread savers' serializer, for the saver bound to each transaction.
    """

    def __init__(self, pool: Any, serde: Any) -> None:
        self.pool = pool
        self.serde = serde

    async def read(self, thread_id: str, session: Any = None) -> Head:
        """The thread's head (:data:`NEW_THREAD` if it has none and no checkpoint either).

        Args:
            thread_id: The thread.
            session: A connection to read on (the thread lock's: no connection taken from
                the pool, nor checked); None: one of the pool's.

        Raises:
            Headless: checkpoints without a head (see the module's note on upgrades).
        """
        if session is None:
            async with self.pool.connection() as conn:
                return await self._read(conn, thread_id)
        return await self._read(session, thread_id)

    async def _read(self, conn: Any, thread_id: str) -> Head:
        from psycopg.rows import tuple_row

        async with conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(
                f"SELECT seq, checkpoint_id FROM {HEADS} WHERE thread_id = %s", (thread_id,)
            )
            row = await cur.fetchone()
            if row is not None:
                return Head(int(row[0]), str(row[1]))
            await cur.execute(
                "SELECT 1 AS found FROM checkpoints WHERE thread_id = %s AND "
                "checkpoint_ns = '' LIMIT 1",
                (thread_id,),
            )
            if await cur.fetchone() is not None:
                raise Headless(
                    f"thread {thread_id[:80]!r} has checkpoints but no head: a replica "
                    "of an older guardagent wrote it after the database was "
                    "upgraded; stop older replicas (see guardagent.service.heads)"
                )
        return NEW_THREAD

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        """A pipelined connection in a transaction, and a checkpoint saver bound to it."""
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with self.pool.connection() as conn, conn.pipeline() as pipeline, conn.transaction():
            yield Transaction(conn, AsyncPostgresSaver(conn, serde=self.serde), pipeline)

    async def check(self, tx: Transaction, thread_id: str, expected: Head) -> None:
        """Nothing to do: :meth:`advance` decides, in the transaction that rolls back."""

    async def advance(
        self,
        tx: Transaction,
        thread_id: str,
        expected: Head,
        new_id: str,
    ) -> Advanced:
        """Send the head's compare-and-set in `tx` (a concurrent advance waits for the row).

        The returned function, called after `tx` synced, gives the new head, or raises
        :class:`HeadMoved` when the head was no longer `expected` (the transaction must then
        roll back).
        """
        if expected.seq == 0:
            cur = await tx.conn.execute(
                f"INSERT INTO {HEADS} (thread_id, seq, checkpoint_id) VALUES (%s, 1, %s) "
                "ON CONFLICT (thread_id) DO NOTHING",
                (thread_id, new_id),
            )
        else:
            cur = await tx.conn.execute(
                f"UPDATE {HEADS} SET seq = seq + 1, checkpoint_id = %s, updated_at = now() "
                "WHERE thread_id = %s AND seq = %s AND checkpoint_id = %s",
                (new_id, thread_id, expected.seq, expected.checkpoint_id),
            )

        def advanced() -> Head:
            if cur.rowcount != 1:
                raise _moved(thread_id, expected, None)
            return Head(expected.seq + 1, new_id)

        return advanced

    @staticmethod
    async def setup(conn: Any) -> None:
        """Create the tables, or upgrade a database of an older schema in place.

        Run under the schema lock, after LangGraph's tables exist, on an autocommit
        connection with tuple rows.

        Raises:
            SchemaTooNew: the database's schema is newer than this replica's.
        """
        async with conn.transaction():
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {SCHEMA} (id int PRIMARY KEY "
                "CHECK (id = 1), version int NOT NULL)"
            )
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {HEADS} (thread_id text PRIMARY KEY, "
                "seq bigint NOT NULL, checkpoint_id text NOT NULL, "
                "updated_at timestamptz NOT NULL DEFAULT now())"
            )
            cur = await conn.execute(f"SELECT version FROM {SCHEMA} WHERE id = 1 FOR UPDATE")
            row = await cur.fetchone()
            version = 1 if row is None else int(row[0])
            if version > SCHEMA_VERSION:
                raise SchemaTooNew(
                    f"the database's guardagent schema is version {version}; "
                    f"this replica knows {SCHEMA_VERSION}: upgrade the replica"
                )
            if version < 2:  # heads were the highest checkpoint ids: take them as they were
                await conn.execute(
                    f"INSERT INTO {HEADS} (thread_id, seq, checkpoint_id) SELECT thread_id, "
                    "count(*), max(checkpoint_id) FROM checkpoints WHERE checkpoint_ns = '' "
                    "GROUP BY thread_id ON CONFLICT (thread_id) DO NOTHING"
                )
            await conn.execute(
                f"INSERT INTO {SCHEMA} (id, version) VALUES (1, %s) ON CONFLICT "
                "(id) DO UPDATE SET version = EXCLUDED.version",
                (SCHEMA_VERSION,),
            )
