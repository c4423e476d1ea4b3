"""Under a checkpointer, each event on a thread is decided from that event alone.

A checkpointer keeps a thread's state between invocations, so the next event starts from the
previous event's state. `retrieve` must reset every per-event key, or the previous event's
(possibly unverified) program, verdict, error or demonstrations decide the next one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_type_hints

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.graph.builder import build_graph
from guardagent.nodes.admit import admit
from guardagent.nodes.retrieve import retrieve
from guardagent.nodes.state import GuardInput, GuardState
from tests.scripted import ScriptedChatModel
from tests.test_graph_llm import GOOD_PROGRAM, HOTEL_INPUT, HOTEL_ONLY_PROGRAM, HOTEL_OUTPUT

ADULT_INPUT = HOTEL_INPUT.replace("age: 16", "age: 40")
# Every key of the working state that is not the event itself, from the schema.
PER_EVENT_KEYS = sorted(set(get_type_hints(GuardState)) - set(get_type_hints(GuardInput)))


def _graph() -> Any:
    return build_graph().compile(checkpointer=InMemorySaver())


def _check(graph: Any, thread: str, agent_input: str, **ctx: Any) -> Any:
    out = graph.invoke(
        {"agent_input": agent_input, "agent_output": HOTEL_OUTPUT},
        config={"configurable": {"thread_id": thread}},
        context=GuardContext(**ctx),
    )
    return out["guard_decision"]


@pytest.fixture
def unverified_profile(tmp_path: Path) -> Path:
    """mind2web-sc whose shipped program does not verify: only a generated program can decide."""
    import guardagent.profiles as profiles_pkg

    src = Path(profiles_pkg.__file__).parent / "mind2web-sc"
    demos = [json.loads(line) for line in (src / "demonstrations.jsonl").read_text().splitlines()]
    for d in demos:
        d.pop("program", None)
        d["code"] = "allow('placeholder')"
    (tmp_path / "demonstrations.jsonl").write_text("".join(json.dumps(d) + "\n" for d in demos))
    profile_yaml = (src / "profile.yaml").read_text().replace("name: mind2web-sc", "name: m2w-cp")
    (tmp_path / "profile.yaml").write_text(profile_yaml)
    return tmp_path


def test_the_schema_has_the_keys_that_once_went_stale() -> None:
    assert {
        "program",
        "execution",
        "plan",
        "demonstrations",
        "feedback",
        "error",
        "guard_decision",
        "program_source",
    } <= set(PER_EVENT_KEYS)


def test_admit_resets_every_per_event_key(tmp_path: Path) -> None:
    stale: dict[str, Any] = {key: f"stale {key}" for key in PER_EVENT_KEYS}
    stale["demonstrations"] = [{"id": "stale", "agent_input": "old", "agent_output": "old"}]
    stale["attempts"] = 7
    state: Any = {**stale, "agent_input": ADULT_INPUT, "agent_output": HOTEL_OUTPUT}
    ctx = GuardContext(profile="mind2web-sc", reuse_programs=False, memory_dir=str(tmp_path))
    update = admit(state, Runtime(context=ctx))
    assert set(PER_EVENT_KEYS) <= set(update), "every per-event key must be written"
    for key in PER_EVENT_KEYS:
        assert update[key] != stale[key], key
    found = retrieve({**state, **update}, Runtime(context=ctx))["demonstrations"]
    assert found, "demonstrations are fetched for this event"
    assert all(d["id"] != "stale" for d in found)


def test_unverified_program_of_the_previous_event_never_decides_without_reuse() -> None:
    graph = _graph()
    first = _check(
        graph,
        "t",
        ADULT_INPUT,
        profile="mind2web-sc",
        reuse_programs=False,
        model=ScriptedChatModel.of(["plan", GOOD_PROGRAM]),
    )
    assert first.allowed is True and first.program_source == "generated"
    # The model is down for the next event on the same thread: deny, do not rerun the old code.
    down = _check(
        graph,
        "t",
        ADULT_INPUT,
        profile="mind2web-sc",
        reuse_programs=False,
        model=ScriptedChatModel.of([RuntimeError("HTTP 500 from provider")]),
    )
    assert down.allowed is False and (down.error or "").startswith("planner")
    assert down.program is None and down.program_source == "none" and down.attempts == 0
    # And offline, with no verified program in reach: deny with no model call.
    offline = _check(graph, "t", ADULT_INPUT, profile="mind2web-sc", reuse_programs=False)
    assert offline.allowed is False and offline.llm_calls == 0
    assert "no verified program" in (offline.error or "")


def test_unverified_program_of_the_previous_event_never_decides_with_reuse(
    unverified_profile: Path,
) -> None:
    """Without its policy table the model first derives the request's rules (issue 21); the
    generated hotel-only program would allow the adult, but it does not verify against them:
    it does not decide, is not stored, and the next event has none."""
    from tests.derived_answers import answer_text

    graph = _graph()
    common = {"profile": str(unverified_profile), "memory_dir": str(unverified_profile / "mem")}
    model = ScriptedChatModel.of([answer_text("mind2web-sc"), "plan", HOTEL_ONLY_PROGRAM])
    first = _check(graph, "t", ADULT_INPUT, model=model, **common)
    assert first.allowed is False and first.program_source == "generated"
    assert "did not verify" in (first.error or "")
    second = _check(graph, "t", ADULT_INPUT, **common)  # offline
    assert second.allowed is False and second.program_source == "none"
    assert second.llm_calls == 0 and "no verified program" in (second.error or "")


def test_an_error_of_the_previous_event_does_not_deny_the_next() -> None:
    graph = _graph()
    first = _check(
        graph,
        "t",
        ADULT_INPUT,
        profile="mind2web-sc",
        reuse_programs=False,
        model=ScriptedChatModel.of([RuntimeError("HTTP 500 from provider")]),
    )
    assert first.allowed is False and first.error
    second = _check(
        graph,
        "t",
        ADULT_INPUT,
        profile="mind2web-sc",
        reuse_programs=False,
        model=ScriptedChatModel.of(["plan", GOOD_PROGRAM]),
    )
    assert second.allowed is True and second.error is None
    assert second.llm_calls == 2 and second.attempts == 1


def test_second_event_on_a_used_thread_equals_it_on_a_fresh_thread() -> None:
    """Same decision and the very same prompts (demonstrations included) as on a new thread."""
    graph = _graph()
    _check(
        graph,
        "used",
        ADULT_INPUT,
        profile="mind2web-sc",
        reuse_programs=False,
        model=ScriptedChatModel.of(["plan", GOOD_PROGRAM]),
    )
    used_model = ScriptedChatModel.of(["plan", GOOD_PROGRAM])
    fresh_model = ScriptedChatModel.of(["plan", GOOD_PROGRAM])
    on_used = _check(
        graph, "used", HOTEL_INPUT, profile="mind2web-sc", reuse_programs=False, model=used_model
    )
    on_fresh = _check(
        graph, "fresh", HOTEL_INPUT, profile="mind2web-sc", reuse_programs=False, model=fresh_model
    )
    ignore = {"latency_ms"}
    assert on_used.model_dump(exclude=ignore) == on_fresh.model_dump(exclude=ignore)
    assert on_used.allowed is False and on_used.llm_calls == 2
    assert [[m.content for m in p] for p in used_model.prompts] == [
        [m.content for m in p] for p in fresh_model.prompts
    ]


def test_verified_program_from_memory_decides_each_event_on_its_own() -> None:
    graph = _graph()
    teen = _check(graph, "t", HOTEL_INPUT, profile="mind2web-sc")
    adult = _check(graph, "t", ADULT_INPUT, profile="mind2web-sc")
    teen_again = _check(graph, "t", HOTEL_INPUT, profile="mind2web-sc")
    assert teen.allowed is False and adult.allowed is True and teen_again.allowed is False
    for decision in (teen, adult, teen_again):
        assert decision.program_source == "memory"
        assert decision.attempts == 1 and decision.llm_calls == 0
        assert decision.attempt_errors == [None]
