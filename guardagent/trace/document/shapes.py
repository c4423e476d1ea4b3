"""The trace's shapes: messages, tool calls, the trace, and what a thread resumes.

Defined apart from the reader that builds them (:mod:`guardagent.trace.document.messages`),
the hash chain over them (:mod:`guardagent.trace.document.chain`) and the cache a thread
resumes from (:mod:`guardagent.trace.document.resume`), which all use them: none of the
three imports another for a type any more.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from guardagent.trace.document.labels import Labels
from guardagent.trace.text.nesting import MAX_NESTING as MAX_NESTING

CANONICAL_JSON = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str
)
"""Canonical JSON of calls (sorted keys, compact, Unicode kept), built once (an encoder holds
no state between calls)."""


def calls_json(message: Message) -> str:
    """A message's calls as canonical JSON (``""`` when it makes none)."""
    if not message.calls:
        return ""
    return CANONICAL_JSON.encode([[c.id, c.name, c.args] for c in message.calls])


@dataclass(frozen=True)
class ReadState:
    """The reader after a list of raw messages: what reading more of them continues from.

    Attributes:
        items: Raw messages read.
        digest: Their :func:`content_digest`.
        labels: The labels they were read under (compared by identity).
        max_bytes: The size limit they were read under.
        messages: The messages read.
        position: Calls read.
        size: Bytes counted.
        calls_by_id: Call id -> (message, call), as the reader keeps it.
        unanswered: Calls no result answered yet.
        results: Call id (or ``#position``) -> its result's message.
        answers: Result message -> the call it answers.
        chain: The SHA-256 object of the messages' hash chain
            (:func:`guardagent.trace.document.chain.chains`), once the call's index computed it.
    """

    items: int
    digest: bytes
    labels: Labels | None
    max_bytes: int
    messages: tuple[Message, ...]
    position: int
    size: int
    calls_by_id: Mapping[str, tuple[int, int]]
    unanswered: tuple[tuple[int, int], ...]
    results: Mapping[str, int]
    answers: Mapping[int, tuple[int, int]]
    chain: Any = None


Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """A tool call: an earlier one from an assistant message, or the proposed one.

    Attributes:
        name: The tool's name.
        args: The arguments (a JSON object).
        id: The call id, when the trace gives one.
        index: The message that makes the call (for a proposed call that is not in the
            trace: the number of messages, i.e. just after the last).
        position: Order among all calls of the trace (the proposed call is last).
    """

    name: str
    args: dict[str, Any]
    id: str | None
    index: int
    position: int = 0


@dataclass(frozen=True)
class Message:
    """One message of a trace.

    Attributes:
        role: ``system``, ``user``, ``assistant`` or ``tool``.
        source: Who wrote the text: ``system``, ``user``, ``model``, ``tool:<name>`` or
            ``tool:?``.
        text: The text, nothing cut: a tool result's every part; any other message's
            shown text parts only (its other parts are a message of their own just before
            it, see the module docstring), joined by newlines.
        tool_name: The tool a ``tool`` message is the result of (None if unknown).
        tool_call_id: The call a ``tool`` message answers.
        index: Position in the trace, from 0.
        calls: Calls an ``assistant`` message makes.
        status: ``error`` for a tool result the host marked as failed, ``ok`` otherwise
            (None for other roles).
        whole: For the trusted rest of a result split into its labelled fields, the
            result as the tool returned it (None otherwise: `text` is the whole result).
            Not part of the digest nor of equality, which read `text` and the parts as
            before (so a thread's state is unchanged by it).
        unread_parts: How many parts an ``assistant`` message delivers to the user besides
            its text (an image, a file:
            :func:`~guardagent.trace.text.answer_parts.delivered_parts`).
            The guard does not read them, yet the user sees them beside the text (a yes to
            a question shown with one approves nothing). Not part of the digest nor equality.
        listed: For the trusted rest of a result whose strings addressed to the agent were
            taken apart (:mod:`guardagent.trace.found.trusted_addressed`), those strings as the
            result's parser read them: names the tool lists (a channel named with injected
            text still exists). Not part of the digest nor equality.
    """

    role: Role
    source: str
    text: str
    tool_name: str | None
    tool_call_id: str | None
    index: int
    calls: tuple[ToolCall, ...] = ()
    status: Literal["ok", "error"] | None = None
    whole: str | None = field(default=None, repr=False, compare=False)
    unread_parts: int = field(default=0, repr=False, compare=False)
    listed: tuple[str, ...] = field(default=(), repr=False, compare=False)
    _kept: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def result_text(self) -> str:
        """A tool result's whole text, before its untrusted fields were split off.

        Why: a reader of the result's structure (which record holds which id,
        :mod:`guardagent.trace.predicates.fields_from`) needs the tool's serialised whole,
        while provenance reads `text` (the trusted rest) and the field parts apart.
        """
        return self.text if self.whole is None else self.whole

    @property
    def digest(self) -> bytes:
        """SHA-256 of everything the message says (role, source, ids, status, text, calls)."""
        return _kept(self, "digest", _digest)


_T = TypeVar("_T")


def _kept(message: Message, name: str, make: Callable[[Message], _T]) -> _T:
    """What `make` reads of a message, made once and kept in the message's own table.

    Not ``functools.cached_property`` (on Python 3.11 it takes a lock at each first read) nor
    a new attribute (it turns the instance's shared-key dict into its own): either doubled
    the cost of rendering a thread's new messages. Two threads reading at once both make
    it, and keep the same value.
    """
    found: _T | None = message._kept.get(name)
    if found is None:
        found = message._kept[name] = make(message)
    return found


def _digest(message: Message) -> bytes:
    fields = [message.role, message.source, message.tool_call_id or "", message.status or ""]
    if message.calls:
        fields.append(calls_json(message))
    # every field length-prefixed, the text last: no two messages hash the same string
    head = "".join(f"{len(value)}:{value}" for value in fields) + f"{len(message.text)}:"
    h = hashlib.sha256(head.encode("utf-8", "surrogatepass"))
    h.update(message.text.encode("utf-8", "surrogatepass"))
    return h.digest()


@dataclass(frozen=True)
class Trace:
    """A conversation and the call it is about to make.

    Attributes:
        messages: Every message, in order (all of them are earlier than `call`).
        call: The proposed call.
        size: UTF-8 bytes read (text and arguments).
    """

    messages: tuple[Message, ...]
    call: ToolCall
    size: int = 0
    _calls: tuple[ToolCall, ...] = field(default=(), repr=False)
    _results: dict[str, int] = field(default_factory=dict, repr=False)
    _answers: dict[int, tuple[int, int]] = field(default_factory=dict, repr=False)
    read: ReadState | None = field(default=None, repr=False, compare=False)
    """The reader's state after the messages, to resume from
    (:mod:`~guardagent.trace.document.resume`;
    None when they are not plain data or hold the host's containers)."""
    resumed: ReadState | None = field(default=None, repr=False, compare=False)
    """The state this parse resumed from (its messages are this trace's first ones)."""

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """Earlier calls (every call of the messages except the proposed one), in order."""
        return self._calls

    def result_of(self, call: ToolCall) -> Message | None:
        """The tool result answering an earlier call, if the trace has it."""
        at = self._results.get(call.id) if call.id else None
        if at is None:
            at = self._results.get(f"#{call.position}")
        return self.messages[at] if at is not None else None

    def call_of(self, message: Message) -> ToolCall | None:
        """The earlier call a tool result answers, if known."""
        where = self._answers.get(message.index)
        if where is None:
            return None
        return self.messages[where[0]].calls[where[1]]
