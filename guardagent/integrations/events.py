r"""Turn a host agent's pending tool call or answer into one GuardAgent event.

GuardAgent guards *events*: an ``agent_input`` (trusted: what the user asked and who the user
is) and an ``agent_output`` (untrusted: what the agent did and is about to do). A LangChain /
LangGraph host has messages and tool calls instead, so this module fixes one text format that
the middleware, :func:`~guardagent.integrations.subgraph.guard_node` and the ``tool-calls``
profile's toolbox (:mod:`guardagent.readers.toolcall`) all share.

Event format for a tool call::

    agent_input:
        Task: <the user's (human) messages, oldest first, one per line>
        User information:
           age: 16,
           verified: false,
           role: "analyst"

    agent_output:
        (Conversation)
          AI: I will look up the balance first.
          TOOL RESULT [lookup_balance]: 1200.00
        (Tool call)
        TOOL: transfer_funds
        ARGS: {"amount": 5000, "to": "acct-9"}

For a final answer the last block is ``(Final answer)`` followed by ``ANSWER: <text>``
(indented continuation lines). Why this shape:

- User facts are trusted only from the host (``user_info``), never from the conversation,
  so they go in the input; the ``User information:`` block is always written, last (as
  ``(none)`` when the host has no facts), so a human message that contains its own
  ``User information:`` text cannot override or supply facts (the parser reads the last
  block). The block is for display, prompts and memory: the integrations also hand the
  facts to the guard program as data (``user_facts``), and then the block is never
  re-parsed, so a fact whose value looks like a facts block stays one value.
- Every conversation line is indented by two spaces: tool results are attacker-controlled
  and must not be able to forge the unindented ``TOOL:`` / ``ARGS:`` lines.
- ``ARGS`` is one-line JSON (``sort_keys``), so it parses exactly and the same call always
  gives the same text (memory retrieval is by text distance).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

MAX_CONVERSATION_CHARS = 4000
"""Tail of the conversation kept in an event: enough context, bounded prompt and distance cost."""


def _text(content: Any) -> str:
    """Message content as plain text (content blocks are joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return "" if content is None else str(content)


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in (text.splitlines() or [""]))


def _value(value: Any) -> str:
    """A user-information value in the syntax ``parse_user_info`` types back exactly."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)


def render_user_info(user_info: Mapping[str, Any] | None) -> str:
    """The ``User information:`` block; written even with no facts (as ``(none)``).

    The parser reads the last block, so an always-present host block means a user message
    that carries its own ``User information:`` text can never stand in for the host's facts.
    """
    if not user_info:
        return "User information:\n   (none)"
    lines = [f"   {key}: {_value(val)}" for key, val in user_info.items()]
    return "User information:\n" + ",\n".join(lines)


def render_input(messages: Iterable[BaseMessage], user_info: Mapping[str, Any] | None) -> str:
    """The event's agent input: the user's messages as the task, then the user's facts."""
    asks = [" ".join(_text(m.content).split()) for m in messages if isinstance(m, HumanMessage)]
    return "Task: " + "\n".join(a for a in asks if a) + "\n" + render_user_info(user_info)


def _message_line(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        return "USER: " + _text(message.content)
    if isinstance(message, ToolMessage):
        return f"TOOL RESULT [{message.name or message.tool_call_id}]: " + _text(message.content)
    if isinstance(message, AIMessage):
        said = _text(message.content)
        calls = [f"{c['name']}({_args(c.get('args', {}))})" for c in message.tool_calls]
        if calls:
            said = (said + "\n" if said else "") + "calls " + ", ".join(calls)
        return "AI: " + said
    return f"{message.type.upper()}: " + _text(message.content)


def _args(args: Any) -> str:
    return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def render_conversation(
    messages: Iterable[BaseMessage], max_chars: int = MAX_CONVERSATION_CHARS
) -> str:
    """The ``(Conversation)`` block, indented, keeping only its last `max_chars` characters."""
    body = "\n".join(_indent(_message_line(m)) for m in messages)
    if len(body) > max_chars:
        body = "  [...]\n" + body[-max_chars:].split("\n", 1)[-1]
    return "(Conversation)\n" + body if body else "(Conversation)\n  (none)"


def tool_call_event(
    name: str,
    args: Mapping[str, Any],
    messages: Iterable[BaseMessage] = (),
    user_info: Mapping[str, Any] | None = None,
    *,
    max_chars: int = MAX_CONVERSATION_CHARS,
) -> tuple[str, str]:
    """The (agent_input, agent_output) event for one pending tool call.

    Args:
        name: The tool's name.
        args: The call's arguments (JSON-serialisable; others are stringified).
        messages: The conversation so far (the AI message that makes the call included or not).
        user_info: Trusted facts about the user, from the host (never from the conversation).
        max_chars: Conversation tail kept in the event.
    """
    messages = list(messages)
    agent_output = (
        render_conversation(messages, max_chars)
        + f"\n(Tool call)\nTOOL: {' '.join(name.split())}\nARGS: {_args(dict(args))}"
    )
    return render_input(messages, user_info), agent_output


def answer_event(
    answer: str,
    messages: Iterable[BaseMessage] = (),
    user_info: Mapping[str, Any] | None = None,
    *,
    max_chars: int = MAX_CONVERSATION_CHARS,
) -> tuple[str, str]:
    """The (agent_input, agent_output) event for a final answer about to reach the user."""
    messages = list(messages)
    lines = (answer or "").splitlines() or [""]
    body = "ANSWER: " + lines[0] + "".join("\n  " + line for line in lines[1:])
    agent_output = render_conversation(messages, max_chars) + "\n(Final answer)\n" + body
    return render_input(messages, user_info), agent_output
