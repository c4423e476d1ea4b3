"""A thread's saved state restored for one call, and what an unsigned one may still say.

With the deployment's key (``trace_key``) the state is signed (:mod:`~guardagent.trace.state`,
:mod:`~guardagent.trace.predicates.ledger`): a state that does not verify is unreadable and
the call is denied. Without a key nothing authenticates it: whoever can write the store it
comes from could post an attacker's IBAN under the user's first message, relabel a mail
as the user's, or name the thread an approval was given in. So an unsigned state is used
only for what can deny, never as evidence:

- its index is not read for provenance: the thread is read from its messages, as with no
  state (the call's decision is the one it would have with none);
- it still denies a history that changed since (``trace_rewritten``): the messages it saw
  must be the trace's first messages, as they were;
- its consent ledger's uses still count (an approval already used is not given back),
  but its thread id does not name the thread: approvals count in the thread the host names
  (``thread_id``), and with none in a new, random one (no approval counts).

The decision says the state was not used, and why (:data:`UNSIGNED_NOTE`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from guardagent.trace.messages import Trace
from guardagent.trace.predicates.ledger import ConsentLedger, new_thread_id, read_ledger
from guardagent.trace.state import MAX_STATE_BYTES, TraceIndex

UNSIGNED_NOTE = ("The thread state was not used as evidence: it is not signed (no trace_key is "
                 "configured), so the thread was read from its messages.")  # fmt: skip
"""What a decision says when it set an unsigned state aside."""


@dataclass(frozen=True)
class Restored:
    """A thread's state made ready for one call.

    Attributes:
        index: The index to analyse the trace with (fresh when the state was set aside).
        ledger: The consent ledger (its uses, and the thread approvals count in).
        notes: What the decision should say about the state (empty: nothing to say).
    """

    index: TraceIndex
    ledger: ConsentLedger
    notes: tuple[str, ...] = ()


def restore(
    thread_state: Mapping[str, Any] | None,
    trace: Trace,
    *,
    region: str | None,
    key: bytes | None,
    thread_id: str | None = None,
    max_state_bytes: int = MAX_STATE_BYTES,
) -> Restored:
    """The index and ledger of a thread's state for this call (see the module docstring).

    Raises:
        UnreadableEvidence: ``unreadable_state`` for a state that does not read (or, with a
            key, does not verify); ``trace_rewritten`` when a message the state saw changed.
    """
    index_state, ledger = read_ledger(thread_state, thread_id=thread_id, key=key)
    index = TraceIndex.from_json(index_state, region=region, max_state_bytes=max_state_bytes,
                                 key=key)  # fmt: skip
    if key is not None or index_state is None:
        return Restored(index, ledger)
    index.check_unchanged(trace)  # it may deny: a history that changed since
    thread = thread_id or new_thread_id()  # an unsigned thread id names nothing
    return Restored(TraceIndex(region, max_state_bytes), ConsentLedger(thread, ledger.uses),
                    (UNSIGNED_NOTE,))  # fmt: skip
