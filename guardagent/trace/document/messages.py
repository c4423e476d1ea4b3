r"""A conversation trace plus the proposed tool call, read into one typed :class:`Trace`.

Accepted input (the trace format; a whole document, nothing is cut):

- A JSON **document**: a list of messages, or an object ``{"messages": [...],
  "proposed_call": {...}}`` (``tool_call`` is accepted for ``proposed_call``). Given as
  text (``str`` / ``bytes``) or already decoded.
- **Messages** in either of two formats, mixable in one list:

  - LangChain, as :func:`langchain_core.messages.messages_to_dict` writes them:
    ``{"type": "human" | "ai" | "system" | "tool" | "function" | "chat" (and the
    ``...MessageChunk`` types), "data": {"content", "name", "tool_calls": [{"name", "args",
    "id"}], "invalid_tool_calls", "tool_call_id", "status", "role" (chat)}}``. An AI
    message without ``tool_calls`` falls back to OpenAI-style
    ``additional_kwargs.tool_calls``. `BaseMessage` objects are converted with
    ``messages_to_dict``.
  - OpenAI chat: ``{"role": "system" | "developer" | "user" | "assistant" | "tool" |
    "function", "content", "name", "tool_calls": [{"id", "type": "function", "function":
    {"name", "arguments": "<JSON object>"}}], "function_call", "tool_call_id"}``.

  Content is a string, null, or a list of parts. A tool result's text is all its parts:
  text parts (``text``, ``input_text``, ``output_text``) and refusals give their text, any
  other part (an image, a JSON block) is kept as its JSON, so nothing a tool returned is
  dropped. Any other message's text is only what a chat shows: its text parts
  (:mod:`guardagent.trace.text.content`). Its other parts are sorted: ``tool_use`` parts of an
  assistant message are its calls (Anthropic; beside ``tool_calls`` they are hidden
  evidence); ``tool_result`` / ``function_call_output`` parts of a user message are tool
  results, each read as a ``tool`` message answering the call it names (placed before the
  user's text); every other part (an image and its alt text, reasoning, invalid tool calls)
  is hidden evidence, one message just before its own: source ``model`` in an assistant
  message, ``tool:?`` (role ``tool``) in a user or system message. So a hidden part is
  never a question the user answered nor the user's words. Nor is a conversation summary
  (LangChain's ``lc_source: summarization``, :mod:`guardagent.trace.text.summaries`): the
  model's text, read as untrusted (source ``tool:?#summary``, role ``tool``).
- The **proposed call**: ``{"name", "args": {...}, "id"}`` (LangChain), ``{"id", "type":
  "function", "function": {"name", "arguments"}}`` (OpenAI) or ``{"name", "arguments":
  {...} | "<JSON object>"}``. A call object in two formats at once (a ``function`` beside
  top-level arguments, two argument fields, two names that differ) is refused: one host
  runs one reading, another the other. So is an assistant message that gives a
  ``function_call`` beside tool calls. A LangChain message's ``tool_calls`` are its calls
  (what LangChain runs): the provider's copies (``additional_kwargs.tool_calls``,
  ``tool_use`` content parts) are read only when it has none, since a host's edits
  (human-in-the-loop, redaction) change ``tool_calls`` and leave the copies stale.
  Without a proposed call, the last message must be an assistant message making exactly
  one call, and that call is the proposed one. When the last message is an assistant
  message making calls, the proposed call must be one of them, equal in name and
  arguments (found by id, or without an id by equality); a proposed call found earlier in
  the trace is refused, since the messages after it are not "earlier". After any other
  last message the proposed call is a new call. Tool names are kept exactly as written.
  With ``final_answer`` (the policy labels the pseudo-tool ``respond``), a last assistant
  message that makes no call is itself the proposed call: ``respond({"content": <its
  text>})`` (:func:`final_answer_call`).

Roles and sources. Every message gets a ``role`` (``system``, ``user``, ``assistant``,
``tool``) and a ``source`` naming who wrote its text: ``system`` (the deployer), ``user``,
``model``, or ``tool:<name>`` for a tool result, the tool's name taken only from the call it
answers (by ``tool_call_id``; a legacy ``function`` message by the nearest unanswered call
of its name). Message structure is evidence, not authority: a result's own ``name`` never
makes it a tool's result, so a result answering no call of the trace (its call trimmed
away, or forged) is ``tool:?`` (unlabelled, so untrusted).

Fails closed through :func:`guardagent.readers.evidence.unreadable`: ``trace_too_large``
(over ``max_bytes``, default 8 MB of UTF-8), ``unparsable_trace`` (not JSON, an unknown
role or type, arguments that are not a JSON object, content of an unknown shape, a call
object in two formats, objects or lists nested over :data:`MAX_NESTING` deep),
``inconsistent_trace`` (two names in one call object, a ``function_call`` beside tool
calls, a result naming
another tool than its call, a second result for one call, two calls with one id, a
proposed call that disagrees with the last message or is followed by later messages),
``no_tool_call`` / ``several_tool_calls`` (no proposed call given and the last message does
not make exactly one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeGuard

from guardagent.readers.evidence import UnreadableEvidence, unreadable
from guardagent.readers.textio import UnreadableJson, load_json
from guardagent.trace.document.declared import check_keys_alike, keys_once
from guardagent.trace.document.labels import Labels
from guardagent.trace.document.resume import content_digest
from guardagent.trace.document.shapes import (
    Message,
    ReadState,
    Role,
    ToolCall,
    Trace,
    _kept,
)
from guardagent.trace.found.trusted_addressed import addressed_part, addressed_text
from guardagent.trace.text import content as _content
from guardagent.trace.text.answer_parts import answer_content, delivered_parts
from guardagent.trace.text.content import Content, sort_content
from guardagent.trace.text.fields import split_result
from guardagent.trace.text.nesting import LEAVES as _LEAVES
from guardagent.trace.text.nesting import MAX_NESTING as MAX_NESTING
from guardagent.trace.text.nesting import max_nodes, nesting_problem, walk
from guardagent.trace.text.summaries import SUMMARY_SOURCE, is_summary

MAX_TRACE_BYTES = 8 * 1024 * 1024
"""Default size limit of a trace (UTF-8 bytes of its text and arguments)."""


_LC_TYPES: dict[str, Role] = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
    "HumanMessageChunk": "user",
    "AIMessageChunk": "assistant",
    "SystemMessageChunk": "system",
    "ToolMessageChunk": "tool",
    "FunctionMessageChunk": "tool",
}
_OPENAI_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "tool": "tool",
    "function": "tool",
}
_ARG_FIELDS = ("args", "arguments", "input")


# -- reading -------------------------------------------------------------------------------


class _Reader:
    def __init__(self, max_bytes: int, labels: Labels | None = None) -> None:
        self.max_bytes = max_bytes
        self.labels = labels
        self.size = 0
        self.messages: list[Message] = []
        self.position = 0
        self.calls_by_id: dict[str, tuple[int, int]] = {}
        self.unanswered: list[tuple[int, int]] = []
        self.results: dict[str, int] = {}
        self.answers: dict[int, tuple[int, int]] = {}
        self.nesting_checked = False  # every message (a mapping) walked by the caller
        self.nodes_left = max_nodes(max_bytes)  # what message objects' fields may still hold
        self.borrowed = False  # a call's arguments hold the host's containers: keep no state
        self.parts: dict[int, list[str]] = {}  # an assistant message's delivered parts (JSON)

    def save(self, items: Sequence[Any]) -> ReadState | None:
        """The state after reading `items` (None: not plain data, or borrowed containers)."""
        digest = None if self.borrowed else content_digest(items)
        if digest is None:
            return None
        return ReadState(
            len(items),
            digest,
            self.labels,
            self.max_bytes,
            tuple(self.messages),
            self.position,
            self.size,
            self.calls_by_id,
            tuple(self.unanswered),
            self.results,
            self.answers,
        )

    def resume(self, state: ReadState) -> None:
        """Continue after the messages of `state` (on copies: the state is shared)."""
        self.messages = list(state.messages)
        self.position, self.size = state.position, state.size
        self.calls_by_id = dict(state.calls_by_id)
        self.unanswered = list(state.unanswered)
        self.results = dict(state.results)
        self.answers = dict(state.answers)

    def count(self, text: str) -> None:
        self.size += len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        if self.size > self.max_bytes:
            unreadable(
                "trace_too_large",
                f"the trace is over {self.max_bytes} bytes; it is "
                "denied rather than cut (raise max_trace_bytes to guard it)",
            )

    def text(self, content: Any, where: str) -> str:
        if content is None:
            return ""
        if isinstance(content, str):
            self.count(content)
            return content
        if isinstance(content, list):
            parts: list[str] = []
            for part in content:
                shown = _content.part_text(part)
                if shown is not None:
                    parts.append(shown)
                elif isinstance(part, Mapping):
                    parts.append(_json(part))
                else:
                    unreadable(
                        "unparsable_trace", f"{where}: a content part is neither text nor an object"
                    )
            joined = "\n".join(parts)
            self.count(joined)
            return joined
        return unreadable("unparsable_trace", f"{where}: content is neither text nor a list")

    def args(self, raw: Any, where: str) -> dict[str, Any]:
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return {}
        if isinstance(raw, str):
            self.count(raw)
            try:
                raw = load_json(raw, keys_once)
            except UnreadableEvidence:
                raise
            except ValueError:
                unreadable("unparsable_trace", f"{where}: arguments are not JSON")
            check_nesting(raw, where, max_bytes=self.max_bytes)
        elif _is_mapping(raw):  # nesting checked with its message or proposed call
            self.count(_json(raw))
            if any(type(value) not in _LEAVES for value in raw.values()):
                try:  # the reader's own copy: the host may edit its lists after the call
                    return {key: _plain_copy(value) for key, value in raw.items()}
                except TypeError:
                    self.borrowed = True  # not plain data: shared with the host, keep no state
        if not _is_mapping(raw):
            unreadable("unparsable_trace", f"{where}: arguments are not a JSON object")
        return dict(raw)

    def call(self, raw: Any, index: int, where: str) -> ToolCall:
        if not _is_mapping(raw):
            unreadable("unparsable_trace", f"{where}: a tool call is not an object")
        given = [key for key in _ARG_FIELDS if key in raw]
        if "function" in raw:  # OpenAI: everything in `function`, nothing beside it
            fn = raw["function"]
            if not _is_mapping(fn) or given:
                unreadable(
                    "unparsable_trace",
                    f"{where}: a tool call in two formats at once "
                    "(a `function` object and arguments beside it): one host runs one, "
                    "another the other",
                )
            name, args = fn.get("name"), self.args(fn.get("arguments"), where)
            if "name" in raw and raw["name"] != name:
                unreadable(
                    "inconsistent_trace",
                    f"{where}: a tool call names two tools (its `name` and its `function`'s)",
                )
        elif len(given) > 1:
            unreadable(
                "unparsable_trace",
                f"{where}: a tool call gives its arguments twice "
                f"({' and '.join(given)}): a host may read either",
            )
        else:
            name = raw.get("name")
            args = self.args(raw.get(given[0]) if given else None, where)
        if not isinstance(name, str) or not name.strip():
            unreadable("unparsable_trace", f"{where}: a tool call has no name")
        ident = raw.get("id")
        call = ToolCall(
            name=name,
            args=args,
            id=str(ident) if isinstance(ident, str | int) and ident != "" else None,
            index=index,
            position=self.position,
        )
        self.position += 1
        return call

    def walk_fields(self, raw: Any, where: str) -> None:
        """Walk a message object's fields before it is dumped (a dump expands what it shares).

        All the trace's message objects are walked within one node bound together.
        """
        walked = walk([getattr(raw, "__dict__", None)], self.nodes_left)
        self.nodes_left -= walked.visited
        if walked.problem is not None:
            unreadable(
                "trace_too_large" if walked.problem.large else "unparsable_trace",
                f"{where}: {walked.problem.text}",
            )

    def add(self, raw: Any, index: int) -> None:
        where = f"message {index}"
        index = len(self.messages)  # a result split into fields is several messages
        if type(raw) is not dict and not isinstance(raw, Mapping):
            if not (hasattr(raw, "type") and hasattr(raw, "content")):
                unreadable("unparsable_trace", f"{where} is not an object")
            self.walk_fields(raw, where)
            try:
                raw = _to_dict(raw)
            except RecursionError:
                unreadable("unparsable_trace", f"{where} is nested too deep to read")
            check_nesting(raw, where, max_bytes=self.max_bytes)
        elif not self.nesting_checked:
            check_nesting(raw, where, max_bytes=self.max_bytes)
        if "role" in raw:
            data: Mapping[str, Any] = raw
            role = _OPENAI_ROLES.get(str(raw.get("role")))
            legacy_function = raw.get("role") == "function"
        elif "type" in raw and isinstance(raw.get("data"), Mapping):
            data = raw["data"]
            kind = str(raw["type"])
            if kind in ("chat", "ChatMessageChunk"):
                role = _OPENAI_ROLES.get(str(data.get("role")))
            else:
                role = _LC_TYPES.get(kind)
            legacy_function = kind in ("function", "FunctionMessageChunk")
        else:
            unreadable("unparsable_trace", f"{where} is neither LangChain nor OpenAI chat")
        if role is None:
            unreadable("unparsable_trace", f"{where} has an unknown role or type")
        if role == "tool":
            name = data.get("name")
            text = self.text(data.get("content"), where)
            self.tool(
                data, text, name if isinstance(name, str) else None, index, where, legacy_function
            )
            return
        body = data.get("content")
        if body is None or type(body) is str:  # plain text (the usual case): nothing to sort
            content = Content(body or "")
        else:
            content = sort_content(body, role, where)
        self.count(content.shown)
        hidden = content.hidden
        if content.calls and _calls_given(data):  # LangChain runs `tool_calls` (a host's
            hidden = [*hidden, *map(_json, content.calls)]  # edits leave the parts stale)
            content.calls = []
        invalid = data.get("invalid_tool_calls") if role == "assistant" else None
        if isinstance(invalid, list) and invalid:
            hidden = [*hidden, "[invalid tool calls] " + _json(invalid)]
        if hidden:  # before the message: its shown text stays next to the one answering it
            said = "\n".join(hidden)
            self.count(said)
            source = "model" if role == "assistant" else "tool:?"
            self.messages.append(
                Message(
                    "assistant" if role == "assistant" else "tool",
                    source,
                    said,
                    None,
                    None,
                    len(self.messages),
                    status=None if role == "assistant" else "ok",
                )
            )
        for call_id, body, failed in content.results:  # a user message's tool results
            result = {"tool_call_id": call_id, "status": "error" if failed else "ok"}
            self.tool(result, self.text(body, where), None, len(self.messages), where, False)
        if role == "assistant":
            if parts := delivered_parts(body):  # what a final answer sends besides its text
                self.parts[len(self.messages)] = parts
            self.assistant(
                data, content.shown, content.calls, len(self.messages), where, len(parts)
            )
        elif (content.shown or not content.results) and is_summary(data, content.shown):
            self.messages.append(
                Message(
                    "tool",
                    SUMMARY_SOURCE,
                    content.shown,
                    None,
                    None,
                    len(self.messages),
                    status="ok",
                )
            )
        elif content.shown or not content.results:
            source = "user" if role == "user" else "system"
            self.messages.append(
                Message(role, source, content.shown, None, None, len(self.messages))
            )

    def assistant(
        self,
        data: Mapping[str, Any],
        text: str,
        parts: list[Mapping[str, Any]],
        index: int,
        where: str,
        unread: int = 0,
    ) -> None:
        raw_calls = data.get("tool_calls")
        if not raw_calls:
            extra = data.get("additional_kwargs")
            raw_calls = extra.get("tool_calls") if _is_mapping(extra) else None
        if not raw_calls and parts:  # Anthropic: the calls are `tool_use` content parts
            raw_calls = list(parts)
        if data.get("function_call") is not None:
            if raw_calls or not isinstance(data["function_call"], Mapping):
                unreadable(
                    "inconsistent_trace",
                    f"{where}: a `function_call` beside tool "
                    "calls (or not an object): which call runs is ambiguous",
                )
            raw_calls = [data["function_call"]]
        if raw_calls is not None and not isinstance(raw_calls, list):
            unreadable("unparsable_trace", f"{where}: tool_calls is not a list")
        calls = tuple(self.call(c, index, where) for c in raw_calls or [])
        for k, call in enumerate(calls):
            check_keys_alike(call.name, call.args)  # what it read or sent is unknown
            if call.id is not None:
                if call.id in self.calls_by_id:
                    unreadable(
                        "inconsistent_trace",
                        f"{where}: call id {call.id[:40]!r} is used by an earlier call too",
                    )
                self.calls_by_id[call.id] = (index, k)
            self.unanswered.append((index, k))
        self.messages.append(
            Message("assistant", "model", text, None, None, index, calls, unread_parts=unread)
        )

    def tool(
        self,
        data: Mapping[str, Any],
        text: str,
        name: str | None,
        index: int,
        where: str,
        legacy_function: bool,
    ) -> None:
        ident = data.get("tool_call_id")
        call_id = str(ident) if isinstance(ident, str | int) and ident != "" else None
        answered: tuple[int, int] | None = None
        if call_id is not None:
            answered = self.calls_by_id.get(call_id)  # None: its call was trimmed away
            if answered is not None and answered not in self.unanswered:
                unreadable(
                    "inconsistent_trace", f"{where}: a second result for call id {call_id[:40]!r}"
                )
        elif legacy_function and name:
            answered = next(
                (
                    a
                    for a in reversed(self.unanswered)
                    if self.messages[a[0]].calls[a[1]].name == name
                ),
                None,
            )
        tool_name: str | None = None  # a result's own name never makes it a tool's
        if answered is not None:
            call = self.messages[answered[0]].calls[answered[1]]
            if name and name != call.name:
                unreadable(
                    "inconsistent_trace",
                    f"{where}: a result named {name[:40]!r} answers a call of {call.name[:40]!r}",
                )
            tool_name = call.name
            self.unanswered.remove(answered)
            self.results[call.id or f"#{call.position}"] = index
            self.answers[index] = answered
        status: Literal["ok", "error"] = "error" if data.get("status") == "error" else "ok"
        source = f"tool:{tool_name}" if tool_name else "tool:?"
        label = self.labels.label(tool_name) if self.labels and tool_name else None
        if label is None or label.results != "trusted":
            self.messages.append(
                Message("tool", source, text, tool_name, call_id, index, status=status)
            )
            return
        if not label.untrusted_fields:
            self.trusted_text(text, source, tool_name, call_id, index, status, answered)
            return
        # a string of the record that addresses the agent is its author's words, as a field
        # the label names untrusted is (guardagent.trace.found.trusted_addressed)
        also = addressed_part if label.result_format != "listing" else None
        trusted, parts = split_result(
            text, label.untrusted_fields, label.result_format, label.columns, also=also
        )
        self.messages.append(
            Message("tool", source, trusted, tool_name, call_id, index, status=status, whole=text)
        )
        self.parts_of(parts, source, tool_name, call_id, status, answered)

    def parts_of(
        self,
        parts: list[tuple[str, str]],
        source: str,
        tool_name: str | None,
        call_id: str | None,
        status: Literal["ok", "error"],
        answered: tuple[int, int] | None,
    ) -> None:
        """Append a result's untrusted parts, each a message of its own after its rest."""
        for part, part_text in parts:
            if answered is not None:  # a field is still the record's: it answers the same call
                self.answers[len(self.messages)] = answered
            self.messages.append(
                Message(
                    "tool",
                    f"{source}#{part}",
                    part_text,
                    tool_name,
                    call_id,
                    len(self.messages),
                    status=status,
                )
            )

    def trusted_text(
        self,
        text: str,
        source: str,
        tool_name: str | None,
        call_id: str | None,
        index: int,
        status: Literal["ok", "error"],
        answered: tuple[int, int] | None,
    ) -> None:
        """A trusted result without field labels: its words to the agent are taken apart."""
        split = addressed_text(text)
        if split is None:
            self.messages.append(
                Message("tool", source, text, tool_name, call_id, index, status=status)
            )
            return
        trusted, parts, listed = split
        self.messages.append(
            Message(
                "tool",
                source,
                trusted,
                tool_name,
                call_id,
                index,
                status=status,
                whole=text,
                listed=listed,
            )
        )
        self.parts_of(parts, source, tool_name, call_id, status, answered)


def _calls_given(data: Mapping[str, Any]) -> bool:
    """Whether an assistant message gives calls other than content parts (read first)."""
    extra = data.get("additional_kwargs")
    mirror = extra.get("tool_calls") if _is_mapping(extra) else None
    return bool(data.get("tool_calls") or mirror or data.get("function_call") is not None)


def _json(value: Any) -> str:
    try:
        return _content.as_json(value)
    except (ValueError, TypeError, RecursionError):  # an int over 4300 digits, a cycle, mixed keys
        return unreadable(
            "unparsable_trace",
            "a value of the trace cannot be read as JSON (an "
            "integer over 4,300 digits, a cycle or keys of mixed types)",
        )


def check_nesting(
    value: Any, where: str, *, reason: str = "unparsable_trace", max_bytes: int = MAX_TRACE_BYTES
) -> None:
    """Refuse values nested over :data:`MAX_NESTING` deep, or too many to walk as a tree.

    See :mod:`guardagent.trace.text.nesting` (shared sub-objects counted each time they are met).

    Raises:
        UnreadableEvidence: with `reason` (``trace_too_large`` for too many values when
            `reason` is ``unparsable_trace``), naming `where`.
    """
    problem = nesting_problem([value], max_nodes(max_bytes))
    if problem is not None:
        large = problem.large and reason == "unparsable_trace"
        unreadable("trace_too_large" if large else reason, f"{where}: {problem.text}")


def within_nesting(values: Sequence[Any], max_bytes: int = MAX_TRACE_BYTES) -> bool:
    """Whether each of the values is nested at most :data:`MAX_NESTING` deep.

    One walk over them all (:func:`~guardagent.trace.text.nesting.nesting_problem`): each
    value's depth is counted from its own top, as :func:`check_nesting` counts it, so a
    message list is checked in one pass instead of one walk a message.

    Raises:
        UnreadableEvidence: ``trace_too_large``, the values are more than a trace of
            `max_bytes` holds, read as a tree (then no message is walked again).
    """
    problem = nesting_problem(values, max_nodes(max_bytes))
    if problem is not None and problem.large:
        unreadable("trace_too_large", f"the trace: {problem.text}")
    return problem is None


def _plain_copy(value: Any) -> Any:
    """A copy of plain data (exact dicts, lists, tuples of scalars), types kept.

    Raises:
        TypeError: any other object (the caller keeps the host's value).
    """
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is dict:
        return {key: _plain_copy(item) for key, item in value.items()}
    if kind is list:
        return [_plain_copy(item) for item in value]
    if kind is tuple:
        return tuple(_plain_copy(item) for item in value)
    raise TypeError(kind.__name__)


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, a plain dict or scalar checked without the ABC."""
    kind = type(value)
    return kind is dict or (kind not in _LEAVES and isinstance(value, Mapping))


def _to_dict(message: Any) -> dict[str, Any]:
    from langchain_core.messages import messages_to_dict

    return messages_to_dict([message])[0]


def _document(raw: Any, max_bytes: int) -> tuple[Any, Any]:
    if isinstance(raw, bytes | bytearray | str):
        if len(raw) > max_bytes:
            unreadable(
                "trace_too_large",
                f"the trace is over {max_bytes} bytes; it is denied "
                "rather than cut (raise max_trace_bytes to guard it)",
            )
        if isinstance(raw, str):
            raw = raw.removeprefix("\ufeff")
        try:
            raw = load_json(raw)
        except UnreadableJson as exc:
            unreadable("unparsable_trace", f"the trace is not JSON ({exc.detail})")
    if isinstance(raw, Mapping):
        if not isinstance(raw.get("messages"), list):
            unreadable("unparsable_trace", "a trace object needs a 'messages' list")
        return raw["messages"], raw.get("proposed_call", raw.get("tool_call"))
    if isinstance(raw, list | tuple):
        return list(raw), None
    return unreadable(
        "unparsable_trace", "a trace is a list of messages or an object with 'messages'"
    )


def parse_trace(
    messages: Any,
    proposed_call: Any = None,
    *,
    max_bytes: int = MAX_TRACE_BYTES,
    labels: Labels | None = None,
    final_answer: str | None = None,
    resume: ReadState | None = None,
) -> Trace:
    """Read a trace (see the module docstring for the format).

    Args:
        messages: A message list (dicts or LangChain messages), a trace object with
            ``messages`` (and ``proposed_call``), or either as JSON text.
        proposed_call: The call to guard; overrides the document's ``proposed_call``.
        max_bytes: Size limit; a larger trace is unreadable (never cut).
        labels: The deployer's labels: a result of a tool with ``untrusted_fields`` is read
            as its trusted rest (source ``tool:<name>``) followed by one message per
            untrusted field path (source ``tool:<name>#<path>``, or ``tool:<name>#unparsed``
            for a result that is not the labelled structure), so message numbers count
            those parts. None: every result is one message.
        final_answer: The pseudo-tool a final answer is guarded as (see
            :func:`final_answer_call`); None: a last message without a call is
            ``no_tool_call``.
        resume: What an earlier call of the thread read (:func:`~guardagent.trace.document.resume.
            resumable`): used only when this trace's first raw messages are exactly those
            (:func:`~guardagent.trace.document.resume.content_digest`), read under the same labels
            and size limit; then only the messages after them are read.

    Raises:
        UnreadableEvidence: the trace cannot be read (reasons in the module docstring).
    """
    items, documented = _document(messages, max_bytes)
    reader = _Reader(max_bytes, labels)
    start = 0
    if (
        resume is not None
        and resume.labels is labels
        and resume.max_bytes == max_bytes
        and len(items) >= resume.items
        and content_digest(items[: resume.items]) == resume.digest
    ):
        reader.resume(resume)
        start = resume.items
    else:
        resume = None
    reader.nesting_checked = within_nesting(items[start:], max_bytes)  # else one message
    for index in range(start, len(items)):
        reader.add(items[index], index)
    read = reader.save(items)
    msgs = reader.messages
    given = proposed_call if proposed_call is not None else documented
    proposed: ToolCall | None = None
    last = msgs[-1] if msgs else None
    if given is None:
        answer = final_answer_call(
            last, final_answer, reader.position, reader.parts.get(last.index) if last else None
        )
        if answer is not None:
            return Trace(
                tuple(msgs),
                answer,
                reader.size,
                tuple(c for m in msgs for c in m.calls),
                reader.results,
                reader.answers,
                read,
                resume,
            )
        if last is None or last.role != "assistant" or not last.calls:
            unreadable(
                "no_tool_call",
                "no proposed call was given and the last message makes "
                "no tool call (label the pseudo-tool `respond` to guard a final "
                "answer)",
            )
        if len(last.calls) > 1:
            unreadable(
                "several_tool_calls",
                f"the last message makes {len(last.calls)} calls; "
                "pass the one to guard as proposed_call",
            )
        proposed = last.calls[0]
    else:
        check_nesting(given, "the proposed call", max_bytes=max_bytes)
        wanted = reader.call(given, len(msgs), "the proposed call")
        proposed = _match(msgs, wanted)
    skip = {(proposed.index, proposed.position)}
    if proposed.index < len(msgs):  # in the last message: later siblings are not earlier
        skip.update(
            (c.index, c.position)
            for c in msgs[proposed.index].calls
            if c.position > proposed.position
        )
    earlier = tuple(c for m in msgs for c in m.calls if (c.index, c.position) not in skip)
    return Trace(
        tuple(msgs), proposed, reader.size, earlier, reader.results, reader.answers, read, resume
    )


FINAL_ANSWER = "respond"
"""The pseudo-tool a final answer (an assistant message with no call) is guarded as."""


def final_answer_call(
    last: Message | None, name: str | None, position: int, parts: list[str] | None = None
) -> ToolCall | None:
    """A final answer as a call of the pseudo-tool `name`, ``{"content": <its text>}``.

    An assistant message that makes no call is the agent's message to the user (a question,
    a report, the final answer). Guarded as a call, end-of-run rules can judge it like any
    action (``respond`` only after ``save_file``; no sensitive value in it). Only when the
    caller names the pseudo-tool (the host does when the policy labels it): otherwise the
    trace stays ``no_tool_call``, as before. The content is the text followed by the
    message's delivered `parts` (an image's URL, a file: :mod:`guardagent.trace.text.answer_parts`),
    which reach the user's client too.
    """
    if name is None or last is None or last.role != "assistant" or last.calls:
        return None
    return ToolCall(name, {"content": answer_content(last.text, parts)}, None, last.index, position)


def _match(msgs: Sequence[Message], wanted: ToolCall) -> ToolCall:
    """The proposed call as a call of the trace, or as a new call after the last message.

    With an id, the call with that id anywhere in the trace (it must be in the last
    message); without one, the equal call (name and arguments) of the last message. Two
    equal calls there (the model pays twice in one message) are ``several_tool_calls``:
    either would be judged as the first, and ``at_most`` or a one-use approval would
    count one call where two run.
    """
    if wanted.id is not None:
        where = [(m, c) for m in msgs for c in m.calls if c.id == wanted.id]
    else:
        where = [
            (msgs[-1], c)
            for c in (msgs[-1].calls if msgs else ())
            if c.name == wanted.name and c.args == wanted.args
        ]
        if len(where) > 1:
            unreadable(
                "several_tool_calls",
                f"the proposed call {wanted.name[:40]!r} has no "
                f"id and {len(where)} calls of the last message equal it: pass its id",
            )
    for message, call in where:
        if message.index != len(msgs) - 1:
            unreadable(
                "inconsistent_trace",
                f"the proposed call is made in message "
                f"{message.index}, and {len(msgs) - 1 - message.index} message(s) "
                "follow it",
            )
        if call.name != wanted.name or call.args != wanted.args:
            unreadable(
                "inconsistent_trace",
                f"the proposed call {wanted.name[:40]!r} differs "
                f"from call {str(call.id)[:40]!r} of the last message "
                f"({call.name[:40]!r}): name or arguments disagree",
            )
        return call
    if msgs and msgs[-1].calls:
        unreadable(
            "inconsistent_trace",
            f"the proposed call {wanted.name[:40]!r} is none of "
            f"the {len(msgs[-1].calls)} call(s) the last message makes",
        )
    return wanted


def load_trace(text: str | bytes, *, max_bytes: int = MAX_TRACE_BYTES) -> Trace:
    """Read a trace document from JSON text (a file's content or stdin)."""
    return parse_trace(text, max_bytes=max_bytes)


# -- as an event ---------------------------------------------------------------------------


def _indent(text: str) -> str:
    return "  " + "\n  ".join(text.splitlines())  # each line indented; no line: "  "


def _line(message: Message) -> str:
    if message.role == "user":
        return "USER: " + message.text
    if message.role == "system":
        return "SYSTEM: " + message.text
    if message.source == SUMMARY_SOURCE:
        return "SUMMARY (written by the model, untrusted): " + message.text
    if message.role == "tool" and "#" in message.source:
        return f"TOOL RESULT [{message.source[5:]}] (untrusted field): " + message.text
    if message.role == "tool":
        return f"TOOL RESULT [{message.tool_name or message.tool_call_id or '?'}]: " + message.text
    said = message.text
    if message.calls:
        calls = ", ".join(f"{c.name}({_args(c.args)})" for c in message.calls)
        said = (said + "\n" if said else "") + "calls " + calls
    return "AI: " + said


def _args(args: Mapping[str, Any]) -> str:
    return _content.as_json(dict(args))


def _event_line(message: Message) -> str:
    return _indent(_line(message))


def render_event(trace: Trace, user_info: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """The trace as a GuardAgent event (agent_input, agent_output), uncut.

    Same layout as :func:`guardagent.integrations.events.tool_call_event` (task from the
    user messages, the host's ``User information:`` block last; conversation lines indented
    so no message can forge the unindented ``TOOL:`` / ``ARGS:`` block), without the
    4,000-character tail: the whole trace is the event.
    """
    from guardagent.integrations.events import render_user_info

    asks = [" ".join(m.text.split()) for m in trace.messages if m.role == "user"]
    agent_input = "Task: " + "\n".join(a for a in asks if a) + "\n" + render_user_info(user_info)
    # each line kept with its message: a resumed thread renders only its new messages
    body = "\n".join(_kept(m, "event_line", _event_line) for m in trace.messages) or "  (none)"
    name = " ".join(trace.call.name.split())
    block = f"(Tool call)\nTOOL: {name}\nARGS: {_args(trace.call.args)}"
    agent_output = f"(Conversation)\n{body}\n{block}"
    return agent_input, agent_output
