"""admit: an oversized event is denied before any reader, memory search or model sees it."""

from __future__ import annotations

from typing import Any

from guardagent import GuardAgent
from tests.scripted import ScriptedChatModel

EVENT_INPUT = "Task: book a hotel in Rome\nUser information:\n   age: 30"


def test_an_event_over_the_limit_is_denied_with_the_reason(tmp_path: Any) -> None:
    model = ScriptedChatModel.of(["never called"])
    guard = GuardAgent(
        profile="mind2web-sc", model=model, memory_dir=str(tmp_path), max_event_chars=10_000
    )
    decision = guard.check(EVENT_INPUT, "ELEMENT: A\nACTION: CLICK\n" + "x" * 20_000)
    assert decision.allowed is False and decision.llm_calls == 0
    assert decision.error is not None and decision.error.startswith("event too large")
    assert model.prompts == []


def test_the_default_limit_is_one_million_characters(tmp_path: Any) -> None:
    guard = GuardAgent(profile="mind2web-sc", memory_dir=str(tmp_path))
    decision = guard.check(EVENT_INPUT, "ELEMENT: A\nACTION: CLICK\n" + "lorem " * 200_000)
    assert decision.allowed is False and "max_event_chars" in (decision.error or "")
    small = guard.check(EVENT_INPUT, "(Final Answer)\nELEMENT: A\nACTION: CLICK\nVALUE: None")
    assert small.error is None


def test_the_limit_is_a_deployment_setting(monkeypatch: Any) -> None:
    from guardagent.context import GuardContext

    monkeypatch.setenv("GUARDAGENT_MAX_EVENT_CHARS", "5000")
    assert GuardContext.from_env().max_event_chars == 5000
