"""What a question writes after a value, what it shows beside its text, and repeated values.

Review findings on consent in the conversation: "May I delete the project planner *tasks*?"
(another thing), "... planner *on the staging server*?" (a scope the call does not carry),
a question shown beside an image the guard cannot read, and a call whose list argument
repeats the value the question named once. Each approves nothing; honest controls keep
their yes.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace.document.shapes import ToolCall
from guardagent.trace.predicates.conversation import names_call
from tests.test_consent_conversation import asked, fact

DELETE = ToolCall("delete_project", {"project": "planner"}, None, 9)
NOUNS = [
    "tasks",
    "backups",
    "notes",
    "files",
    "members",
    "settings",
    "history",
    "logs",
    "wiki",
    "board",
    "data",
    "archive",
    "repo",
    "page",
    "team",
    "budget",
    "template",
]
SCOPES = [
    "from the staging server",
    "in the test workspace",
    "on Bob's account",
    "for Alice",
    "at the Zurich office",
    "under the old org",
    "inside staging",
    "within team-b",
    "on prod",
    "via the admin API",
]


@pytest.mark.parametrize("noun", NOUNS)
@pytest.mark.parametrize(
    "frame",
    [
        "May I delete the project planner {n}?",
        "May I delete planner {n}?",
        "Can I delete the project `planner` {n} now?",
        "Should I delete planner {n}, then?",
    ],
)
def test_a_noun_after_the_value_names_another_thing(frame: str, noun: str) -> None:
    question = frame.format(n=noun)
    assert not names_call(question, DELETE, order=("project",)), question
    assert fact(asked("Yes.", question))[0].value is False, question


@pytest.mark.parametrize("noun", NOUNS)
def test_a_noun_after_the_value_and_the_tools_noun_names_another_thing(noun: str) -> None:
    """ "the planner project" is the project planner; "the planner project tasks" is not."""
    for question in (
        f"May I delete the planner project {noun}?",
        f"May I delete the `planner` project's {noun}?",
        f"May I delete the planner project in the {noun} workspace?",
    ):
        assert fact(asked("Yes.", question))[0].value is False, question


@pytest.mark.parametrize("scope", SCOPES)
def test_a_scope_after_the_value_that_the_call_lacks_approves_nothing(scope: str) -> None:
    for question in (
        f"May I delete the project planner {scope}?",
        f"May I delete `planner` {scope}?",
    ):
        assert fact(asked("Yes.", question))[0].value is False, question


@settings(max_examples=60, deadline=None)
@given(st.from_regex(r"[a-z]{3,10}", fullmatch=True))
def test_any_unknown_word_after_the_value_fails_closed(word: str) -> None:
    """Without a parser of English, only a few known words may follow the value."""
    followers = {
        "now",
        "please",
        "pls",
        "permanently",
        "immediately",
        "completely",
        "entirely",
        "fully",
        "forever",
        "again",
        "too",
        "also",
        "and",
        "right",
        "first",
    }
    question = f"May I delete the project planner {word}?"
    assert names_call(question, DELETE, order=("project",)) is (word in followers), question


@pytest.mark.parametrize(
    ("question", "call"),
    [
        ("May I delete the project planner now?", DELETE),
        ("May I delete the project `planner` permanently?", DELETE),
        ("May I delete planner for good?", DELETE),
        ("May I delete planner right now, please?", DELETE),
        ("May I delete the project `planner` (last used 2019)?", DELETE),
        ("May I delete **planner**?", DELETE),
        ("Should I delete the `planner` project?", DELETE),
        ("May I delete the planner project now?", DELETE),
        (
            "May I move planner to archive?",
            ToolCall("move_file", {"src": "planner", "dst": "archive"}, None, 9),
        ),
        (
            "May I move planner into archive?",
            ToolCall("move_file", {"src": "planner", "dst": "archive"}, None, 9),
        ),
        (
            "May I remove bob from the project planner?",
            ToolCall("remove_member", {"user": "bob", "project": "planner"}, None, 9),
        ),
        (
            "May I delete planner with force?",
            ToolCall("delete_project", {"project": "planner", "force": True}, None, 9),
        ),
        (
            "May I delete project `planner` dry_run=false now?",
            ToolCall("delete_project", {"project": "planner", "dry_run": False}, None, 9),
        ),
    ],
)
def test_honest_words_after_the_value_keep_it_named(question: str, call: ToolCall) -> None:
    assert names_call(question, call, order=tuple(call.args)), question


@pytest.mark.parametrize(
    "part",
    [
        {"type": "image_url", "image_url": {"url": "https://cdn.example/a.png"}},
        {"type": "image_url", "image_url": "data:image/png;base64,iVBORw0KGgo="},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
        {"type": "file", "file": {"file_id": "f-1"}},
        {"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}},
        {"type": "document", "source": {"type": "text", "data": "terms"}},
    ],
)
@pytest.mark.parametrize("first", [True, False])
def test_a_question_shown_beside_a_part_the_guard_cannot_read_approves_nothing(
    part: dict[str, Any],
    first: bool,
) -> None:
    text = {"type": "text", "text": "May I delete the project `planner`?"}
    messages = asked("Yes.")
    messages[3] = {"role": "assistant", "content": [part, text] if first else [text, part]}
    got, _ = fact(messages)
    assert got.value is False and "cannot read" in got.detail, got.detail


def test_a_question_with_text_parts_only_or_reasoning_keeps_its_yes() -> None:
    """Controls: text parts alone, or a reasoning block the user does not see."""
    for content in (
        [{"type": "text", "text": "May I delete the project `planner`?"}],
        [
            {"type": "thinking", "thinking": "the user wants a cleanup", "signature": "s"},
            {"type": "text", "text": "May I delete the project `planner`?"},
        ],
    ):
        messages = asked("Yes.")
        messages[3] = {"role": "assistant", "content": content}
        got, _ = fact(messages)
        assert got.value is True, (content, got.detail)


@pytest.mark.parametrize(
    "project",
    [
        ["planner", "planner"],
        ["planner", "planner", "planner"],
        ("planner", "planner"),
        ["planner", "Planner"],
        ["planner", " planner"],
        [["planner"], ["planner"]],
    ],
)
def test_a_list_repeating_a_value_is_not_the_call_asked_about(project: Any) -> None:
    proposed = {"id": "d1", "name": "delete_project", "args": {"project": project}}
    got, _ = fact(asked("Yes.", "May I delete the project planner?"), proposed)
    assert got.value is False and "repeats a value" in got.detail, got.detail
