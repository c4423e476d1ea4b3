"""A thread's saved state restored for one call: what it may say, and which rewrites it takes.

**Unsigned state.** With the deployment's key (``trace_key``) the state is signed
(:mod:`~guardagent.trace.thread.state`, :mod:`~guardagent.trace.predicates.ledger`): a state that
does not verify is unreadable and the call is denied. Without a key nothing authenticates
it: whoever can write the store it comes from could post an attacker's IBAN under the
user's first message, relabel a mail as the user's, or name the thread an approval was
given in. So an unsigned state is used only for what can deny, never as evidence:

- its index is not read for provenance: the thread is read from its messages, as with no
  state (the call's decision is the one it would have with none);
- it still denies a history that changed since (``trace_rewritten``);
- its consent ledger's uses still count (an approval already used is not given back),
  but its thread id does not name the thread: approvals count in the thread the host names
  (``thread_id``), and with none in a new, random one (no approval counts);
- a summary in its history is checked as with a key (the messages before it unchanged),
  and the thread read from its messages.

The decision says the state was not used, and why (:data:`UNSIGNED_NOTE`).

**Conversation summaries.** LangChain's `SummarizationMiddleware` replaces a thread's
oldest messages with its summary (:mod:`~guardagent.trace.text.summaries`): the history the
state saw changed, on purpose. That rewrite is taken, not denied as ``trace_rewritten``,
when a summary stands in a place where the state saw another message and every message
before it is the one the state saw there. The thread is then read again from its messages
(:meth:`~guardagent.trace.thread.state.TraceIndex.summarised`): the summary is untrusted model
text, but a typed value it repeats (an IBAN, an address, a URL, a number) keeps the sources
the replaced messages gave it, as the signed state recorded them (the user's request stays
the user's; an e-mail's IBAN stays the e-mail's); a value none of them held, or a phrase,
has no trusted source (the call is denied with a remedy when its rule needs one). What the
replaced messages' calls wrote stays written (a trusted tool that lists it back only repeats
the model). The consent ledger carries over, and the
state counts the summaries, so the newest state wins the middleware's merge
(:func:`~guardagent.integrations.middleware._newest_trace`). Any other change of a seen
message is ``trace_rewritten`` as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from guardagent.readers.evidence import unreadable
from guardagent.trace.document.shapes import Trace
from guardagent.trace.predicates.ledger import ConsentLedger, new_thread_id, read_ledger
from guardagent.trace.text.summaries import SUMMARY_SOURCE
from guardagent.trace.thread.state import MAX_STATE_BYTES, TraceIndex, short_digest

UNSIGNED_NOTE = (
    "The thread state was not used as evidence: it is not signed (no trace_key is "
    "configured), so the thread was read from its messages."
)
"""What a decision says when it set an unsigned state aside."""
MAX_TAIL_TRIES = 4
"""Places tried for the kept messages after a summary (each try reads them once)."""


@dataclass(frozen=True)
class Restored:
    """A thread's state made ready for one call.

    Attributes:
        index: The index to analyse the trace with (fresh when the state was set aside or
            a summary rewrote the thread).
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
            key, does not verify); ``trace_rewritten`` when a message the state saw changed
            other than by a summary.
    """
    index_state, ledger = read_ledger(thread_state, thread_id=thread_id, key=key)
    index = TraceIndex.from_json(
        index_state, region=region, max_state_bytes=max_state_bytes, key=key
    )
    if index_state is None:
        return Restored(index, ledger)
    at = summary_at(index, trace)
    if at is not None:
        unchanged_before(index, trace, at)  # it may deny: a message before it changed
    if key is not None:
        if at is None:
            return Restored(index, ledger)
        return Restored(
            index.summarised(at, _kept_from(index, trace, at)),
            ledger,
            (
                f"A conversation summary (message {at}, written by the model) replaced messages "
                "the thread's state saw; a value in it keeps only the sources those gave it.",
            ),
        )
    if at is None:
        index.check_unchanged(trace)  # it may deny: a history that changed since
    thread = thread_id or new_thread_id()  # an unsigned thread id names nothing
    return Restored(
        TraceIndex(region, max_state_bytes), ConsentLedger(thread, ledger.uses), (UNSIGNED_NOTE,)
    )


def summary_at(index: TraceIndex, trace: Trace) -> int | None:
    """Where a summary stands in place of a message the state saw (None: nowhere).

    A parse resumed from the messages this process read at the thread's last call
    (:mod:`~guardagent.trace.document.resume`) has them unchanged: nothing to look for (the usual
    case costs nothing; otherwise one look at each seen message's source).
    """
    messages = trace.messages
    resumed = trace.resumed
    if resumed is not None and len(resumed.messages) >= index.count:
        return None
    for at in range(min(index.count, len(messages))):
        message = messages[at]
        if message.source == SUMMARY_SOURCE and short_digest(message) != index.hashes[at]:
            return at
    return None


def unchanged_before(index: TraceIndex, trace: Trace, at: int) -> None:
    """Check that every message before the summary at `at` is the one the state saw there.

    Raises:
        UnreadableEvidence: ``trace_rewritten`` naming the first that changed.
    """
    messages = trace.messages
    for i in range(at):
        if short_digest(messages[i]) != index.hashes[i]:
            unreadable(
                "trace_rewritten",
                f"message {i} ({messages[i].source}) changed since the "
                f"thread's last check (before the summary at message {at})",
            )


def _kept_from(index: TraceIndex, trace: Trace, at: int) -> int:
    """The first seen message the summary kept (its last seen ones follow it unchanged).

    `SummarizationMiddleware` keeps the thread's latest messages after the summary; of those
    the state saw, the kept ones are the last it saw. With none kept (or none found in
    :data:`MAX_TAIL_TRIES` tries), every seen message from `at` on was replaced: what their
    calls wrote stays written, which can only take trust away.
    """
    messages, count, hashes = trace.messages, index.count, index.hashes
    tries = 0
    for end in range(at + 1, min(len(messages), count)):  # the kept run new[at+1..end]
        if short_digest(messages[end]) != hashes[count - 1]:
            continue
        tries += 1
        kept = end - at
        if all(short_digest(messages[at + 1 + j]) == hashes[count - kept + j] for j in range(kept)):
            return count - kept
        if tries >= MAX_TAIL_TRIES:
            break
    return count
