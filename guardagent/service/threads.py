"""A thread's decisions and trace index, kept as LangGraph checkpoints every replica reads.

Each decision on a thread writes one checkpoint of a one-node graph whose state is plain JSON
data: the decision as the host received it and the thread's trace index (what
`check_trace` needs to read only the new messages and to refuse a rewritten history). The
request itself (up to the trace size limit) is never stored. With `AsyncPostgresSaver` any
replica continues any thread. Which checkpoint is the thread's latest is its head
(:mod:`guardagent.service.heads`), never the highest (clock-made) checkpoint id: a run reads
the state at the head, and writes its checkpoint as the head's child in one transaction with
the head's compare-and-set (and the request's idempotency key), so the history never forks,
whatever the replicas' clocks, and a replica that lost its thread lock cannot write. The
checkpoints are read and written straight through the saver
(:mod:`guardagent.service.checkpoints`), not through the graph's update step.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from guardagent.graph.serde import guard_serializer
from guardagent.service import checkpoints
from guardagent.service.heads import NEW_THREAD, Head, HeadMoved, Heads, MemoryHeads
from guardagent.service.idempotency import Confirm

MAX_THREAD_ID_CHARS = 256

RECENT_STATES = 256
"""States a replica keeps of the heads it wrote last: a thread it decides again needs no read."""

KeyWrite = Callable[[Any], Awaitable[Confirm]]
"""A write to send in a decision's transaction, given its connection (None in memory); what
it returns confirms it once the transaction's statements are answered."""


class ThreadState(TypedDict, total=False):
    """What a thread keeps between decisions: plain data only, restored under strict msgpack.

    `request` is the idempotency key and request fingerprint of the decision, if it had a
    key: a retry still finds its decision when the replica died before storing the key.
    """

    kind: str
    decision: dict[str, Any]
    trace_state: dict[str, Any] | None
    request: dict[str, str] | None


def _record(state: ThreadState) -> ThreadState:
    """The node checkpoints are written as; the service writes with `aupdate_state`."""
    return {}


def saver_serde() -> Any:
    """The serializer for a thread saver: only the project's and LangGraph's safe types."""
    return guard_serializer()


class ThreadStore:
    """Load and append a thread's decisions through checkpointers, in the order of its head.

    Args:
        checkpointers: One or more savers of the same database, for reads. `AsyncPostgresSaver`
            runs every call of one instance in turn (an asyncio lock, even over a pool), so a
            replica gives each of several savers a share of the threads: a thread always
            uses the same one, and different threads proceed at once. Writes go through a
            saver bound to their transaction (:meth:`Heads.transaction`), or these without
            a database.
        heads: Where the threads' heads live (default: this process's, for an in-memory saver).
    """

    def __init__(
        self,
        *checkpointers: BaseCheckpointSaver[Any],
        heads: Heads | None = None,
    ) -> None:
        builder = StateGraph(ThreadState)
        builder.add_node("record", _record)
        builder.add_edge(START, "record")
        builder.add_edge("record", END)
        self.savers = checkpointers
        self.graphs = [
            builder.compile(checkpointer=c, name="guardagent.thread") for c in checkpointers
        ]
        self.graph = self.graphs[0]
        self.heads: Heads = heads if heads is not None else MemoryHeads()
        # (thread, checkpoint id) -> its state, for heads this replica wrote: a checkpoint
        # never changes, so while the thread's head is still it, the state is this
        self._recent: OrderedDict[tuple[str, str], ThreadState] = OrderedDict()

    def _remember(self, thread_id: str, checkpoint_id: str, state: ThreadState) -> None:
        self._recent[thread_id, checkpoint_id] = state
        while len(self._recent) > RECENT_STATES:
            self._recent.popitem(last=False)

    def _share(self, thread_id: str) -> int:
        digest = hashlib.blake2b(thread_id.encode("utf-8", "surrogatepass"), digest_size=4)
        return int.from_bytes(digest.digest(), "big") % len(self.savers)

    def _graph(self, thread_id: str) -> Any:
        return self.graphs[self._share(thread_id)]

    async def _state(self, thread_id: str, head: Head) -> ThreadState:
        """The state at `head` (not NEW_THREAD).

        Raises:
            LookupError: the head's checkpoint is not there (never read as a new thread).
        """
        values = await checkpoints.read(
            self.savers[self._share(thread_id)], self._config(thread_id, head)
        )
        if not values:
            raise LookupError(
                f"thread {thread_id[:80]!r}: its head checkpoint {head.checkpoint_id} is missing"
            )
        return cast(ThreadState, values)

    @staticmethod
    def _config(thread_id: str, head: Head = NEW_THREAD) -> Any:
        configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
        if head.checkpoint_id is not None:
            configurable["checkpoint_id"] = head.checkpoint_id
        return {"configurable": configurable}

    async def last(
        self,
        thread_id: str,
        head: Head | None = None,
        session: Any = None,
    ) -> tuple[Head, ThreadState]:
        """The thread's head and its state there (NEW_THREAD and empty for a new thread).

        Args:
            thread_id: The thread.
            head: The head as this replica left it, under a lock it never let go since (the
                lock's baton); None: read the head.
            session: The thread lock's connection, to read the head on (None: the pool's).

        Raises:
            LookupError: the head names a checkpoint that is not there (never read as new).
        """
        if head is None:
            head = await self.heads.read(thread_id, session)
        if head.checkpoint_id is None:
            return head, ThreadState()
        known = self._recent.pop((thread_id, head.checkpoint_id), None)
        if known is None:  # written elsewhere (or long ago): read
            known = await self._state(thread_id, head)
        self._remember(thread_id, head.checkpoint_id, known)
        return head, known

    async def trace_state(self, thread_id: str) -> dict[str, Any] | None:
        """The thread's trace index after its last decision (None for a new thread)."""
        value = (await self.last(thread_id))[1].get("trace_state")
        return value if isinstance(value, dict) else None

    async def append(
        self,
        thread_id: str | None,
        head: Head,
        kind: str,
        decision: dict[str, Any],
        trace_state: dict[str, Any] | None,
        request: dict[str, str] | None = None,
        also: KeyWrite | None = None,
        parent: ThreadState | None = None,
    ) -> Head | None:
        """Write the decision as the child of `head`, and `also`, all in one transaction.

        Args:
            thread_id: The thread (None: only `also` runs, in a transaction of its own).
            head: The head the decision was made on (from :meth:`last`).
            kind: ``"event"`` or ``"trace"``.
            decision: The decision as the host received it.
            trace_state: The thread's new trace index (None: the decision made none, and
                the parent's is kept).
            request: The idempotency key and request fingerprint, if the request had a key.
            also: Another write of the same decision (its idempotency key), given the
                transaction's connection (None without a database).
            parent: The state at `head`, as :meth:`last` read it (None: read here, if the
                parent's trace index is needed).

        Returns:
            The thread's new head (None without a thread).

        Raises:
            HeadMoved: the thread's head is no longer `head` (or names no checkpoint);
                nothing was written.
            KeyTaken: `also`'s key was stored meanwhile; nothing was written.
        """
        values: dict[str, Any] = {}
        if thread_id is not None:
            if trace_state is None and head.checkpoint_id is not None:
                try:
                    known = parent if parent is not None else await self._state(thread_id, head)
                except LookupError:  # no such checkpoint: not the thread's head either
                    raise HeadMoved(
                        f"thread {thread_id[:80]!r} moved on: the head this write "
                        f"names ({head.checkpoint_id}) is not there"
                    ) from None
                trace_state = known.get("trace_state")
            values = {"kind": kind, "decision": decision, "request": request}
            if trace_state is not None:
                values["trace_state"] = trace_state
        async with self.heads.transaction() as tx:
            if thread_id is not None:
                await self.heads.check(tx, thread_id, head)
            # in memory the key is refused here, before anything is written (no rollback)
            confirm = None if also is None else await also(tx.conn)
            advanced = None
            if thread_id is not None:
                config = self._config(thread_id, head)
                checkpoint, metadata, versions = checkpoints.child(head.seq + 1, values)
                if tx.saver is None:  # in memory: checked above, written, then the head moves
                    saver = self.savers[self._share(thread_id)]
                    await saver.aput(config, checkpoint, metadata, versions)  # type: ignore[arg-type]
                advanced = await self.heads.advance(tx, thread_id, head, checkpoint["id"])
                if tx.saver is not None:  # one pipeline: compare-and-set, key, checkpoint
                    await tx.saver.aput(config, checkpoint, metadata, versions)
            await tx.sync()
            if confirm is not None:
                confirm()
            new = None if advanced is None else advanced()
        if thread_id is not None and new is not None and new.checkpoint_id is not None:
            self._remember(thread_id, new.checkpoint_id, cast(ThreadState, values))  # committed
        return new

    async def history(self, thread_id: str, limit: int = 1000) -> dict[str, Any]:
        """The thread's decisions, oldest first, and whether its checkpoints form one line.

        The line is walked from the head by parent links, not sorted by checkpoint id (ids
        come from the writers' clocks). `linear` is False when a listed checkpoint is not on
        the head's line: a write that forked the thread (what the head's compare-and-set
        prevents). Over `limit` checkpoints, only the newest `limit` (by id) are read.
        """
        head = await self.heads.read(thread_id)
        graph = self._graph(thread_id)
        snaps = [s async for s in graph.aget_state_history(self._config(thread_id), limit=limit)]
        by_id = {s.config["configurable"]["checkpoint_id"]: s for s in snaps}
        line: list[tuple[str, Any]] = []
        cid = head.checkpoint_id
        while cid is not None and cid in by_id and len(line) < len(snaps):
            snap = by_id[cid]
            line.append((cid, snap))
            cid = (snap.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        decisions = [
            {"checkpoint_id": cid, "kind": s.values.get("kind"), **s.values["decision"]}
            for cid, s in line
            if s.values and s.values.get("decision")
        ]
        decisions.reverse()
        return {
            "thread_id": thread_id,
            "decisions": decisions,
            "checkpoints": len(snaps),
            "linear": len(line) == len(snaps),
            "seq": head.seq,
        }
