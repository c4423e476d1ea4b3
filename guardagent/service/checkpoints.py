"""A thread's checkpoint as LangGraph keeps it, read and written straight through the saver.

The service's thread graph is one node whose state is four plain values (the decision, its
kind, the thread's trace index, the request's idempotency mark). Writing a decision with
``graph.aupdate_state`` ran LangGraph's whole update step for it: it re-read the parent
checkpoint twice inside the write transaction, wrote the update as four pending-write rows on
the parent, compiled the graph for the transaction's saver, and cost more CPU than the
decision itself (BENCHMARKS.md, "Guard service: one hot thread"). The
head (:mod:`guardagent.service.heads`) already says which checkpoint is the parent, so the
checkpoint is built here and written with the saver's ``aput`` (its blobs and its row), and
read with ``aget_tuple``: the same tables, rows and values that LangGraph's own readers
(``aget_state``, ``aget_state_history``, the history route) read, and threads written the old
way read the same.

A checkpoint's channel versions are its write's sequence number on the thread (unique on the
thread's one line, which the head's compare-and-set keeps; a refused write rolls back with its
blobs). Ids come from LangGraph's time-ordered uuid6 as before: nothing orders by them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint
from langgraph.checkpoint.base.id import uuid6

CHANNELS = ("kind", "decision", "trace_state", "request")
"""The thread state's keys (:class:`guardagent.service.threads.ThreadState`)."""

FORMAT = 4
"""LangGraph's checkpoint format version (``Checkpoint.v``) the checkpoints are written in."""


def child(
    seq: int,
    values: dict[str, Any],
) -> tuple[Checkpoint, dict[str, Any], ChannelVersions]:
    """The checkpoint of a thread's `seq`-th write: the checkpoint, its metadata, new versions.

    Shaped as LangGraph's ``update_state(values, as_node="record")`` makes it (the same
    metadata source and step, ``versions_seen`` of the node), so its readers take it alike.
    """
    version: str | int | float = f"{seq:032}.{0:016}"
    checkpoint = Checkpoint(
        v=FORMAT,
        id=str(uuid6(clock_seq=seq - 1)),
        ts=datetime.now(UTC).isoformat(),
        channel_values=dict(values),
        channel_versions=dict.fromkeys(values, version),
        versions_seen={"record": {}},
        updated_channels=None,
    )
    metadata = {"source": "update", "step": seq - 1, "parents": {}}
    return checkpoint, metadata, dict(checkpoint["channel_versions"])


async def read(saver: BaseCheckpointSaver[Any], config: Any) -> dict[str, Any] | None:
    """The thread state of the checkpoint `config` names (None: no such checkpoint)."""
    found = await saver.aget_tuple(config)
    if found is None:
        return None
    values = found.checkpoint["channel_values"]
    return {k: values[k] for k in CHANNELS if k in values}
