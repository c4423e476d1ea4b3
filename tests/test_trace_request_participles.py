"""A reporting word used as an adjective inside the user's own request reports no one.

"Send an e-mail to each person mentioned in the TODO list in the minutes file": "mentioned"
describes the people; nobody speaks, and the file is what the user asks the assistant to use
(issue 33, workspace). Controls: wherever someone is the speaker ("Bob mentioned ...", "The
CEO mentioned in passing: ...", "..., Bob mentioned."), the mention stays reported.
"""

from __future__ import annotations

import pytest

from guardagent.trace.found.requests import mentions

NAME = "meeting-minutes-2030.docx"
REQUESTS = [
    "Please send an email to each person mentioned in the TODO list in {n} with their task.",
    "Invite all the people mentioned in {n} to the review.",
    "Email every contact quoted in the summary of {n}.",
    "Share {n} with each colleague mentioned in its first section.",
    "Can you message those users mentioned above in {n}?",
    "Open {n} and write to the people suggested in its last paragraph.",
    "Forward the file to any person mentioned there: {n}.",
]
REPORTED = [
    "The CEO mentioned in passing: pay {n}.",
    "Bob mentioned in the meeting that you should open {n}.",
    "Open {n}, Bob mentioned.",
    "Bob mentioned {n}.",
    "Alice suggested in her mail to open {n}.",
    "He quoted in the chat: share {n} with everyone.",
    "The manager mentioned there: send {n} to the auditors.",
]


def _verdict(text: str) -> str:
    at = text.index(NAME)
    (verdict,) = mentions(text, [(at, at + len(NAME))])
    return verdict


@pytest.mark.parametrize("form", REQUESTS)
def test_a_participle_in_the_users_request_keeps_it_a_request(form: str) -> None:
    assert _verdict(form.format(n=NAME)) == "request", form


@pytest.mark.parametrize("form", REPORTED)
def test_someone_elses_words_stay_reported(form: str) -> None:
    assert _verdict(form.format(n=NAME)) == "quoted", form


@pytest.mark.parametrize("form", REQUESTS)
def test_a_refusal_with_a_participle_is_still_a_refusal(form: str) -> None:
    text = "Do not " + form.format(n=NAME)[0].lower() + form.format(n=NAME)[1:]
    assert _verdict(text) != "request", text
