"""The user's answer: a plain, present yes to the question, and nothing else.

A yes approves the call only when it is unconditional and for now. "Yes, tomorrow.",
"Yes, if the backup worked.", "OK, once Bob signs off." and "Yes, delete notes." start with
a yes, yet approve something else: another time, a condition the guard cannot check, another
object. Conditions and deferrals have no end of spellings, so this is a whitelist of what a
plain yes is, not a list of what spoils one: the answer holds an affirmative
(:data:`AFFIRMATIVE`; "Thanks, go ahead" too) and every other word is courtesy
(:data:`COURTESY`: "please", "go ahead", "thanks", "do it", "now", "no worries") or
restates exactly this
call: a word of the tool's name
("delete", "project"), a pronoun for it ("it", "the", "this", "that"), or one of the call's
own untyped values, written whole and in its case ("Yes, delete planner", never "Planner"
or "planner2"). Any other word ("tomorrow", "if", "notes", "for", a number) makes it no
yes: the guard asks again (fail closed). A negation or reservation (:data:`NEGATIVE`), a
question mark and a symbol outside :data:`COURTESY_SYMBOLS` ("⏰") undo it too. English
only: an answer in another language is no yes.
"""

from __future__ import annotations

import unicodedata

from guardagent.trace.document.shapes import ToolCall
from guardagent.trace.predicates.naming import CallNames, phrase_words

__all__ = [
    "AFFIRMATIVE",
    "COURTESY",
    "COURTESY_SYMBOLS",
    "NEGATIVE",
    "REFERENCES",
    "not_a_plain_yes",
    "says_yes",
    "tokens",
]

AFFIRMATIVE: tuple[tuple[str, ...], ...] = tuple(
    tuple(p.split())
    for p in (
        "yes",
        "y",
        "yeah",
        "yep",
        "yup",
        "sure",
        "ok",
        "okay",
        "alright",
        "all right",
        "approved",
        "approve",
        "i approve",
        "confirmed",
        "confirm",
        "i confirm",
        "proceed",
        "please proceed",
        "go ahead",
        "please go ahead",
        "please do",
        "do it",
        "absolutely",
        "of course",
        "certainly",
        "definitely",
        "correct",
        "that's fine",
        "fine",
        "sounds good",
        "agreed",
        "i agree",
        "go for it",
    )
)
"""Phrases (whole words) that say yes: a plain yes holds one of them."""

COURTESY: tuple[tuple[str, ...], ...] = AFFIRMATIVE + tuple(
    tuple(p.split())
    for p in (
        "please",
        "thanks",
        "thank you",
        "thanks a lot",
        "thank you very much",
        "thx",
        "cheers",
        "go for it",
        "do so",
        "please do it",
        "you may",
        "you can",
        "now",
        "right now",
        "that's ok",
        "that's okay",
        "it's fine",
        "it's ok",
        "it's okay",
        "that is fine",
        "great",
        "perfect",
        "good",
        "cool",
        "exactly",
        "indeed",
        "of course",
        "by all means",
        "go ahead and",
        "please go ahead and",
        "that one",
        "this one",
        "i'm sure",
        "i am sure",
        "that's right",
        "that works",
        "works for me",
        "no problem",
        "no worries",
    )
)
"""The closed list of words a plain yes may hold beyond its restatement of the call."""

COURTESY_SYMBOLS = frozenset("👍✅👌🙂😊🙏✔☑\ufe0f") | frozenset(
    chr(c) for c in range(0x1F3FB, 0x1F400)
)  # skin tones
"""Symbols a plain yes may hold (a thumbs up, a check mark; skin tones, the emoji
selector): any other non-ASCII symbol ("👎", "⏰", "🔜") or an invisible character is
read as something the guard does not understand, so no yes (fail closed)."""

REFERENCES = frozenset({"it", "this", "that", "the"})
"""Words that refer back to the question's object ("Yes, delete it")."""

NEGATIVE = frozenset(
    {
        "no",
        "nope",
        "nah",
        "not",
        "never",
        "dont",
        "cancel",
        "stop",
        "wait",
        "hold",
        "abort",
        "reject",
        "rejected",
        "deny",
        "denied",
        "refuse",
        "negative",
        "neither",
        "nor",
        "without",
        "but",
        "instead",
        "except",
        "only",
        "unless",
        "later",
        "rather",
        "maybe",
        "perhaps",
    }
)
"""Words that make an answer something other than a plain yes (so never consent)."""


def tokens(text: str) -> list[str]:
    """Lower-case words of a text (letters, digits and apostrophes), in one pass."""
    text = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
    words, current = [], []
    for ch in text:
        if ch.isalnum() or ch == "'":
            current.append(ch)
        elif current:
            words.append("".join(current).strip("'"))
            current = []
    if current:
        words.append("".join(current).strip("'"))
    return [w for w in words if w]


def says_yes(text: str, call: ToolCall | CallNames | None = None) -> bool:
    """An answer that is a plain yes, to this call when given (see the module)."""
    return not_a_plain_yes(text, call) is None


def not_a_plain_yes(text: str, call: ToolCall | CallNames | None = None) -> str | None:
    """Why an answer is no plain yes (for the fact's detail), or None when it is one.

    Without `call`, only courtesy words may follow the yes; with it, the answer may also
    restate this call (its tool's words, "it", its own untyped values, exactly).
    """
    if "?" in text or "？" in text:
        return "it asks back"  # "Yes?", "OK, which one?" approve nothing
    odd = next(
        (
            c
            for c in text
            if not c.isascii()
            and c not in COURTESY_SYMBOLS
            and (unicodedata.category(c)[0] == "S" or unicodedata.category(c) == "Cf")
        ),
        None,
    )
    if odd is not None:
        return f"it holds {odd!r}, a sign the guard does not read"
    names = CallNames(call) if isinstance(call, ToolCall) else call
    bad = next(
        (w for w in tokens(_without_no_trouble(text)) if w in NEGATIVE or w.endswith("n't")), None
    )
    if bad is not None:  # anywhere, even inside a restated value: the user wrote it
        return f"it holds {bad!r}"
    words = tokens(" ".join(_without_values(text, names.phrases if names else [])))
    if not any(tuple(words[i : i + len(p)]) == p for i in range(len(words)) for p in AFFIRMATIVE):
        return "it holds no yes"  # "Thanks.", "Delete it." approve nothing
    allowed = COURTESY
    if names is not None:
        allowed += tuple((w,) for w in (*names.tool.split(), *REFERENCES))
    extra = _first_extra(words, allowed)
    return (
        None
        if extra is None
        else f"it adds {extra!r} (a yes with a condition, a time "
        "or another object is no yes to this call now)"
    )


NO_TROUBLE = ("no problem", "no worries")
"""Courtesy that holds "no" yet says yes, written as is ("Sure, no worries."): only these
exact words, one space apart, between non-letters ("No. Problem." keeps its "no")."""


def _without_no_trouble(text: str) -> str:
    """`text` (NFKC, lower case) with each :data:`NO_TROUBLE` phrase blanked out. Linear."""
    text = unicodedata.normalize("NFKC", text).lower()
    for phrase in NO_TROUBLE:
        kept, start, at = [], 0, text.find(phrase)
        while at >= 0:
            end = at + len(phrase)
            if (at == 0 or not text[at - 1].isalnum()) and not text[end : end + 1].isalnum():
                kept.append(text[start:at] + " ")
                start = end
            at = text.find(phrase, end)
        text = "".join(kept) + text[start:]
    return text


def _without_values(text: str, values: list[str]) -> list[str]:
    """A text's words, with each whole run of one of the call's values taken out.

    The values are compared as the question's words are (case and punctuation kept, quotes
    around dropped: :func:`~.naming.phrase_words`), so "Planner" or "planner2" stays in
    and is then no courtesy word. Linear: one pass per value.
    """
    words = phrase_words(text)
    for value in values:
        run = value.split()
        if not run:
            continue
        kept: list[str] = []
        i = 0
        while i < len(words):
            if words[i : i + len(run)] == run:
                i += len(run)
                continue
            kept.append(words[i])
            i += 1
        words = kept
    return words


def _first_extra(words: list[str], allowed: tuple[tuple[str, ...], ...]) -> str | None:
    """The first word no sequence of `allowed` phrases can cover, or None when all are.

    Every way of cutting the words into phrases is tried at once ("please do so": "please"
    then "do so", not "please do" then a stray "so"): one pass, each position reached once.
    """
    by_start: dict[str, list[tuple[str, ...]]] = {}
    for p in allowed:
        by_start.setdefault(p[0], []).append(p)
    reached = [False] * (len(words) + 1)
    reached[0] = True
    furthest = 0
    for i, word in enumerate(words):
        if not reached[i]:
            continue
        for p in by_start.get(word, ()):
            if tuple(words[i : i + len(p)]) == p:
                reached[i + len(p)] = True
                furthest = max(furthest, i + len(p))
    return None if reached[-1] else words[min(furthest, len(words) - 1)]
