"""The hash chain of a thread: one SHA-256 over every message, to see any rewrite exactly.

A thread's state remembers what its messages were (:mod:`guardagent.trace.thread.state`): at the
next call, a message it saw that changed, went missing or moved makes the trace
unreadable (``trace_rewritten``). That check must look at every earlier message, every
call: this module makes it one hash over the thread, not one per message.

Each message is written as one record: its role, source, call id, status, calls (their
ids, names and arguments as canonical JSON, or nothing) and text, every field prefixed
by its length, six fields always; the chain of the first *n* messages is SHA-256 over a
fixed tag and their records, in order. Records of fixed arity with length prefixes
read back one way only, so two message lists have the same chain only if they are equal
in every field (or SHA-256 collides): a changed, removed, added or reordered message
changes it. Naming *which* message changed needs per-message digests
(:attr:`~guardagent.trace.document.shapes.Message.digest`), computed only when the chain does
not match.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from guardagent.trace.document.shapes import calls_json

if TYPE_CHECKING:
    from guardagent.trace.document.shapes import Message

_TAG = b"guardagent trace chain/4\x00"

GENESIS = hashlib.sha256(_TAG).hexdigest()
"""The chain of no message."""


def record(message: Message) -> str:
    """One message as its chain record (six length-prefixed fields, the text last)."""
    role, source, text = message.role, message.source, message.text
    ident, status, calls = message.tool_call_id or "", message.status or "", calls_json(message)
    return (
        f"{len(role)}:{role}{len(source)}:{source}{len(ident)}:{ident}"
        f"{len(status)}:{status}{len(calls)}:{calls}{len(text)}:{text}"
    )


def chains(
    messages: Sequence[Message], count: int, known: tuple[int, Any] | None = None
) -> tuple[str, str, Any]:
    """The chain of the first `count` messages and of them all (hex), in one pass.

    Args:
        messages: The thread's messages.
        count: How many of them the state saw (at most ``len(messages)``).
        known: ``(n, sha256 object)``: the chain of the first `n` messages, when the caller
            has it (a parse resumed from them, :mod:`~guardagent.trace.document.resume`); only the
            messages after them are hashed for the chain of them all.

    Returns:
        The chain of the first `count` messages, that of them all, and the SHA-256 object
        of the latter (to extend later).
    """
    at, base = known if known is not None and known[0] <= len(messages) else (0, None)
    if base is not None and at <= count:
        h = base.copy()
        h.update(_joined(messages[at:count]))
        seen = h.hexdigest()
        h.update(_joined(messages[count:]))
        return seen, h.hexdigest(), h
    h = hashlib.sha256(_TAG)
    h.update(_joined(messages[:count]))
    seen = h.hexdigest()
    if base is not None:  # the state saw fewer messages than the known chain covers
        h = base.copy()
        h.update(_joined(messages[at:]))
    else:
        h.update(_joined(messages[count:]))
    return seen, h.hexdigest(), h


def _joined(messages: Sequence[Message]) -> bytes:
    return "".join([record(m) for m in messages]).encode("utf-8", "surrogatepass")
