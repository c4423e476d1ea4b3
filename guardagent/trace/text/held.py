"""A request held until someone acts or a time comes: not a request now.

"Pay X once I confirm" was read as held (the user has not asked yet). A careful reader
hears the same whoever is to act and whenever: "Pay X once Bob approves", "Pay X provided
the vendor confirms", "Pay X, unless it's spam", "Pay X tomorrow", "Pay X next week". The
user asks for it later, or on a condition the guard cannot check, so nothing is asked now
(:mod:`guardagent.trace.found.requests` reads the sentence's mentions as refused, so no document
designates the thing either, until the user asks again).

Read over a sentence's words: a word of holding (:data:`HOLDING`: "once", "after", "when",
"until", "unless", "provided", "assuming") or a phrase of them ("as soon as", "in case", "as
long as") before any word but one that makes it the assistant's own work or its order
(:data:`OWN`: "once you're done", "after that", "when done", "as soon as possible"; and
"tell me when ..." asks for news, it holds nothing), anywhere in the sentence; a time later
than now in the request's own clause (:data:`LATER`: "tomorrow", "later", "next week";
"Pay X and I'll check later" asks now), unless it is a deadline or what is asked for
(:data:`DEADLINE`: "it's due tomorrow", "the rent for next month"). "if" and "whether"
are read by the request reader where they stand (a doubt of their clause). English lexicons;
a condition in another language is not seen. One pass over the words.
"""

from __future__ import annotations

from typing import NamedTuple

HOLDING = frozenset(
    {
        "once",
        "after",
        "when",
        "whenever",
        "until",
        "till",
        "unless",
        "provided",
        "providing",
        "assuming",
        "pending",
    }
)
"""Words that hold what their sentence asks until something happens."""
PHRASES: tuple[tuple[str, ...], ...] = (
    ("as", "soon", "as"),
    ("as", "long", "as"),
    ("so", "long", "as"),
    ("in", "case"),
    ("on", "condition"),
    ("subject", "to"),
)
"""Runs of words that hold it (each word harmless alone)."""
OWN = frozenset(
    {
        "you",
        "you're",
        "you've",
        "you'll",
        "you'd",
        "your",
        "yourself",
        "that",
        "this",
        "which",
        "done",
        "finished",
        "complete",
        "completed",
        "ready",
        "possible",
        "convenient",
        "practical",
        "feasible",
    }
)
"""After a word of holding, words that make the condition the assistant's own work."""
_ASKING_NEWS = frozenset({"me", "us", "know"})
"""Before "when", words of a request for news ("tell me when", "let me know when")."""
LATER = frozenset(
    {
        "tomorrow",
        "tonight",
        "later",
        "eventually",
        "someday",
        "sometime",
        "tmrw",
        "tmr",
        "afterwards",
        "postpone",
        "postponed",
    }
)
"""Words of a time later than now."""
DEADLINE = frozenset(
    {
        "due",
        "by",
        "before",
        "expires",
        "expire",
        "expiring",
        "deadline",
        "is",
        "was",
        "ends",
        "closes",
        "latest",
        "for",
        "the",
        "of",
        "from",
        "starting",
        "until",
    }
)
"""Before a later time, words that make it a deadline ("it's due tomorrow") or what is
asked for ("the rent for next month"), not a delay."""
_COUNTS = frozenset(
    {
        "a",
        "an",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "few",
        "couple",
        "several",
    }
)
_SPANS = frozenset(
    {
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
        "year",
        "years",
        "fortnight",
        "bit",
        "while",
    }
)
_NOT = frozenset({"not", "no", "never", "dont", "without", "nt"})
_NEXT = frozenset(
    {
        "week",
        "month",
        "year",
        "time",
        "weekend",
        "quarter",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "cycle",
        "period",
        "sprint",
    }
)
"""After "next": a later time ("next week"), not an order ("the next invoice")."""


def held(words: list[str]) -> str | None:
    """The word or phrase of holding in a sentence's words (module doc), or None.

    Args:
        words: The sentence's words, lower case, in order (a mention stands as one word).
    """
    for i, w in enumerate(words):
        after = words[i + 1] if i + 1 < len(words) else ""
        before = words[i - 1] if i else ""
        if (
            w in HOLDING
            and after
            and after not in OWN
            and not (w == "when" and before in _ASKING_NEWS)
        ):
            return w
        for p in PHRASES:
            if tuple(words[i : i + len(p)]) == p:
                rest = words[i + len(p) : i + len(p) + 1]
                if rest and rest[0] not in OWN:
                    return " ".join(p)
    return None


def later(words: list[str]) -> str | None:
    """The words of a later time in a clause's words ("pay X tomorrow"), or None.

    Read in the request's own clause: "Pay X and I'll check it later" asks now. A later time
    is a word of :data:`LATER`, "next" or "on" before a time ("next week", "on Friday"),
    "in" before a count of time ("in a week", "in 2 days"), "at some point" or "the end of".
    """
    for i, w in enumerate(words):
        after = words[i + 1] if i + 1 < len(words) else ""
        then = words[i + 2] if i + 2 < len(words) else ""
        before = words[i - 1] if i else ""
        if (w, after) == ("end", "of") and not (i > 1 and words[i - 2] in DEADLINE - {"the"}):
            return "the end of"  # "at the end of the month", not "by the end of"
        if before in DEADLINE and w != "in":
            continue
        if w in LATER or (w in ("next", "on") and after in _NEXT):
            return w if w in LATER else f"{w} {after}"
        if w == "in" and (after in _COUNTS or after.isdigit()) and then in _SPANS:
            return f"in {after} {then}"
        if (w, after) in (("some", "point"), ("some", "day")):
            return f"{w} {after}"
    return None


def waits(words: list[str]) -> str | None:
    """A clause that asks to wait or to ask the user first ("but wait for Bob", "ask me first").

    "Wait" or "hold" not after a negation ("don't wait" urges), or "first" in a clause that
    holds "me" or "us" (the user wants a say before): the request beside it is held.
    """
    for i, w in enumerate(words):
        before = words[i - 1] if i else ""
        if w in ("wait", "hold") and not (before.endswith("n't") or before in _NOT):
            return w
        if w == "first" and ("me" in words or "us" in words):
            return "... me first"
    return None


CONDITIONS = frozenset(
    {
        "if",
        "unless",
        "whether",
        "provided",
        "providing",
        "assuming",
        "should",
        "depending",
        "pending",
        "supposing",
    }
)
"""Words that open a clause of condition ("if it is real", "should Bob agree")."""
_LEADING = frozenset({"and", "but", "or", "only", "so", "then", "just", "even"})


class Clause(NamedTuple):
    """One clause of a message as the request reader segmented it."""

    id: int
    words: list[str]  # lower case; a mention stands as one word
    start: int
    end: int
    request: bool


Sentence = list[Clause]
"""A sentence's clauses, in order."""
_COURTESY = frozenset({"thanks", "thank", "you", "please", "cheers", "ok", "okay", "bye"})


def governed(sentences: list[Sentence]) -> set[int]:
    """The ids of the request clauses a clause of condition or of waiting holds.

    A condition ("if it is real", "unless it's spam", "should Bob agree") holds the clause
    right after it in its sentence ("If it's legit, pay X"; "...; if anything is unclear,
    ask me" holds only "ask me"), courtesy aside, else the last request before it ("Pay X,
    if it is real"). A clause that asks to wait or to ask the user first (:func:`waits`:
    "but wait for Bob", "but ask me first") holds every request of its sentence, unless it
    goes on with the work ("then wait for the receipt").
    """
    found: set[int] = set()
    for clauses in sentences:
        asks = [c.id for c in clauses if c.request]
        for k, clause in enumerate(clauses):
            rest = [w for w in clause.words if w not in _LEADING]
            if rest[:1] and rest[0] in CONDITIONS and (rest[0] != "should" or len(rest) > 1):
                after = next((c for c in clauses[k + 1 :] if not set(c.words) <= _COURTESY), None)
                before = [q for q in asks if q < clause.id]
                found.update([after.id] if after is not None else before[-1:])
            if clause.words[:1] != ["then"] and waits(clause.words) is not None:
                found.update(asks)
    return found
