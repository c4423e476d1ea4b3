"""What a final answer carries besides its text: the parts the user's client receives.

A final answer is guarded as ``respond({"content": ...})``
(:func:`guardagent.trace.document.messages.final_answer_call`). Its text parts are what a chat
shows;
its other parts (an ``image_url`` whose URL or ``data:`` payload the client fetches or
renders, an ``image``, a ``file``, audio) reach the client too, and a page can tell the model
to put a secret there rather than in the text. So they are part of what the answer says:
:func:`delivered_parts` gives them as JSON, and the answer's ``content`` is its text
followed by them, one a line. Reasoning and thinking blocks are left out (a client does not
show them as the answer), and so are call parts (``tool_use``: the calls themselves).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guardagent.trace.text.content import CALL_PARTS, as_json, part_text

UNDELIVERED = frozenset({"reasoning", "thinking", "redacted_thinking"}) | CALL_PARTS
"""Part types of an assistant message that are not delivered as the answer."""


def delivered_parts(content: Any) -> list[str]:
    """The JSON of each part of an assistant message that is neither text nor held back."""
    if not isinstance(content, list):
        return []
    return [
        as_json(part)
        for part in content
        if isinstance(part, Mapping)
        and part_text(part) is None
        and not _undelivered(part.get("type"))
    ]


def _undelivered(kind: Any) -> bool:
    """Whether a part's type is one held back (a type that is not text is delivered)."""
    return isinstance(kind, str) and kind in UNDELIVERED


def answer_content(text: str, parts: list[str] | None) -> str:
    """A final answer's ``content``: its text, then each delivered part's JSON, one a line."""
    return "\n".join([text, *parts]) if parts else text
