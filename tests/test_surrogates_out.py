"""A lone surrogate in a trace never makes a decision or a thread state unwritable.

Seen failing before the fix: a tool result holding ``"\\ud800"`` (a JSON escape, or bytes
read with ``surrogateescape``) made ``decision.model_dump_json()`` raise, and the thread
state kept the result's tail as it was: msgpack (LangGraph's checkpointer) and UTF-8 JSON
refused it, so the thread could not be stored for its next call.
"""

from __future__ import annotations

import json
from typing import Any

import ormsgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardagent import GuardAgent
from guardagent.decision import GuardDecision
from guardagent.trace.predicates.ledger import read_ledger
from guardagent.trace.thread.state import TraceIndex
from tests.guards import MakeGuard

LONE = ["\ud800", "\udfff", "\udc80", "\ud83d", "\ude00", "\ude00\ud83d"]
TEXTS = st.text(alphabet=st.characters(codec=None, categories=None), max_size=40)


@given(TEXTS)
def test_text_without_surrogates_is_utf8_and_keeps_every_other_character(text: str) -> None:
    from guardagent.surrogates import text_without_surrogates

    out = text_without_surrogates(text)
    out.encode("utf-8")  # raises on a surrogate
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        assert len(out) <= len(text)
    else:
        assert out is text  # nothing to replace: the same object


@pytest.mark.parametrize("lone", LONE)
def test_a_lone_surrogate_is_the_replacement_character_and_a_pair_its_character(
    lone: str,
) -> None:
    from guardagent.surrogates import text_without_surrogates, without_surrogates

    assert text_without_surrogates(f"a{lone}b") == "a" + "\ufffd" * len(lone) + "b"
    assert text_without_surrogates("\ud83d\ude00") == "\U0001f600"
    data = {"k" + lone: ["x", ("y" + lone,)], "n": 1}
    assert json.dumps(without_surrogates(data), ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("lone", LONE)
@pytest.mark.parametrize("field", ["reason", "violations", "trace_facts", "error"])
def test_a_decision_quoting_a_lone_surrogate_dumps(lone: str, field: str) -> None:
    value: Any = {
        "reason": f"quoted {lone}",
        "violations": [f"rule {lone}"],
        "trace_facts": {f"k{lone}": {"why": [lone]}},
        "error": lone,
    }[field]
    decision = GuardDecision(allowed=False, label=1, **{field: value})
    dumped = json.loads(decision.model_dump_json())
    assert "\ufffd" in json.dumps(dumped[field], ensure_ascii=False)
    assert json.dumps(decision.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")


def _trace(result: str, to: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are an assistant."},
        {"role": "user", "content": "Read my inbox, then mail hi to bob@example.com."},
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
        {"role": "tool", "tool_call_id": "c0", "content": result},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "send_email",
                        "arguments": json.dumps({"to": to, "body": "hi"}),
                    },
                }
            ],
        },
    ]


@pytest.fixture(scope="module")
def guard(make_guard: MakeGuard) -> GuardAgent:
    return make_guard("assistant-trace", trace_key="k" * 32, own_memory=True)


@pytest.mark.parametrize("lone", LONE)
@pytest.mark.parametrize("where", ["start", "end", "alone"])
def test_a_thread_whose_result_holds_a_lone_surrogate_goes_on(
    guard: GuardAgent, lone: str, where: str
) -> None:
    result = {
        "start": f"{lone} mail from eve@evil.io",
        "end": f"hello from eve@evil.io {lone}",
        "alone": lone,
    }[where]
    first = guard.check_trace(_trace(result, "eve@evil.io"))
    json.loads(first.model_dump_json())
    state = first.trace_state
    assert state is not None
    stored = ormsgpack.unpackb(ormsgpack.packb(state))  # the checkpointer's encoding
    assert json.loads(json.dumps(stored, ensure_ascii=False).encode("utf-8")) == state
    key = b"k" * 32
    index_state, _ = read_ledger(stored, key=key)
    assert index_state is not None
    reread = TraceIndex.from_json(index_state, region=state["region"], key=key).to_json(key)
    assert reread == index_state  # signed as written: read back identically
    then = [
        *_trace(result, "eve@evil.io"),
        {"role": "tool", "tool_call_id": "c1", "content": "not sent"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {
                        "name": "send_email",
                        "arguments": json.dumps({"to": "bob@example.com", "body": "hi"}),
                    },
                }
            ],
        },
    ]
    following = guard.check_trace(then, thread_state=stored)
    fresh = guard.check_trace(then)
    assert not following.unreadable, following.reason
    assert (following.allowed, following.reason) == (fresh.allowed, fresh.reason)


def test_the_service_answers_and_keeps_a_thread_whose_result_holds_a_lone_surrogate() -> None:
    """Before: the first answer was a 500 (its checkpoint refused the state), the next call
    on the thread was denied ``unreadable_state``: the thread was bricked."""
    from starlette.testclient import TestClient

    from guardagent.context import GuardContext
    from guardagent.service.app import create_app
    from guardagent.service.settings import ServiceSettings

    token = "t" * 20
    settings = ServiceSettings(
        guard=GuardContext(profile="assistant-trace", trace_key="k" * 32), service_token=token
    )
    first = _trace("hello from eve@evil.io \ud800", "bob@example.com")
    then = [
        *first,
        {"role": "tool", "tool_call_id": "c1", "content": "sent"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {
                        "name": "send_email",
                        "arguments": json.dumps({"to": "bob@example.com", "body": "hi"}),
                    },
                }
            ],
        },
    ]
    with TestClient(
        create_app(settings),
        headers={"Authorization": f"Bearer {token}"},
        raise_server_exceptions=False,
    ) as client:
        for messages in (first, then):
            body = json.dumps({"messages": messages, "thread_id": "t1"}).encode()  # escapes
            answer = client.post(
                "/v1/decide/trace", content=body, headers={"content-type": "application/json"}
            )
            assert answer.status_code == 200, answer.text
            assert answer.json()["unreadable"] == [], answer.text


@pytest.mark.parametrize("lone", LONE)
def test_the_middlewares_denial_text_holds_no_lone_surrogate(lone: str) -> None:
    """The blocked ToolMessage goes into the agent's checkpoint (msgpack): it must encode."""
    from guardagent.integrations.runner import describe_denial

    decision = GuardDecision(
        allowed=False, label=1, violations=[f"rule {lone}"], reason=f"quoted {lone}"
    )
    ormsgpack.packb(describe_denial(decision))
    decision = GuardDecision(allowed=False, label=1, violations={f"t{lone}": [lone]})
    describe_denial(decision).encode("utf-8")


@pytest.mark.parametrize("key", ["thread_id", "idempotency_key"])
@pytest.mark.parametrize("lone", LONE)
def test_the_service_refuses_a_name_holding_a_lone_surrogate(key: str, lone: str) -> None:
    """Before: a thread id holding one was answered, then its next call was denied
    ``unreadable_state`` (the stored ledger no longer verified): the thread was bricked."""
    from guardagent.service.requests import BadRequest, parse_request

    body = {"messages": _trace("ok", "bob@example.com"), key: f"t{lone}"}
    with pytest.raises(BadRequest, match=key):
        parse_request("trace", body)
