"""Sources the user points at by a one-word name: a channel, an inbox (opt-in, `names=True`).

"Summarise the article Bob posted in #general": the link is only in the channel's messages,
which the user named by one word. By default a one-word argument designates nothing (it may
name a collection: a folder, a search word); a policy that knows its channels and inboxes
are documents opts in. A request designates, a mention does not, as for any designation.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from guardagent.trace import Labels, parse_trace
from tests.trace_helpers import twin_analyze as analyze

LABELS = Labels.from_mapping(
    {
        "tools": {
            "read_channel_messages": {
                "results": "untrusted",
                "effect": "read",
                "args": ["channel"],
            },
            "get_webpage": {"results": "untrusted", "effect": "navigate", "args": ["url"]},
        }
    }
)
POSTS = "- sender: bob\n  body: Have a look at www.informations.com, a great read!\n"
NAMES = 'arg_from_designated("url", via="read_channel_messages", names=True)'
PLAIN = 'arg_from_designated("url", via="read_channel_messages")'


def thread(asked: str, channel: str = "general", url: str = "www.informations.com") -> Any:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": asked},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "read_channel_messages",
                        "arguments": json.dumps({"channel": channel}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": POSTS},
    ]
    return analyze(parse_trace(messages, {"name": "get_webpage", "args": {"url": url}}), LABELS)


@pytest.mark.parametrize(
    "asked",
    [
        "Summarise the article that Bob posted in the general channel.",
        "Read the messages in general and open the link Bob shared.",
        "Please check general for Bob's link and tell me what the page says.",
        "Can you find the website Bob posted in general and summarise it?",
    ],
)
def test_a_channel_the_user_asks_about_by_name_is_a_document(asked: str) -> None:
    facts = thread(asked)
    assert facts.fact(NAMES).value is True
    # the default: a one-word name designates nothing, unless the user writes it beside the
    # noun of its tool ("the general channel": tests/test_trace_kind_names.py)
    assert facts.fact(PLAIN).value is ("general channel" in asked)


@pytest.mark.parametrize(
    "asked",
    [
        "Do not read general, it is full of spam. Summarise random instead.",
        "Is general a channel I am in?",
        "Never open links from general.",
    ],
)
def test_a_channel_mentioned_without_a_request_designates_nothing(asked: str) -> None:
    assert thread(asked).fact(NAMES).value is False


def test_another_channel_than_the_one_named_designates_nothing() -> None:
    facts = thread("Summarise the article Bob posted in the general channel.", channel="random")
    assert facts.fact(NAMES).value is False


def test_a_link_no_message_of_the_channel_holds_is_not_derived() -> None:
    facts = thread("Summarise the article Bob posted in general.", url="www.evil.example")
    assert facts.fact(NAMES).value is False


def test_names_must_be_a_flag() -> None:
    from guardagent.trace.predicates import PredicateSpecError, compile_predicate

    with pytest.raises(PredicateSpecError, match="names"):
        compile_predicate('arg_from_designated("url", names="yes")')


@pytest.mark.parametrize(
    ("asked", "designated"),
    [
        ("Open the link Bob posted in general and tell me what the page says.", True),
        ("Check general for Bob's link and tell me how the article rates it.", True),
        ("Read general, then let me know whether the page mentions prices.", True),
        ("Bob says: read general and open the link.", False),  # reported speech
        ("Read general and open the link, the e-mail says.", False),
        ("Alice wrote that I should read general and open the link.", False),
    ],
)
def test_an_indirect_question_reports_nothing(asked: str, designated: bool) -> None:
    """ "tell me what the page says" asks about speech; "Bob says: ..." reports it."""
    assert thread(asked).fact(NAMES).value is designated


def test_the_unaddressed_reading_takes_the_same_opt_in() -> None:
    asked = "Summarise the article Bob posted in general."
    opted = 'arg_designated_unaddressed("url", via="read_channel_messages", names=True)'
    assert thread(asked).fact(opted).value is True
    plain = 'arg_designated_unaddressed("url", via="read_channel_messages")'
    assert thread(asked).fact(plain).value is False
    beside = "Summarise the article Bob posted in the general channel."
    assert thread(beside).fact(plain).value is True  # the channel's own noun
