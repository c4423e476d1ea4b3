"""A withheld answer reaches none of the host's own callback handlers (held_callbacks.py).

The review finding (class 7 of issue 32): only LangChain's streaming handlers were removed
while the answer was held, so a chat UI's handler (``on_llm_new_token``, ``on_llm_end``)
showed the withheld answer, a secret in it. Each handler is now told of the model's run only
once the answer is decided: a withheld one as the refusal, an allowed one as it was.
"""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage

from guardagent.agent import GuardAgent
from guardagent.integrations.middleware import GuardAgentMiddleware
from tests.test_middleware_answers import ANSWER, READ, SAVE, read_file, reports, save_file  # noqa: F401
from tests.test_middleware_streamed_answers import SECRET_ANSWER, StreamingScripted, _agent

SECRET = "7734"


class _Ui(BaseCallbackHandler):
    """A host handler noting each event of a model run (and the chains around it)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, UUID, UUID | None]] = []
        self.texts: list[str] = []

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.events.append(("start", run_id, parent_run_id))

    def on_llm_new_token(self, token: str, *, run_id: UUID, **kwargs: Any) -> None:
        self.texts.append(token)
        self.events.append(("token", run_id, None))

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.texts.extend(g.text for gens in response.generations for g in gens)
        self.events.append(("end", run_id, None))

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append(("chain_end", run_id, None))


class _AsyncUi(AsyncCallbackHandler):
    """The same, as an async handler (a websocket UI)."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        self.texts.append(token)

    async def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.texts.extend(g.text for gens in response.generations for g in gens)


def _run(agent: Any, handler: BaseCallbackHandler, mode: str = "messages") -> None:
    list(
        agent.stream(
            {"messages": [HumanMessage("Summarise notes.")]},
            {"callbacks": [handler]},
            stream_mode=mode,
        )
    )


@pytest.mark.parametrize("mode", ["messages", "updates", "values"])
def test_a_withheld_answer_reaches_a_host_handler_only_as_the_refusal(
    reports: GuardAgent,  # noqa: F811
    mode: str,
) -> None:
    """The handler hears of the model's run (start, then end) with the refusal's text."""
    ui = _Ui()
    _run(_agent(reports, [READ, AIMessage(SECRET_ANSWER)]), ui, mode)
    assert not any(SECRET in t for t in ui.texts), ui.texts
    ends = [e for e in ui.events if e[0] == "end"]
    assert len(ends) == 2 and ui.texts[-1], ui.events  # the READ call's run and the answer's


def test_an_allowed_answer_reaches_a_host_handler_as_it_was(reports: GuardAgent) -> None:  # noqa: F811
    """Honest control: an allowed answer is told whole, each run's start before its end (a
    held model does not stream: no stream handler asks it to, so there are no tokens)."""
    ui = _Ui()
    _run(_agent(reports, [READ, SAVE, AIMessage(ANSWER)]), ui)
    assert ANSWER in ui.texts, ui.texts
    starts = {run: i for i, (kind, run, _) in enumerate(ui.events) if kind == "start"}
    ends = {run: i for i, (kind, run, _) in enumerate(ui.events) if kind == "end"}
    assert set(starts) == set(ends) and all(starts[r] < ends[r] for r in starts)


def test_a_host_handler_hears_of_the_model_run_before_its_node_ends(
    reports: GuardAgent,  # noqa: F811
) -> None:
    """A tracer's run tree stays whole: each model run ends before the chain around it."""
    ui = _Ui()
    _run(_agent(reports, [READ, AIMessage(SECRET_ANSWER)]), ui)
    for i, (kind, run, parent) in enumerate(ui.events):
        if kind == "start" and parent is not None:
            end = next(j for j, e in enumerate(ui.events) if e[:2] == ("end", run))
            parent_end = next(j for j, e in enumerate(ui.events) if e[:2] == ("chain_end", parent))
            assert i < end < parent_end, ui.events


def test_a_handler_bound_to_the_model_never_sees_a_withheld_answer(
    reports: GuardAgent,  # noqa: F811
) -> None:
    """``ChatModel(callbacks=[...])`` is told through the model, not the run's config."""
    ui = _Ui()
    model = StreamingScripted.of([READ, AIMessage(SECRET_ANSWER)])
    model.callbacks = [ui]
    agent = create_agent(
        model,
        [read_file, save_file],
        middleware=[GuardAgentMiddleware(reports, trace=True, user_info={})],
    )
    list(agent.stream({"messages": [HumanMessage("Summarise notes.")]}, stream_mode="messages"))
    assert ui.texts and not any(SECRET in t for t in ui.texts), ui.texts


def test_an_async_handler_in_an_async_run_never_sees_a_withheld_answer(
    reports: GuardAgent,  # noqa: F811
) -> None:
    """``astream`` with an async handler: the same."""
    ui = _AsyncUi()
    agent = _agent(reports, [READ, AIMessage(SECRET_ANSWER)])

    async def run() -> None:
        async for _ in agent.astream(
            {"messages": [HumanMessage("Summarise notes.")]},
            {"callbacks": [ui]},
            stream_mode="messages",
        ):
            pass

    asyncio.run(run())
    assert ui.texts and not any(SECRET in t for t in ui.texts), ui.texts
