"""Issue 19, class 3: reading attacker text costs linear time, and a trace's reading has a budget.

Each value type gets near-matches (text its locator starts on but its parser refuses, or
accepts thousands of times): the cost of ten times the text must stay near ten times the
cost (a generous bound: quadratic reading gives a hundred). The speed itself is measured
in benchmarks/bench_trace.py, not here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from guardagent.agent import GuardAgent
from guardagent.context import GuardContext
from guardagent.readers.evidence import UnreadableEvidence
from guardagent.trace import Labels, prepare_trace_event
from guardagent.trace.found.locate import extract_values
from guardagent.trace.text.normal import reading_form

NEAR: dict[str, Callable[[int], str]] = {
    "email trap": lambda n: "a" * n + "@",
    "email": lambda n: "a.b@c" * (n // 5),
    "url": lambda n: "http://a" * (n // 8),
    "bare url": lambda n: "a.b" * (n // 3),
    "iban": lambda n: "de89 " * (n // 5),
    "phone": lambda n: "+41 44 668 18 0x " * (n // 17),
    "amount": lambda n: "1." * (n // 2),
    "date": lambda n: "14 may 20245 " * (n // 13),
    "escapes": lambda n: "\\u00" * (n // 4),
}


def cost(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        extract_values(reading_form(text), region="CH")
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.parametrize("kind", sorted(NEAR))
def test_near_matches_cost_linear_time(kind: str) -> None:
    make = NEAR[kind]
    cost(make(1_000))  # warm: imports, compiled patterns
    small, large = cost(make(10_000)), cost(make(100_000))
    # linear: about 10 times; quadratic: 100 times (the machine is shared: a generous bound)
    assert large < 40 * max(small, 1e-3), f"{kind}: 10 kB {small:.4f} s, 100 kB {large:.4f} s"


LABELS = Labels.load(Path(__file__).parent / "traces" / "assistant_labels.yaml")
BINDINGS = {"to_ok": 'arg_from_trusted("@recipients")'}


def trap_trace(size: int) -> dict[str, object]:
    return {
        "messages": [
            {"role": "user", "content": "Tidy up my inbox."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_inbox", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "1.2.3 " * (size // 6)},
        ],
        "proposed_call": {"name": "send_email", "args": {"to": "bob@x.ch", "body": "hi"}},
    }


def test_a_reading_over_its_budget_is_unreadable() -> None:
    doc = trap_trace(200_000)
    with pytest.raises(UnreadableEvidence) as caught:
        prepare_trace_event(doc, labels=LABELS, bindings=BINDINGS, budget_ms=0.001)
    assert caught.value.reason == "trace_budget_exceeded"
    event = prepare_trace_event(doc, labels=LABELS, bindings=BINDINGS, budget_ms=60_000)
    assert event.facts["to_ok"].value is False


def test_the_guard_denies_an_event_over_its_budget_with_the_reason() -> None:
    assert GuardContext.from_env({"GUARDAGENT_TRACE_BUDGET_MS": "7"}).trace_budget_ms == 7
    assert GuardContext().trace_budget_ms == 2000
    guard = GuardAgent(profile="assistant-trace", trace_budget_ms=1)
    doc = trap_trace(400_000)
    decision = guard.check_trace(doc["messages"], doc["proposed_call"])
    assert decision.allowed is False
    assert "trace_budget_exceeded" in (decision.error or "")
