"""A yes that is not a yes now (conversation consent): only a plain, present yes counts.

After "May I delete the project `planner`?", an answer that conditions, defers or redirects
the yes ("Yes, tomorrow.", "OK, once Bob signs off.", "Yes, delete notes.") approved
``delete_project("planner")`` at once; so did a yes to a question about another thing that
only mentions the value ("the reminder about planner"), one to a question after a deferral
("I'll wait until Bob signs off. May I delete planner?") and one to a question writing the
value in another case (``Planner``). Later tables cover what a review of the fix found:
a time or a condition in the question ("at 5pm", "assuming ..."), a deferral in an earlier
message of the turn, a link or file name in another case, an emoji in the answer, a
qualifier glued by a dash, a value of the call before a topic qualifier. Each table was
seen failing before its fix; the tables of honest variants (a plain yes, a plain preamble,
the value itself) pass before and after.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace import Labels, analyze, parse_trace
from guardagent.trace.document.shapes import ToolCall
from guardagent.trace.predicates.answer import COURTESY, says_yes
from guardagent.trace.predicates.conversation import names_call
from guardagent.trace.predicates.qualified import QUALIFIERS
from tests.test_consent_conversation import CHAT, asked, fact

QUESTION = "May I delete the project `planner`?"
DELETE = ToolCall("delete_project", {"project": "planner"}, "d1", 9)

YES_FORMS = [
    "Yes",
    "OK",
    "Sure",
    "Yes, go ahead",
    "Okay, please do",
    "Yep",
    "Go ahead",
    "Yes please",
    "Alright",
]
ADDITIONS = [
    # a deferral: a yes to doing it some other time
    "tomorrow",
    "in an hour",
    "later today",
    "next week",
    "tonight",
    "after lunch",
    "after the backup",
    "when I'm back",
    "on Monday",
    "at 5pm",
    "in a bit",
    "soon",
    "eventually",
    "some other time",
    "as soon as I confirm",
    # a condition: a yes to doing it if something holds
    "if the backup worked",
    "once Bob signs off",
    "provided the export is done",
    "assuming nobody uses it",
    "as long as it is archived",
    "if it's empty",
    "when the export finished",
    "so long as Bob agrees",
    "given Bob approves",
    # a redirection or another object: a yes to something else
    "delete notes",
    "delete notes instead",
    "the other one",
    "planner2",
    "archive it",
    "move it to archive",
    "just the old files",
    "delete Planner",
    "delete planner2",
    "and notes too",
    "but first back it up",
    "I guess",
    "for the archive",
    "after you email Bob",
    "with a backup",
    "send it to Bob",
]
HONEST = [
    "Yes.",
    "Yes, go ahead.",
    "Sure, please do.",
    "OK",
    "ok",
    "Yes please!",
    "Yes, go ahead, thanks.",
    "Sure.",
    "Okay, do it.",
    "Yes, delete it.",
    "Yes, delete it now.",
    "Yes, delete the project planner.",
    "yes delete planner",
    "Go ahead, thank you!",
    "Yep, sounds good.",
    "Absolutely, go ahead.",
    "Yes, please delete it.",
    "Sure, thanks",
    "Of course.",
    "Yes, you may.",
    "Yes — go ahead.",
    "Yes. Thanks!",
    "Confirmed.",
    "Yes, go ahead and delete it.",
    "Yes, that one.",
    "Yes, I'm sure.",
    "Yes, that's right.",
]


@pytest.mark.parametrize("addition", ADDITIONS)
@pytest.mark.parametrize("yes", YES_FORMS)
def test_a_yes_with_anything_beyond_courtesy_is_not_a_yes(yes: str, addition: str) -> None:
    for answer in (
        f"{yes}, {addition}.",
        f"{yes} {addition}",
        f"{yes}. {addition}!",
        f"{yes} - {addition}",
    ):
        got, facts = fact(asked(answer, QUESTION))
        assert got.value is False, answer
        assert not facts.consumed
        assert "ask the user" in got.detail, got.detail


@pytest.mark.parametrize("answer", HONEST)
def test_a_plain_yes_still_approves(answer: str) -> None:
    got, _ = fact(asked(answer, QUESTION))
    assert got.value is True, (answer, got.detail)


_COURTESY_TEXT = [" ".join(p) for p in COURTESY]
_OTHER_WORDS = [
    "tomorrow",
    "if",
    "notes",
    "Planner",
    "planner2",
    "after",
    "once",
    "later",
    "for",
    "when",
    "monday",
    "backup",
    "bob",
    "archive",
    "move",
    "too",
    "first",
    "friday",
    "noon",
    "2",
    "asap",
    "eventually",
    "hour",
    "x",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_COURTESY_TEXT), max_size=5),
    st.sampled_from(_OTHER_WORDS),
    st.sampled_from([" ", ", ", ". ", " - ", "! "]),
    st.data(),
)
def test_courtesy_words_keep_a_yes_and_any_other_word_undoes_it(
    rest: list[str], other: str, sep: str, data: st.DataObject
) -> None:
    words = ["yes", *rest]
    assert says_yes(sep.join(words), DELETE), words
    at = data.draw(st.integers(1, len(words)))
    assert not says_yes(sep.join([*words[:at], other, *words[at:]]), DELETE), (words, other)


def test_an_answer_restating_the_action_restates_exactly_this_call() -> None:
    assert says_yes("Yes, delete planner.", DELETE)
    assert says_yes("Yes, delete the project `planner`.", DELETE)
    assert not says_yes("Yes, delete notes.", DELETE)
    assert not says_yes("Yes, delete Planner.", DELETE), "another value to a case-sensitive tool"
    assert not says_yes("Yes, remove it.", DELETE), "another verb: ask again"
    assert not says_yes("Yes, delete planner and notes.", DELETE)


OTHER_OBJECT = [
    "May I delete the reminder about planner?",
    "May I delete the e-mail mentioning planner?",
    "May I delete the email that mentions planner?",
    "May I delete the note regarding planner?",
    "May I delete the tasks for planner?",
    "May I delete the files in planner?",
    "May I delete the email from planner?",
    "May I delete the comment with planner?",
    "May I delete the message which references planner?",
    "May I delete the doc on planner?",
    "May I delete the thread concerning the project planner?",
    "May I delete the ticket containing planner?",
    "May I delete the invite re planner?",
    "May I delete the page linked to planner?",
    "May I delete the folder within planner?",
    "May I delete the backup made by planner?",
    "May I delete the draft citing `planner`?",
]


@pytest.mark.parametrize("question", OTHER_OBJECT)
def test_a_question_about_another_thing_that_mentions_the_value_names_no_call(
    question: str,
) -> None:
    assert not names_call(question, DELETE), question
    got, _ = fact(asked("Yes.", question))
    assert got.value is False, question


@pytest.mark.parametrize(
    ("question", "call"),
    [
        ("May I delete the project planner?", DELETE),
        ("May I delete the project named planner?", DELETE),
        ("May I delete the project called `planner`?", DELETE),
        ("Okay to delete planner?", DELETE),
        ("May I delete planner for good?", DELETE),
        (
            "May I send bob@x.ch the email titled Q3 report?",
            ToolCall("send_email", {"to": "bob@x.ch", "subject": "Q3 report"}, None, 9),
        ),
        (
            "May I remove bob from the project planner?",
            ToolCall("remove_member", {"user": "bob", "project": "planner"}, None, 9),
        ),
        (
            "May I move notes to archive?",
            ToolCall("move_file", {"src": "notes", "dst": "archive"}, None, 9),
        ),
    ],
)
def test_a_question_about_the_value_itself_still_names_it(question: str, call: ToolCall) -> None:
    assert names_call(question, call, order=tuple(call.args)), question


DEFERRALS = [
    "I'll wait until Bob signs off.",
    "Once the backup is done I can remove it.",
    "I will do it tomorrow.",
    "Let me check with Bob first.",
    "I'll hold off for now.",
    "If the export worked, I'll go on.",
    "After the migration, it is safe.",
    "We can do this later.",
    "I have scheduled the cleanup for Friday.",
    "Nothing is deleted yet; I'll wait for the backup.",
]


@pytest.mark.parametrize("before", DEFERRALS)
def test_a_deferral_before_the_question_voids_the_yes(before: str) -> None:
    got, facts = fact(asked("Yes.", f"{before} May I delete the project planner?"))
    assert got.value is False, before
    assert not facts.consumed
    assert "ask the user" in got.detail, got.detail


@pytest.mark.parametrize(
    "before",
    [
        "`planner` was last used in 2019.",
        "I found 3 projects.",
        "planner is unused.",
        "Here is what I found: planner (2019), notes (2024).",
    ],
)
def test_a_plain_preamble_keeps_the_yes(before: str) -> None:
    got, _ = fact(asked("Yes, go ahead.", f"{before} May I delete the project `planner`?"))
    assert got.value is True, (before, got.detail)


@pytest.mark.parametrize("written", ["Planner", "PLANNER", "planneR", "pLanner"])
def test_a_value_in_another_case_is_another_value(written: str) -> None:
    assert not names_call(f"May I delete the project {written}?", DELETE), written
    got, _ = fact(asked("Yes.", f"May I delete the project `{written}`?"))
    assert got.value is False, written
    upper = ToolCall("delete_project", {"project": written}, None, 9)
    assert names_call(f"May I delete the project {written}?", upper), written
    assert not names_call("May I delete the project planner?", upper), written


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdefghijKLMNOPQR", min_size=2, max_size=12), st.data())
def test_a_value_is_named_only_in_its_own_case(value: str, data: st.DataObject) -> None:
    flips = data.draw(st.lists(st.integers(0, len(value) - 1), min_size=1, max_size=3))
    chars = list(value)
    for i in flips:
        chars[i] = chars[i].swapcase()
    written = "".join(chars)
    spec = ToolCall("delete_project", {"project": value}, None, 9)
    assert names_call(f"May I delete the project `{value}`?", spec)
    assert names_call(f"May I delete the project `{written}`?", spec) is (written == value)


def _detail(messages: list[dict[str, Any]]) -> str:
    got, _ = fact(messages)
    assert got.value is False
    return str(got.detail)


def test_each_refusal_names_what_to_ask_the_user() -> None:
    for detail in (
        _detail(asked("Yes, tomorrow.", QUESTION)),
        _detail(asked("Yes.", "May I delete the reminder about planner?")),
        _detail(asked("Yes.", "I'll wait for Bob. May I delete planner?")),
        _detail(asked("Yes.", "May I delete Planner?")),
    ):
        assert "ask the user" in detail and "planner" in detail, detail


@pytest.mark.parametrize(
    "question",
    [
        "May I delete the project about planner?",
        "May I delete the project for planner?",
        "May I delete the project that mentions planner?",
        "May I delete the project in planner?",
    ],
)
def test_the_tools_own_noun_qualified_by_the_value_is_another_object(question: str) -> None:
    # "the project about planner" is some project whose topic is planner, not ``planner``
    assert not names_call(question, DELETE), question


_ASK_LABELS = Labels.from_mapping(
    {
        "tools": {
            "list_projects": {"results": "trusted", "effect": "read", "args": []},
            "delete_project": {
                "results": "trusted",
                "effect": "irreversible",
                "args": ["project", "force", "dry_run"],
            },
            "move_file": {"results": "trusted", "effect": "irreversible", "args": ["src", "dst"]},
            "send_money": {
                "results": "trusted",
                "effect": "irreversible",
                "args": ["iban", "amount"],
            },
        }
    }
)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("delete_project", {"project": "planner"}),
        ("delete_project", {"project": "Planner", "force": True}),
        ("delete_project", {"project": "planner", "dry_run": False}),
        ("move_file", {"dst": "archive", "src": "notes"}),
        ("send_money", {"amount": 4950, "iban": "GB82WEST12345698765432"}),
    ],
)
def test_the_question_a_refusal_suggests_approves_the_call_when_answered_yes(
    name: str, args: dict[str, Any]
) -> None:
    proposed = {"id": "x1", "name": name, "args": args}

    def decide(question: str, answer: str) -> Any:
        messages = asked(answer, question)
        return analyze(parse_trace(messages, proposed), _ASK_LABELS).fact(CHAT)

    refused = decide("May I do the cleanup?", "Yes, tomorrow.")
    assert refused.value is False
    suggested = refused.detail.split('ask the user "', 1)[1].split('" and wait', 1)[0]
    got = decide(suggested, "Yes.")
    assert got.value is True, (suggested, got.detail)


@pytest.mark.parametrize("before", DEFERRALS[:5])
def test_a_deferral_in_an_earlier_assistant_message_of_the_same_turn_voids_the_yes(
    before: str,
) -> None:
    # the user reads the assistant's whole turn: split in two messages, it still defers
    messages = asked("Yes.", "May I delete the project planner?")
    messages.insert(3, {"role": "assistant", "content": before})
    got, facts = fact(messages)
    assert got.value is False, before
    assert not facts.consumed
    assert "ask the user" in got.detail, got.detail


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("notes.txt", "Notes.txt"),
        ("Report.PDF", "report.pdf"),
        ("https://files.example/Report", "https://files.example/report"),
        ("https://files.example/a?id=AbC", "https://files.example/a?id=abc"),
        ("files.example/Q3", "files.example/q3"),
    ],
)
def test_a_file_name_or_url_path_in_another_case_is_another_value(value: str, written: str) -> None:
    # the value reader folds a link's case for matching; a file system or a server does not
    spec = ToolCall("open_file", {"path": value}, None, 9)
    assert names_call(f"May I open {value}?", spec), value
    assert not names_call(f"May I open {written}?", spec), (value, written)


def test_an_address_is_still_named_in_any_case() -> None:
    # documented: an e-mail address is compared case-folded (mail systems fold it)
    spec = ToolCall("send_email", {"to": "bob@example.com"}, None, 9)
    assert names_call("May I send the email to Bob@Example.com?", spec)


@pytest.mark.parametrize(
    "when",
    [
        "at 5pm",
        "at 5 pm",
        "on Monday",
        "this weekend",
        "in an hour",
        "in a few minutes",
        "later today",
        "today",
        "this evening",
        "in a moment",
        "by Friday",
        "at noon",
        "asap",
        "shortly",
        "at midnight",
        "in two weeks",
        "Saturday morning",
    ],
)
def test_a_question_that_sets_a_time_approves_nothing_now(when: str) -> None:
    got, _ = fact(asked("Yes.", f"May I delete the project planner {when}?"))
    assert got.value is False, (when, got.detail)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["Yes", "OK", "Sure"]),
    st.sampled_from(_COURTESY_TEXT),
    st.sampled_from(
        [
            "tomorrow",
            "on Friday",
            "if it is empty",
            "once Bob agrees",
            "after the backup",
            "at 3pm",
            "next week",
            "in an hour",
        ]
    ),
)
def test_a_yes_to_a_deferred_question_or_with_a_deferral_never_approves(
    yes: str, courtesy: str, when: str
) -> None:
    assert (
        fact(asked(f"{yes}, {courtesy}.", f"May I delete the project planner {when}?"))[0].value
        is False
    )
    assert fact(asked(f"{yes}, {courtesy} {when}.", QUESTION))[0].value is False
    assert fact(asked(f"{yes}, {courtesy}.", QUESTION))[0].value is True


@pytest.mark.parametrize(
    "answer",
    [
        "Yes 👎",
        "Yes ⏰",
        "OK ❌",
        "Sure 🔜",
        "Yes ➡ later",
        "Yes ⏳",
        "Yes 🗓",
        "Yes → archive",
        "Yes\u200b",
        "Yes \u202egnidnep",
    ],
)
def test_a_symbol_the_guard_does_not_read_makes_no_yes(answer: str) -> None:
    assert not says_yes(answer, DELETE), answer


@pytest.mark.parametrize("answer", ["Yes 👍", "OK ✅", "Sure 👌🏽", "Yes :)", "Yes 🙂"])
def test_a_courtesy_symbol_keeps_a_yes(answer: str) -> None:
    assert says_yes(answer, DELETE), answer


@pytest.mark.parametrize(
    "question",
    [
        "May I delete the reminder—about planner?",
        "May I delete the reminder–about planner?",
        "May I delete the reminder/about planner?",
        "May I delete the note-regarding planner?",
        "May I delete the reminder(about)planner?",
        "May I delete the reminder,about planner?",
    ],
)
def test_a_qualifier_glued_to_the_noun_by_punctuation_is_still_read(question: str) -> None:
    assert not names_call(question, DELETE), question


_NOUNS = [
    "reminder",
    "note",
    "e-mail",
    "copy",
    "backup",
    "ticket",
    "draft",
    "thread",
    "folder",
    "invoice",
    "comment",
    "page",
    "task",
    "project",
    "file",
    "list",
]
_QUALIFY = sorted(QUALIFIERS - {"of"}) + [
    "linked to",
    "related to",
    "that mentions",
    "which references",
    "of",
]
_DETS = ["", "the ", "my ", "the project ", "your project "]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_NOUNS),
    st.sampled_from(_QUALIFY),
    st.sampled_from(_DETS),
    st.sampled_from(["planner", "`planner`", "**planner**", '"planner"']),
)
def test_any_noun_qualified_by_the_value_is_another_object(
    noun: str, qualifier: str, det: str, value: str
) -> None:
    question = f"May I delete the {noun} {qualifier} {det}{value}?"
    assert not names_call(question, DELETE), question
    assert names_call(f"May I delete {det}{value}?", DELETE), det


@pytest.mark.parametrize(
    "condition",
    [
        "assuming the backup finished",
        "provided the export worked",
        "pending Bob's review",
        "till Friday",
        "as long as it is archived",
        "so long as Bob agrees",
        "depending on the backup",
        "on condition that it is empty",
        "in case it is unused",
        "given that Bob approves",
        "once more",
        "upon approval",
        "as soon as possible",
    ],
)
def test_a_question_with_a_condition_approves_nothing(condition: str) -> None:
    got, _ = fact(asked("Yes.", f"May I delete the project planner, {condition}?"))
    assert got.value is False, (condition, got.detail)


def test_a_negation_in_the_preamble_is_no_deferral() -> None:
    got, _ = fact(
        asked(
            "Yes.",
            "I couldn't find any use of planner since 2019. May I delete the project planner?",
        )
    )
    assert got.value is True, got.detail
    got, _ = fact(asked("Yes.", "I'll do it at 5pm. May I delete the project planner?"))
    assert got.value is False, got.detail


@pytest.mark.parametrize(
    ("answer", "plain"),
    [
        ("Thanks, go ahead.", True),
        ("Great, do it.", True),
        ("Delete it, yes.", True),
        ("Perfect, yes please", True),
        ("Please.", False),
        ("Thanks.", False),
        ("Hmm, yes", False),
        ("Delete it.", False),
        ("Now.", False),
        ("Great.", False),
        ("Notes, yes.", False),
        ("Tomorrow, yes.", False),
    ],
)
def test_courtesy_may_come_before_the_yes_but_a_yes_is_needed(answer: str, plain: bool) -> None:
    assert says_yes(answer, DELETE) is plain, answer


def test_the_new_readings_are_linear_in_the_models_text() -> None:
    """Qualifiers before every occurrence, a long preamble, a long answer: linear time."""
    import time

    def cost(n: int, unit: str, where: str) -> float:
        text = unit * (n // len(unit))
        question = (
            f"{text}May I delete the project planner?"
            if where == "preamble"
            else f"May I delete {text}planner?"
        )
        answer = "Yes " + "please " * (n // 7) if where == "answer" else "Yes"
        best = float("inf")
        for _ in range(3):  # the best of three: a shared machine's pauses are not the code's
            started = time.perf_counter()
            fact(asked(answer, question))
            best = min(best, time.perf_counter() - started)
        return best

    for unit, where in (
        ("the note about planner ", "question"),
        ("as long as I ", "preamble"),
        ("x", "answer"),
        ("planner—about ", "question"),
    ):
        small, large = cost(20_000, unit, where), cost(200_000, unit, where)
        assert large < 30 * max(small, 0.01), (unit, where, small, large)


SEND = ToolCall("send_file", {"file": "planner", "to": "bob@x.ch"}, None, 9)


@pytest.mark.parametrize(
    "question",
    [
        "May I send the note to bob@x.ch about planner?",
        "May I send the mail for bob@x.ch regarding planner?",
        "May I send to bob@x.ch mentioning planner?",
        "May I send bob@x.ch the summary of bob@x.ch concerning planner?",
    ],
)
def test_another_value_before_a_topic_qualifier_does_not_make_it_the_object(
    question: str,
) -> None:
    # "bob from the project planner" is a role; "bob@x.ch about planner" is a topic
    assert not names_call(question, SEND, order=("file", "to")), question


@pytest.mark.parametrize(
    ("question", "call"),
    [
        (
            "May I delete the reminder about notes.txt?",
            ToolCall("delete_file", {"path": "notes.txt"}, None, 9),
        ),
        (
            "May I delete the note mentioning https://x.example/a?",
            ToolCall("delete_link", {"url": "https://x.example/a"}, None, 9),
        ),
        (
            "May I delete the card that mentions bob@x.ch?",
            ToolCall("delete_contact", {"email": "bob@x.ch"}, None, 9),
        ),
        (
            "May I delete the thread regarding Bob@X.ch?",
            ToolCall("delete_contact", {"email": "bob@x.ch"}, None, 9),
        ),
    ],
)
def test_a_link_file_or_address_that_only_qualifies_another_thing_is_not_named(
    question: str,
    call: ToolCall,
) -> None:
    assert not names_call(question, call), question
    plain = question.split(" ")[-1].rstrip("?")
    assert names_call(f"May I {' '.join(call.name.split('_'))} {plain}?", call), plain


@pytest.mark.parametrize(
    "value",
    ["Day planner", "Monday standup", "next steps", "weekend-trip", "Q3 hours", "case files"],
)
def test_a_stop_word_inside_the_calls_own_value_is_part_of_the_value(value: str) -> None:
    proposed = {"id": "d1", "name": "delete_project", "args": {"project": value}}
    got, _ = fact(asked("Yes.", f"May I delete the project `{value}`?"), proposed)
    assert got.value is True, (value, got.detail)
    got, _ = fact(asked("Yes.", f"May I delete the project `{value}` tomorrow?"), proposed)
    assert got.value is False, value


@pytest.mark.parametrize(
    "question",
    [
        "May I delete the project Day planner?",
        "May I delete the project planner tomorrow?",
        "May I delete `planner` tomorrow?",
        "May I delete the project `planner` or notes?",
    ],
)
def test_only_a_quoted_value_may_hold_a_stop_word(question: str) -> None:
    # unquoted, "Day planner tomorrow" reads as a time to the user, whatever the call says
    for value in ("Day planner", "planner tomorrow", "planner"):
        proposed = {"id": "d1", "name": "delete_project", "args": {"project": value}}
        assert fact(asked("Yes.", question), proposed)[0].value is False, (question, value)


def test_a_quoted_value_in_the_preamble_is_no_deferral() -> None:
    proposed = {"id": "d1", "name": "delete_project", "args": {"project": "next steps"}}
    question = "`next steps` was last used in 2019. May I delete the project `next steps`?"
    assert fact(asked("Yes.", question), proposed)[0].value is True
    unquoted = "next steps was last used in 2019. May I delete the project `next steps`?"
    assert fact(asked("Yes.", unquoted), proposed)[0].value is False


@pytest.mark.parametrize(
    "question",
    [
        "May I delete the reminder \u0430bout planner?",  # Cyrillic a
        "May I delete the copy \u03bff planner?",  # Greek omicron
        "May I delete the note m\u0435ntioning planner?",  # Cyrillic e
        "May I d\u0435lete the project planner \u0456f it is empty?",  # Cyrillic i in "if"
        "May I delete the project planner t\u043emorrow?",
    ],
)
def test_a_look_alike_letter_in_the_question_approves_nothing(question: str) -> None:
    # a qualifier or a stop word spelt with a Cyrillic or Greek look-alike reads the same
    got, _ = fact(asked("Yes.", question))
    assert got.value is False, question


def test_a_value_in_another_script_is_still_named() -> None:
    proposed = {"id": "d1", "name": "delete_project", "args": {"project": "Москва"}}
    got, _ = fact(asked("Yes.", "May I delete the project `Москва`?"), proposed)
    assert got.value is True, got.detail


def test_a_look_alike_letter_in_the_preamble_voids_the_yes() -> None:
    got, _ = fact(asked("Yes.", "I'll w\u0430it for Bob. May I delete the project planner?"))
    assert got.value is False, got.detail


def test_a_negation_inside_a_restated_value_still_undoes_the_yes() -> None:
    # the project "planner not now" restated: the user's words still say "not now"
    spec = ToolCall("delete_project", {"project": "planner not now"}, None, 9)
    assert not says_yes("Yes, delete planner not now.", spec)
    assert says_yes("Yes, delete it.", spec)


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("May I delete the project that planner depends on?", False),
        ("May I delete the project which planner uses?", False),
        ("May I delete the project whose owner planner is?", False),
        ("May I delete the folder where planner lives?", False),
        ("May I delete the user who planner belongs to?", False),
        ("May I delete that planner?", True),
        ("May I delete that project planner?", True),
    ],
)
def test_a_value_inside_a_relative_clause_is_not_the_object(question: str, named: bool) -> None:
    assert names_call(question, DELETE) is named, question


@pytest.mark.parametrize(
    "question",
    [
        "May I delete the reminder about " + "the " * 40 + "planner?",
        "May I delete the reminder about the project " + "project " * 20 + "planner?",
        "May I delete the project that, as we discussed at length in all of our earlier chats "
        "about the cleanup of this workspace and its many old boards, planner depends on?",
    ],
)
def test_padding_cannot_push_the_qualifier_out_of_sight(question: str) -> None:
    assert not names_call(question, DELETE), question


@pytest.mark.parametrize(
    ("question", "call"),
    [
        (
            "May I download the report from https://x.example/r?",
            ToolCall("download_file", {"url": "https://x.example/r"}, None, 9),
        ),
        (
            "May I open the page at https://x.example/r?",
            ToolCall("open_page", {"url": "https://x.example/r"}, None, 9),
        ),
        (
            "May I forward the mail to bob@x.ch?",
            ToolCall("forward_mail", {"to": "bob@x.ch"}, None, 9),
        ),
        (
            "May I send the invite with bob@x.ch?",
            ToolCall("send_invite", {"guest": "bob@x.ch"}, None, 9),
        ),
    ],
)
def test_a_link_or_address_in_its_role_is_still_named(question: str, call: ToolCall) -> None:
    # a link is where the thing is, an address who gets it: "from", "at", "with" give roles
    assert names_call(question, call), question


_HONEST_LABELS = Labels.from_mapping(
    {
        "tools": {
            "delete_project": {"results": "trusted", "effect": "irreversible", "args": ["project"]},
            "download_file": {"results": "trusted", "effect": "read", "args": ["url"]},
            "create_event": {"results": "trusted", "effect": "write", "args": ["title", "guests"]},
            "move_file": {"results": "trusted", "effect": "irreversible", "args": ["src", "dst"]},
        }
    }
)
_PLANNER = ("delete_project", {"project": "planner"})


@pytest.mark.parametrize(
    ("question", "call"),
    [
        ("Should I delete the unused project planner?", _PLANNER),
        ("Would you like me to delete the project planner?", _PLANNER),
        ("May I permanently delete planner?", _PLANNER),
        ("To free up space, may I delete the project planner?", _PLANNER),
        (
            "I found 3 old projects: planner, notes and archive. May I delete the project planner?",
            _PLANNER,
        ),
        ("Planner hasn't been used since 2019. May I delete the project planner?", _PLANNER),
        (
            "May I download the file from https://files.example/r.pdf?",
            ("download_file", {"url": "https://files.example/r.pdf"}),
        ),
        (
            "May I create an event called Standup for bob@example.com?",
            ("create_event", {"title": "Standup", "guests": "bob@example.com"}),
        ),
        (
            "May I move the file notes.txt to /srv/archive?",
            ("move_file", {"src": "notes.txt", "dst": "/srv/archive"}),
        ),
    ],
)
@pytest.mark.parametrize("answer", ["Yes.", "Sure, please do.", "Thanks, go ahead!", "OK"])
def test_honest_questions_and_answers_still_approve(
    question: str, call: tuple[str, Any], answer: str
) -> None:
    messages = [
        {"role": "user", "content": "Clean up."},
        {"role": "assistant", "content": question},
        {"role": "user", "content": answer},
    ]
    proposed = {"id": "c1", "name": call[0], "args": call[1]}
    got = analyze(parse_trace(messages, proposed), _HONEST_LABELS).fact(CHAT)
    assert got.value is True, (question, answer, got.detail)
