"""The hash chain of a thread: one SHA-256 over every message, to see any rewrite exactly.

A thread's state remembers what its messages were (:mod:`guardagent.trace.state`): at the
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
(:attr:`~guardagent.trace.messages.Message.digest`), computed only when the chain does
not match.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from guardagent.trace.messages import Message

_TAG = b"guardagent trace chain/4\x00"

GENESIS = hashlib.sha256(_TAG).hexdigest()
"""The chain of no message."""

CANONICAL_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                                  default=str)  # fmt: skip
"""Canonical JSON of calls (sorted keys, compact, Unicode kept), built once (an encoder holds
no state between calls)."""


def calls_json(message: Message) -> str:
    """A message's calls as canonical JSON (``""`` when it makes none)."""
    if not message.calls:
        return ""
    return CANONICAL_JSON.encode([[c.id, c.name, c.args] for c in message.calls])


def record(message: Message) -> str:
    """One message as its chain record (six length-prefixed fields, the text last)."""
    role, source, text = message.role, message.source, message.text
    ident, status, calls = message.tool_call_id or "", message.status or "", calls_json(message)
    return (f"{len(role)}:{role}{len(source)}:{source}{len(ident)}:{ident}"
            f"{len(status)}:{status}{len(calls)}:{calls}{len(text)}:{text}")  # fmt: skip


def chains(messages: Sequence[Message], count: int) -> tuple[str, str]:
    """The chain of the first `count` messages and of them all (hex), in one pass.

    Args:
        messages: The thread's messages.
        count: How many of them the state saw (at most ``len(messages)``).
    """
    records = [record(m) for m in messages]
    h = hashlib.sha256(_TAG)
    h.update("".join(records[:count]).encode("utf-8", "surrogatepass"))
    seen = h.hexdigest()
    if count < len(records):
        h.update("".join(records[count:]).encode("utf-8", "surrogatepass"))
    return seen, h.hexdigest()
