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

from guardagent.tools.compare import compare, unmet_requirements
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


def _applies(call: dict[str, Any], rule: dict[str, Any]) -> bool:
    """Whether a rule covers this call; a condition that cannot be evaluated counts as met."""
    tool = str(rule["tool"]).strip().lower()
    if tool not in ("*", str(call.get("name", "")).strip().lower()):
        return False
    raw = call.get("args")
    args: dict[str, Any] = raw if isinstance(raw, dict) else {}
    for cond in rule.get("when") or []:
        if not isinstance(cond, dict) or not {"arg", "op", "value"} <= set(cond):
            raise ValueError(f"each 'when' condition needs arg, op, value: {cond!r}")
        if cond["arg"] not in args:
            continue  # unknown argument value: fail closed, the rule applies
        holds = compare(args[cond["arg"]], cond["op"], cond["value"])
        if holds is False:
            return False
    return True


@guard_tool(group="toolcalls")
def check_tool_rules(
    call: dict[str, Any], user_info: dict[str, Any], rules: list[dict[str, Any]]
) -> list[str]:
    """Return the violation texts of the rules that cover `call` and the user does not meet.

    Each rule is ``{"tool": str, "when": [{"arg": str, "op": str, "value": Any}, ...],
    "field": str, "op": str, "value": Any, "violation": str}``: when the call's tool name
    equals ``tool`` (case-insensitive; ``"*"`` matches every tool) and every ``when``
    condition on the call's args holds, the user must satisfy ``user_info[field] <op>
    value``. ``when`` is optional. Fail closed: an argument missing from the call or of an
    uncomparable type makes its condition count as holding (the rule applies); a user field
    that is missing, None, of the wrong type (e.g. "yes" or 1 for True) or uncomparable
    counts as not meeting the requirement.

    Args:
        call: The dict from ``parse_tool_call``.
        user_info: User facts from ``parse_user_info(agent_input)`` (never the output).
        rules: The policy as rule dicts. Ops: ==, !=, >=, >, <=, <, in, not in.

    Returns:
        The violation texts in rule order without duplicates; ``[]`` when no rule covers
        the call or every covering requirement is met.

    Raises:
        ValueError: When a rule is not a dict, lacks a key, or uses an unknown op.

    """
    pending = call if isinstance(call, dict) else {}
    return unmet_requirements(user_info, rules, "tool", lambda rule: _applies(pending, rule))
