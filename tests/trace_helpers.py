"""Small builders for hand-written traces (OpenAI chat messages) used by the trace tests."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from guardagent.trace import Labels, analyze, parse_trace
from guardagent.trace.found.secrets import Secrets
from guardagent.trace.predicates import Fact, TraceFacts
from guardagent.trace.sources.provenance import CallProvenance
from guardagent.trace.sources.records import Records

TRACES = Path(__file__).parent / "traces"
LABELS = Labels.load(TRACES / "assistant_labels.yaml")


def system(text: str = "You are a personal assistant.") -> dict[str, Any]:
    return {"role": "system", "content": text}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def call(i: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        ],
    }


def result(i: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": i, "content": text}


def facts(
    messages: list[dict[str, Any]],
    name: str,
    args: dict[str, Any],
    *,
    values: Any = None,
    user_facts: Any = None,
    secrets: Any = None,
    labels: Labels = LABELS,
) -> TraceFacts:
    """The analysed trace for a proposed call, with the user's records and declared secrets."""
    records = Records.from_mapping(values).with_user_facts(user_facts, labels.phone_region)
    trace = parse_trace(messages, {"name": name, "args": args})
    twin = analyze(trace, labels, records=records, secrets=Secrets.from_mapping(secrets), lazy=True)
    return TwinFacts(
        trace, labels, records=records, secrets=Secrets.from_mapping(secrets), twin=twin
    )


def twin_analyze(trace: Any, labels: Labels, **kwargs: Any) -> TraceFacts:
    """`analyze`, every predicate also checked on the lookup (:class:`TwinFacts`).

    A trace analysed on a given index (a restored state) is analysed once, as given.
    """
    if "index" in kwargs:
        return analyze(trace, labels, **kwargs)
    twin = analyze(trace, labels, lazy=True, **kwargs)
    return TwinFacts(trace, labels, twin=twin, **kwargs)


class TwinFacts(TraceFacts):
    """A trace analysed on its full index, each predicate checked against the deferred one.

    Every predicate a test evaluates through :func:`facts` is also evaluated on an analysis
    that read only what it asked about (`lazy=True`, :mod:`guardagent.trace.sources.lookup`, what
    a call with no thread state does): both must give the same fact (value, deciding
    messages, detail), so every hand-written trace of the tests is a differential test of
    the lookup.
    """

    def __init__(self, *args: Any, twin: TraceFacts, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.twin = twin

    def _same(self, expression: str, got: Fact) -> Fact:
        other = self.twin.fact(expression)
        assert other.to_json() == got.to_json(), (expression, got, other)
        return got

    def fact(self, expression: str) -> Fact:
        return self._same(expression, super().fact(expression))

    @cached_property
    def provenance(self) -> CallProvenance:
        got = TraceFacts.provenance.func(self)  # type: ignore[attr-defined]
        seen = [(v.path, v.describe(), v.sources, v.laundered) for v in got.values]
        other = [
            (v.path, v.describe(), v.sources, v.laundered) for v in self.twin.provenance.values
        ]
        assert seen == other, (seen, other)
        return got  # type: ignore[no-any-return]

    def evaluate(self, bindings: Mapping[str, str]) -> dict[str, Fact]:
        found = super().evaluate(bindings)
        for name, fact in found.items():
            self._same(bindings[name], fact)
        return found
