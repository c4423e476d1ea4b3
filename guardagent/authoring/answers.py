"""Asking a chat model for JSON that must pass validation, with bounded retries.

Extraction and refinement both need structured answers. The answer is parsed, checked
against a pydantic schema and then by a caller's validator (does the span exist, does the
logic parse, ...); any problem goes back to the model in the same conversation, at most
`attempts` times in all. What still fails is returned as errors for the caller to report:
an answer is never silently dropped or patched up.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from guardagent.authoring.prompts import RETRY_USER
from guardagent.llm import ModelCallError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

T = TypeVar("T", bound=BaseModel)

DEFAULT_ATTEMPTS = 3
"""Model calls per question: the first answer and two corrections."""


@dataclass
class Answer(Generic[T]):
    """The outcome of one question.

    Attributes:
        value: The validated answer, or None when every attempt failed.
        attempts: Model calls made.
        errors: The problems of the last failed attempt (empty on success).
        history: Each failed attempt's problems, in order (for the report).
    """

    value: T | None
    attempts: int
    errors: list[str] = field(default_factory=list)
    history: list[list[str]] = field(default_factory=list)


def parse_json_object(text: str) -> Any:
    """The first JSON object in a reply (models often wrap JSON in a fenced block or prose).

    Raises:
        ValueError: no JSON object could be decoded.
    """
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        return value
    raise ValueError("the answer holds no JSON object")


def _invoke(model: BaseChatModel, messages: list[tuple[str, str]], run_name: str) -> str:
    try:
        reply = model.invoke(messages, config={"run_name": run_name})
    except Exception as exc:  # provider clients raise many types; all mean "no answer"
        raise ModelCallError(f"{type(exc).__name__}: {exc}") from exc
    content: Any = getattr(reply, "content", reply)
    if isinstance(content, list):
        content = "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content or "")


def _describe(exc: ValidationError) -> list[str]:
    return [
        f"{'.'.join(str(p) for p in err['loc']) or 'answer'}: {err['msg']}" for err in exc.errors()
    ]


def ask_json(
    model: BaseChatModel,
    system: str,
    user: str,
    schema: type[T],
    validate: Callable[[T], list[str]] | None = None,
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    run_name: str = "guardagent.policy",
) -> Answer[T]:
    """Ask until the answer parses, fits `schema` and `validate` finds nothing wrong.

    Raises:
        ModelCallError: the model could not be reached (after its client's own retries).
    """
    messages: list[tuple[str, str]] = [("system", system), ("human", user)]
    history: list[list[str]] = []
    for attempt in range(1, attempts + 1):
        text = _invoke(model, messages, run_name)
        try:
            value = schema.model_validate(parse_json_object(text))
        except ValueError as exc:  # ValidationError is a ValueError
            errors = _describe(exc) if isinstance(exc, ValidationError) else [str(exc)]
        else:
            errors = validate(value) if validate is not None else []
            if not errors:
                return Answer(value, attempt, [], history)
        history.append(errors)
        messages += [
            ("ai", text or "(empty)"),
            ("human", RETRY_USER.format(errors="\n".join(f"- {e}" for e in errors))),
        ]
    return Answer(None, attempts, history[-1] if history else [], history)
