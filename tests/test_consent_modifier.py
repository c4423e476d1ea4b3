"""A yes to a question about something *of* a value approves no call on the value itself.

"May I delete the copy of planner?" asks about the copy: a yes approves no
``delete_project("planner")``. Seen failing before: each question below approved it (h8's
residual, "the copy of planner"). The rule is narrow (an *of* before the value); a value
followed by another noun ("the planner copy") is a residual (docs/reference/traces.md, "Consent asked in the conversation").
"""

from __future__ import annotations

import pytest

from guardagent.trace.document.shapes import ToolCall
from guardagent.trace.predicates.conversation import names_call
from tests.test_consent_conversation import asked, fact

DELETE = ToolCall("delete_project", {"project": "planner"}, None, 9)
SEND = ToolCall("send_file", {"file": "planner", "to": "bob@x.ch"}, None, 9)
MOVE = ToolCall("move_file", {"src": "notes", "dst": "archive"}, None, 9)


@pytest.mark.parametrize(
    ("question", "call"),
    [
        ("May I delete the copy of planner?", DELETE),
        ("May I delete a backup of the project planner?", DELETE),
        ("May I delete the old tasks of my project planner?", DELETE),
        ("May I send the copy of planner to bob@x.ch?", SEND),
    ],
)
def test_a_value_written_after_of_is_not_the_target(question: str, call: ToolCall) -> None:
    assert not names_call(question, call), question


@pytest.mark.parametrize(
    ("question", "call"),
    [
        ("May I delete the project planner?", DELETE),
        ("May I run a delete of the project planner?", DELETE),  # 'of' after the tool's word
        ("May I delete planner, the copy of planner included?", DELETE),  # named itself too
        ("May I send planner to bob@x.ch?", SEND),
    ],
)
def test_a_value_named_itself_is_still_named(question: str, call: ToolCall) -> None:
    assert names_call(question, call), question


def test_a_yes_to_the_copy_approves_no_delete_of_the_original() -> None:
    assert fact(asked("Yes.", "May I delete the copy of planner?"))[0].value is False
    assert fact(asked("Yes.", "May I delete the project planner?"))[0].value is True


def test_a_move_of_what_a_folder_holds_is_not_a_move_of_the_folder() -> None:
    order = ("src", "dst")
    assert names_call("May I move notes to archive?", MOVE, order=order)
    assert not names_call("May I move the contents of notes to archive?", MOVE, order=order)
