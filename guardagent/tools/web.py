"""Trusted toolbox functions for guarding a web agent (SeeAct) with rules over user facts.

Trust boundary: the agent input (the user's task and the user information block) is
trusted; the agent output (SeeAct's analysis, the page elements it saw, its final answer) is
attacker-influenced, so it may only ever be *secondary* evidence about what the action is,
and never a source of user facts.
"""

from __future__ import annotations

import json
import re
from typing import Any

from guardagent.tools.compare import unmet_requirements
from guardagent.tools.registry import guard_tool
from guardagent.tools.web_categories import categorize

_TASK = re.compile(r"^\s*task\s*:\s*", re.I | re.M)
_USER_INFO = re.compile(r"user\s*info(?:rmation)?\s*:", re.I)
_PAIR = re.compile(
    r"""["']?(?P<key>[A-Za-z_][A-Za-z0-9_ \-]*?)["']?\s*[:=]\s*"""
    r"""(?P<value>"[^"]*"|'[^']*'|[^,\n}{]*)""",
)
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+)")
_FINAL = re.compile(
    r"ELEMENT\s*:\s*(?P<element>[^\n]*?)\s*(?:\n|[,;/|]|\s)\s*"
    r"ACTION\s*:\s*(?P<action>[^\n]*?)\s*(?:\n|[,;/|]|\s)\s*"
    r"VALUE\s*:\s*(?P<value>[^\n]*)",
    re.I,
)
_LETTER = re.compile(r"^[(\[]?([A-Z]{1,2})[)\].:]?$")


@guard_tool(group="web")
def parse_task(agent_input: str) -> str:
    r"""Return the user's task from a web agent's input.

    The input looks like ``Task: <task>\nUser information:\n   age: 45, ...``. The task is
    the text after ``Task:`` up to the ``User information:`` block (it may span lines).
    Without a ``Task:`` label, the text before the user information block is returned.

    Args:
        agent_input: The target agent's input (trusted text).

    Returns:
        The task text, stripped; "" when there is none.

    """
    text = agent_input or ""
    info = _USER_INFO.search(text)
    head = text[: info.start()] if info else text
    label = _TASK.search(head)
    if label:
        head = head[label.end() :]
    return " ".join(head.split())


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


@guard_tool(group="web")
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
    labels = list(_USER_INFO.finditer(text))
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


def _choice_line(agent_output: str, letter: str, before: int) -> str:
    """The ``<letter>. ...`` line of the choices SeeAct was shown, preferring (Choices)."""
    if not letter:
        return ""
    pattern = re.compile(rf"^\s*({re.escape(letter)}\.\s.*?)\s*$", re.M)
    head = agent_output[:before]
    section = head.rfind("(Choices)")
    scopes = [head[section:]] if section >= 0 else []
    scopes.append(head)
    for scope in scopes:
        found = pattern.findall(scope)
        if found:
            return str(found[-1])
    return ""


@guard_tool(group="web")
def seeact_final_action(agent_output: str) -> dict[str, str]:
    """Return SeeAct's final action: the LAST ``ELEMENT: / ACTION: / VALUE:`` block.

    The output text is attacker-influenced; the result describes what the agent is about
    to do, and is fit to judge the action, never to supply user facts.

    Args:
        agent_output: The target agent's output (analysis, choices, final answer).

    Returns:
        ``{"element": str, "action": str, "value": str, "element_text": str}``:
        ``element`` is the chosen letter (e.g. "C") or the raw element text when it is no
        letter; ``action`` is upper-case (e.g. "CLICK", "TYPE", "SELECT"); ``value`` is the
        typed/selected value as written ("None" when there is none); ``element_text`` is the
        full choice line for that letter (e.g. ``C. <button> Add to Cart </button>``),
        "" when not found. All four are "" when there is no final-answer block.

    """
    text = agent_output or ""
    matches = list(_FINAL.finditer(text))
    if not matches:
        return {"element": "", "action": "", "value": "", "element_text": ""}
    last = matches[-1]
    raw_element = last.group("element").strip()
    letter = _LETTER.match(raw_element)
    element = letter.group(1) if letter else raw_element
    return {
        "element": element,
        "action": last.group("action").strip().upper(),
        "value": last.group("value").strip(),
        "element_text": _choice_line(text, element if letter else "", last.start()),
    }


@guard_tool(group="web")
def web_action_category(task: str, final_action: dict[str, str]) -> str:
    """Return which safety category a web agent's action falls under.

    Categories: "car" (buy/rent/find/browse a car or truck), "media" (search/find/show
    movies, music, video), "hotel" (book a hotel or other lodging), "job" (apply for or
    search jobs), "purchase" (add to cart/bag in an online store, buy goods), "flight"
    (book/find a flight), else "other". The task is the main evidence, scored against
    world knowledge (vehicle makes and models, rental firms, streaming services, lodging
    types, job vocabulary, goods and retail phrases, airlines). The chosen element's text and
    typed value (from ``seeact_final_action``) are weaker, capped secondary evidence, e.g.
    clicking "Add to Cart". Overlaps are resolved by score, then by which category the task
    names first (its head): "rent a car at the airport" is "car", "rent a movie" is "media",
    "cheapest hotel" is "hotel".

    Args:
        task: The user's task (from ``parse_task``).
        final_action: The dict from ``seeact_final_action`` (may be ``{}``).

    Returns:
        One of "car", "media", "hotel", "job", "purchase", "flight", "other".

    """
    action = final_action if isinstance(final_action, dict) else {}
    secondary = [str(action.get("element_text", "") or "")]
    value = str(action.get("value", "") or "")
    if value.lower() not in {"", "none", "null"}:
        secondary.append(value)
    category, _ = categorize(str(task or ""), secondary)
    return category


@guard_tool(group="web")
def check_rules(user_info: dict[str, Any], category: str, rules: list[dict[str, Any]]) -> list[str]:
    """Return the violation texts of the rules for `category` that the user does not meet.

    Each rule is ``{"category": str, "field": str, "op": str, "value": Any,
    "violation": str}`` and states a REQUIREMENT (e.g. ``age >= 18`` to book a hotel).
    Only rules whose category equals `category` (case-insensitive) apply. Fail closed: a
    field missing from `user_info` (or None), a value of the wrong type (e.g. "yes" for a
    bool, or 1 for True) or an uncomparable value counts as not meeting the requirement.

    Args:
        user_info: User facts from ``parse_user_info`` (never from the agent output).
        category: The action's category from ``web_action_category``.
        rules: The policy as a list of rule dicts. Ops: ==, !=, >=, >, <=, <, in, not in.

    Returns:
        The violation texts, in rule order without duplicates; ``[]`` when every applicable
        requirement is met or no rule applies (e.g. category "other").

    Raises:
        ValueError: When a rule is not a dict, lacks a key, or uses an unknown op.

    """
    wanted = str(category).strip().lower()
    return unmet_requirements(
        user_info, rules, "category", lambda rule: str(rule["category"]).strip().lower() == wanted
    )
