"""Words with which a user takes a request back, or replaces it with another.

"Pay X. Actually, don't." takes the request for X back in a sentence of its own; a careful
reader hears the same in "Pay X — kidding, don't.", "Pay X, no wait, don't." (a clause of
the same sentence) and "Pay X. On second thought, pay Y instead." (a later request that
replaces it), and in the other ways a person takes an order back: "Nah.", "Hold off.",
"Belay that.", "Scrap that.", "I changed my mind.", "Forget I said that.", "Later.".
:mod:`guardagent.trace.found.requests` reads each message's clauses and sentences; this module
only says which run of words withdraws or replaces, so that the request reader stays one
pass and each lexicon lives in one place.

Fail closed: a word list of taking back is enough ("Pay X, don't forget." is read as a
take-back, as its sentence form "Pay X. Don't forget." already was); two readings are kept
a request because a careful human hears them so: a clause that starts with "then" or "and"
continues the request ("pay X, then stop"), and "don't wait" or "never stop" urges it.
"""

from __future__ import annotations

NEGATIONS = frozenset(
    {
        "not",
        "no",
        "never",
        "nothing",
        "none",
        "neither",
        "nor",
        "without",
        "ignore",
        "ignoring",
        "skip",
        "avoid",
        "except",
        "excluding",
        "instead",
        "rather",
        "stop",
        "cancel",
        "refrain",
        "nevermind",
        "cannot",
        "leave",
        "dont",
        "doesnt",
        "didnt",
        "cant",
        "wont",
        "shouldnt",
        "mustnt",
        "isnt",
    }
)
"""Words that point away from what their clause names (any "...n't" too)."""

TAKING_BACK = frozenset(
    {
        "actually",
        "no",
        "nope",
        "do",
        "not",
        "never",
        "mind",
        "nevermind",
        "cancel",
        "that",
        "this",
        "it",
        "scratch",
        "wait",
        "forget",
        "stop",
        "hold",
        "on",
        "ignore",
        "sorry",
        "please",
        "oh",
        "hmm",
        "neither",
        "none",
        "of",
        "them",
        "these",
        "those",
        "after",
        "all",
        "ok",
        "okay",
        "then",
        "the",
        "above",
        "request",
        "just",
        "kidding",
        "joking",
        "jk",
        "second",
        "thought",
        "thoughts",
        "nah",
        "off",
        "belay",
        "disregard",
        "undo",
        "scrap",
        "strike",
        "i",
        "changed",
        "my",
        "said",
        "later",
        "psych",
        "let's",
        "now",
        "though",
        "yet",
        "right",
        "nvm",
        "really",
        "pls",
        "plz",
    }
)
"""Words a sentence (or clause) that only takes back may hold."""
TAKES_BACK = frozenset(
    {
        "no",
        "nope",
        "not",
        "never",
        "cancel",
        "scratch",
        "forget",
        "stop",
        "ignore",
        "neither",
        "none",
        "nevermind",
        "wait",
        "hold",
        "kidding",
        "joking",
        "jk",
        "nah",
        "belay",
        "disregard",
        "undo",
        "scrap",
        "strike",
        "changed",
        "later",
        "psych",
        "nvm",
    }
)
"""A run of :data:`TAKING_BACK` words with one of these takes back what came before."""

_REPLACING = frozenset({"instead", "rather"})
"""A clause of these alone ("Pay Y instead.", "Instead, pay Y.") replaces an earlier request."""
_CONTINUING = frozenset({"then", "and"})
"""A clause that starts with one of these goes on with the request ("pay X, then stop")."""
_URGED = frozenset({"wait", "stop", "hold", "hesitate"})
"""After a negation other than "no", these urge the request on ("don't wait", "never stop")."""


def negative(word: str) -> bool:
    """A word that points away from what its clause names ("not", "never", "don't")."""
    return word in NEGATIONS or word.endswith("n't")


def takes_back_words(words: list[str], mention: str) -> bool:
    """Whether a sentence only takes back ("Actually, don't.", "Never mind.", "No wait").

    `mention` is the token that stands for a named thing: a sentence naming one asks or
    refuses something of its own, it does not only take back.
    """
    return (
        bool(words)
        and mention not in words
        and all(w in TAKING_BACK or negative(w) for w in words)
        and any(w in TAKES_BACK or negative(w) for w in words)
    )


def withdraws(clause: list[str], before: list[str], after: list[str], mention: str) -> bool:
    """Whether one clause takes back the requests before it ("kidding", "no wait", "don't").

    As :func:`takes_back_words`, except a bare "instead" (it replaces: :func:`replaces`), a
    clause that continues the request, itself or after a clause of "then" alone ("pay X,
    then stop"), and one that urges it ("don't wait"; a negation starts a clause of its own,
    so `before` and `after`, the clauses beside it in its sentence, are read with it).
    """
    if not takes_back_words(clause, mention) or all(w in _REPLACING for w in clause):
        return False
    if clause[0] in _CONTINUING or (before and all(w in _CONTINUING for w in before)):
        return False
    words = before[-1:] + clause + after[:1]
    return not any(
        negative(w) and w not in ("no", "nope") and words[i + 1] in _URGED
        for i, w in enumerate(words[:-1])
    )


def replaces(clause: list[str], opening: frozenset[str]) -> bool:
    """Whether a clause is a bare "instead" (or "rather"): its sentence's request replaces.

    `opening` are the words that may stand before it ("so instead").
    """
    rest = [w for w in clause if w not in opening]
    return bool(rest) and all(w in _REPLACING for w in rest)
