"""Scripted chat models for driving the LLM path without a network."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class ScriptedChatModel(GenericFakeChatModel):
    """Answers with the given replies in order (an Exception is raised instead) and records
    every prompt it was sent."""

    prompts: list[list[BaseMessage]] = []

    @classmethod
    def of(cls, replies: Iterable[str | Exception]) -> ScriptedChatModel:
        return cls(messages=iter(list(replies)), prompts=[])

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.prompts.append(list(messages))
        item: Any = next(self.messages)
        if isinstance(item, Exception):
            raise item
        message = item if isinstance(item, AIMessage) else AIMessage(content=item)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self
