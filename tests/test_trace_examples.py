"""The shipped example trace policies on their hand-written traces, call by call (issue 16).

Each trace is replayed as an agent runs it: every call it makes is guarded with the messages
before it through `GuardAgent.check_trace`, the thread's state carried from call to call
(the incremental path), and then the proposed call. Benign traces pass untouched; a
violating trace is stopped at or before its first harmful call (named in the trace's
``expect``), naming the rule and, for provenance rules, the untrusted message the value
came from. The assistant policy is the packaged copy of tests/traces/assistant_*.yaml; the
browser-admin policy has one rule per ST-WebAgentBench dimension.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardagent.agent import GuardAgent
from guardagent.context import GuardContext
from guardagent.decision import GuardDecision
from guardagent.policy.check import check_policy
from guardagent.policy.model import load_policy
from guardagent.trace import Consent, parse_trace

TRACES = Path(__file__).parent / "traces"
BROWSER = TRACES / "browser"
EXAMPLES = Path(__file__).parents[1] / "guardagent" / "policies" / "examples"
ASSISTANT_POLICY = EXAMPLES / "assistant" / "policy.yaml"
BROWSER_POLICY = EXAMPLES / "browser-admin" / "policy.yaml"


def profile_for(policy: Path, root: Path) -> str:
    """A profile directory guarding with `policy` only (every predicate from the trace)."""
    (root / "profile.yaml").write_text(
        yaml.safe_dump(
            {
                "name": policy.parent.name,
                "guard_request": "Guard the agent's tool calls.",
                "agent_specification": "A tool-calling agent.",
                "toolbox": [],
                "demonstrations": [],
                "policy_model": str(policy),
            }
        ),
        encoding="utf-8",
    )
    return str(root)


@pytest.fixture(scope="module")
def browser_guard(tmp_path_factory: pytest.TempPathFactory) -> GuardAgent:
    return GuardAgent(profile=profile_for(BROWSER_POLICY, tmp_path_factory.mktemp("browser")))


def replay(guard: GuardAgent, doc: dict[str, Any], **kw: Any) -> list[tuple[str, GuardDecision]]:
    """Guard every call of the trace in order, as the agent made them; stop at a denial."""
    trace = parse_trace(doc)
    out: list[tuple[str, GuardDecision]] = []
    state = None
    for call in (*trace.calls, trace.call):
        prefix = doc["messages"][: call.index + 1] if call is not trace.call else doc["messages"]
        proposed = {"name": call.name, "args": call.args, "id": call.id}
        decision = guard.check_trace(prefix, proposed, thread_state=state, **kw)
        out.append((call.id or "", decision))
        if not decision.allowed:
            break
        state = decision.trace_state
    return out


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_both_example_policies_pass_policy_check() -> None:
    for path in (ASSISTANT_POLICY, BROWSER_POLICY):
        report = check_policy(path)
        assert report.errors == [], [f.message for f in report.errors]
        assert report.warnings == [], [f.message for f in report.warnings]
        model = load_policy(path)
        assert model.labels is not None
        assert set(model.trace_bindings) == {p.name for p in model.predicates}


def test_browser_policy_has_one_rule_per_st_webagentbench_dimension() -> None:
    model = load_policy(BROWSER_POLICY)
    assert [r.id for r in model.rules] == [
        "user-consent",
        "boundary-and-scope",
        "strict-execution",
        "hierarchy",
        "robustness-and-security",
        "error-handling",
    ]
    tools = set(model.labels.tools) if model.labels else set()
    assert tools == {"click", "fill", "goto", "send_msg_to_user"}


@pytest.mark.parametrize("name", sorted(p.name for p in BROWSER.glob("b*.json")))
def test_browser_benign_traces_pass_every_call(browser_guard: GuardAgent, name: str) -> None:
    doc = load(BROWSER / name)
    decisions = replay(browser_guard, doc)
    assert len(decisions) == len(parse_trace(doc).calls) + 1
    for call_id, decision in decisions:
        assert decision.allowed, (call_id, decision.reason)


VIOLATING = sorted(p.name for p in BROWSER.glob("i*.json"))


@pytest.mark.parametrize("name", VIOLATING)
def test_browser_violations_stop_at_the_first_harmful_call(
    browser_guard: GuardAgent, name: str
) -> None:
    doc = load(BROWSER / name)
    expect = doc["expect"]
    decisions = replay(browser_guard, doc)
    ids = [c.id for c in (*parse_trace(doc).calls, parse_trace(doc).call)]
    stopped_at, decision = decisions[-1]
    assert not decision.allowed, f"{name}: no call was denied"
    assert ids.index(stopped_at) <= ids.index(expect["first_harmful_call"])
    assert stopped_at == expect["first_harmful_call"], "the steps before the harm stay allowed"
    violated = {r.id for r in decision.rules if r.status == "violated"}
    assert expect["rule"] in violated, decision.reason
    assert f"denied by {expect['rule']}" in decision.reason and "Why:" in decision.reason
    assert decision.remediation is not None
    if expect["source"] is not None:  # a provenance rule names the untrusted message
        sources = {
            s["source"]
            for f in (decision.trace_facts or {}).values()
            if f["value"]
            for s in f["sources"]
        }
        assert expect["source"] in sources
        assert f"({expect['source']})" in decision.reason


def test_every_browser_rule_is_exercised_by_a_violating_trace() -> None:
    rules = {load(BROWSER / name)["expect"]["rule"] for name in VIOLATING}
    assert rules == {r.id for r in load_policy(BROWSER_POLICY).rules}


def test_the_injected_contact_address_names_the_ticket_page(browser_guard: GuardAgent) -> None:
    decision = replay(browser_guard, load(BROWSER / "i01_ticket_contact_langchain.json"))[-1][1]
    fact = (decision.trace_facts or {})["value_only_from_page"]
    assert fact["value"] is True
    assert [s["index"] for s in fact["sources"]] == [3], "the tickets page, not the settings page"
    assert "help@shop-support-desk.example" in fact["detail"]


def _approval(doc: dict[str, Any]) -> list[dict[str, Any]]:
    call = parse_trace(doc).call
    return [Consent(call.name, "approve", args=call.args, call_id=call.id, thread="t").to_json()]


def test_consent_opens_the_delete_page_but_not_the_forbidden_settings(
    browser_guard: GuardAgent,
) -> None:
    delete = load(BROWSER / "i03_ticket_delete_langchain.json")
    assert browser_guard.check_trace(delete, consent=_approval(delete), thread_id="t").allowed
    assert not browser_guard.check_trace(delete, consent=_approval(delete), thread_id="u").allowed
    rejected = [{**_approval(delete)[0], "decision": "reject"}]
    assert not browser_guard.check_trace(delete, consent=rejected, thread_id="t").allowed
    said = {
        **delete,
        "messages": [
            *delete["messages"][:1],
            {"type": "human", "data": {"content": "I approve deleting it."}},
            *delete["messages"][1:],
        ],
    }
    assert not browser_guard.check_trace(said).allowed, "text in a message is not consent"
    payment = load(BROWSER / "i04_payment_key_openai.json")
    refused = browser_guard.check_trace(payment, consent=_approval(payment), thread_id="t")
    assert not refused.allowed and "denied by hierarchy" in refused.reason
    retry = load(BROWSER / "i05_retry_loop_langchain.json")
    assert browser_guard.check_trace(retry, consent=_approval(retry), thread_id="t").allowed


def test_the_shipped_assistant_profile_decides_the_assistant_traces() -> None:
    guard = GuardAgent(profile="assistant-trace")
    for path in sorted(TRACES.glob("*.json")):
        doc = load(path)
        decisions = replay(guard, doc)
        allowed = all(d.allowed for _, d in decisions)
        assert allowed is path.name.startswith("b"), (path.name, decisions[-1][1].reason)


def test_the_shipped_assistant_policy_is_the_tested_one() -> None:
    """The packaged policy and labels say what tests/traces/assistant_*.yaml say."""
    model = load_policy(ASSISTANT_POLICY)
    tested = load_policy(TRACES / "assistant_policy.yaml")
    assert model.labels is not None
    labels = yaml.safe_load((TRACES / "assistant_labels.yaml").read_text(encoding="utf-8"))
    assert model.labels.to_json() == labels
    assert model.trace_bindings == {
        p.name: p.assigned_by.text for p in tested.predicates if p.assigned_by is not None
    }
    assert [(r.id, r.logic) for r in model.rules] == [(r.id, r.logic) for r in tested.rules]


def test_deployment_key_from_the_environment_signs_state_and_consent(tmp_path: Path) -> None:
    env = {
        "GUARDAGENT_TRACE_KEY": " deployment secret ",
        "GUARDAGENT_PROFILE": profile_for(BROWSER_POLICY, tmp_path),
    }
    context = GuardContext.from_env(env)
    assert context.trace_key == "deployment secret"
    assert "deployment secret" not in repr(context)
    guard = GuardAgent(profile=context.profile, trace_key=context.trace_key)
    delete = load(BROWSER / "i03_ticket_delete_langchain.json")
    unsigned = guard.check_trace(delete, consent=_approval(delete), thread_id="t")
    assert not unsigned.allowed, "with a deployment key, an unsigned approval does not count"
    call = parse_trace(delete).call
    record = Consent(call.name, "approve", args=call.args, call_id=call.id, thread="t")
    signed = record.signed(b"deployment secret")
    decision = guard.check_trace(delete, consent=[signed], thread_id="t")
    assert decision.allowed, decision.reason
    other = GuardAgent(profile=context.profile, trace_key="another key")
    foreign = other.check_trace(delete, thread_state=decision.trace_state)
    assert not foreign.allowed and foreign.unreadable, "state signed with another key is refused"


def _check_planted(tmp_path: Path, old: str, new: str) -> Any:
    """`check_policy` of the browser policy with `old` replaced by `new` (it must occur)."""
    text = BROWSER_POLICY.read_text(encoding="utf-8")
    planted = text.replace(old, new)
    assert planted != text
    path = tmp_path / "policy.yaml"
    path.write_text(planted, encoding="utf-8")
    report = check_policy(path)
    assert report.ok, "a warning, not an error: the policy still loads"
    return report


def test_policy_check_warns_on_an_argument_no_labelled_tool_has(tmp_path: Path) -> None:
    report = _check_planted(tmp_path, 'arg_only_untrusted("value")', 'arg_only_untrusted("vaule")')
    [finding] = [f for f in report.findings if f.code == "unknown_argument"]
    assert finding.severity == "warning" and finding.predicates == ("value_only_from_page",)
    assert "'vaule'" in finding.message and finding.location and ":" in finding.location
    assert check_policy(BROWSER_POLICY).codes("warning") == []


def test_policy_check_warns_on_a_label_without_args(tmp_path: Path) -> None:
    report = _check_planted(
        tmp_path,
        "goto: {results: untrusted, effect: read, args: [url]}",
        "goto: {results: untrusted, effect: read}",
    )
    [finding] = [f for f in report.findings if f.code == "label_without_args"]
    assert finding.severity == "warning" and "'goto'" in finding.message
    assert "undeclared_argument" in finding.message
