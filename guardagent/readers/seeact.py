"""Reader for SeeAct, a web agent, guarded with rules over user facts (the paper's Mind2Web-SC).

Trust boundary: the agent input (the user's task and the host's user information block) is
trusted; the agent output (SeeAct's analysis, the page elements it saw, its final answer) is
attacker-influenced, so it may only ever be *secondary* evidence about what the action is,
and never a source of user facts.

Fails closed (the event is denied, naming what could not be read): an input with no task
(`no_task`), an output with no readable final answer, i.e. no ELEMENT with an ACTION in any
layout (`no_final_action`). A rule whose user fact is missing counts as not met
(:func:`guardagent.tools.rules.check_rules`). Every function here runs in time linear in its
input: lines are split once and each is matched by a pattern without nested quantifiers.
"""

from __future__ import annotations

import re

from guardagent.readers.evidence import unreadable
from guardagent.readers.user_facts import USER_INFO_LABEL
from guardagent.readers.web_categories import categorize

_TASK = "task"
# A key of the final answer and its separator. A fixed alternation and no nested or
# unbounded lazy quantifier, so matching is linear in the line (an 88 kB line is fine).
_KEY = re.compile(r"\b(element|action|value)\b[\"'*_`]*[ \t]*[:=]", re.I)
_TRIM = " \t\"'*_`,;|{}"
_LETTER = re.compile(r"[(\[]?([A-Za-z]{1,2})[)\].:]?")


def parse_task(agent_input: str) -> str:
    r"""Return the user's task from a web agent's input.

    The input looks like ``Task: <task>\nUser information:\n   age: 45, ...``. The task is
    the text after ``Task:`` up to the host's own ``User information:`` block, which is the
    last one (a task may itself mention "user info"); it may span lines. Without a ``Task:``
    label, the text before that block is the task. An input with no task cannot be judged:
    the event is denied as unreadable (`no_task`).

    Args:
        agent_input: The target agent's input (trusted text).

    Returns:
        The task text with runs of whitespace collapsed.

    """
    text = agent_input or ""
    labels = list(USER_INFO_LABEL.finditer(text))
    head = text[: labels[-1].start()] if labels else text
    lines = head.split("\n")
    for i, line in enumerate(lines):
        key, sep, rest = line.partition(":")
        if sep and key.strip().lower() == _TASK:
            head = "\n".join([rest, *lines[i + 1 :]])
            break
    task = " ".join(head.split())
    if not task:
        unreadable("no_task", "the agent input states no task to judge the action against")
    return task


def _choice_line(lines: list[str], letter: str) -> str:
    """The ``<letter>. ...`` line of the choices SeeAct was shown, preferring (Choices)."""
    if not letter:
        return ""
    section = max((i for i, line in enumerate(lines) if line.strip() == "(Choices)"), default=0)
    for scope in (lines[section:], lines):
        found = [line.strip() for line in scope if line.lstrip().startswith(letter + ". ")]
        if found:
            return found[-1]
    return ""


def _answers(lines: list[str]) -> list[dict[str, str]]:
    """Every ELEMENT/ACTION[/VALUE] record, in order, whatever its layout.

    Keys may stand one per line, several on a line (`ELEMENT: B, ACTION: CLICK`), in JSON
    (`{"element": "B", ...}`) or in markdown (`**ELEMENT:** B`), in any case.
    """
    records: list[dict[str, str]] = []
    for line in lines:
        keys = list(_KEY.finditer(line))
        for n, key in enumerate(keys):
            end = keys[n + 1].start() if n + 1 < len(keys) else len(line)
            name, value = key.group(1).lower(), line[key.end() : end].strip(_TRIM)
            if name == "element":
                records.append({"element": value, "line": str(len(records))})
            elif records and name not in records[-1]:
                records[-1][name] = value
    return [r for r in records if "action" in r]


def seeact_final_action(agent_output: str) -> dict[str, str]:
    """Return SeeAct's final action: the LAST ``ELEMENT: / ACTION: / VALUE:`` answer.

    The answer may be written one key per line (SeeAct's own layout), on one line
    (`ELEMENT: B, ACTION: TYPE, VALUE: Columbus`), as JSON or with markdown emphasis, in any
    case. The output text is attacker-influenced; the result describes what the agent is
    about to do, and is fit to judge the action, never to supply user facts. An output with
    no readable final answer (no ELEMENT with an ACTION) cannot be judged: the event is
    denied as unreadable (`no_final_action`).

    Args:
        agent_output: The target agent's output (analysis, choices, final answer).

    Returns:
        ``{"element": str, "action": str, "value": str, "element_text": str}``:
        ``element`` is the chosen letter (e.g. "C") or the raw element text when it is no
        letter; ``action`` is upper-case (e.g. "CLICK", "TYPE", "SELECT"); ``value`` is the
        typed/selected value as written ("None" when there is none); ``element_text`` is the
        full choice line for that letter (e.g. ``C. <button> Add to Cart </button>``),
        "" when not found.

    """
    lines = (agent_output or "").replace("\r", "").split("\n")
    answers = _answers(lines)
    if not answers:
        unreadable(
            "no_final_action", "the output has no final answer (ELEMENT and ACTION) to judge"
        )
    last = answers[-1]
    letter = _LETTER.fullmatch(last["element"])
    element = letter.group(1).upper() if letter else last["element"]
    return {
        "element": element,
        "action": last["action"].upper(),
        "value": last.get("value", "None") or "None",
        "element_text": _choice_line(lines, element if letter else ""),
    }


def web_action_category(task: str, final_action: dict[str, str]) -> str:
    """Return which safety category a web agent's action falls under.

    Categories: "car" (buy/rent/find/browse a car or truck), "media" (search/find/show
    movies, music, video), "hotel" (book a hotel or other lodging), "job" (apply for or
    search jobs), "purchase" (add to cart/bag in an online store, buy goods), "flight"
    (book/find a flight), else "other". The task is the main evidence, scored against
    world knowledge (vehicle makes and models, rental firms, streaming services, lodging
    types, job vocabulary, goods and retail phrases, airlines). The chosen element's text and
    typed value (from ``seeact_final_action``) are weaker, capped secondary evidence, e.g.
    clicking "Add to Cart", used only when the task alone names no category: they are the
    agent's output, so they may add a category but never move a task out of its own (a
    purchase judged as 'media' would skip the membership rule). Overlaps are resolved by
    score, then by which category the task names first (its head): "rent a car at the
    airport" is "car", "rent a movie" is "media", "cheapest hotel" is "hotel".

    Args:
        task: The user's task (from ``parse_task``).
        final_action: The dict from ``seeact_final_action`` (may be ``{}``).

    Returns:
        One of "car", "media", "hotel", "job", "purchase", "flight", "other".

    """
    own, _ = categorize(str(task or ""))
    if own != "other":
        return own  # the output (attacker-influenced) never moves a task out of its category
    action = final_action if isinstance(final_action, dict) else {}
    secondary = [str(action.get("element_text", "") or "")]
    value = str(action.get("value", "") or "")
    if value.lower() not in {"", "none", "null"}:
        secondary.append(value)
    category, _ = categorize(str(task or ""), secondary)
    return category
