"""A thread's decisions and trace index, kept as LangGraph checkpoints every replica reads.

Each decision on a thread writes one checkpoint of a one-node graph whose state is plain JSON
data: the decision as the host received it and the thread's trace index (what
`check_trace` needs to read only the new messages and to refuse a rewritten history). The
request itself (up to the trace size limit) is never stored. With `AsyncPostgresSaver` any
replica continues any thread; the thread's lock (:mod:`guardagent.service.locks`) makes each
checkpoint the child of the last one, so the history never forks.
"""

from __future__ import annotations

import hashlib
from typing import Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from guardagent.graph.serde import guard_serializer

MAX_THREAD_ID_CHARS = 256


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
    """Load and append a thread's decisions through checkpointers.

    Args:
        checkpointers: One or more savers of the same database. `AsyncPostgresSaver` runs
            every call of one instance in turn (an asyncio lock, even over a pool), so a
            replica gives each of several savers a share of the threads: a thread always
            uses the same one, and different threads proceed at once.
    """

    def __init__(self, *checkpointers: BaseCheckpointSaver[Any]) -> None:
        builder = StateGraph(ThreadState)
        builder.add_node("record", _record)
        builder.add_edge(START, "record")
        builder.add_edge("record", END)
        self.graphs = [builder.compile(checkpointer=c, name="guardagent.thread")
                       for c in checkpointers]  # fmt: skip
        self.graph = self.graphs[0]

    def _graph(self, thread_id: str) -> Any:
        digest = hashlib.blake2b(thread_id.encode("utf-8", "surrogatepass"), digest_size=4)
        return self.graphs[int.from_bytes(digest.digest(), "big") % len(self.graphs)]

    @staticmethod
    def _config(thread_id: str) -> Any:
        return {"configurable": {"thread_id": thread_id}}

    async def last(self, thread_id: str) -> ThreadState:
        """The thread's state after its last decision (empty for a new thread)."""
        snapshot = await self._graph(thread_id).aget_state(self._config(thread_id))
        return cast(ThreadState, dict(snapshot.values or {}))

    async def trace_state(self, thread_id: str) -> dict[str, Any] | None:
        """The thread's trace index after its last decision (None for a new thread)."""
        value = (await self.last(thread_id)).get("trace_state")
        return value if isinstance(value, dict) else None

    async def append(self, thread_id: str, kind: str, decision: dict[str, Any],
                     trace_state: dict[str, Any] | None,
                     request: dict[str, str] | None = None) -> None:  # fmt: skip
        """Write the decision (and the new trace index, if the decision made one)."""
        update: ThreadState = {"kind": kind, "decision": decision, "request": request}
        if trace_state is not None:
            update["trace_state"] = trace_state
        await self._graph(thread_id).aupdate_state(self._config(thread_id), update,
                                                   as_node="record")

    async def history(self, thread_id: str, limit: int = 1000) -> dict[str, Any]:
        """The thread's decisions, oldest first, and whether its checkpoints form one line.

        `linear` is False when two checkpoints share a parent: two runs of the thread at once
        (what the thread lock prevents).
        """
        graph = self._graph(thread_id)
        snaps = [s async for s in graph.aget_state_history(self._config(thread_id), limit=limit)]
        ids = [s.config["configurable"]["checkpoint_id"] for s in snaps]
        parents = [(s.parent_config or {}).get("configurable", {}).get("checkpoint_id")
                   for s in snaps]  # fmt: skip
        linear = all(parents[i] == ids[i + 1] for i in range(len(snaps) - 1))
        decisions = [{"checkpoint_id": cid, "kind": s.values.get("kind"), **s.values["decision"]}
                     for cid, s in zip(ids, snaps, strict=True)
                     if s.values and s.values.get("decision")]  # fmt: skip
        decisions.reverse()
        return {"thread_id": thread_id, "decisions": decisions, "checkpoints": len(snaps),
                "linear": linear}  # fmt: skip
