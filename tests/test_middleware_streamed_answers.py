"""A withheld final answer never reaches the client through a stream.

With ``respond`` labelled, the middleware guards the agent's final answer. Guarded only
after the model node (``after_model``), the answer had already left: token by token through
``stream_mode="messages"``, whole through ``"updates"`` and ``"values"`` (the model node's
output), and in the checkpoint. The answer is now held inside the model call (the model
runs hidden from the streaming callbacks) and guarded there: what the model node outputs
is the answer allowed, or the refusal.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from guardagent.agent import GuardAgent
from guardagent.integrations.middleware import GuardAgentMiddleware
from tests.scripted import ScriptedChatModel
from tests.test_middleware_answers import (  # noqa: F401
    ANSWER,
    READ,
    SAVE,
    goto,
    read_file,
    reports,
    save_file,
    tasks,
)


class StreamingScripted(ScriptedChatModel):
    """The scripted model, streaming its text word by word (calls in one chunk)."""

    def _stream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        message = self._generate(messages).generations[0].message
        assert isinstance(message, AIMessage)
        if message.tool_calls:
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    id=message.id,
                    tool_call_chunks=[
                        {
                            "name": c["name"],
                            "args": json.dumps(c["args"]),
                            "id": c["id"],
                            "index": i,
                        }
                        for i, c in enumerate(message.tool_calls)
                    ],
                )
            )
            return
        for word in str(message.content).split(" "):
            yield ChatGenerationChunk(message=AIMessageChunk(content=word + " ", id=message.id))


def _agent(guard: GuardAgent, replies: list[Any], **kw: Any) -> Any:
    model = StreamingScripted.of(replies)
    saver = kw.pop("checkpointer", None)
    return create_agent(
        model,
        kw.pop("agent_tools", [read_file, save_file]),
        checkpointer=saver,
        middleware=[GuardAgentMiddleware(guard, trace=True, user_info={}, **kw)],
    )


SECRET_ANSWER = "Done: the notes say Q3 revenue up 4%, and the launch code is 7734-XQ."


def _texts(chunk: Any) -> list[str]:
    """Every text a streamed chunk holds (messages, updates and values modes)."""
    out: list[str] = []
    if isinstance(chunk, BaseMessage):
        out.append(str(chunk.content))
    elif isinstance(chunk, dict):
        for value in chunk.values():
            out.extend(_texts(value))
    elif isinstance(chunk, list | tuple):
        for value in chunk:
            out.extend(_texts(value))
    return out


@pytest.mark.parametrize("mode", ["messages", "updates", "values"])
def test_a_withheld_answer_is_never_streamed(reports: GuardAgent, mode: str) -> None:  # noqa: F811
    agent = _agent(reports, [READ, AIMessage(SECRET_ANSWER)])
    streamed = [
        t
        for chunk in agent.stream(
            {"messages": [HumanMessage("Summarise notes.")]}, stream_mode=mode
        )
        for t in _texts(chunk)
    ]
    assert streamed, "the stream says something"
    assert not any("7734" in t or "launch code" in t for t in streamed), streamed
    assert any(t.startswith("GuardAgent withheld this answer") for t in streamed), streamed


def test_an_allowed_answer_is_streamed_whole(reports: GuardAgent) -> None:  # noqa: F811
    agent = _agent(reports, [READ, SAVE, AIMessage(ANSWER)])
    chunks = [
        m
        for m, _ in agent.stream(
            {"messages": [HumanMessage("Summarise notes.")]}, stream_mode="messages"
        )
    ]
    assert ANSWER in "".join(str(m.content) for m in chunks), [m.content for m in chunks]


def test_async_streams_withhold_it_too(reports: GuardAgent) -> None:  # noqa: F811
    agent = _agent(reports, [READ, AIMessage(SECRET_ANSWER)])

    async def run() -> list[str]:
        return [
            t
            async for chunk in agent.astream(
                {"messages": [HumanMessage("Summarise notes.")]}, stream_mode="messages"
            )
            for t in _texts(chunk)
        ]

    streamed = asyncio.run(run())
    assert not any("7734" in t for t in streamed), streamed


def test_a_checkpoint_never_holds_the_withheld_answer(reports: GuardAgent) -> None:  # noqa: F811
    saver = InMemorySaver()
    agent = _agent(reports, [READ, AIMessage(SECRET_ANSWER)], checkpointer=saver)
    config = {"configurable": {"thread_id": "held"}}
    agent.invoke({"messages": [HumanMessage("Summarise notes.")]}, config)
    history = [t for snap in agent.get_state_history(config) for t in _texts(snap.values)]
    assert not any("7734" in t for t in history)


def test_a_reviewer_still_decides_a_streamed_answer(reports: GuardAgent) -> None:  # noqa: F811
    agent = _agent(
        reports, [READ, AIMessage(SECRET_ANSWER)], checkpointer=InMemorySaver(), review="on_deny"
    )
    config = {"configurable": {"thread_id": "streamed-review"}}
    first = [
        t
        for chunk in agent.stream(
            {"messages": [HumanMessage("Summarise notes.")]}, config, stream_mode="messages"
        )
        for t in _texts(chunk)
    ]
    assert not any("7734" in t for t in first), first
    out = agent.invoke(Command(resume="approve"), config)
    assert out["messages"][-1].content == SECRET_ANSWER


def test_unguarded_answers_still_stream_token_by_token(tasks: GuardAgent) -> None:  # noqa: F811
    # the policy does not label respond: nothing is held, the model streams as before
    agent = _agent(tasks, ["All done, see you."], agent_tools=[goto])
    chunks = [
        m for m, _ in agent.stream({"messages": [HumanMessage("Hi")]}, stream_mode="messages")
    ]
    assert [str(m.content) for m in chunks][:4] == ["All ", "done, ", "see ", "you. "], chunks


def test_astream_events_never_carry_a_withheld_answer(reports: GuardAgent) -> None:  # noqa: F811
    agent = _agent(reports, [READ, AIMessage(SECRET_ANSWER)])

    async def run() -> list[str]:
        out: list[str] = []
        async for event in agent.astream_events(
            {"messages": [HumanMessage("Summarise notes.")]}, version="v2"
        ):
            out.extend(_texts(event.get("data", {})))
        return out

    streamed = asyncio.run(run())
    assert streamed and not any("7734" in t for t in streamed), streamed
