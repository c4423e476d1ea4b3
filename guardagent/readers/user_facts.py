"""User facts: the host's structured facts, else its `User information:` block of the input.

Trust boundary: only the host may supply facts about the user; nothing here reads the agent
output. A host that has its facts as data passes them as data (`user_facts`): they travel to
the sandbox child as JSON and are bound there (:func:`bind_host_facts`) before the program
runs, so `parse_user_info` returns them exactly, types kept, and never re-reads them from text
(a fact holding text such as ``Bob User info: verified: true`` stays a name). The text block is
read only when the host gave no structured facts.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from contextvars import ContextVar, Token
from typing import Any

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


MAX_FACTS_CHARS = 64 * 1024
"""Structured facts larger than this (as JSON) are refused: facts are a profile, not a document."""

_host_facts: ContextVar[dict[str, Any] | None] = ContextVar("guardagent_host_facts", default=None)


def _plain(value: Any, depth: int = 0) -> Any:
    """A JSON value as itself (lists stay lists); anything else is refused, never stringified."""
    if depth > 8:
        raise ValueError("user facts nested too deeply")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("user facts must be finite numbers")
        return value
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v, depth + 1) for k, v in value.items() if isinstance(k, str)}
    raise ValueError(f"user facts must be JSON values, not {type(value).__name__}")


def normalize_facts(facts: Any) -> dict[str, Any]:
    """The host's facts as a JSON object with `parse_user_info`'s key style, values as given.

    Keys are normalised like the text block's (``Dr License`` -> ``dr_license``) so programs
    read the same names either way; values keep their JSON types.

    Raises:
        ValueError: not a mapping of string keys to JSON values, or larger than
            :data:`MAX_FACTS_CHARS`.
    """
    if not isinstance(facts, Mapping):
        raise ValueError(f"user facts must be a JSON object, not {type(facts).__name__}")
    if any(not isinstance(k, str) for k in facts):
        raise ValueError("user fact names must be strings")
    out = {_norm_key(k): _plain(v) for k, v in facts.items()}
    if len(json.dumps(out)) > MAX_FACTS_CHARS:
        raise ValueError(f"user facts larger than {MAX_FACTS_CHARS} characters of JSON")
    return out


def bind_host_facts(facts: Mapping[str, Any] | None) -> Token[dict[str, Any] | None]:
    """Make `parse_user_info` return `facts` (None: read the text block) in this context.

    The sandbox child calls this once, before the program runs.
    """
    return _host_facts.set(None if facts is None else normalize_facts(facts))


def host_facts() -> dict[str, Any] | None:
    """The structured facts bound for this run, or None (a copy: callers cannot change them)."""
    facts = _host_facts.get()
    return None if facts is None else copy.deepcopy(facts)


def parse_user_info(agent_input: str) -> dict[str, Any]:
    """Return the user's facts: the host's structured facts, else the input's text block.

    User facts come ONLY from the host: the agent output is attacker-influenced and must
    never supply them, so this function takes no output argument. When the host passed its
    facts as data, they are returned as they are (types kept) and the text is not read.
    Otherwise the block after the last ``User information:`` label is read as
    ``key: value`` or ``key=value`` pairs (one or several per line, trailing commas
    allowed) or as a JSON object. Keys are
    lowercased with spaces/hyphens turned into ``_`` (``Dr License`` -> ``dr_license``).
    Values: integers -> int, decimals -> float, true/false in any case -> bool,
    none/null -> None, quoted or other text -> str. Reading stops at the first non-empty
    line that holds no pair. Later duplicates of a key override earlier ones.

    Args:
        agent_input: The target agent's input (trusted text); read only when the host gave
            no structured facts.

    Returns:
        The user facts, e.g. ``{"age": 45, "domestic": False, "dr_license": True}``;
        ``{}`` when there is no user information block. A rule whose field is missing here
        must fail (see ``check_rules``).

    """
    structured = host_facts()
    if structured is not None:
        return structured
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
