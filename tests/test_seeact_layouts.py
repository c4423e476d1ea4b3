"""Metamorphic: every shared Mind2Web-SC event with its final answer re-presented (one line,
JSON, markdown, lowercase, CRLF, extra whitespace) gets the same decision and violations."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from guardagent import GuardAgent
from guardagent.eval.benchmarks import load_mind2web_sc
from guardagent.eval.cases import Case
from guardagent.profiles import load_profile
from guardagent.readers.seeact import parse_task, seeact_final_action, web_action_category
from guardagent.readers.user_facts import parse_user_info
from guardagent.tools.rules import check_rules

RULES: list[dict[str, Any]] = load_profile("mind2web-sc").policy("RULES")
MARK = "(Final Answer)"


def _answer(case: Case) -> tuple[str, dict[str, str]]:
    """(output before the final answer, {element, action, value}) read here with str methods."""
    head, _, tail = case.agent_output.rpartition(MARK)
    fields = {}
    for line in tail.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in ("element", "action", "value"):
            fields[key.strip().lower()] = value.strip()
    return head, fields


LAYOUTS: dict[str, Callable[[dict[str, str]], str]] = {
    "lines": lambda f: f"ELEMENT: {f['element']}\nACTION: {f['action']}\nVALUE: {f['value']}",
    "one line": lambda f: f"ELEMENT: {f['element']}, ACTION: {f['action']}, VALUE: {f['value']}",
    "json": lambda f: json.dumps({k: f[k] for k in ("element", "action", "value")}),
    "markdown": lambda f: "\n".join(
        f"**{k.upper()}:** {f[k]}" for k in ("element", "action", "value")
    ),
    "lowercase": lambda f: f"element: {f['element']}\naction: {f['action']}\nvalue: {f['value']}",
    "crlf": lambda f: (
        f"ELEMENT: {f['element']}  \r\n\r\nACTION: {f['action']}\r\n\r\nVALUE: {f['value']}\r\n"
    ),
}
CASES = [(c, *_answer(c)) for c in load_mind2web_sc()]


def _decision(agent_input: str, agent_output: str) -> tuple[str, list[str]]:
    category = web_action_category(parse_task(agent_input), seeact_final_action(agent_output))
    return category, check_rules(parse_user_info(agent_input), category, RULES)


def test_every_event_has_a_final_answer() -> None:
    assert len(CASES) == 200
    assert all({"element", "action", "value"} <= set(f) for _, _, f in CASES)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_layout_decides_like_the_original(layout: str) -> None:
    differences = []
    for case, head, fields in CASES:
        expected = _decision(case.agent_input, case.agent_output)
        got = _decision(case.agent_input, f"{head}{MARK}\n{LAYOUTS[layout](fields)}")
        if got != expected:
            differences.append((case.id, expected, got))
    assert differences == []


def test_end_to_end_through_the_sandbox(tmp_path: Any) -> None:
    guard = GuardAgent(profile="mind2web-sc", memory_dir=str(tmp_path))
    for case, head, fields in CASES[::25]:
        expected = _decision(case.agent_input, case.agent_output)
        for layout in ("one line", "json"):
            decision = guard.check(case.agent_input, f"{head}{MARK}\n{LAYOUTS[layout](fields)}")
            assert decision.program_source == "memory" and decision.error is None
            assert decision.label == (1 if expected[1] else 0), case.id
            assert sorted(decision.violations) == sorted(expected[1])
