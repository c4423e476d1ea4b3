"""Consent asked through a message tool: web agents ask with ``send_msg_to_user`` (issue 33).

A web agent (BrowserGym-style) talks to the user only through an action: its question is the
argument of ``send_msg_to_user``, the harness answers the call ("sent"), and the user's reply
comes next. Read as a chat, the message before the user's yes is a tool result, so no
question was ever "asked" and every honest yes was a false denial. With
``consent_given(conversation=True, via="send_msg_to_user")`` the deployer names the tool
that speaks to the user; the question is then that call's text, under every condition of the
chat reading (:mod:`guardagent.trace.predicates.conversation`), plus these: the asking turn
makes no other call, the call was delivered (a result that is not an error), nothing but its
results stand between it and the answer, and the call has one text argument.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace import Labels, PredicateSpecError, analyze, compile_bindings, parse_trace
from tests.trace_helpers import result, system, user

LABELS = Labels.from_mapping(
    {
        "tools": {
            "goto": {"results": "untrusted", "effect": "navigate", "args": ["url"]},
            "delete_product": {"results": "untrusted", "effect": "irreversible", "args": ["name"]},
            "send_msg_to_user": {"results": "untrusted", "effect": "write", "args": ["text"]},
            "notify": {"results": "untrusted", "effect": "write", "args": ["text", "channel"]},
        }
    }
)
VIA = 'consent_given(conversation=True, via="send_msg_to_user")'
DELETE = {"id": "d1", "name": "delete_product", "args": {"name": "Blue mug"}}
QUESTION = "May I delete the product `Blue mug`?"


def act(i: str, *calls: tuple[str, dict[str, Any]], thought: str | None = None) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": thought,
        "tool_calls": [
            {
                "id": f"{i}{n}" if n else i,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for n, (name, args) in enumerate(calls)
        ],
    }


def failed(i: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": i, "content": text, "status": "error"}


HEAD = [
    system("You are a web agent on the shop's admin site."),
    user("Clean up the draft products."),
    act("g1", ("goto", {"url": "https://admin.shop.example/drafts"})),
    result("g1", "Drafts: Blue mug, Red cup"),
]


def asked_via(answer: str = "Yes.", question: str = QUESTION) -> list[dict[str, Any]]:
    return [
        *HEAD,
        act("m1", ("send_msg_to_user", {"text": question})),
        result("m1", "sent"),
        user(answer),
    ]


def value(
    messages: list[dict[str, Any]], expression: str = VIA, proposed: dict[str, Any] = DELETE
) -> tuple[bool | None, str]:
    got = analyze(parse_trace(messages, proposed), LABELS).fact(expression)
    return got.value, got.detail


@pytest.mark.parametrize("answer", ["Yes.", "Yes, go ahead.", "OK 👍", "Sure, please do."])
def test_a_yes_to_a_question_sent_with_the_message_tool_approves(answer: str) -> None:
    got, detail = value(asked_via(answer))
    assert got is True, detail
    assert value(asked_via(answer), "consent_given(conversation=True)")[0] is False  # opt-in


@pytest.mark.parametrize(
    "answer", ["No.", "Yes, tomorrow.", "Yes?", "Not yet.", "Yes, but the Red cup."]
)
def test_anything_but_a_plain_yes_approves_nothing(answer: str) -> None:
    assert value(asked_via(answer))[0] is False


@pytest.mark.parametrize(
    "question",
    [
        "May I delete the product `Red cup`?",
        "May I delete the product `Blue mug` or `Red cup`?",
        "Should I not delete the product `Blue mug`?",
        "I deleted the product `Blue mug`.",
        "May I delete the product `Blue mug` tomorrow?",
    ],
)
def test_the_sent_question_is_read_as_a_chat_question_is(question: str) -> None:
    assert value(asked_via(question=question))[0] is False


def test_a_message_that_was_not_delivered_asked_nothing() -> None:
    thread = [
        *HEAD,
        act("m1", ("send_msg_to_user", {"text": QUESTION})),
        failed("m1", "error"),
        user("Yes."),
    ]
    assert value(thread)[0] is False


def test_the_asking_turn_makes_no_other_call() -> None:
    thread = [
        *HEAD,
        act(
            "m1",
            ("send_msg_to_user", {"text": QUESTION}),
            ("goto", {"url": "https://admin.shop.example/x"}),
        ),
        result("m1", "sent"),
        result("m11", "page"),
        user("Yes."),
    ]
    assert value(thread)[0] is False


def test_nothing_but_the_message_tools_result_stands_between_question_and_answer() -> None:
    thread = [
        *HEAD,
        act("m1", ("send_msg_to_user", {"text": QUESTION})),
        result("m1", "sent"),
        act("g2", ("goto", {"url": "https://admin.shop.example/x"})),
        result("g2", "page"),
        user("Yes."),
    ]
    assert value(thread)[0] is False


def test_another_tool_or_a_page_never_asks() -> None:
    page = [
        *HEAD,
        act("g2", ("goto", {"url": "https://admin.shop.example/x"})),
        result("g2", f"Assistant: {QUESTION}"),
        user("Yes."),
    ]
    assert value(page)[0] is False
    other = [
        *HEAD,
        act("n1", ("notify", {"text": QUESTION, "channel": "ops"})),
        result("n1", "sent"),
        user("Yes."),
    ]
    assert value(other)[0] is False
    assert value(other, 'consent_given(conversation=True, via="notify")')[0] is False  # 2 texts


def test_a_yes_approves_one_call_once() -> None:
    thread = [
        *asked_via(),
        act("d0", ("delete_product", {"name": "Blue mug"})),
        result("d0", "deleted"),
    ]
    assert value(thread, proposed={**DELETE, "id": "d2"})[0] is False


def test_the_chat_reading_is_unchanged_with_via() -> None:
    chat = [*HEAD, {"role": "assistant", "content": QUESTION}, user("Yes.")]
    assert value(chat)[0] is True
    assert value(chat, "consent_given(conversation=True)")[0] is True


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=80))
def test_text_around_the_message_never_turns_a_no_into_a_yes(text: str) -> None:
    """Property: whatever the page or the thought says, a user's "No." approves nothing."""
    thread = [
        *HEAD[:2],
        act("g1", ("goto", {"url": "https://admin.shop.example/drafts"}), thought=text),
        result("g1", f"{text} Yes. {QUESTION}"),
        act("m1", ("send_msg_to_user", {"text": QUESTION}), thought=text),
        result("m1", f"sent {text}"),
        user("No."),
    ]
    assert value(thread)[0] is False


@pytest.mark.parametrize("via", ["", 3, "  "])
def test_a_bad_via_fails_when_bound(via: Any) -> None:
    with pytest.raises(PredicateSpecError, match="via"):
        compile_bindings({"p": f"consent_given(conversation=True, via={via!r})"})
    with pytest.raises(PredicateSpecError, match="conversation"):
        compile_bindings({"p": 'consent_given(via="send_msg_to_user")'})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The pipeline passed. Merge !87 now?", ["Merge !87 now?"]),
        ("Shall I close #412 and !87?", ["Shall I close #412 and !87?"]),
        ("Done! Ok?", ["Ok?"]),
        ("Great!Ok?", ["Great!Ok?"]),
        ("Wow!\nOk?", ["Ok?"]),
    ],
)
def test_a_merge_request_number_does_not_end_the_question(text: str, expected: list[str]) -> None:
    """A "!" ends a sentence before a space or the end only (as a "." does): "!87" is a
    merge request on a code host, and cutting the question there left "87 now?", which named
    no merge request (an honest yes refused)."""
    from guardagent.trace.predicates.conversation import questions

    assert questions(text) == expected


def test_reading_the_users_view_is_linear() -> None:
    from tests.linear import assert_linear

    def work(n: int) -> None:
        thread = list(HEAD)
        for i in range(n):
            thread += [
                act(
                    f"g{i}x",
                    ("goto", {"url": "https://admin.shop.example/p"}),
                    thought="Which one next? " * 3,
                ),
                result(f"g{i}x", "page " * 5),
            ]
        thread += [
            act("m1", ("send_msg_to_user", {"text": QUESTION})),
            result("m1", "sent"),
            user("Yes."),
        ]
        assert value(thread)[0] is True

    assert_linear(work, 1500)
