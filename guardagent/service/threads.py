"""A thread's decisions and trace index, kept as LangGraph checkpoints every replica reads.

Each decision on a thread writes one checkpoint of a one-node graph whose state is plain JSON
data: the decision as the host received it and the thread's trace index (what
`check_trace` needs to read only the new messages and to refuse a rewritten history). The
request itself (up to the trace size limit) is never stored. With `AsyncPostgresSaver` any
replica continues any thread; the thread's lock (:mod:`guardagent.service.locks`) makes each
checkpoint the child of the last one, so the history never forks.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from guardagent.graph.serde import guard_serializer

MAX_THREAD_ID_CHARS = 256


class ThreadState(TypedDict, total=False):
    """What a thread keeps between decisions: plain data only, restored under strict msgpack."""

    kind: str
    decision: dict[str, Any]
    trace_state: dict[str, Any] | None


def _record(state: ThreadState) -> ThreadState:
    """The node checkpoints are written as; the service writes with `aupdate_state`."""
    return {}


def saver_serde() -> Any:
    """The serializer for a thread saver: only the project's and LangGraph's safe types."""
    return guard_serializer()


class ThreadStore:
    """Load and append a thread's decisions through a checkpointer."""

    def __init__(self, checkpointer: BaseCheckpointSaver[Any]) -> None:
        builder = StateGraph(ThreadState)
        builder.add_node("record", _record)
        builder.add_edge(START, "record")
        builder.add_edge("record", END)
        self.graph = builder.compile(checkpointer=checkpointer, name="guardagent.thread")

    @staticmethod
    def _config(thread_id: str) -> Any:
        return {"configurable": {"thread_id": thread_id}}

    async def trace_state(self, thread_id: str) -> dict[str, Any] | None:
        """The thread's trace index after its last decision (None for a new thread)."""
        snapshot = await self.graph.aget_state(self._config(thread_id))
        value = snapshot.values.get("trace_state") if snapshot.values else None
        return value if isinstance(value, dict) else None

    async def append(self, thread_id: str, kind: str, decision: dict[str, Any],
                     trace_state: dict[str, Any] | None) -> None:  # fmt: skip
        """Write the decision (and the new trace index, if the decision made one)."""
        update: ThreadState = {"kind": kind, "decision": decision}
        if trace_state is not None:
            update["trace_state"] = trace_state
        await self.graph.aupdate_state(self._config(thread_id), update, as_node="record")

    async def history(self, thread_id: str, limit: int = 1000) -> dict[str, Any]:
        """The thread's decisions, oldest first, and whether its checkpoints form one line.

        `linear` is False when two checkpoints share a parent: two runs of the thread at once
        (what the thread lock prevents).
        """
        snaps = [s async for s in self.graph.aget_state_history(self._config(thread_id),
                                                                 limit=limit)]  # fmt: skip
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
