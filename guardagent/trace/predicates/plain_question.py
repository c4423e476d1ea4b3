"""What an assistant's question must not hold for a user's yes to it to approve a call.

:func:`~.conversation.asked_in_conversation` reads the question the user answered, and the
assistant's turn before it. A yes approves nothing when the question is negated, offers an
alternative, excludes a value, defers or conditions the call, sets a time for it
(:data:`QUESTION_STOPS`, :func:`plain_question`), hides text or disguises a word with a
look-alike letter; nor when the assistant deferred or conditioned the action earlier in
its turn ("I'll wait until Bob signs off. May I delete planner?": :data:`DEFERRALS`,
:func:`deferred`). Words, not a parse: the lexicons are English and fail closed (a
description using one of these words voids the yes too). The call's own values quoted
whole are names, not words of the sentence (:func:`_unquoted`). Every scan is linear.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from guardagent.trace.document.shapes import Message
from guardagent.trace.predicates.answer import NEGATIVE, tokens
from guardagent.trace.predicates.naming import phrase_words

__all__ = ["DEFERRALS", "QUESTION_STOPS", "deferred", "plain_question"]


_DEFERRING = frozenset(
    {
        # the call deferred or conditional: a yes to "delete planner tomorrow / if it is
        # empty / after the backup" is no yes to deleting it now, unconditionally
        "if",
        "once",
        "when",
        "whenever",
        "after",
        "before",
        "until",
        "tomorrow",
        "tonight",
        "next",
        "soon",
        "eventually",
        "someday",
        "postpone",
        "schedule",
        "scheduled",
        "assuming",
        "provided",
        "providing",
        "pending",
        "till",
        "depending",
        "depends",
        "condition",
        "conditional",
        "given",
        "upon",
        "yet",
        "afterwards",
        "meanwhile",
        "postponed",
        "paused",
        "pause",
        "waiting",
    }
)

_DEFERRING_PHRASES = (
    ("as", "long", "as"),
    ("so", "long", "as"),
    ("in", "case"),
    ("subject", "to"),
    ("as", "soon", "as"),
)
"""Conditions of several words, each of them harmless alone ("long", "case")."""


def _stop_in(words: list[str], singles: frozenset[str], negations: bool = True) -> str | None:
    """The first stop among `words`, or None.

    A word of `singles`, a "...n't" (with `negations`), a clock time ("5pm") or a
    condition of several words ("as long as").
    """
    for i, w in enumerate(words):
        if w in singles or (negations and w.endswith("n't")) or _at_a_clock_time(w):
            return w
        for p in _DEFERRING_PHRASES:
            if tuple(words[i : i + len(p)]) == p:
                return " ".join(p)
    return None


QUESTION_STOPS = (
    NEGATIVE
    | {"or", "already", "undo", "restore", "keep"}
    | {
        # a value excluded: "delete the projects, excluding planner" spares planner
        "excluding",
        "exclude",
        "excepting",
        "apart",
        "aside",
        "besides",
        "other",
        "spare",
        "sparing",
        "leave",
        "leaving",
        "skip",
        "skipping",
        "omit",
        "omitting",
        "minus",
    }
    | _DEFERRING
    | {
        # a time set for the call: "at 5pm", "on Monday", "in an hour" is not now
        "today",
        "weekend",
        "morning",
        "afternoon",
        "evening",
        "noon",
        "midnight",
        "pm",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "minute",
        "minutes",
        "hour",
        "hours",
        "day",
        "days",
        "week",
        "weeks",
        "month",
        "months",
        "moment",
        "shortly",
        "asap",
        "eod",
        "o'clock",
        "year",
        "years",
        "hr",
        "hrs",
        "min",
        "mins",
        "tonite",
        "tmrw",
        "tmr",
        "fortnight",
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
    }
    | {
        # a question whose yes says "don't": "Is it a bad idea to delete planner?"
        "bad",
        "risky",
        "dangerous",
        "unsafe",
        "mistake",
        "wrong",
        "harmful",
        "problem",
        "problematic",
        "objection",
        "objections",
        "mind",
        "regret",
        "terrible",
        "reckless",
    }
)
"""Words that make a question something other than "may I do this?" (negated, an
alternative, about the past or the opposite, a value excluded, the call deferred,
conditional or set for a time, or one a yes to which says "don't"): a yes to it approves
nothing."""


def _at_a_clock_time(word: str) -> bool:
    """A word like ``5pm`` or ``11am``: the question sets a time for the call."""
    return word[-2:] in ("am", "pm") and word[:-2].isdigit()


DEFERRALS = _DEFERRING | {"wait", "hold", "first", "later", "unless"}
"""Words that, in the assistant's message before its question, defer or condition what it
asks ("I'll wait until Bob signs off. May I delete planner?"): the user's yes answers the
question as the message frames it, so it approves nothing now (:func:`deferred`)."""


def deferred(
    msgs: Sequence[Message], asker: Message, question: str, values: list[str]
) -> str | None:
    """The first deferral word the assistant wrote in its turn before the question, or None.

    The turn is the asking message's text before its final question and every assistant
    message since the user last spoke (the user read them all: a deferral split into its
    own message still frames the question). Read as words (:data:`DEFERRALS`), not
    parsed: a preamble that merely describes the past with one of them ("last used before
    2020") also voids the yes (fail closed; ask the question alone). The call's own values
    quoted whole are names, not words of the sentence (:func:`_unquoted`).
    """
    turn = [asker.text[: max(0, asker.text.rfind(question))]]
    for m in reversed(msgs[: asker.index]):
        if m.role == "user":
            break
        if m.role == "assistant":
            turn.append(m.text)
    if any(_look_alike(text, values) for text in turn):
        return "a look-alike letter"  # "I'll wаit": a deferral the lexicon cannot see
    return next(
        (
            w
            for text in turn
            if (w := _stop_in(tokens(_unquoted(text, values)), DEFERRALS, False)) is not None
        ),
        None,
    )


def plain_question(question: str, values: list[str]) -> bool:
    """A question a yes can approve: nothing hidden, negated, alternative or deferred.

    No invisible or direction character (shown otherwise than it reads), no word of
    :data:`QUESTION_STOPS` and no "...n't" outside the call's own `values` written in
    quotes or code marks (:func:`_unquoted`: the project `` `Day planner` `` is a name, not
    a time; unquoted, "Day planner" reads as one).
    """
    if any(unicodedata.category(ch) == "Cf" for ch in question):
        return False  # shown otherwise than it reads: never what the user saw
    if _hides_text(question) or _look_alike(question, values):
        return False
    text = _unquoted(question, values)
    return _stop_in(_asking_leave(tokens(text)), QUESTION_STOPS) is None and not _sets_a_date(text)


_LEAVE = frozenset({"ok", "okay", "alright", "fine"})


def _asking_leave(words: list[str]) -> list[str]:
    """The words without the "if" of "is it OK if I ...": it asks leave, it sets no condition.

    Only after OK/okay/alright/fine and before "I" or "we"; any other "if" stays a stop.
    """
    return [
        w
        for i, w in enumerate(words)
        if not (
            w == "if"
            and 0 < i < len(words) - 1
            and words[i - 1] in _LEAVE
            and words[i + 1] in ("i", "we")
        )
    ]


def _sets_a_date(text: str) -> bool:
    """A clock time ("17:00"), "p.m." or a year after "in"/"by"/"on" ("on 2026-12-24").

    Such a question sets a time for the call, as "at 5pm" does; month names are stop words
    (May left out: it is the question's own verb). A dash or a slash between digits is
    not read as a date (phone numbers, invoice numbers). Linear scans.
    """
    if any(_clock_at(text, i) for i in range(1, len(text) - 2) if text[i] == ":"):
        return True
    words = tokens(text)
    return any(
        (w in ("a", "p") and nxt == "m" and prev.isdigit())
        or (len(w) == 4 and w.isdigit() and prev in ("in", "by", "on"))
        for prev, w, nxt in zip(["", *words[:-1]], words, [*words[1:], ""], strict=True)
    )


def _clock_at(text: str, colon: int) -> bool:
    """``H:MM`` or ``HH:MM`` around `colon`, standing alone (not ``10.0.0.1:22``, ``1:8080``)."""
    start = colon - 1
    while start > 0 and colon - start < 2 and text[start - 1].isdigit():
        start -= 1
    hour, minute = text[start:colon], text[colon + 1 : colon + 3]
    before = text[start - 1] if start else " "
    after = text[colon + 3 : colon + 4] or " "
    return (
        hour.isdigit()
        and minute.isdigit()
        and len(minute) == 2
        and int(hour) <= 24
        and int(minute) < 60
        and not (before.isalnum() or before in ".:")
        and not (after.isalnum() or after == ":")
    )


_LOOK_ALIKE_SCRIPTS = ("CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC")
"""Scripts with letters that look like Latin ones (``а``, ``ο``, ``е``)."""


def _look_alike(question: str, values: list[str]) -> bool:
    """A word outside the call's own values with a letter of a look-alike script.

    "the reminder аbout planner" (a Cyrillic ``а``) reads "about" to the user but is no
    qualifier to the guard, and "іf" no condition: the lexicons are English, so such a
    letter outside a value (a project ``Москва`` stays named) is a question shown
    otherwise than it reads (fail closed).
    """
    own = {w for value in values for w in value.split()}
    return any(
        ch.isalpha() and unicodedata.name(ch, "").startswith(_LOOK_ALIKE_SCRIPTS)
        for w in phrase_words(question)
        if w not in own
        for ch in w
    )


_QUOTE_PAIRS = (("`", "`"), ('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("«", "»"))


def _unquoted(question: str, values: list[str]) -> str:
    """The question without the call's own values where it quotes them whole.

    Only a quoted value is shown to the user as one name; the words of an unquoted one
    ("May I delete planner tomorrow?" for the project ``planner tomorrow``) read as the
    sentence's own. One replace per value and quote pair: linear.
    """
    text = unicodedata.normalize("NFKC", question)
    for value in values:
        for left, right in _QUOTE_PAIRS:
            text = text.replace(f"{left}{value}{right}", " ")
    return text


def _hides_text(text: str) -> bool:
    """Markup a chat may render without its text: an HTML tag or comment, a Markdown link.

    ``<span hidden>planner2</span>`` and ``[](planner2)`` show nothing, yet their words
    would name a value; a question holding them is not what the user read (one scan).
    """
    for i, ch in enumerate(text[:-1]):
        after = text[i + 1]
        if (ch == "<" and (after.isalpha() or after in "/!?")) or (ch == "]" and after == "("):
            return True
    return False
