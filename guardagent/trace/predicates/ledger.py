"""The thread's consent ledger: which thread a state belongs to and which approvals are used.

An approval is one approval of one call. Binding a record to a call id is not enough on its
own (a record may approve a tool's calls or exact arguments, and a retried call can carry
the same id), so the thread's state counts, per approval, the calls it let through; a
record with ``uses: 1`` (the default) approves one call of its thread, once.

The ledger travels in the thread's state (``decision.trace_state["consent"]``) next to the
trace index (:class:`~guardagent.trace.thread.state.TraceIndex`), signed on its own with the
deployment's key and bound to the index it was written with (its message count and hash
chain), so a ledger cannot be swapped for an older one of the same thread, dropped (with a
key, a state without one is unreadable) or moved to another thread. It holds:

- ``thread``: the thread's id, the host's (``check_trace(thread_id=...)``, the
  checkpointer's ``thread_id``) or, when the host gives none, a random one made at the
  thread's first call. A state of another thread is unreadable (``unreadable_state``);
  only records naming this thread approve anything.
- ``uses``: ``{approval: [use, ...]}``, each use naming the call it let through (its id,
  else its message and position, :func:`use_of`). Every recorded use counts, the same call checked
  again included: a host that checks a call twice asks for two uses.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from guardagent.readers.evidence import unreadable
from guardagent.surrogates import without_surrogates
from guardagent.trace.document.shapes import ToolCall
from guardagent.trace.thread.state import sign, verify

LEDGER_FIELD = "consent"
"""Key of the ledger in a thread's state."""
LEDGER_FORMAT = "guardagent-consent-ledger/1"


def use_of(call: ToolCall) -> str:
    """The use a call makes of an approval: its id, else its place in the thread."""
    return call.id if call.id else f"@{call.index}.{call.position}"


@dataclass
class ConsentLedger:
    """One thread's id and the uses of its approvals (see the module docstring).

    Attributes:
        thread: The thread's id (None: unknown, so no approval counts).
        uses: ``{approval identity: [use, ...]}``.
    """

    thread: str | None
    uses: dict[str, list[str]] = field(default_factory=dict)

    def used(self, identity: str) -> int:
        """How many calls already used an approval."""
        return len(self.uses.get(identity, []))

    def spend(self, identities: Iterable[str], use: str) -> None:
        """Record that the call `use` used each approval."""
        for identity in identities:
            self.uses.setdefault(identity, []).append(use)

    def to_json(self, index_state: Mapping[str, Any], key: bytes | None) -> dict[str, Any]:
        """The ledger as JSON, bound to the index state it goes with, signed with a key.

        A lone surrogate (a call id is the model's, a thread id the client's) is written as
        U+FFFD (:mod:`guardagent.surrogates`): a checkpointer encodes the state as UTF-8,
        which refuses one, and the thread could never be saved again. A use read back so
        no longer equals its call's id, so that call counts once more (over, never under).
        """
        data: dict[str, Any] = {
            "format": LEDGER_FORMAT,
            "thread": without_surrogates(self.thread),
            "uses": without_surrogates(self.uses),
            "count": index_state.get("count"),
            "chain": index_state.get("chain"),
        }
        if key is not None:
            data["mac"] = sign(data, key)
        return data


def new_thread_id() -> str:
    """A random thread id, for a thread whose host gave none."""
    return "thread-" + uuid.uuid4().hex[:20]


def read_ledger(
    state: Any, *, thread_id: str | None = None, key: bytes | None = None
) -> tuple[dict[str, Any] | None, ConsentLedger]:
    """Split a thread's state into its index state and its ledger, checking the ledger.

    Args:
        state: The thread's saved state (None for a new thread).
        thread_id: The host's id of the thread (None: the state's, or a new one).
        key: The deployment's key: the ledger must be signed with it.

    Returns:
        The index state (for :meth:`TraceIndex.from_json`) and the ledger.

    Raises:
        UnreadableEvidence: ``unreadable_state`` for a ledger that is missing (with a key),
            unsigned, altered, written for another index state, or of another thread.
    """
    if state is None:
        return None, ConsentLedger(thread_id or new_thread_id())
    if not isinstance(state, Mapping):
        unreadable("unreadable_state", "the thread's state is not a JSON object")
    index_state = {k: v for k, v in state.items() if k != LEDGER_FIELD}
    raw = state.get(LEDGER_FIELD)
    if raw is None:
        if key is not None:
            unreadable(
                "unreadable_state",
                "the thread's state has no consent ledger (written "
                "by an older version or stripped)",
            )
        return index_state, ConsentLedger(thread_id or new_thread_id())
    if not isinstance(raw, Mapping) or (key is not None and not verify(raw, key)):
        unreadable(
            "unreadable_state",
            "the thread's consent ledger is not signed by this "
            "deployment (altered, or written by someone else)",
        )
    if raw.get("format") != LEDGER_FORMAT:
        unreadable("unreadable_state", "the thread's consent ledger is of an unknown format")
    if raw.get("count") != index_state.get("count") or raw.get("chain") != index_state.get("chain"):
        unreadable(
            "unreadable_state",
            "the thread's consent ledger was written with another "
            "state of the thread (an older one, or another thread's)",
        )
    thread, uses = raw.get("thread"), raw.get("uses")
    if (
        not isinstance(thread, str)
        or not isinstance(uses, Mapping)
        or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(u, str) for u in v)
            for k, v in uses.items()
        )
    ):
        unreadable("unreadable_state", "the thread's consent ledger cannot be read")
    if thread_id is not None and without_surrogates(thread_id) != thread:
        unreadable(
            "unreadable_state",
            f"the thread's state belongs to thread {thread!r}, not {thread_id!r}",
        )
    return index_state, ConsentLedger(
        thread_id if thread_id is not None else thread, {k: list(v) for k, v in uses.items()}
    )


def with_ledger(
    index_state: Mapping[str, Any], ledger: ConsentLedger, key: bytes | None
) -> dict[str, Any]:
    """A thread's state: the (signed) index state plus the ledger bound to it."""
    return {**index_state, LEDGER_FIELD: ledger.to_json(index_state, key)}


def spend_in_state(
    state: Mapping[str, Any], identities: Iterable[str], use: str, key: bytes | None
) -> dict[str, Any]:
    """The thread's state with approvals used by one call (the index part unchanged)."""
    index_state, ledger = read_ledger(state, key=key)
    assert index_state is not None
    ledger.spend(identities, use)
    return with_ledger(index_state, ledger, key)


def thread_of(state: Mapping[str, Any] | None) -> str | None:
    """The thread id a state's ledger names (unchecked: for labelling a new record)."""
    raw = state.get(LEDGER_FIELD) if isinstance(state, Mapping) else None
    thread = raw.get("thread") if isinstance(raw, Mapping) else None
    return thread if isinstance(thread, str) else None
