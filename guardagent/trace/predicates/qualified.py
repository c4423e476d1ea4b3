"""A value a question writes only to say which *other* thing it asks about.

"May I delete the reminder about planner?" names the value ``planner``, yet the thing it
asks to delete is the reminder: a yes to it is no yes to ``delete_project("planner")``.
The question's object must be the call's object, so a value that appears only as the
complement of a preposition or a relative clause after another noun ("the copy *of*
planner", "the e-mail *mentioning* planner", "the note *that mentions* planner") names
another thing (:func:`about_another`).

Without a parser of English this reads the few words before each occurrence of the value:
determiners and the words of the tool's or the argument's name are passed over ("a
backup of *the project* planner"), and the word then reached decides. A qualifier
(:data:`QUALIFIERS`) makes that occurrence about another thing, unless the word right
before the qualifier is the tool's verb (the first word of its name), or another value of
the call before a qualifier of role (:data:`ROLES`): "a *delete of* planner", "remove *bob
from* the project planner", never "bob@x.ch *about* planner". The tool's
noun is no exception: "the project *about* planner" is some project whose topic is
planner, not the project ``planner`` (so "the email about Q3" approves no
``send_email(subject="Q3")`` either: fail closed). Any other word ("delete", "named", a
clause mark) leaves the value as the thing itself. A link, a file name or an address is
where a thing is or who gets it: only a topic qualifier makes it another thing's ("the
report *from* https://..." is the link's). A value inside a relative clause ("the project
*that* planner depends on", *which*, *whose*) is another thing's too, until the tool's verb
starts a new request (:func:`_relative_clauses`, one pass over the whole question). A value
followed by the noun it qualifies ("the planner reminder") is read by :mod:`.followed`; one
after a noun with no qualifier between ("the reminder planner") is not told apart
(docs/reference/traces.md, "Consent asked in the conversation": ask about the value itself).
Only :data:`LOOK_BACK` characters before each occurrence are
read for its qualifier, and a window that runs out before a word decides fails closed: linear in the
question, and padding cannot push a qualifier out of sight.
"""

from __future__ import annotations

from bisect import bisect_right

__all__ = [
    "DETERMINERS",
    "LINKED_BY_TO",
    "LOOK_BACK",
    "QUALIFIERS",
    "RELATIVES",
    "ROLES",
    "about_another",
    "words_of",
]

DETERMINERS = frozenset(
    {
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "my",
        "your",
        "our",
        "their",
        "its",
        "his",
        "her",
    }
)
"""Words passed over between a value and what introduces it."""

QUALIFIERS = frozenset(
    {
        # prepositions that attach a value to another noun: "the copy of planner"
        "of",
        "about",
        "regarding",
        "concerning",
        "re",
        "for",
        "from",
        "with",
        "within",
        "in",
        "inside",
        "on",
        "by",
        "under",
        "at",
        "per",
        "via",
        "around",
        "behind",
        "like",
        "near",
        "over",
        "toward",
        "towards",
        "between",
        "among",
        "against",
        "including",
        "involving",
        "mentioning",
        "referencing",
        "containing",
        "citing",
        "naming",
        "quoting",
        "listing",
        "describing",
        "discussing",
        "covering",
        "featuring",
        "showing",
        "matching",
        # relative clauses: "the note that mentions planner", "which references planner"
        "mention",
        "mentions",
        "mentioned",
        "reference",
        "references",
        "referenced",
        "contain",
        "contains",
        "contained",
        "cite",
        "cites",
        "cited",
        "concern",
        "concerns",
        "concerned",
        "involve",
        "involves",
        "involved",
        "discuss",
        "discusses",
        "discussed",
        "describe",
        "describes",
        "described",
        "cover",
        "covers",
        "covered",
        "list",
        "lists",
        "listed",
        "quote",
        "quotes",
        "quoted",
        "match",
        "matches",
        "matched",
        "show",
        "shows",
        "showed",
    }
)
"""Words after which a value qualifies another noun rather than being the thing asked about."""

ROLES = frozenset(
    {
        "from",
        "with",
        "in",
        "inside",
        "within",
        "on",
        "for",
        "by",
        "at",
        "via",
        "under",
        "over",
        "between",
        "among",
        "against",
        "toward",
        "towards",
        "near",
        "around",
        "behind",
    }
)
"""Qualifiers that may give another value of the call its role ("remove bob *from* the
project planner"); the others say what a thing is about ("bob@x.ch *about* planner")."""

LINKED_BY_TO = frozenset(
    {
        "linked",
        "related",
        "relating",
        "attached",
        "belonging",
        "connected",
        "pointing",
        "sent",
        "addressed",
        "similar",
        "next",
        "close",
        "due",
        "according",
        "subject",
        "tied",
    }
)
"""Words that make a following *to* a qualifier: "the page linked to planner"."""

LOOK_BACK = 120
"""Characters before an occurrence of the value read for what introduces it."""


def about_another(
    value: str,
    asked: str,
    passed: frozenset[str],
    tool: frozenset[str],
    others: frozenset[str],
    roles: bool = False,
) -> bool:
    """Whether every occurrence of `value` in `asked` qualifies another thing.

    Args:
        value: The value's words as the question must write them (case kept).
        asked: The question's words, one space between and one at each end (case kept).
        passed: Words passed over before the value (case-folded): the tool's and the
            argument's name words; determiners always are.
        tool: The tool's verb (case-folded): a qualifier right after it still introduces
            the call's own object ("a delete of planner").
        others: The words of the call's other values (case-folded): "bob from planner"
            (a qualifier of :data:`ROLES` only).
        roles: A qualifier of :data:`ROLES` gives the value its role, whatever precedes
            it: a link is where a thing is ("the report *from* https://..."), an address
            who gets it; only a topic ("the note *mentioning* https://...") or a relative
            clause makes it another thing's.

    Returns:
        True when the question writes the value only as what a qualifier attaches to
        another noun (fail closed: the yes was to that other thing); False when one
        occurrence is the thing itself, or the value is not written at all.
    """
    if not value:
        return False
    skip = DETERMINERS | passed
    needle = f" {value} "
    at = asked.find(needle)
    found = False
    starts, clause = _relative_clauses(asked, tool)
    while at >= 0:
        found = True
        words = bisect_right(starts, at)  # the words written before this occurrence
        before = words_of(asked[max(0, at - LOOK_BACK) : at + 1])
        i = len(before) - 1
        while i >= 0 and before[i] in skip:
            i -= 1
        cut = at > LOOK_BACK and i <= 0  # the window ran out: what came before is unread
        if not (cut or (words and clause[words - 1]) or _qualified(before, i, tool, others, roles)):
            return False  # an occurrence that is the thing itself
        at = asked.find(needle, at + 1)
    return found


RELATIVES = frozenset({"which", "whose", "who", "whom", "where", "wherein", "whereby"})
"""Words that open a relative clause: a value inside one is not the object asked about."""


def _relative_clauses(asked: str, verb: frozenset[str]) -> tuple[list[int], list[bool]]:
    """Where each word of the question starts, and whether a relative clause is open there.

    A relative word opens one ("the project *that* planner depends on", "*which* planner
    uses"; *that* right after the tool's verb is a determiner: "delete that planner"), and
    the tool's verb closes it (a new request). One pass: no window to pad past.
    """
    starts: list[int] = []
    clause: list[bool] = []
    inside, prev = False, ""
    for start, word in _spans(asked):
        if word in verb:
            inside = False
        elif word in RELATIVES or (word == "that" and prev not in verb):
            inside = True
        starts.append(start)
        clause.append(inside)
        prev = word
    return starts, clause


_IN_WORD = frozenset("'@._")
"""Marks that stay inside a word (``bob@x.ch``, ``it's``); any other mark separates."""


def words_of(text: str) -> list[str]:
    """Case-folded words, split at whitespace and at marks (a dash, a slash, a comma).

    "the reminder—about planner" reads as "reminder", "about", as the user does. One pass.
    """
    return [word for _, word in _spans(text)]


def _spans(text: str) -> list[tuple[int, str]]:
    """Each word of :func:`words_of` with where it starts in `text` (one pass)."""
    spans: list[tuple[int, str]] = []
    start = -1
    for i, ch in enumerate(text):
        if ch.isalnum() or ch in _IN_WORD:
            if start < 0:
                start = i
        elif start >= 0:
            spans.append((start, text[start:i].casefold()))
            start = -1
    if start >= 0:
        spans.append((start, text[start:].casefold()))
    return spans


def _qualified(
    before: list[str], i: int, tool: frozenset[str], others: frozenset[str], roles: bool
) -> bool:
    """Whether the word at `i` (with the one before it) makes the value another thing's."""
    if i < 0:
        return False
    word, prev = before[i], before[i - 1] if i > 0 else ""
    if word in ("to", "into"):
        return prev in LINKED_BY_TO
    if word not in QUALIFIERS or (roles and word in ROLES):
        return False
    return prev not in tool and not (prev in others and word in ROLES)
