"""What a question writes right after a value: another thing, or a scope the call lacks.

"May I delete the project planner *tasks*?" asks about the tasks of planner, and "May I
delete the project planner *from the staging server*?" about planner on staging only:
``delete_project("planner")`` carries neither (it may delete production's). A yes to such a
question approves no call (:func:`followed_by_another`), as one that writes the value only
to qualify another noun does (:mod:`.qualified`, which reads the words *before* it).

Without a parser of English this reads the word right after each whole-word occurrence of
the value in the question as shown (its punctuation kept): the value must end its clause
(a ``?``, a comma, a bracket, an emoji, the end; the tool's or an argument's name words
passed over first: "the planner *project*?"), or be followed by a word of
:data:`FOLLOWERS` ("now", "please", "permanently"), or by a preposition whose object is
another of the call's own values or flags ("move planner *to* archive", "remove bob *from*
the project planner", "delete planner *with* force"). Any other word (a noun, "in the test
workspace", "on Bob's account") fails closed: ask about the value alone. Each occurrence
reads at most :data:`LOOK_AHEAD` characters after it, so the scan is linear.
"""

from __future__ import annotations

from guardagent.trace.predicates.qualified import DETERMINERS, ROLES, words_of

__all__ = ["FOLLOWERS", "LOOK_AHEAD", "followed_by_another"]

FOLLOWERS = frozenset(
    {
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
)
"""Words after a value that add no object nor scope ("delete planner *now*", "*right*
now"); "for" only in "for good" (else it may set an owner: "planner *for* Bob")."""

LEADS = ROLES | {"to", "into", "as"}
"""Prepositions that may give another of the call's values its role ("planner *to* archive")."""

LOOK_AHEAD = 120
"""Characters after an occurrence of the value read for what follows it."""

_CLOSERS = "\"'`)]}»”’*_"
"""Quotes, brackets and emphasis closing around a value (``planner``)."""


def followed_by_another(
    value: str, text: str, passed: frozenset[str], others: frozenset[str]
) -> bool:
    """Whether some whole-word occurrence of `value` in `text` is followed by another thing.

    Args:
        value: The value as the question writes it (case as compared).
        text: The question as shown (NFKC, punctuation kept; case as compared).
        passed: Words passed over after a preposition before another value (case-folded):
            the call's tool and argument name words; determiners always are.
        others: The words of the call's other values and flags (case-folded).

    Returns:
        True when every occurrence is followed by a word that is neither a follower, nor
        another of the call's values, nor a preposition leading to one (fail closed: the
        yes was to another thing, or to a narrower one); False when one occurrence ends as
        the thing itself ("delete planner, the copy of planner included"), or none is found.
    """
    if not value:
        return False
    at = text.find(value)
    found = False
    while at >= 0:
        end = at + len(value)
        before = text[at - 1] if at else " "
        after = text[end] if end < len(text) else " "
        if not _in_word(before) and not _in_word(after, trailing=True):
            found = True
            if not _another_after(text[end : end + LOOK_AHEAD], passed, others):
                return False  # an occurrence that ends as the thing itself
        at = text.find(value, at + 1)
    return found


def _in_word(ch: str, trailing: bool = False) -> bool:
    """Whether `ch` next to an occurrence makes it part of a longer word (not the value).

    After the value, a ``'`` or a ``.`` followed by more is still read by what follows it
    (:func:`_another_after`); only letters, digits and the marks of a word glue.
    """
    return ch.isalnum() or ch in ("@_" if trailing else "@_/.'-")


def _another_after(rest: str, passed: frozenset[str], others: frozenset[str]) -> bool:
    """Whether the text right after an occurrence names another thing or a scope."""
    while True:  # each turn passes one of the tool's or arguments' name words: "planner project"
        closed = rest.lstrip(_CLOSERS)
        if rest[:2] in ("'s", "’s") or closed[:2] in ("'s", "’s"):
            return True  # "planner's tasks", "the planner project's tasks": another thing's
        stripped = closed.lstrip()
        if not stripped or not stripped[0].isalnum():
            return False  # the value ends its clause: "?", ",", "(", an emoji, the end
        end = next(
            (i for i, ch in enumerate(stripped) if not (ch.isalnum() or ch in "@._")), len(stripped)
        )
        word = stripped[:end].casefold()
        if word not in passed or word in others:
            break
        rest = stripped[end:]
    words = words_of(stripped)
    first, second = words[0], words[1] if len(words) > 1 else ""
    if first in FOLLOWERS or first in others or (first, second) == ("for", "good"):
        return False  # "planner now", "planner force=true" (the call's own flag)
    if first not in LEADS:
        return True  # a noun ("planner tasks") or any word not known to add nothing
    i = 1
    while (
        i < len(words)
        and words[i] not in others
        and (words[i] in DETERMINERS or words[i] in passed)
    ):
        i += 1
    return i == len(words) or words[i] not in others  # a scope, or nothing read: closed
