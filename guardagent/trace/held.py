"""A request held until someone acts or a time comes: not a request now.

"Pay X once I confirm" was read as held (the user has not asked yet). A careful reader
hears the same whoever is to act and whenever: "Pay X once Bob approves", "Pay X provided
the vendor confirms", "Pay X, unless it's spam", "Pay X tomorrow", "Pay X next week". The
user asks for it later, or on a condition the guard cannot check, so nothing is asked now
(:mod:`guardagent.trace.requests` reads the sentence's mentions as refused, so no document
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

HOLDING = frozenset({"once", "after", "when", "whenever", "until", "till", "unless",
                     "provided", "providing", "assuming", "pending"})  # fmt: skip
"""Words that hold what their sentence asks until something happens."""
PHRASES: tuple[tuple[str, ...], ...] = (("as", "soon", "as"), ("as", "long", "as"),
                                         ("so", "long", "as"), ("in", "case"),
                                         ("on", "condition"), ("subject", "to"))  # fmt: skip
"""Runs of words that hold it (each word harmless alone)."""
OWN = frozenset({"you", "you're", "you've", "you'll", "you'd", "your", "yourself", "that",
                 "this", "which", "done", "finished", "complete", "completed", "ready",
                 "possible", "convenient", "practical", "feasible"})  # fmt: skip
"""After a word of holding, words that make the condition the assistant's own work."""
_ASKING_NEWS = frozenset({"me", "us", "know"})
"""Before "when", words of a request for news ("tell me when", "let me know when")."""
LATER = frozenset({"tomorrow", "tonight", "later", "eventually", "someday", "sometime",
                   "tmrw", "tmr", "afterwards", "postpone", "postponed"})  # fmt: skip
"""Words of a time later than now."""
DEADLINE = frozenset({"due", "by", "before", "expires", "expire", "expiring", "deadline",
                      "is", "was", "ends", "closes", "latest", "for", "the", "of", "from",
                      "starting", "until"})  # fmt: skip
"""Before a later time, words that make it a deadline ("it's due tomorrow") or what is
asked for ("the rent for next month"), not a delay."""
_NEXT = frozenset({"week", "month", "year", "time", "weekend", "quarter", "monday",
                   "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
                   "cycle", "period", "sprint"})  # fmt: skip
"""After "next": a later time ("next week"), not an order ("the next invoice")."""


def held(words: list[str]) -> str | None:
    """The word or phrase of holding in a sentence's words (module doc), or None.

    Args:
        words: The sentence's words, lower case, in order (a mention stands as one word).
    """
    for i, w in enumerate(words):
        after = words[i + 1] if i + 1 < len(words) else ""
        before = words[i - 1] if i else ""
        if w in HOLDING and after and after not in OWN and not (
                w == "when" and before in _ASKING_NEWS):  # fmt: skip
            return w
        for p in PHRASES:
            if tuple(words[i:i + len(p)]) == p:
                rest = words[i + len(p):i + len(p) + 1]
                if rest and rest[0] not in OWN:
                    return " ".join(p)
    return None


def later(words: list[str]) -> str | None:
    """The word of a later time in a clause's words ("pay X tomorrow"), or None.

    Read in the request's own clause: "Pay X and I'll check it later" asks now.
    """
    for i, w in enumerate(words):
        after = words[i + 1] if i + 1 < len(words) else ""
        before = words[i - 1] if i else ""
        if (w in LATER or (w == "next" and after in _NEXT)) and before not in DEADLINE:
            return w if w in LATER else f"next {after}"
    return None
