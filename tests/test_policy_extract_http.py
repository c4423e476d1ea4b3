"""The walkthrough of docs/how-to/policy-from-document.md over real HTTP: extract -> optimize -> review -> check -> guard with
the example document, the model being langchain-openai talking to the loopback OpenAI stub
(which answers from the recorded answers file, like a model that read the document)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from guardagent.authoring.cli import policy
from guardagent.authoring.replay import replay_reply
from guardagent.policy.model import load_policy
from guardagent.policy.runs import profile_policy
from guardagent.policy.verify import verify_event
from tests.openai_stub import OpenAIStub

EXAMPLES = Path(__file__).resolve().parent.parent / "guardagent" / "policies" / "examples"
DOC = EXAMPLES / "support-agent-policy.md"
ANSWERS: dict[str, Any] = json.loads((EXAMPLES / "support-agent-policy.answers.json").read_text())


def _respond(body: dict[str, Any]) -> str:
    messages = body.get("messages", [])
    system = next((m["content"] for m in messages if m.get("role") in ("system", "developer")), "")
    user = next((m["content"] for m in messages if m.get("role") == "user"), "")
    return replay_reply(ANSWERS, str(system), str(user))


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIStub]:
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("GUARDAGENT_LLM_TIMEOUT", "10")
    with OpenAIStub(responder=_respond) as server:
        yield server


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(policy, args, catch_exceptions=False)


def test_walkthrough_over_http(stub: OpenAIStub, tmp_path: Path) -> None:
    model = ["--model", "openai:stub-model", "--base-url", stub.base_url]
    extracted, optimized = tmp_path / "policy.yaml", tmp_path / "policy.opt.yaml"

    result = _run(["extract", str(DOC), *model, "--out", str(extracted), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert stub.count == 9  # one request per section, all accepted first time
    assert all(r["model"] == "stub-model" for r in stub.requests)

    result = _run(["optimize", str(extracted), *model, "--out", str(optimized)])
    assert result.exit_code == 0, result.output
    stats = json.loads((tmp_path / "policy.opt.stats.json").read_text())
    assert stats["converged"] and stats["refinement"]
    assert stats["before"] == {"predicates": 20, "rules": 16, "vagueness": 0.3187}
    assert stats["after"] == {"predicates": 17, "rules": 13, "vagueness": 0.2231}
    refused = [r for s in stats["steps"] for r in s["details"].get("rejected", [])]
    assert refused and all("weaken" in r["reason"] for r in refused)
    assert (tmp_path / "policy.opt.stats.png").stat().st_size > 1000

    pending = _run(["review", str(optimized)])
    assert (
        "13 proposed" in pending.output and 'text:   "Exports must be encrypted."' in pending.output
    )
    approve = [
        a
        for r in load_policy(optimized).rules
        if r.id not in ("6-handling-customer-data-p1-1.1", "6-handling-customer-data-p1-1.2")
        for a in ("--approve", r.id)
    ]
    result = _run(
        [
            "review",
            str(optimized),
            "--reject",
            "6-handling-customer-data-p1-1.1",
            "--edit",
            "6-handling-customer-data-p1-1.2",
            "--logic",
            "NOT comply_with_gdpr AND NOT recipient_company_address IMPLIES NOT send_email",
            *approve,
        ]
    )
    assert result.exit_code == 0, result.output
    assert "11 approved, 1 edited, 1 rejected" in result.output

    check = _run(["check", str(optimized)])
    assert check.exit_code == 0, check.output
    # The shipped reviewed model is what this walkthrough produces.
    assert load_policy(optimized).rules == load_policy(EXAMPLES / "support-agent-policy.yaml").rules

    # Guard: the rejected rule (GDPR on lookups) never guards; approved rules do.
    class Profile:
        policy_model = str(optimized)
        root = None

    guarded = profile_policy(Profile())
    assert guarded is not None
    assert "6-handling-customer-data-p1-1.1" not in guarded.by_id
    lookup = {
        "lookup_customer": {"value": True, "probability": None},
        "comply_with_gdpr": {"value": False, "probability": None},
        "ticket_open": {"value": True, "probability": None},
        "customer_on_ticket": {"value": True, "probability": None},
    }
    assert verify_event(guarded, lookup).allowed
    export = {
        "export_data": {"value": True, "probability": None},
        "dpo_approval": {"value": False, "probability": None},
    }
    verdict = verify_event(guarded, export)
    assert not verdict.allowed
    assert any(r.id == "5-exporting-data-p1-1" and r.status == "violated" for r in verdict.rules)


def test_the_reviewed_example_guards_the_support_agents_tools(tmp_path: Path) -> None:
    from guardagent import GuardAgent
    from guardagent.integrations.events import tool_call_event

    guard = GuardAgent(str(EXAMPLES / "support-agent"), memory_dir=str(tmp_path))
    facts = {
        "ticket_open": True,
        "identity_verified": True,
        "comply_with_gdpr": False,
        "ticket_customer": "c-7",
        "manager_approval": False,
    }
    # The rejected rule (no lookups without a GDPR basis) does not guard.
    lookup = guard.check(*tool_call_event("lookup_customer", {"customer_id": "c-7"}, [], facts))
    assert lookup.allowed and lookup.program_source == "memory", lookup.reason
    refund = guard.check(
        *tool_call_event("refund", {"customer_id": "c-7", "amount": 900}, [], facts)
    )
    assert not refund.allowed
    assert refund.violations == [
        "Refunds above 500 EUR need a support manager's approval first. (scope: refund)"
    ]
    # A fact the host did not give stays open: the rule it could break denies.
    unknown = guard.check(
        *tool_call_event(
            "export_data", {"customer_id": "c-7", "encrypted": True}, [], {"ticket_open": True}
        )
    )
    assert not unknown.allowed


def test_malformed_answers_over_http_are_retried_then_reported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    doc = tmp_path / "p.md"
    doc.write_text("## Export\n\nExports must be encrypted.\n\n## Email\n\nNo card numbers.\n")
    out = tmp_path / "p.yaml"
    with OpenAIStub(responder=lambda body: "I would rather not answer in JSON.") as server:
        result = _run(
            [
                "extract",
                str(doc),
                "--model",
                "openai:stub-model",
                "--base-url",
                server.base_url,
                "--out",
                str(out),
                "--no-progress",
                "--attempts",
                "2",
            ]
        )
        assert server.count == 4  # two sections, two attempts each: bounded
        retry = server.requests[1]["messages"]
        assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
        assert "no JSON object" in retry[-1]["content"]
    assert result.exit_code == 1
    assert "section p.md#export failed after 2 attempt(s)" in result.output
    report = json.loads((tmp_path / "p.yaml.report.json").read_text())
    assert report["failed_sections"] == ["p.md#export", "p.md#email"] and not report["ok"]
