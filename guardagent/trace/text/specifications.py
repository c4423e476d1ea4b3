"""A sentence that says how the thing just asked for must be: part of the request.

"Please create a 1 hour event 'Follow-up' on May 19. The event should have the same
participants as the 'Kick-off' event." The second sentence states no fact about the world
and asks nothing new: it specifies the event the first one asked for, and names the event
whose participants to copy. A careful reader takes it as part of the request
(:mod:`guardagent.trace.found.requests` then reads a name in it as asked for).

A clause *specifies* when it is the first of its sentence and, after greetings and joining
words, reads ``<subject> <modal> ...``: the subject is a pronoun or a noun phrase that points
back at what was asked for ("it", "the event", "its guests", "the reply": a determiner of
:data:`LEADS` and at most three more words), the modal one of ``should``, ``must``,
``shall``, ``needs to``, ``has to``. It joins the request only when an earlier sentence of
the same message holds a request and nothing in a sentence after that request's, up to it
and its own sentence included, is refused, doubted or asked (the caller's verdicts; a
condition inside the request's own sentence, "at 10:00, or 16:00 if 10:00 is taken",
qualifies a detail of a request that stands; a negation there does not: "Do not create an
event. The event should ..." specifies nothing). So these ask for nothing:
a "should" with no request before it ("The event should have ..."), a question ("Should it
have ...?"), a doubt ("If you can, it should ..."), a negation ("It should not ..."), someone
else's words ("Bob said the event should ..."), a "should" about something else ("Someone
should look into X", "You should know that X ..."), or after a refused request.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from guardagent.trace.text.withdrawals import negative

LEADS = frozenset({"the", "it", "its", "this", "that", "their", "these", "those"})
"""Words a specifying clause's subject starts with (pointing back at what was asked for)."""
MODALS = frozenset({"should", "must", "shall"})
"""Modals that say how the thing asked for must be."""
_TO_MODALS = frozenset({"needs", "need", "has", "have"})
"""Modals that take ``to`` ("needs to", "has to")."""
_SUBJECT_WORDS = 3


def _modal_at(words: list[str], k: int) -> bool:
    if k >= len(words):
        return False
    return words[k] in MODALS or (words[k] in _TO_MODALS and words[k + 1 : k + 2] == ["to"])


def specifies(words: list[str], opening: Set[str]) -> bool:
    """Whether a clause's words read ``<subject pointing back> <modal> ...`` (module docstring)."""
    n = 0
    while n < len(words) and words[n] in opening:
        n += 1
    if n >= len(words) or words[n] not in LEADS:
        return False
    if words[n] == "it":
        return _modal_at(words, n + 1)
    return any(_modal_at(words, k) for k in range(n + 1, min(n + 2 + _SUBJECT_WORDS, len(words))))


def specified(
    clauses: Mapping[int, list[str]],
    sentence_of: Mapping[int, int],
    verdicts: Mapping[int, str],
    opening: Set[str],
) -> list[int]:
    """The clauses that specify an earlier request of the same message (to read as requests).

    Args:
        clauses: Each clause's words (lower case), by clause number.
        sentence_of: Each clause's sentence number.
        verdicts: Each clause's verdict so far (``request``, ``said``, ...).
        opening: The words skipped before a clause's subject (greetings, "please", "and").
    """
    found: list[int] = []
    asked_in = -1  # the sentence of the last request
    spoiled = False  # a refusal, a doubt or a question in a sentence after it
    for c in sorted(clauses):
        verdict = verdicts[c]
        first = c - 1 not in sentence_of or sentence_of[c - 1] != sentence_of[c]
        asked_before = asked_in >= 0
        if verdict == "request":
            asked_in, spoiled = sentence_of[c], False
        elif verdict in ("refused", "asked") and (
            sentence_of[c] != asked_in or any(negative(w) for w in clauses[c])
        ):
            spoiled = True  # (a doubt within the request's sentence qualifies a detail of it)
        elif (
            first
            and asked_before
            and not spoiled
            and verdict == "said"
            and specifies(clauses[c], opening)
            and not _spoiled_later(clauses, sentence_of, verdicts, c)
        ):
            found.append(c)
    return found


def _spoiled_later(
    clauses: Mapping[int, list[str]],
    sentence_of: Mapping[int, int],
    verdicts: Mapping[int, str],
    c: int,
) -> bool:
    """Whether a later clause of the same sentence is refused, doubted or asked."""
    d = c + 1
    while d in clauses and sentence_of[d] == sentence_of[c]:
        if verdicts[d] in ("refused", "asked"):
            return True
        d += 1
    return False
