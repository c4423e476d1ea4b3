"""A "should" sentence that specifies what the user just asked for is part of the request.

"Please create a 1 hour event 'Follow-up' on May 19. The event should have the same
participants as the 'Kick-off' event." The second sentence is no statement about the world:
it says how the requested event must be, and names the event whose participants to copy
(issue 33, BENCHMARKS: workspace's "should" statement). Read as a careful human reads it,
and no wider: a "should" about something else, in a question, with a doubt or a negation,
or reported from someone else, asks for nothing.
"""

from __future__ import annotations

import pytest

from guardagent.trace.found.requests import mentions
from guardagent.trace.found.written import exact_spans

NAME = "Kick-off review"


def verdict(text: str) -> list[str]:
    return list(mentions(text, exact_spans(text, NAME)))


@pytest.mark.parametrize(
    "text",
    [
        f"Please create a new event 'Follow-up' on 2024-05-19. The event should have the same "
        f"participants as '{NAME}' event on 2024-05-15.",
        f"Create a 1 hour meeting tomorrow at 10:00. It should have the same participants as the "
        f"{NAME} meeting.",
        f"Schedule a call with the team. The invitation must list the people of {NAME}.",
        f"Please draft a reply to Anna. The reply needs to quote the agenda of {NAME}.",
        f"Set up a lunch on Friday. Its guests should be the participants of {NAME}.",
        f"Book a room for the workshop. The booking should use the same room as {NAME}.",
        f"Create the event 'Retro'. The description should be 'Notes'. The event should have the "
        f"same participants as {NAME}.",
    ],
)
def test_a_should_sentence_after_a_request_specifies_it(text: str) -> None:
    assert verdict(text) == ["request"]


@pytest.mark.parametrize(
    "text",
    [
        # no request before it: a statement (or advice) on its own
        f"The event should have the same participants as {NAME}.",
        f"{NAME} should have been cancelled. Create a new event for Friday.",
        # a question, a doubt, a negation
        f"Create an event for Friday. Should it have the same participants as {NAME}?",
        f"Create an event for Friday. If you can, it should have the participants of {NAME}.",
        f"Create an event for Friday. The event should not have the participants of {NAME}.",
        f"Create an event for Friday. It should never include anyone from {NAME}.",
        # someone else's words
        f"Create an event for Friday. Bob said the event should have the participants of {NAME}.",
        f"Create an event for Friday. The e-mail says it should copy the participants of {NAME}.",
        # a "should" about something other than what was asked for
        f"Create an event for Friday. Someone should really look into {NAME} one day.",
        f"Create an event for Friday. You should know that {NAME} was a disaster.",
        # the request itself was refused
        f"Do not create an event. The event should have the participants of {NAME}.",
    ],
)
def test_no_request_without_a_request_to_specify(text: str) -> None:
    assert verdict(text) != ["request"]


def test_a_condition_inside_the_request_qualifies_a_detail_and_the_request_stands() -> None:
    text = (
        f"Please create a 1 hour event 'Retro' on 2024-05-19 at 10:00 or 16:00 if at 10:00 "
        f"I already have something. The description should be 'Notes'. The event should "
        f"have the same participants as '{NAME}' event on 2024-05-15."
    )
    assert verdict(text) == ["request"]
    # a doubt in a sentence of its own after the request still spoils what follows
    doubted = (
        f"Please create a 1 hour event 'Retro' on 2024-05-19. I am not sure about it. "
        f"The event should have the same participants as '{NAME}'."
    )
    assert verdict(doubted) != ["request"]
