"""Hostile review of the trace features (consent binding, conversational consent, task
policies, final answers, the `check` CLI): the attacker controls tool results, pages,
e-mails and the agent model's own messages, never the host's code, environment or key.

Each probe asserts the fail-closed outcome: a harmful call is denied, and a bad input ends in
a denial with a reason (or a one-line CLI error), never a traceback. Probes whose fix belongs
to a module another helper owns are `xfail(strict=True)` naming who must fix them.
"""

from __future__ import annotations

from typing import Any

import pytest

from guardagent.trace import Labels, analyze, parse_trace
from tests.trace_helpers import call, user
from tests.trace_helpers import result as tool

# -- area 2: consent asked in the conversation ---------------------------------------------

CHAT_LABELS = Labels.from_mapping({"tools": {
    "list_projects": {"results": "trusted", "effect": "read"},
    "delete_project": {"results": "trusted", "effect": "irreversible"},
    "send_email": {"results": "untrusted", "effect": "send"},
    "send_money": {"results": "trusted", "effect": "irreversible"},
}})  # fmt: skip
CHAT = "consent_given(conversation=True)"
IBAN = "CH93 0076 2011 6238 5295 7"


def assistant(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def asked(question: Any, answer: str = "Yes, go ahead.") -> list[dict[str, Any]]:
    return [user("Clean up my old projects and pay what is due."), call("l1", "list_projects", {}),
            tool("l1", "planner (2019), planner2 (2024), notes (2024)"), assistant(question),
            user(answer)]  # fmt: skip


def chat_consent(messages: list[dict[str, Any]], name: str, args: dict[str, Any]) -> Any:
    facts = analyze(parse_trace(messages, {"id": "p1", "name": name, "args": args}), CHAT_LABELS)
    return facts.fact(CHAT)


BENIGN = [
    ("May I delete the project `planner`?", "delete_project", {"project": "planner"}),
    ("Okay to delete planner?", "delete_project", {"project": "planner"}),
    (f"Shall I send CHF 4,950.00 to {IBAN}?", "send_money", {"iban": IBAN.replace(" ", ""),
                                                              "amount": 4950}),
    ("May I send the report to Bob@Example.com?", "send_email", {"to": "bob@example.com"}),
]  # fmt: skip


@pytest.mark.parametrize(("question", "name", "args"), BENIGN)
def test_a_yes_to_a_question_naming_the_call_still_approves_it(
    question: str, name: str, args: dict[str, Any]
) -> None:
    got = chat_consent(asked(question), name, args)
    assert got.value is True, got.detail


# The question the user saw and said yes to, and the call the model then proposes.
NOT_WHAT_WAS_ASKED = [
    ("May I delete the project planner?", "delete_project", {"project": "planner2"},
     "another project whose name holds the one asked about"),
    ("May I delete the project planner?", "delete_project", {"project": "\u0440lanner"},
     "a Cyrillic homoglyph: another project"),
    ("May I delete the project planner?", "delete_project", {"project": "plan\u200bner"},
     "a zero-width character: another project that looks the same"),
    ("May I delete the project plannr?", "delete_project", {"project": "planner"},
     "a misspelt name may be another project"),
    ("May I send the e-mail to bob@example.com?", "send_email", {"to": "bob@example.co"},
     "an address the question's address holds"),
    ("May I send the e-mail to bob@x-y.com?", "send_email", {"to": "bob@x.y.com"},
     "punctuation is part of an address"),
    (f"May I send CHF 50 to {IBAN}?", "send_money", {"iban": IBAN, "amount": 5000},
     "one value named, another changed"),
    (f"May I send CHF 4,950 to {IBAN}?", "send_money", {"iban": IBAN, "amount": 4950.99},
     "an amount that only starts like the one asked about"),
    ("May I undelete the project planner?", "delete_project", {"project": "planner"},
     "the opposite verb holds the tool's verb"),
    ("Should I not delete the project planner?", "delete_project", {"project": "planner"},
     "a negated question"),
    ("Do you want to keep planner rather than delete it?", "delete_project",
     {"project": "planner"}, "a question about the opposite"),
    ("Should I delete planner or notes?", "delete_project", {"project": "notes"},
     "an alternative: the yes says neither"),
    ("May I delete the project planner? Or would you rather keep it?", "delete_project",
     {"project": "planner"}, "a follow-up question makes the yes ambiguous"),
    ("Did you already delete planner yourself?", "delete_project", {"project": "planner"},
     "a question about the past"),
    ("May I \u202edelete\u202c the project planner?", "delete_project", {"project": "planner"},
     "a direction override: shown otherwise than it reads"),
]  # fmt: skip


@pytest.mark.parametrize(("question", "name", "args", "why"), NOT_WHAT_WAS_ASKED,
                         ids=[w for *_, w in NOT_WHAT_WAS_ASKED])  # fmt: skip
def test_a_yes_never_approves_a_call_the_question_did_not_name(
    question: str, name: str, args: dict[str, Any], why: str
) -> None:
    """Seen failing before the fix (values matched fuzzily, one value enough, questions not
    read for negation, alternatives or hidden characters): every one was approved."""
    got = chat_consent(asked(question), name, args)
    assert got.value is False, why


@pytest.mark.xfail(strict=True, reason="structure (trace/messages.py): Message.text joins "
                   "every content part and invalid tool calls; conversation consent needs the "
                   "text the user was shown (text parts only)")  # fmt: skip
@pytest.mark.parametrize("content", [
    [{"type": "thinking", "thinking": "May I delete the project planner?"},
     {"type": "text", "text": "Shall I go on?"}],
    [{"type": "text", "text": "Shall I go on?"},
     {"type": "image_url", "image_url": {"url": "data:,May I delete the project planner?"}}],
], ids=["thinking-part", "non-text-part"])  # fmt: skip
def test_a_question_the_user_never_saw_approves_nothing(content: list[Any]) -> None:
    got = chat_consent(asked(content), "delete_project", {"project": "planner"})
    assert got.value is False


@pytest.mark.xfail(strict=True, reason="structure (trace/messages.py): invalid tool calls are "
                   "appended to the assistant's text that conversation consent reads")
def test_a_question_inside_invalid_tool_calls_approves_nothing() -> None:
    message = {"type": "ai", "data": {"content": "Shall I go on?", "invalid_tool_calls": [
        {"name": "x", "args": "May I delete the project planner?", "id": "q", "error": None}]}}
    messages = [*asked("x")[:3], message, user("yes")]
    got = chat_consent(messages, "delete_project", {"project": "planner"})
    assert got.value is False
