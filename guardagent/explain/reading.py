"""Read a decision's JSON (as `guardagent check` prints it) into what a picture needs.

The file is data from wherever the reviewer got it, so it is parsed with pydantic, not
trusted: a field of the wrong type is refused with one line naming it, never drawn as
something it is not. Only `allowed` is required: a decision printed with ``--fields`` (say
``allowed,rules,trace_facts``) draws what it holds.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from guardagent.decision import GuardDecision
from guardagent.policy.results import RuleResult
from guardagent.readers.evidence import Unreadable
from guardagent.readers.textio import UnreadableJson, load_json

MAX_DECISION_BYTES = 16 * 1024 * 1024
"""A decision file over this is refused: a real one is kilobytes, and drawing is linear."""


class UnreadableDecision(ValueError):
    """The file is not a decision this module can draw (the message is one line)."""


class MessageRef(BaseModel):
    """One message of the trace, as a trace fact names it."""

    model_config = ConfigDict(extra="ignore")

    index: int
    source: str
    kind: str


class Link(MessageRef):
    """One step of a value's chain: a message and what it did (``asked for 'x.txt'``)."""

    note: str = ""


class ValueJson(BaseModel):
    """One argument value a trace predicate judged, with the chain it came by.

    `chain` runs from the first cause to the value: the user message that asked for a
    document, then the tool result that holds the value (or only the messages holding it).
    """

    model_config = ConfigDict(extra="ignore")

    path: str
    value: str
    origin: str = ""
    chain: list[Link] = Field(default_factory=list)


class FactJson(BaseModel):
    """One trace predicate's value, as ``decision.trace_facts[name]`` holds it."""

    model_config = ConfigDict(extra="ignore")

    name: str = ""
    value: StrictBool | None = None
    detail: str = ""
    sources: list[MessageRef] = Field(default_factory=list)
    values: list[ValueJson] = Field(default_factory=list)


class DecisionView(BaseModel):
    """The parts of a decision a picture draws (the rest of the JSON is ignored)."""

    model_config = ConfigDict(extra="ignore")

    allowed: StrictBool
    reason: str = ""
    error: str | None = None
    unreadable: list[Unreadable] = Field(default_factory=list)
    rules: list[RuleResult] = Field(default_factory=list)
    safety_probability: float | None = None
    trace_facts: dict[str, FactJson] | None = None


def view_of(decision: GuardDecision) -> DecisionView:
    """A decision made here (an eval's, a caller's), seen as its JSON would read."""
    return DecisionView.model_validate(decision.model_dump(mode="json"))


def read_decision(data: bytes) -> DecisionView:
    """The decision in `data` (JSON in any Unicode encoding).

    Raises:
        UnreadableDecision: too large, not JSON, not a JSON object, or a field that does
            not read as a decision's (one line, naming the field).
    """
    if len(data) > MAX_DECISION_BYTES:
        raise UnreadableDecision(f"over {MAX_DECISION_BYTES} bytes: not a decision to draw")
    try:
        doc: Any = load_json(data)
    except UnreadableJson as exc:
        raise UnreadableDecision(str(exc)) from None
    if not isinstance(doc, dict):
        raise UnreadableDecision(f"not a decision: a JSON {type(doc).__name__}, not an object")
    try:
        return DecisionView.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the decision"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise UnreadableDecision(f"not a decision: {where}: {first['msg']}{more}") from None
    except RecursionError:
        raise UnreadableDecision("not a decision: nested too deep to read") from None
