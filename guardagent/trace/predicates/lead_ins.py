"""Courtesy an assistant writes around its question, read as what it is: no other request.

"Can I go ahead and delete the project `planner`?" and "Do you want me to proceed with
deleting the project `planner`?" ask exactly "may I delete planner now?"; the "and" of "go
ahead and" joins no second request and "deleting" is the tool's own verb. So before a
question is read for what it names, :func:`without_lead_ins` drops the lead-ins of
:data:`LEAD_INS` and reads "proceed with deleting" as "delete" (only the gerund of the
call's own verb: "proceed with archiving planner" still names no delete). After the
question, only an emoji or an exact closer of :data:`CLOSERS` ("Let me know.") may follow
(:func:`closing_only`): any other text is what the user may have answered instead.
Whole words, compared case-folded; one pass each.
"""

from __future__ import annotations

import unicodedata

__all__ = ["CLOSERS", "LEAD_INS", "closing_only", "without_lead_ins"]

LEAD_INS = (("go", "ahead", "and"), ("proceed", "and"), ("proceed", "to"), ("go", "ahead", "to"))
"""Words before the tool's verb that ask leave and join no other request."""

_BEFORE_GERUND = (("proceed", "with"), ("go", "ahead", "with"))
"""Words before the gerund of the tool's verb ("proceed with deleting")."""

CLOSERS = frozenset(
    {
        "let me know",
        "please let me know",
        "thanks",
        "thank you",
        "thanks in advance",
        "please confirm",
    }
)
"""Text that may follow the final question without being what the user answered."""


def _gerunds(verb: str) -> frozenset[str]:
    """The -ing forms of `verb`: delete -> deleting, stop -> stopping, send -> sending."""
    if not verb:
        return frozenset()
    forms = {verb + "ing", verb + verb[-1] + "ing"}
    if verb.endswith("e") and not verb.endswith("ee"):
        forms.add(verb[:-1] + "ing")
    return frozenset(forms)


def without_lead_ins(question: str, verb: str) -> str:
    """The question with its courtesy lead-ins dropped (words joined by single spaces).

    Args:
        question: The assistant's final question as shown.
        verb: The tool's verb (case-folded: the first word of its name).
    """
    words = question.split()
    folded = [w.casefold() for w in words]
    gerunds = _gerunds(verb)
    out: list[str] = []
    i = 0
    while i < len(words):
        lead = next((p for p in LEAD_INS if tuple(folded[i : i + len(p)]) == p), None)
        if lead is not None:
            i += len(lead)
            continue
        before = next(
            (
                p
                for p in _BEFORE_GERUND
                if tuple(folded[i : i + len(p)]) == p
                and folded[i + len(p) : i + len(p) + 1]
                and folded[i + len(p)] in gerunds
            ),
            None,
        )
        if before is not None:
            out.append(verb)
            i += len(before) + 1
            continue
        out.append(words[i])
        i += 1
    return " ".join(out)


def closing_only(rest: str) -> bool:
    """Whether text after the final question is only an emoji or an exact closer.

    Symbols (an emoji, with its modifiers) and one closer of :data:`CLOSERS` ending in
    ``.`` or ``!``; an invisible character is not (fail closed).
    """
    text = rest.strip()
    if not text:
        return True
    if all(ch.isspace() or unicodedata.category(ch) in ("So", "Sk", "Mn") for ch in text):
        return True
    return " ".join(text.rstrip(".!").split()).casefold() in CLOSERS
