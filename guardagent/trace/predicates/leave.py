"""Whether a question asks the user's leave for the assistant's own act: this call's act.

A user's "yes" approves what the question asked leave for, and only a question of that
form asks leave. "Do you think Bob would delete the project planner?", "Did you delete
it?", "Is it safe to delete it?" and "May Bob delete it?" name the tool and its value, yet
a yes to them says something about Bob, the past or safety, not "go ahead". "May I ask Bob
to delete it?", "Shall I decline to delete it?" and "May I draft a plan to delete it?" ask
leave for another act that only holds this one. "The email asks: may I delete it?" or a
question in quotes reports someone else's question. So a question approves a call only in
this form (:func:`why_not_leave`), read over its words (NFKC, lower case, punctuation
dropped: :func:`~.tool_words.clean`):

- it starts with a letter or a digit (Markdown emphasis aside): not a quote, a ``>`` line
  or a bracket;
- then, after a clause of purpose ("To free up space, ...": :func:`_purpose`) or a few
  words of transition (:data:`OPENERS`: "So,", "Great.", "OK,"), a frame
  that asks leave for the assistant's own act (:data:`FRAMES`: "may I", "shall we", "do you
  want me to", "is it OK if I", "okay to", "am I allowed to") or none ("Delete the project
  planner?");
- after a clause mark that closes the act, no report, hedge or name (:data:`TAIL_STOPS`:
  not "..., Bob?", "..., in theory?", "... (asking for a friend)?", "..., the email
  asks?"; a description of the object stays: "..., last changed on 03/04?": :func:`_tail`);
- then, after adverbs of manner or time (:data:`BETWEEN`: "now", "permanently") and the
  words of the call's own flags ("force-delete"), a word of the tool's name: the act asked
  leave for is the tool's. With ``match="either"`` (the tool need not be named), any word
  may stand there after a frame, so long as no word of the tool's name comes later ("May I
  remove planner for good?", never "May I ask Bob to delete planner?").

Whitelists, English, fail closed: a hedge ("Hypothetically, may I ...?"), another subject
("May Bob ...?") or another frame is no leave asked; the guard then names the question to
ask. Courtesy lead-ins ("go ahead and", "proceed with deleting") are dropped before
(:mod:`.lead_ins`). One pass over the question's words.
"""

from __future__ import annotations

from collections.abc import Iterable

from guardagent.trace.predicates.tool_words import clean, tool_named

__all__ = ["BETWEEN", "FRAMES", "OPENERS", "why_not_leave"]

_FINE = ("ok", "okay", "alright", "all right", "fine")
FRAMES: tuple[tuple[str, ...], ...] = tuple(
    tuple(f.split())
    for f in (
        "may i",
        "can i",
        "could i",
        "shall i",
        "should i",
        "might i",
        "may we",
        "can we",
        "could we",
        "shall we",
        "should we",
        "do you want me to",
        "do you want us to",
        "would you like me to",
        "would you like us to",
        "want me to",
        "you want me to",
        "am i allowed to",
        "are we allowed to",
        "am i cleared to",
        "good to",
        "do i have your permission to",
        "do i have permission to",
        "do we have your permission to",
        *(
            f"{lead}{fine} {tail}"
            for fine in _FINE
            for lead in ("", "is it ", "would it be ")
            for tail in ("if i", "if we", "to")
        ),
        *(f"am i {fine} to" for fine in _FINE),
        *(f"do i have your {fine} to" for fine in _FINE),
    )
)
"""Word runs that ask the user's leave for the assistant's (or "our") own act."""

OPENERS = frozenset(
    {
        "so",
        "ok",
        "okay",
        "alright",
        "great",
        "now",
        "then",
        "and",
        "also",
        "finally",
        "lastly",
        "next",
        "perfect",
        "sure",
        "well",
        "good",
        "right",
        "hi",
        "hey",
        "understood",
        "quick",
        "question",
    }
)
"""Transition words a question may start with before its frame ("So, may I ...?")."""

BETWEEN = frozenset(
    {
        "now",
        "also",
        "just",
        "then",
        "please",
        "kindly",
        "permanently",
        "quickly",
        "safely",
        "finally",
        "immediately",
        "go",
        "ahead",
        "and",
    }
)
"""Adverbs a question may hold between its frame and the act ("may I now delete")."""

_LEAD = " \t\r\n*_~"
"""Markup a chat shows around a question without changing what it asks (emphasis)."""


def _frame_at(words: list[str], i: int) -> int:
    """The length of the frame starting at `i` (0: none)."""
    return max((len(f) for f in FRAMES if tuple(words[i : i + len(f)]) == f), default=0)


def _purpose(question: str) -> int:
    """How many words a leading clause of purpose holds ("To free up space, may I ...").

    A clause up to the first comma that starts with "to" or "in order to" says why, not who
    acts or what is asked: the frame may follow it. Any other leading clause ("Hypothetically,
    ...") is read as part of the question, where no frame stands first (fail closed).
    """
    clause, comma, _ = question.partition(",")
    words = clean(clause).split()
    return len(words) if comma and words[:1] == ["to"] or words[:3] == ["in", "order", "to"] else 0


def _is_tool_word(word: str, tool: list[str], similarity: float) -> bool:
    return any(tool_named(t, word, similarity) for t in tool)


TAIL_STOPS = frozenset(
    {
        # reported: "..., Bob asks?", "... (says the email)?", "... - Bob wants to know?"
        "asks",
        "asked",
        "ask",
        "asking",
        "says",
        "said",
        "say",
        "wonders",
        "wondering",
        "wants",
        "wanted",
        "know",
        "quote",
        "quoting",
        "according",
        "writes",
        "wrote",
        "requests",
        # hedged: "..., in theory?", "... (asking for a friend)?", "..., you reckon?"
        "theory",
        "theoretically",
        "hypothetically",
        "hypothetical",
        "principle",
        "kidding",
        "joking",
        "jk",
        "lol",
        "friend",
        "curious",
        "curiosity",
        "reckon",
        "think",
        "guess",
        "suppose",
        "imagine",
        "rhetorical",
        "rhetorically",
        "speaking",
        "pretend",
        "pretending",
        "simulation",
        "simulated",
        "test",
        "testing",
        "drill",
        "example",
    }
)
"""Words that, after a clause mark closing the act, make the question another's or not
meant: reported, hedged, hypothetical."""
_CLAUSE_MARKS = ",;(—–"


def _tail(question: str, act: str, values: Iterable[str]) -> str | None:
    """What follows the act after a clause mark, when it reports, hedges or turns to a name.

    "May I delete planner, Bob?", "..., in theory?", "... (asking for a friend)?", "...,
    the email asks?": a yes to a question reported, hedged or put to someone else is no
    leave. A description of the object stays ("..., last changed on 03/04?", "... (ticket
    2024-001)?"). The call's own values are taken out first (a body may hold commas), and
    a comma between digits groups them ("CHF 4,950"). Returns the tail's first words.
    """
    text = question
    for value in values:
        text = text.replace(value, " ")
    at = text.casefold().find(act)
    marks = [i for i in range(max(at, 0), len(text)) if _closes(text, i)]
    if not marks:
        return None
    rest = clean(text[marks[0] + 1 :]).split()  # every tail after the act: one reading
    last = text[marks[-1] + 1 :].strip(" )?!.")
    named = " " not in last and last[:1].isupper() and last.isalpha()  # ", Bob?"
    return " ".join(rest[:6]) if named or any(w in TAIL_STOPS for w in rest) else None


def _closes(text: str, i: int) -> bool:
    """A clause mark at `i`: a comma (not between digits), a bracket, a dash between spaces."""
    c = text[i]
    if c == "-":
        return text[i - 1 : i] == " " and text[i + 1 : i + 2] == " "
    return c in _CLAUSE_MARKS and not (
        c == "," and text[i - 1 : i].isdigit() and text[i + 1 : i + 2].isdigit()
    )


def why_not_leave(
    question: str,
    tool: str,
    similarity: float,
    either: bool,
    flags: Iterable[str] = (),
    values: Iterable[str] = (),
) -> str | None:
    """Why a question asks no leave for this call's act (for the fact), or None if it does.

    Args:
        question: The final question, its courtesy lead-ins dropped.
        tool: The tool's name as words ("delete project").
        similarity: How close a misspelt tool word must be (as the tool's naming).
        either: The tool need not be named (``match="either"``).
        flags: The words of the call's flag names ("force"), which may precede the act.
        values: The call's untyped values as the question writes them (names, bodies).
    """
    head = question.lstrip(_LEAD)[:1]
    if not head.isalnum():
        return "it does not start as a question of the assistant's own (a quote, a quoted line)"
    words, names, allowed = clean(question).split(), tool.split(), BETWEEN | frozenset(flags)
    i = _purpose(question)
    while i < len(words) and not _frame_at(words, i) and words[i] in OPENERS:
        i += 1
    framed = _frame_at(words, i)
    i += framed
    while i < len(words) and words[i] in allowed:
        i += 1
    if i >= len(words):
        return "it names no act after asking leave"
    tail = _tail(question, words[i], values)
    if tail is not None:
        return f"it adds {tail!r} after the act (another addressee, a hedge, a report)"
    if _is_tool_word(words[i], names, similarity):
        return None
    if either and framed and not any(_is_tool_word(w, names, similarity) for w in words[i:]):
        return None
    return (
        f"it does not ask leave for the assistant's own act ({words[i]!r} stands where "
        '"may I", "shall I" or "do you want me to" and the tool\'s verb would)'
    )
