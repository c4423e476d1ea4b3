"""`acheck` and `acheck_many` decide as `check` does, with the model awaited on the event loop."""

import asyncio
import threading
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from guardagent import GuardAgent
from tests.scripted import ScriptedChatModel
from tests.test_graph_llm import BROKEN_PROGRAM, GOOD_PROGRAM, HOTEL_INPUT, HOTEL_OUTPUT

ADULT = HOTEL_INPUT.replace("age: 16", "age: 40")
MAGIC = "```python\nallow('ok') if 'XYZZY' in agent_output else deny(['x'], 'no')\n```"


class AsyncScripted(ScriptedChatModel):
    """The scripted model, with an async path that records the thread it was awaited on."""

    threads: list[str] = []

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        self.threads.append(threading.current_thread().name)
        await asyncio.sleep(0)
        return self._generate(messages, *args, **kwargs)


SCRIPTS = {
    "debug then fix": ["plan", BROKEN_PROGRAM, "use 'age'", GOOD_PROGRAM],
    "planner down": [RuntimeError("HTTP 500")],
    "coder down": ["plan", TimeoutError("read timed out")],
    "debugger down": ["plan", BROKEN_PROGRAM, ConnectionError("reset")],
    "refused before running": ["plan", MAGIC, "use the readers", GOOD_PROGRAM],
    "never works": ["plan", BROKEN_PROGRAM, "d", BROKEN_PROGRAM, "d", BROKEN_PROGRAM],
}
SAME = {
    "allowed",
    "label",
    "violations",
    "reason",
    "error",
    "program",
    "program_source",
    "attempts",
    "attempt_errors",
    "llm_calls",
    "guardrailed_output",
}


def _model(script: list[Any]) -> AsyncScripted:
    return AsyncScripted(messages=iter(list(script)), prompts=[], threads=[])


@pytest.mark.parametrize("how", ["acheck", "acheck_many"])
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_async_runs_decide_and_prompt_as_check(name, how, tmp_path):
    """`acheck` runs the nodes on executor threads (as LangGraph does for a served graph);
    `acheck_many` runs them on the event loop: both decide and prompt as `check`."""
    sync_model, async_model = _model(SCRIPTS[name]), _model(SCRIPTS[name])
    settings = {"reuse_programs": False, "max_attempts": 3, "memory_dir": str(tmp_path)}
    want = GuardAgent("mind2web-sc", model=sync_model, **settings).check(HOTEL_INPUT, HOTEL_OUTPUT)
    guard = GuardAgent("mind2web-sc", model=async_model, **settings)
    if how == "acheck":
        got = asyncio.run(guard.acheck(HOTEL_INPUT, HOTEL_OUTPUT))
    else:
        (got,) = asyncio.run(guard.acheck_many([(HOTEL_INPUT, HOTEL_OUTPUT)], concurrency=1))
    assert got.model_dump(include=SAME) == want.model_dump(include=SAME)
    assert [[m.content for m in p] for p in async_model.prompts] == [
        [m.content for m in p] for p in sync_model.prompts
    ]
    if how == "acheck_many":  # awaited on the loop's own thread: no executor thread waits
        assert async_model.threads and set(async_model.threads) == {"MainThread"}


class ByPrompt(AsyncScripted):
    """Answers by the prompt, not in order: runs of a batch call it in any order."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.prompts.append(list(messages))
        text = GOOD_PROGRAM if "guardrail code" in str(messages[0].content) else "plan"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def test_acheck_many_decides_each_event_as_check_in_input_order(tmp_path):
    events = [(ADULT if n % 3 else HOTEL_INPUT, HOTEL_OUTPUT) for n in range(12)]
    settings = {"reuse_programs": False, "memory_dir": str(tmp_path)}
    guard = GuardAgent("mind2web-sc", model=ByPrompt(messages=iter([])), **settings)
    want = [guard.check(*e) for e in events]
    model = ByPrompt(messages=iter([]), prompts=[], threads=[])
    many = GuardAgent("mind2web-sc", model=model, **settings)
    got = asyncio.run(many.acheck_many(events, concurrency=5))
    assert len(model.prompts) == 24 and set(model.threads) == {"MainThread"}
    assert [d.model_dump(include=SAME) for d in got] == [d.model_dump(include=SAME) for d in want]
    assert [d.allowed for d in got] == [bool(n % 3) for n in range(12)]


def test_a_batch_whose_runs_fail_still_ends_and_frees_its_turns(tmp_path):
    """A run that fails (model down) or is refused gives its turn back: the batch completes."""
    events = [(HOTEL_INPUT, HOTEL_OUTPUT)] * 4 + [("x" * 5000, "y")]
    model = _model([RuntimeError("down")] * 5)
    guard = GuardAgent(
        "mind2web-sc",
        model=model,
        reuse_programs=False,
        memory_dir=str(tmp_path),
        max_event_chars=2000,
    )

    async def batch() -> list[Any]:
        return await asyncio.wait_for(guard.acheck_many(events, concurrency=2), 60)

    got = asyncio.run(batch())
    assert [d.allowed for d in got] == [False] * 5
    assert got[-1].error and got[-1].error.startswith("event too large")
    assert all((d.error or "").startswith("planner model failed") for d in got[:4])


@pytest.mark.parametrize("path", ["check", "acheck"])
def test_the_outcome_run_is_recorded_when_anything_records_runs(path):
    """The `.decision` child run is made for the callbacks that record it (here a collector);
    with none configured it is skipped, which nothing can observe."""
    from langchain_core.tracers.context import collect_runs

    guard = GuardAgent("mind2web-sc")
    with collect_runs() as collected:
        if path == "check":
            guard.check(HOTEL_INPUT, HOTEL_OUTPUT)
        else:
            asyncio.run(guard.acheck(HOTEL_INPUT, HOTEL_OUTPUT))
    runs = {run.name: run for run in collected.traced_runs}
    outcome = runs["guardagent.decision"].metadata
    assert outcome["guardagent_allowed"] is False and outcome["guardagent_profile"] == "mind2web-sc"


def test_a_run_is_named_and_tagged_only_for_what_records_it():
    """Name, tags and metadata go to the graph only when a callback would record them: with
    none, LangGraph would merge them into every node's config for nothing."""
    from langchain_core.tracers.context import collect_runs

    from guardagent.guard.runs import _traced_config

    context = GuardAgent("mind2web-sc").context
    assert _traced_config(context, "guardagent", None) is None
    with collect_runs():
        config = _traced_config(context, "guardagent", {"guardagent_host_key": "k"})
    assert config is not None and config["run_name"] == "guardagent"
    assert config["metadata"]["guardagent_profile"] == "mind2web-sc"
    assert config["metadata"]["guardagent_host_key"] == "k"


def test_verifying_a_new_program_does_not_hold_the_batchs_event_loop(tmp_path, monkeypatch):
    """A program the model just wrote is verified (sandbox runs on every demonstration and
    counterfactual) in a worker thread: the loop every run of the batch shares keeps turning."""
    import time

    import guardagent.nodes.remember as remember

    verified = remember.program_problems
    ticks: list[int] = [0]
    during: list[int] = []

    def slow(code: str, profile: Any) -> list[str]:
        before = ticks[0]
        time.sleep(0.3)  # a verification's sandbox runs
        during.append(ticks[0] - before)
        return verified(code, profile)

    monkeypatch.setattr(remember, "program_problems", slow)
    monkeypatch.setattr(remember, "known_problems", lambda code, profile: None, raising=False)
    guard = GuardAgent(
        "mind2web-sc",
        model=_model(["plan", GOOD_PROGRAM]),
        reuse_programs=False,
        memory_dir=str(tmp_path),
    )

    async def run() -> Any:
        async def tick() -> None:
            while True:
                await asyncio.sleep(0.01)
                ticks[0] += 1

        ticker = asyncio.create_task(tick())
        decisions = await guard.acheck_many([(HOTEL_INPUT, HOTEL_OUTPUT)])
        ticker.cancel()
        return decisions[0]

    decision = asyncio.run(run())
    assert decision.allowed is False and decision.program_source == "generated", decision
    assert len(during) == 1 and during[0] >= 10, during  # ~30 in 0.3 s; 0 if the loop is held
