"""`check_trace` ends in a decision on every input and every profile: nothing raises into the
host (the middleware calls it inside the agent's run, where an exception ends the run).

Seen failing before the fix: a profile without a trace policy (`tool-calls`, the
middleware's default) raised ValueError from `check_trace`, `acheck_trace` and a
`trace=True` middleware's tool call; a content part whose ``type`` is an object or a list
raised TypeError (unhashable) from the content reader.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardagent import GuardAgent
from guardagent.decision import GuardDecision
from tests.guards import MakeGuard

TRACE: list[dict[str, Any]] = [
    {"role": "system", "content": "You are an assistant."},
    {"role": "user", "content": "Send 5 to Bob."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "transfer_funds", "arguments": json.dumps({"amount": 5})},
            }
        ],
    },
]


@pytest.fixture(scope="module")
def guard(make_guard: MakeGuard) -> GuardAgent:
    return make_guard("assistant-trace", own_memory=True)


@pytest.mark.parametrize("profile", ["tool-calls", "tool-calls-policy", "mind2web-sc"])
def test_a_profile_without_a_trace_policy_denies_instead_of_raising(profile: str) -> None:
    guard = GuardAgent(profile=profile)
    for decision in (guard.check_trace(TRACE), asyncio.run(guard.acheck_trace(TRACE))):
        assert not decision.allowed and decision.label == 1
        assert decision.unreadable[0]["reason"] == "no_trace_policy", decision.reason
        assert profile in decision.reason and "trace predicates" in decision.reason


def test_a_policy_file_that_no_longer_loads_denies(tmp_path: Any) -> None:
    from tests.test_trace_wiring import trace_profile

    guard = GuardAgent(profile=str(trace_profile(tmp_path)), memory_dir=str(tmp_path / "m"))
    assert guard.check_trace(TRACE).unreadable[0]["reason"] == "unlabelled_tool"
    (tmp_path / "policy.yaml").write_text("format: guardagent-policy/1\nrules: [\n")  # edited
    decision = guard.check_trace(TRACE)
    assert not decision.allowed and decision.unreadable[0]["reason"] == "no_trace_policy"
    assert "does not load" in decision.reason


def test_the_middlewares_default_profile_with_trace_blocks_the_call(tmp_path: Any) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool

    from guardagent.integrations.middleware import GuardAgentMiddleware
    from tests.scripted import ScriptedChatModel

    ran: list[str] = []

    @tool
    def transfer_funds(amount: float) -> str:
        """Move money."""
        ran.append("transfer_funds")
        return "sent"

    model = ScriptedChatModel.of(
        [
            AIMessage(
                "", tool_calls=[{"name": "transfer_funds", "args": {"amount": 5}, "id": "c1"}]
            ),
            "done",
        ]
    )
    middleware = GuardAgentMiddleware("tool-calls", trace=True, trace_key="k" * 32, user_info={})
    out = create_agent(model, [transfer_funds], middleware=[middleware]).invoke(
        {"messages": [HumanMessage("Send 5 to Bob.")]}
    )
    assert ran == []
    blocked = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in blocked] == ["error"] and "no_trace_policy" in blocked[0].content


def test_the_cli_prints_the_denial(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from guardagent.cli import main

    path = tmp_path / "trace.json"
    path.write_text(json.dumps(TRACE))
    result = CliRunner().invoke(main, ["check", "--profile", "tool-calls", "--trace", str(path)])
    assert result.exit_code == 2, result.output  # as through the service (400)
    decision = json.loads(result.output)
    assert decision["allowed"] is False and decision["unreadable"][0]["reason"] == "no_trace_policy"


@pytest.mark.parametrize("kind", [{"a": 1}, ["text"], [], {}])
@pytest.mark.parametrize("role", ["user", "assistant", "system", "tool"])
def test_a_content_part_whose_type_is_not_text_is_read_not_raised(
    guard: GuardAgent, kind: Any, role: str
) -> None:
    message: dict[str, Any] = {"role": role, "content": [{"type": kind, "text": "hi"}]}
    if role == "tool":
        message["tool_call_id"] = "c0"
    head = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c0",
                    "type": "function",
                    "function": {"name": "read_inbox", "arguments": "{}"},
                }
            ],
        }
    ]
    messages = [{"role": "user", "content": "Read my inbox."}, *head, message]
    decision = guard.check_trace(messages, {"name": "read_inbox", "args": {}})
    assert isinstance(decision, GuardDecision)
    assert decision.error is None or not decision.allowed


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=12)
    | st.sampled_from(["text", "tool_use", "tool_result", "user", "assistant", "tool", "ai"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "text",
                    "role",
                    "content",
                    "id",
                    "name",
                    "args",
                    "input",
                    "tool_calls",
                    "tool_call_id",
                    "function",
                    "arguments",
                    "data",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(part=JSON, where=st.sampled_from(["user", "assistant", "tool", "call", "proposed"]))
def test_any_json_anywhere_in_a_trace_ends_in_a_decision(
    guard: GuardAgent, part: Any, where: str
) -> None:
    """Differential of shape only: whatever JSON sits in a message, a call or the proposed
    call, the guard answers with a decision (a denial when it cannot read it)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read my inbox."}]
    proposed: Any = {"name": "read_inbox", "args": {}}
    if where in ("user", "assistant"):
        messages.append({"role": where, "content": [part]})
    elif where == "tool":
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c0",
                        "type": "function",
                        "function": {"name": "read_inbox", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c0", "content": [part]},
        ]
    elif where == "call":
        messages.append({"role": "assistant", "content": None, "tool_calls": [part]})
    else:
        proposed = part
    decision = guard.check_trace(messages, proposed)
    assert isinstance(decision, GuardDecision)
    assert decision.allowed or decision.reason.startswith("denied")
