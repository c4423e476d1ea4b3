r"""Trusted toolbox functions for guarding an agent's tool calls with rules written in text.

The event format is fixed by :mod:`guardagent.integrations.events` (the middleware and
`guard_node` write it):

- ``agent_input``: ``Task: <the user's messages>`` and, when the host knows them, a
  ``User information:`` block of ``key: value`` lines (parsed by ``parse_user_info``).
- ``agent_output``: ``(Conversation)`` with every message indented by two spaces, then
  ``(Tool call)``, ``TOOL: <name>`` and ``ARGS: <one-line JSON object>``.

Trust boundary: the user's facts come only from the agent input. The agent output carries the
conversation (tool results are attacker-controlled) and the pending call; conversation lines
are indented, so they can never forge the unindented ``TOOL:`` line that
``parse_tool_call`` reads, and the real call block is always the last one.
"""

from __future__ import annotations

import json
import re
from typing import Any

from guardagent.tools.registry import guard_tool

_CALL = re.compile(r"^TOOL:[ \t]*(?P<name>[^\n]*)\n(?:ARGS:[ \t]*(?P<args>[^\n]*))?", re.M)

@guard_tool(group="toolcalls")
def parse_tool_call(agent_output: str) -> dict[str, Any]:
    """Return the pending tool call of a tool-call event: ``{"name": str, "args": dict}``.

    Reads the LAST unindented ``TOOL: <name>`` line and the ``ARGS: <JSON object>`` line right
    after it (the block the middleware appends after the conversation). Conversation text
    is indented in the event, so it cannot supply this block.

    Args:
        agent_output: The event's agent output (conversation + pending call).

    Returns:
        ``{"name": "transfer_funds", "args": {"amount": 5000, "to": "acct-9"}}``;
        ``{"name": "", "args": {}}`` when the event holds no tool call (e.g. a final answer).

    Raises:
        ValueError: When a ``TOOL:`` line has no ``ARGS:`` line or the args are not a JSON
            object (a malformed call must not pass unchecked).

    """
    matches = list(_CALL.finditer(agent_output or ""))
    if not matches:
        return {"name": "", "args": {}}
    last = matches[-1]
    name = last.group("name").strip()
    raw = last.group("args")
    if raw is None:
        raise ValueError(f"tool call {name!r} has no ARGS: line")
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"tool call {name!r}: ARGS is not JSON ({exc})") from None
    if not isinstance(args, dict):
        raise ValueError(f"tool call {name!r}: ARGS must be a JSON object")
    return {"name": name, "args": args}
