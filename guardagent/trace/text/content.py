"""A message's content parts, sorted by what a chat shows and who wrote them.

Only text parts are what a chat UI renders as the message: the words the user typed, the
question the assistant put to the user. Everything else in a content list is something else:

- ``tool_result`` (Anthropic) and ``function_call_output`` (OpenAI Responses) parts of a
  ``user`` message are tool results, not the user's words: the reader makes each a tool
  message answering the call it names (``tool_use_id`` / ``call_id``).
- ``tool_use`` parts of an ``assistant`` message are its calls (Anthropic's shape).
- Any other part (an image and its alt text, a reasoning or thinking block, a file, a
  ``tool_use`` in a user message, a result in an assistant message) is **hidden**: not shown
  as the message's text, so never a question the user answered nor the user's words. It is
  kept as evidence (its JSON), attributed to the model in an assistant message and to an
  unlabelled, untrusted source (``tool:?``) in any other.

Tool messages are not sorted: every part of a tool result is the tool's (see
:mod:`guardagent.trace.document.messages`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from guardagent.readers.evidence import unreadable

TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
"""Content parts a chat shows as text (their ``text``); a ``refusal`` shows its ``refusal``."""

RESULT_PARTS = {
    "tool_result": ("tool_use_id", "content"),
    "function_call_output": ("call_id", "output"),
}
"""Result parts a user message may carry: part type -> (call id field, content field)."""

CALL_PARTS = frozenset({"tool_use"})
"""Call parts an assistant message may carry (name, ``input``, id)."""


@dataclass
class Content:
    """One message's content, sorted.

    Attributes:
        shown: The text a chat shows (text parts joined by newlines).
        hidden: Every other part, as JSON, in order.
        results: Result parts (of a user message): (call id, content, failed).
        calls: Call parts (of an assistant message), as given.
    """

    shown: str = ""
    hidden: list[str] = field(default_factory=list)
    results: list[tuple[str | None, Any, bool]] = field(default_factory=list)
    calls: list[Mapping[str, Any]] = field(default_factory=list)


def part_text(part: Any) -> str | None:
    """The text a chat shows for a part, or None if it shows none."""
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        kind = part.get("type")
        if isinstance(kind, str) and kind in TEXT_PARTS and isinstance(part.get("text"), str):
            return str(part["text"])
        if kind == "refusal" and isinstance(part.get("refusal"), str):
            return str(part["refusal"])
    return None


EVIDENCE_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)
"""``json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)``, built once (an
encoder holds no state between calls: safe to share across threads)."""


def as_json(value: Any) -> str:
    """A part as evidence text (sorted keys, Unicode kept)."""
    return EVIDENCE_JSON.encode(value)


def sort_content(content: Any, role: str, where: str) -> Content:
    """Sort a user, system or assistant message's content (a string, null or a list of parts).

    Raises:
        UnreadableEvidence: ``unparsable_trace`` for content that is neither text nor a list,
            or a part that is neither text nor an object.
    """
    if content is None:
        return Content()
    if isinstance(content, str):
        return Content(shown=content)
    if not isinstance(content, list):
        return unreadable("unparsable_trace", f"{where}: content is neither text nor a list")
    out, shown = Content(), []
    for part in content:
        text = part_text(part)
        if text is not None:
            shown.append(text)
            continue
        if not isinstance(part, Mapping):
            unreadable("unparsable_trace", f"{where}: a content part is neither text nor an object")
        kind = part.get("type")
        if role == "user" and isinstance(kind, str) and kind in RESULT_PARTS:
            id_field, body = RESULT_PARTS[kind]
            ident = part.get(id_field)
            call_id = str(ident) if isinstance(ident, str | int) and ident != "" else None
            out.results.append((call_id, part.get(body), part.get("is_error") is True))
        elif role == "assistant" and isinstance(kind, str) and kind in CALL_PARTS:
            out.calls.append(part)
        else:
            out.hidden.append(as_json(part))
    out.shown = "\n".join(shown)
    return out
