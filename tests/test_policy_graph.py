"""The policy path through the sandbox, the graph, the decision and the middleware."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from guardagent import GuardAgent, GuardContext
from guardagent.integrations import GuardAgentMiddleware
from guardagent.integrations.events import tool_call_event
from guardagent.policy.programs import PROGRAMS, TOOLBOXES
from guardagent.sandbox.process import check_program, run_program
from guardagent.tools import DEFAULT_TOOLBOX
from tests.scripted import ScriptedChatModel

TOOLS = DEFAULT_TOOLBOX.subset(TOOLBOXES["tool-calls"])
BIG_UNVERIFIED = tool_call_event(
    "transfer_funds", {"amount": 2500, "to": "a"}, [], {"verified": False}
)


@pytest.mark.parametrize("zygote", ["1", "0"])
def test_a_policy_program_reports_its_predicates_without_a_verdict(zygote, monkeypatch):
    monkeypatch.setenv("GUARDAGENT_SANDBOX_ZYGOTE", zygote)
    result = run_program(PROGRAMS["tool-calls"], TOOLS, *BIG_UNVERIFIED)
    assert result["ok"] and result["verdict"] is None and result["error"] is None
    assert result["predicates"]["calls_transfer_funds"] == {"value": True, "probability": None}
    assert result["predicates"]["user_is_verified"]["value"] is False


@pytest.mark.parametrize(
    "program, error",
    [
        (
            "assign('x', True)\ntry:\n    assign('x', False)\nexcept Exception:\n    pass\n",
            "VerdictError: assign(): 'x' was already assigned",
        ),
        (
            "try:\n    assign('x', 1)\nexcept Exception:\n    pass\nassign('y', True)\n",
            "VerdictError: assign(): value must be True, False or None",
        ),
        ("x = 1\n", "NoVerdict"),
    ],
)
def test_failed_or_missing_assignments_fail_the_run(program, error):
    result = run_program(program, TOOLS, *BIG_UNVERIFIED)
    assert not result["ok"] and result["predicates"] == {}
    assert result["error"].startswith(error)


def test_assign_cannot_be_rebound():
    assert any("protected name 'assign'" in e for e in check_program("assign = print\n", TOOLS))


def test_the_graph_verifies_with_the_policy_model_and_the_trace_shows_verify(tmp_path):
    guard = GuardAgent("tool-calls-policy", memory_dir=str(tmp_path))
    denied = guard.check(*BIG_UNVERIFIED)
    assert not denied.allowed and denied.program_source == "memory" and denied.error is None
    assert denied.violations == ["Transfers over 1000 require a verified user"]
    [rule] = [r for r in denied.rules if r.status != "not_applicable"]
    assert rule.status == "violated" and rule.deciding["user_is_verified"] is False
    assert denied.safety_probability == 0.0
    assert {c.predicate for r in denied.remediation.remedies for c in r.changes} == {
        "calls_transfer_funds",
        "transfer_amount_over_1000",
        "user_is_verified",
    }
    allowed = guard.check(
        *tool_call_event("transfer_funds", {"amount": 20, "to": "a"}, [], {"verified": False})
    )
    assert allowed.allowed and allowed.guardrailed_output is not None
    assert allowed.safety_probability == 1.0 and allowed.remediation is None
    nodes = [
        node
        for update in guard.graph.stream(
            {"agent_input": BIG_UNVERIFIED[0], "agent_output": BIG_UNVERIFIED[1]},
            context=GuardContext(profile="tool-calls-policy", memory_dir=str(tmp_path)),
            stream_mode="updates",
        )
        for node in update
    ]
    assert nodes[-3:] == ["execute", "verify", "decide"]


def test_profiles_without_a_policy_model_do_not_pass_through_verify(tmp_path):
    guard = GuardAgent("tool-calls", memory_dir=str(tmp_path))
    decision = guard.check(*BIG_UNVERIFIED)
    assert not decision.allowed and decision.rules == [] and decision.remediation is None
    nodes = [
        node
        for update in guard.graph.stream(
            {"agent_input": BIG_UNVERIFIED[0], "agent_output": BIG_UNVERIFIED[1]},
            context=GuardContext(profile="tool-calls", memory_dir=str(tmp_path)),
            stream_mode="updates",
        )
        for node in update
    ]
    assert "verify" not in nodes


def test_the_middleware_hands_the_agent_the_computed_remedy(tmp_path):
    ran: list[Any] = []

    @tool
    def transfer_funds(amount: float, to: str) -> str:
        """Transfer money from the user's account."""
        ran.append((amount, to))
        return "sent"

    model = ScriptedChatModel.of(
        [
            AIMessage(
                "",
                tool_calls=[
                    {"name": "transfer_funds", "args": {"amount": 2500, "to": "x"}, "id": "call-1"}
                ],
            ),
            "I cannot do that yet.",
        ]
    )
    guard = GuardAgent("tool-calls-policy", memory_dir=str(tmp_path))
    agent = create_agent(model, [transfer_funds], middleware=[GuardAgentMiddleware(guard)])
    out = agent.invoke(
        {"messages": [HumanMessage("send 2500 to x")]}, context={"user_info": {"verified": False}}
    )
    assert ran == []
    [msg] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert msg.status == "error"
    assert "To comply: " in msg.content and "make user_is_verified true" in msg.content
    assert "Transfer at most 1000, or have the user verified first." in msg.content
