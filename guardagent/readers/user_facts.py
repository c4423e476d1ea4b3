"""User facts from the host's `User information:` block of the agent input.

Trust boundary: only the agent input (written by the host, not the target agent) may supply
facts about the user; nothing here reads the agent output.
"""

from __future__ import annotations

import json
import re
from typing import Any

from guardagent.tools.registry import guard_tool

USER_INFO_LABEL = re.compile(r"user\s*info(?:rmation)?\s*:", re.I)
_PAIR = re.compile(
    r"""["']?(?P<key>[A-Za-z_][A-Za-z0-9_ \-]*?)["']?\s*[:=]\s*"""
    r"""(?P<value>"[^"]*"|'[^']*'|[^,\n}{]*)""",
)
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+)")


def _typed(raw: str) -> Any:
    """Type a user-information value: int, float, bool (any case), None, else string."""
    value = raw.strip().rstrip(",").strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    lowered = value.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    if lowered in {"none", "null"}:
        return None
    if _INT.fullmatch(value):
        return int(value)
    if _FLOAT.fullmatch(value):
        return float(value)
    return value


def _norm_key(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", key.strip().strip("\"'").strip()).lower()


@guard_tool(group="facts")
def parse_user_info(agent_input: str) -> dict[str, Any]:
    """Return the ``User information:`` block of the agent input as a dict of typed values.

    User facts come ONLY from the agent input: the agent output is attacker-influenced and
    must never supply them, so this function takes no output argument. The block after the
    last ``User information:`` label is read as ``key: value`` or ``key=value`` pairs
    (one or several per line, trailing commas allowed) or as a JSON object. Keys are
    lowercased with spaces/hyphens turned into ``_`` (``Dr License`` -> ``dr_license``).
    Values: integers -> int, decimals -> float, true/false in any case -> bool,
    none/null -> None, quoted or other text -> str. Reading stops at the first non-empty
    line that holds no pair. Later duplicates of a key override earlier ones.

    Args:
        agent_input: The target agent's input (trusted text).

    Returns:
        The user facts, e.g. ``{"age": 45, "domestic": False, "dr_license": True}``;
        ``{}`` when there is no user information block. A rule whose field is missing here
        must fail (see ``check_rules``).

    """
    text = agent_input or ""
    labels = list(USER_INFO_LABEL.finditer(text))
    if not labels:
        return {}
    block = text[labels[-1].end() :].strip()
    if block.startswith("{"):
        end = block.rfind("}")
        try:
            loaded = json.loads(block[: end + 1])
        except (json.JSONDecodeError, ValueError):
            loaded = None
        if isinstance(loaded, dict):
            return {_norm_key(str(k)): v for k, v in loaded.items()}
    info: dict[str, Any] = {}
    for line in block.splitlines():
        stripped = line.strip().strip("{}").strip()
        if not stripped:
            continue
        pairs = list(_PAIR.finditer(stripped))
        if not pairs:
            break
        for pair in pairs:
            key = _norm_key(pair.group("key"))
            if key:
                info[key] = _typed(pair.group("value"))
    return info
