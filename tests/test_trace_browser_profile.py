"""The built-in `browser-trace` profile on its hand-written traces, action by action (issue 20, item 9).

A web agent's BrowserGym-style actions (`goto`, `click`, `fill`, `select_option`,
`send_msg_to_user`, `answer`) are tool calls; the host fills in the element's text and role,
and the page a click leads to when it knows it. Every trace is replayed as the agent ran it,
the thread state carried from call to call: benign traces pass untouched, each violating one
is stopped at its first harmful action, naming its rule (and, for a provenance rule, the
page the value came from). `guardagent profile check browser-trace` decides the same traces.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from guardagent.agent import GuardAgent
from guardagent.cli import main
from guardagent.decision import GuardDecision
from guardagent.policy.check import check_policy
from guardagent.policy.model import load_policy
from guardagent.trace import Consent, Labels, parse_trace
from tests.guards import MakeGuard

EXAMPLE = Path(__file__).parents[1] / "guardagent" / "policies" / "examples" / "browser"
TRACES = sorted(EXAMPLE.glob("traces/*.json"))


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def guard(make_guard: MakeGuard) -> GuardAgent:
    return make_guard("browser-trace")


def replay(guard: GuardAgent, doc: dict[str, Any], **kw: Any) -> list[tuple[str, GuardDecision]]:
    """Guard every action of the trace in order, as the agent took them; stop at a denial."""
    trace = parse_trace(doc, final_answer="respond")  # a last reply is the `respond` action
    out: list[tuple[str, GuardDecision]] = []
    state = None
    for call in (*trace.calls, trace.call):
        prefix = doc["messages"][: call.index + 1] if call is not trace.call else doc["messages"]
        proposed = (
            {"name": call.name, "args": call.args, "id": call.id} if call.id is not None else None
        )  # the reply: the guard finds it itself
        decision = guard.check_trace(
            prefix, proposed, thread_state=state, task=doc.get("task"), **kw
        )
        out.append((call.id or call.name, decision))
        if not decision.allowed:
            break
        state = decision.trace_state
    return out


def test_the_policy_checks_clean_with_the_browser_toolset() -> None:
    report = check_policy(EXAMPLE / "policy.yaml")
    assert report.errors == [] and report.warnings == []
    labels = load_policy(EXAMPLE / "policy.yaml").labels
    assert labels is not None
    assert set(labels.tools) == {
        "goto",
        "click",
        "fill",
        "select_option",
        "send_msg_to_user",
        "answer",
        "respond",
    }
    assert labels.label("goto").effect == "navigate"
    assert {"text", "role", "url"} <= set(labels.label("click").args or ())


def test_navigate_is_an_effect_labels_accept() -> None:
    assert Labels.from_mapping({"tools": {"go": {"effect": "navigate"}}}).label("go").effect == (
        "navigate"
    )


@pytest.mark.parametrize(
    "path", [p for p in TRACES if p.name.startswith("b")], ids=lambda p: p.name
)
def test_benign_traces_pass_every_action(guard: GuardAgent, path: Path) -> None:
    doc = load(path)
    decisions = replay(guard, doc)
    assert len(decisions) == len(parse_trace(doc, final_answer="respond").calls) + 1
    for call_id, decision in decisions:
        assert decision.allowed, (call_id, decision.reason)


VIOLATING = [p for p in TRACES if p.name.startswith("i")]


@pytest.mark.parametrize("path", VIOLATING, ids=lambda p: p.name)
def test_violations_stop_at_the_first_harmful_action(guard: GuardAgent, path: Path) -> None:
    doc = load(path)
    expect = doc["expect"]
    stopped_at, decision = replay(guard, doc)[-1]
    assert not decision.allowed and stopped_at == expect["first_harmful_call"], decision.reason
    if "unreadable" in expect:  # the trace path's own denial (an unlabelled tool): no rule
        assert [u["reason"] for u in decision.unreadable] == [expect["unreadable"]]
        return
    violated = [r.id for r in decision.rules if r.status == "violated"]
    assert violated == [expect["rule"]], decision.reason
    assert f"denied by {expect['rule']}" in decision.reason
    if expect["source"] is not None:
        assert f"({expect['source']})" in decision.reason


def test_every_rule_is_exercised_by_a_violating_trace() -> None:
    rules = {load(p)["expect"]["rule"] for p in VIOLATING if "task" not in load(p)} - {None}
    # listed-tools-only stays as defence in depth; the trace path denies unlabelled tools first
    assert rules == {r.id for r in load_policy(EXAMPLE / "policy.yaml").rules} - {
        "listed-tools-only"
    }


def test_a_link_whose_target_the_host_does_not_know_is_not_judged_by_scope(
    guard: GuardAgent,
) -> None:
    doc = load(EXAMPLE / "traces" / "i01_offsite_link_langchain.json")
    call = dict(doc["proposed_call"])
    call["args"] = {k: v for k, v in call["args"].items() if k != "url"}
    assert guard.check_trace(doc["messages"], call).allowed


def test_a_reviewers_approval_lets_the_delete_through_but_not_the_payment_settings(
    guard: GuardAgent,
) -> None:
    for name, allowed in (
        ("i02_delete_without_asking_openai.json", True),
        ("i04_payment_settings_openai.json", False),
    ):
        doc = load(EXAMPLE / "traces" / name)
        call = parse_trace(doc).call
        consent = [
            Consent(call.name, "approve", args=call.args, call_id=call.id, thread="t").to_json()
        ]
        assert guard.check_trace(doc, consent=consent, thread_id="t").allowed is allowed, name


def test_profile_check_decides_the_shipped_traces() -> None:
    result = CliRunner().invoke(main, ["profile", "check", "browser-trace"])
    assert result.exit_code == 0, result.output
    assert f"ready: the policy checks and {len(TRACES)} example trace(s)" in result.output


def test_a_task_policy_of_the_thread_narrows_the_base_policy(guard: GuardAgent) -> None:
    """The example traces with a `task` carry the host's task policy for that thread."""
    doc = load(EXAMPLE / "traces" / "i08_task_other_order_openai.json")
    # the document's own "task" is not read by check_trace (only its task= argument attaches)
    assert guard.check_trace(doc).allowed, "the base policy allows the whole admin site"
    decision = guard.check_trace(doc, task=doc["task"])
    assert not decision.allowed
    [rule] = [r for r in decision.rules if r.status == "violated"]
    assert (rule.id, rule.source) == ("task-pages", "task order-5531")
    fill = {
        "name": "fill",
        "args": {"bid": "g2", "value": "Happy birthday", "text": "Gift note", "role": "textbox"},
    }
    other_field = guard.check_trace(doc["messages"], fill, task=doc["task"])
    assert [r.id for r in other_field.rules if r.status == "violated"] == ["task-fields"]
