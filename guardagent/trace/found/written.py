"""A short text value is found only where it is written with its punctuation.

Phrases are looked up as runs of word tokens (:mod:`guardagent.trace.sources.provenance`): right
for a message body, whose words are what it says. A short text (or one shaped like a path:
:func:`is_target`) is a target its tool reads with every character: ``../notes.txt``,
``/notes.txt``, ``notes.*`` and ``notes`` are other files than the ``notes.txt`` the user
named, though their words are the user's. So a message that trusts a value (the user's,
the system prompt, a trusted tool's result) holds such a text only when it writes the same
characters (after the word reading: NFKC, case folding, format characters dropped, runs of
whitespace as one space), between boundaries that join nothing to it: whitespace, quotes
and brackets, ``*`` ``:`` ``=`` ``,`` ``;`` ``|`` ``!`` ``?``, or after it a ``.`` that
ends a sentence. ``archive/notes.txt`` does not hold ``notes.txt``.

Sources that make a value untrusted are not narrowed: a page that wrote the words
otherwise still counts (the value never looks less attacker-made than before).

Linear: each trusting message is read once into its runs between boundaries, and a value
without a boundary character (a path, a name) is one set lookup; a value with one (several
words) is looked for with ``str.find``, under the trace's reading budget.
"""

from __future__ import annotations

from guardagent.trace.found.reading import readings
from guardagent.trace.text.budget import check_budget
from guardagent.trace.text.kinds import Value
from guardagent.trace.text.normal import normalize_text

MAX_TARGET_CHARS = 200
"""Prose longer than this is content (a body), not a target a tool reads whole."""

_BOUNDARY = " \"'`()[]{}<>«»“”‘’„‚*:=,;|!?"
"""What may stand next to a written value without joining to it (with a sentence's ".")."""
_IS_BOUNDARY = frozenset(_BOUNDARY)
_TO_SPACE = str.maketrans(dict.fromkeys(_BOUNDARY, " "))


def is_target(value: Value) -> bool:
    """A text value that is what its tool acts on (a path, a name, a command), not prose.

    Short (at most :data:`MAX_TARGET_CHARS` characters), or of any length when it holds no
    whitespace or starts like a path (``/``, a backslash, ``~``, ``.``, ``C:``): padding a
    path does not make it a body.
    """
    if value.kind != "text" or not value.tokens:
        return False
    return len(value.text) <= MAX_TARGET_CHARS or target_shaped(value.text)


def target_shaped(text: str) -> bool:
    """Text of any length that reads as one target: no whitespace, or a path's start."""
    head = text.strip()
    return not any(c.isspace() for c in head) or head[:1] in "/\\~." or head[1:2] == ":"


class Written:
    """One message, read once for :meth:`holds`: its forms and the runs between boundaries.

    Args:
        text: The message's text (or two messages' texts joined, for a split value).
    """

    def __init__(self, text: str) -> None:
        self.forms = tuple(" ".join(normalize_text(r).split()) for r in readings(text))
        runs: set[str] = set()
        for form in self.forms:
            for run in form.translate(_TO_SPACE).split():
                runs.add(run)
                if run.endswith("."):
                    runs.add(run[:-1])  # the "." that ends a sentence
        self.runs = frozenset(runs)

    def holds(self, value: Value) -> bool:
        """Whether the message writes the value with its punctuation, between boundaries.

        A value with no boundary character is one run: a set lookup. Any other is looked
        for in each form (``str.find`` from occurrence to occurrence, under the reading
        budget).
        """
        wanted = " ".join(value.text.split())
        if not wanted:
            return False
        if not any(c in _IS_BOUNDARY for c in wanted):
            return wanted in self.runs
        for text in self.forms:
            check_budget()
            at = text.find(wanted)
            while at >= 0:
                end = at + len(wanted)
                if (at == 0 or text[at - 1] in _IS_BOUNDARY) and _closed(text, end):
                    return True
                at = text.find(wanted, at + 1)
        return False


def _closed(text: str, end: int) -> bool:
    if end == len(text) or text[end] in _IS_BOUNDARY:
        return True
    return text[end] == "." and (end + 1 == len(text) or text[end + 1] in _IS_BOUNDARY)


def exact_spans(text: str, wanted: str) -> list[tuple[int, int]]:
    """Where `text` writes `wanted` with every character, between boundaries (no folding).

    The reading a case-sensitive store gives a name: ``Invoice-0425.txt``, ``invoice-0425.txt
    `` (a trailing space) and ``invoice-0425.txt<ZWSP>`` are other files than the
    ``invoice-0425.txt`` a message writes, so each is found only where written so. The
    boundaries are :meth:`Written.holds`'s, and any whitespace. ``str.find`` from occurrence
    to occurrence, under the reading budget.
    """
    found: list[tuple[int, int]] = []
    if not wanted.strip():
        return found
    at = text.find(wanted)
    while at >= 0:
        check_budget()
        end = at + len(wanted)
        before = text[at - 1] if at else " "
        if (before.isspace() or before in _IS_BOUNDARY) and _closed_raw(text, end):
            found.append((at, end))
        at = text.find(wanted, at + 1)
    return found


def _closed_raw(text: str, end: int) -> bool:
    if end == len(text) or text[end].isspace() or text[end] in _IS_BOUNDARY:
        return True
    after = text[end + 1 : end + 2]
    return text[end] == "." and (not after or after.isspace() or after in _IS_BOUNDARY)
