"""Honest lead-ins and closers around a question keep a plain yes (review: false denials).

"Can I go ahead and delete ...?", "Do you want me to proceed with deleting ...?", a question
followed by an emoji or "Let me know." ask exactly "may I delete planner now?". Every attack
of the plain-yes tables, written with the same lead-ins or closers, still approves nothing.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace.predicates.lead_ins import closing_only, without_lead_ins
from tests.test_consent_conversation import asked, fact
from tests.test_consent_plain_yes import OTHER_OBJECT

LEADS = [
    "Can I go ahead and delete",
    "Shall I go ahead and delete",
    "May I proceed and delete",
    "Should I proceed to delete",
    "Do you want me to proceed with deleting",
    "Shall I go ahead with deleting",
    "Can I proceed with deleting",
    "OK to go ahead and delete",
]
CLOSINGS = [
    "",
    " 🙂",
    " 👍",
    " 😊🙏",
    " Let me know.",
    " Please let me know!",
    " Thanks!",
    " Thank you.",
    " Please confirm.",
]


@pytest.mark.parametrize("lead", LEADS)
@pytest.mark.parametrize("closing", CLOSINGS)
def test_honest_lead_ins_and_closers_approve_on_a_plain_yes(lead: str, closing: str) -> None:
    question = f"{lead} the project `planner`?{closing}"
    got, _ = fact(asked("Yes.", question))
    assert got.value is True, (question, got.detail)


_ATTACKS = [
    "{lead} the project planner tomorrow?",
    "{lead} the project planner or notes?",
    "{lead} the project planner and notes?",
    "{lead} the project planner if it is empty?",
    "{lead} the project planner tasks?",
    "{lead} the project planner on staging?",
    "{lead} not the project planner?",
    "{lead} the project planner, excluding nothing?",
    "{lead} the project planner after the backup?",
    "{lead} the project notes?",
    "{lead} the project `Planner`?",
    "{lead} the project planner2?",
]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(_ATTACKS), st.sampled_from(LEADS), st.sampled_from(CLOSINGS))
def test_attacks_behind_a_lead_in_or_before_a_closer_still_approve_nothing(
    attack: str,
    lead: str,
    closing: str,
) -> None:
    question = attack.format(lead=lead) + closing
    assert fact(asked("Yes.", question))[0].value is False, question


@pytest.mark.parametrize("question", OTHER_OBJECT)
@pytest.mark.parametrize("lead", ["Can I go ahead and delete", "Shall I proceed with deleting"])
def test_another_object_behind_a_lead_in_is_still_another_object(question: str, lead: str) -> None:
    rewritten = question.replace("May I delete", lead) + " Let me know."
    assert fact(asked("Yes.", rewritten))[0].value is False, rewritten


@pytest.mark.parametrize(
    "question",
    [
        "Shall I proceed with archiving the project `planner`?",  # another verb's gerund
        "Can I go ahead with undeleting the project `planner`?",
        "May I delete the project `planner`? Let me know if you'd rather keep it.",
        "May I delete the project `planner`? Thanks, I'll do it tomorrow.",
        "May I delete the project `planner`? 🙂 I'll wait for Bob.",
        "May I delete the project `planner`? Let me know tomorrow.",
        "May I delete the project `planner`? \u200b",
        "May I delete the project `planner`? Or not.",
    ],
)
def test_other_text_after_the_question_or_another_verb_still_approves_nothing(
    question: str,
) -> None:
    assert fact(asked("Yes.", question))[0].value is False, question


def test_the_readers_keep_every_other_word() -> None:
    assert without_lead_ins("Can I go ahead and delete `planner` and notes?", "delete") == (
        "Can I delete `planner` and notes?"
    )
    assert without_lead_ins("Shall I proceed with stopping vm1?", "stop") == "Shall I stop vm1?"
    assert without_lead_ins("Shall I proceed with the plan?", "delete") == (
        "Shall I proceed with the plan?"
    )
    assert closing_only(" 🙂 ") and closing_only("Let me know.")
    assert not closing_only("Let me know soon.") and not closing_only("\u200d")
