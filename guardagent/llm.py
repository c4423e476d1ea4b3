"""Reasoning backends: a LangChain chat model, or none at all (offline).

Nothing from LangChain's model stack is imported until a model is asked for, so an offline
guard (the default) starts without it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from guardagent.environment import LLM_TIMEOUT, OPENAI_API_KEY, value

if TYPE_CHECKING:  # langchain_core's model classes load on first real use: offline needs none
    from langchain_core.language_models import BaseChatModel

    from guardagent.twins import Wait

OFFLINE = "offline"


class ModelConfigError(ValueError):
    """A model spec that cannot be turned into a chat model."""


def is_offline(model: Any) -> bool:
    """True for the embedded default: no LLM, verified programs only."""
    return model is None or (isinstance(model, str) and model.strip().lower() in {"", OFFLINE})


def model_timeout() -> float:
    """Seconds one call to an endpoint model may take (`GUARDAGENT_LLM_TIMEOUT`).

    Raises:
        ValueError: the variable is not a positive number, naming it.
    """
    return value(LLM_TIMEOUT)


@lru_cache(maxsize=16)
def _from_spec(spec: str, base_url: str | None) -> BaseChatModel:
    from langchain.chat_models import init_chat_model

    kwargs: dict[str, Any] = {"temperature": 0}
    if base_url:
        if ":" not in spec:
            spec = f"openai:{spec}"
        # Local OpenAI-compatible servers rarely check the key, but the client insists on one.
        kwargs.update(base_url=base_url, api_key=value(OPENAI_API_KEY))
        kwargs.setdefault("max_retries", 2)
        kwargs.setdefault("timeout", model_timeout())
    try:
        model: BaseChatModel = init_chat_model(spec, **kwargs)
    except Exception as exc:  # init_chat_model raises ValueError/ImportError with its own text
        raise ModelConfigError(f"cannot build chat model {spec!r}: {exc}") from exc
    return model


def resolve_model(model: Any, base_url: str | None = None) -> BaseChatModel | None:
    """Turn a context's `model` into a chat model, or None when offline.

    Args:
        model: `"offline"`/None, an `init_chat_model` spec (`"openai:gpt-4o"`,
            `"ollama:qwen2.5-coder"`), or a `BaseChatModel` instance.
        base_url: Endpoint of an OpenAI-compatible server (implies the `openai` provider).
    """
    if is_offline(model):
        return None
    from langchain_core.language_models import BaseChatModel

    if isinstance(model, BaseChatModel):
        return model
    if isinstance(model, str):
        return _from_spec(model.strip(), base_url)
    raise ModelConfigError(
        f"model must be 'offline', a spec string or a BaseChatModel, not {model!r}"
    )


class ModelCallError(RuntimeError):
    """The model failed after its client's retries, or answered with nothing usable."""


def _text_and_tokens(reply: Any) -> tuple[str, int]:
    content = getattr(reply, "content", reply)
    if isinstance(content, list):  # content blocks
        content = "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    text = str(content or "").strip()
    if not text:
        raise ModelCallError("the model returned empty content")
    usage = getattr(reply, "usage_metadata", None) or {}
    return text, int(usage.get("total_tokens", 0) or 0)


def _messages(system: str, user: str) -> list[Any]:
    """The two messages of a call, built here (LangChain would convert role tuples per call)."""
    from langchain_core.messages import HumanMessage, SystemMessage

    return [SystemMessage(content=system), HumanMessage(content=user)]


def call_model(model: BaseChatModel, system: str, user: str, *, run_name: str) -> tuple[str, int]:
    """One chat call; returns the reply text and the tokens the provider reported.

    Raises:
        ModelCallError: on any client error (HTTP, timeout, malformed body) or empty reply.
    """
    try:
        reply = model.invoke(_messages(system, user), config={"run_name": run_name})
    except Exception as exc:  # provider clients raise many types; all mean "no answer"
        raise ModelCallError(f"{type(exc).__name__}: {exc}") from exc
    return _text_and_tokens(reply)


async def acall_model(
    model: BaseChatModel, system: str, user: str, *, run_name: str
) -> tuple[str, int]:
    """Async :func:`call_model` (`ainvoke`: no thread is held while the model answers).

    Raises:
        ModelCallError: as :func:`call_model`.
    """
    try:
        reply = await model.ainvoke(_messages(system, user), config={"run_name": run_name})
    except Exception as exc:  # provider clients raise many types; all mean "no answer"
        raise ModelCallError(f"{type(exc).__name__}: {exc}") from exc
    return _text_and_tokens(reply)


def ask(model: BaseChatModel, system: str, user: str, *, run_name: str) -> Wait:
    """One chat call as a node's wait (:class:`guardagent.nodes.steps.Wait`).

    Yielded by a node's steps, it is :func:`call_model` on the sync path and
    :func:`acall_model` on the async one; the reply (text, tokens) is sent back, and a
    :class:`ModelCallError` is raised at the `yield`.
    """
    from functools import partial

    from guardagent.twins import Wait

    return Wait(
        partial(call_model, model, system, user, run_name=run_name),
        partial(acall_model, model, system, user, run_name=run_name),
    )
