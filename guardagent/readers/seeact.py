"""Trusted toolbox functions for guarding a web agent (SeeAct) with rules over user facts.

Trust boundary: the agent input (the user's task and the user information block) is
trusted; the agent output (SeeAct's analysis, the page elements it saw, its final answer) is
attacker-influenced, so it may only ever be *secondary* evidence about what the action is,
and never a source of user facts.
"""

from __future__ import annotations

import re

from guardagent.readers.user_facts import USER_INFO_LABEL
from guardagent.readers.web_categories import categorize
from guardagent.tools.registry import guard_tool

_TASK = re.compile(r"^\s*task\s*:\s*", re.I | re.M)
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
    info = USER_INFO_LABEL.search(text)
    head = text[: info.start()] if info else text
    label = _TASK.search(head)
    if label:
        head = head[label.end() :]
    return " ".join(head.split())


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
