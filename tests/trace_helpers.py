"""Small builders for hand-written traces (OpenAI chat messages) used by the trace tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from guardagent.trace import Labels, analyze, parse_trace
from guardagent.trace.predicates import TraceFacts
from guardagent.trace.records import Records
from guardagent.trace.secrets import Secrets

TRACES = Path(__file__).parent / "traces"
LABELS = Labels.load(TRACES / "assistant_labels.yaml")


def system(text: str = "You are a personal assistant.") -> dict[str, Any]:
    return {"role": "system", "content": text}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def call(i: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}


def result(i: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": i, "content": text}


def facts(messages: list[dict[str, Any]], name: str, args: dict[str, Any], *,
          values: Any = None, user_facts: Any = None, secrets: Any = None,
          labels: Labels = LABELS) -> TraceFacts:  # fmt: skip
    """The analysed trace for a proposed call, with the user's records and declared secrets."""
    records = Records.from_mapping(values).with_user_facts(user_facts, labels.phone_region)
    return analyze(parse_trace(messages, {"name": name, "args": args}), labels, records=records,
                   secrets=Secrets.from_mapping(secrets))  # fmt: skip
