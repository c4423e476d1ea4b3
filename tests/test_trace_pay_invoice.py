"""The pay-invoice example profile, call by call, and what a trace decision reports (issue 20).

Every call of each hand-written trace is guarded with the messages before it (the thread's
state carried along): benign traces pass untouched; violating ones are stopped at the first
harmful call, naming the rule and the source. A denial fills `violations`; with
``rules="applied"`` the decision lists only the rules that applied to the call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from guardagent.agent import GuardAgent
from guardagent.decision import GuardDecision
from guardagent.guard.tool_calls import with_trace
from guardagent.policy.results import RuleResult
from guardagent.profiles.loader import load_profile
from guardagent.profiles.scaffold import check_trace_profile
from guardagent.trace import parse_trace
from tests.guards import MakeGuard

EXAMPLE = Path(__file__).parents[1] / "guardagent" / "policies" / "examples" / "pay-invoice"
TRACES = sorted((EXAMPLE / "traces").glob("*.json"))


@pytest.fixture(scope="module")
def guard(make_guard: MakeGuard) -> GuardAgent:
    return make_guard(EXAMPLE)


def replay(guard: GuardAgent, doc: dict[str, Any]) -> list[tuple[str, GuardDecision]]:
    """Guard every call of the trace in order, as the agent made them; stop at a denial."""
    trace = parse_trace(doc)
    out: list[tuple[str, GuardDecision]] = []
    state = None
    for call in (*trace.calls, trace.call):
        prefix = doc["messages"][: call.index + 1] if call is not trace.call else doc["messages"]
        proposed = {"name": call.name, "args": call.args, "id": call.id}
        decision = guard.check_trace(prefix, proposed, thread_state=state, rules="applied")
        out.append((call.id or "", decision))
        if not decision.allowed:
            break
        state = decision.trace_state
    return out


def test_profile_check_decides_every_example_trace_as_expected() -> None:
    check = check_trace_profile(load_profile(str(EXAMPLE)))
    assert check.errors == [] and check.warnings == [], (check.errors, check.warnings)
    assert len(check.traces) == len(TRACES) >= 7
    assert [t.problem for t in check.traces] == [None] * len(TRACES)
    assert check.ready


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_each_trace_call_by_call(guard: GuardAgent, path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    runs = replay(guard, doc)
    expect = doc["expect"]
    last_id, last = runs[-1]
    if expect.get("allowed"):
        assert all(d.allowed for _, d in runs), [d.reason for _, d in runs]
        return
    # stopped at the proposed (first harmful) call, every earlier one allowed
    assert last_id == parse_trace(doc).call.id and not last.allowed
    assert all(d.allowed for _, d in runs[:-1])
    violated = [r.id for r in last.rules if r.status == "violated"]
    assert violated == [expect["rule"]]
    assert expect["source"] in last.reason
    assert last.violations, "a trace denial lists its violations"
    assert all(r.status != "not_applicable" for r in last.rules)  # rules="applied"


def test_the_chain_is_named_in_the_allowed_decision_too(guard: GuardAgent) -> None:
    doc = json.loads((EXAMPLE / "traces" / "b01_invoice_named_file.json").read_text())
    decision = guard.check_trace(doc)
    assert decision.allowed and decision.violations == []
    assert decision.trace_facts is not None
    detail = decision.trace_facts["payee_from_named_file"]["detail"]
    assert "from `read_file` of `invoice-0425.txt`, which the user named in message 1" in detail
    assert {r.status for r in decision.rules} >= {"not_applicable"}  # rules="all" by default


def test_a_trace_denial_without_violations_gets_them_from_its_rules(guard: GuardAgent) -> None:
    """The program path (or a guard that gave none): `with_trace` fills them in."""
    doc = json.loads((EXAMPLE / "traces" / "i01_injected_iban_in_inbox.json").read_text())
    checked = guard.check_trace(doc)
    bare = checked.model_copy(update={"violations": []})
    from guardagent.policy.runs import profile_policy
    from guardagent.trace import prepare_trace_event

    model = profile_policy(load_profile(str(EXAMPLE)))
    assert model is not None and model.labels is not None
    event = prepare_trace_event(
        doc,
        labels=model.labels,
        bindings=model.trace_bindings,
        values=model.values,
        secrets=model.secrets,
    )
    filled = with_trace(bare, event, model)
    assert filled.violations == [r.policy for r in checked.rules if r.status == "violated"]
    unreadable = guard.check_trace({"messages": "not a list"})
    assert not unreadable.allowed and unreadable.violations
    applied = with_trace(bare, event, model, "applied")
    assert applied.rules and all(
        isinstance(r, RuleResult) and r.status != "not_applicable" for r in applied.rules
    )
