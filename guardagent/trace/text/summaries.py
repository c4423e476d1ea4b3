"""Conversation summaries: the model's text standing where old messages were, never the user's.

LangChain's `SummarizationMiddleware` replaces a thread's oldest messages with one
``HumanMessage("Here is a summary of the conversation to date: ...",
additional_kwargs={"lc_source": "summarization"})``. The model wrote it from everything it
summarised, tool results included: an IBAN an e-mail asked for is in it, in the words "the
user wants ...". It is therefore read as untrusted text (source :data:`SUMMARY_SOURCE`,
role ``tool``, like hidden parts of a user message): never the user's words, a request, a
designation or the answer to a question.

A message is a summary when it carries the mark (``lc_source: summarization`` in its
``additional_kwargs``, its ``response_metadata`` or on the message itself) or, for hosts
whose format drops the mark (OpenAI chat, ``convert_to_openai_messages``), when its text
opens with the middleware's words (:data:`SUMMARY_PREFIX`). Reading more messages as
summaries can only take trust away, so both are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SUMMARY_SOURCE = "tool:?#summary"
"""The source of a summary: untrusted (``#``:
:meth:`~guardagent.trace.document.labels.Labels.kind`),
of no tool (``?``: never sensitive, never a labelled tool's result)."""
SUMMARY_MARK = "summarization"
"""The value of ``lc_source`` LangChain marks a summary with."""
SUMMARY_PREFIX = "Here is a summary of the conversation to date:"
"""How `SummarizationMiddleware` opens a summary's text."""


def is_summary(data: Mapping[str, Any], text: str) -> bool:
    """Whether a user or system message is a conversation summary (see the module docstring).

    Args:
        data: The message's fields (LangChain ``data`` or an OpenAI message).
        text: The text a chat shows of it.
    """
    for where in (data, data.get("additional_kwargs"), data.get("response_metadata")):
        if isinstance(where, Mapping) and where.get("lc_source") == SUMMARY_MARK:
            return True
    return text.lstrip().startswith(SUMMARY_PREFIX)
