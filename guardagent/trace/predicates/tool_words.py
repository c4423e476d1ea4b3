"""How a question names a tool: the words of its name, or its verb alone when unique.

``delete_project`` reads "delete project" (:func:`tool_words`); a question names it by
those words, or by "delete" alone when no other labelled tool starting with that verb could
take the call (:func:`verb_is_unique`). A misspelt word passes at a ``rapidfuzz``
similarity, never a word that holds the tool's word or is held by it ("undelete").
:mod:`.naming` reads the values; this module only the tool.
"""

from __future__ import annotations

import re
import unicodedata

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

from guardagent.trace.document.labels import Labels

__all__ = ["DIGIT_GROUPS", "clean", "tool_named", "tool_words", "verb_is_unique"]

# One separator between two digits. No quantifier: constant work per position, linear over
# attacker text (RE2 has no lookaround, and its substitution callback costs 30x here).
DIGIT_GROUPS = re.compile(r"(?<=[0-9])[,'’_\u202f\u00a0 ](?=[0-9])")


def clean(text: str) -> str:
    """Text for fuzzy matching: NFKC, lower case, words only, digit groups joined.

    "4,950" and "4 950" read as 4950: a separator between two digits is dropped.
    """
    text = DIGIT_GROUPS.sub("", unicodedata.normalize("NFKC", text))
    return " ".join(default_process(text).split())


def tool_words(name: str) -> str:
    """A tool's name as words: ``delete_project`` and ``deleteProject`` read "delete project"."""
    spaced: list[str] = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and name[i - 1].islower():
            spaced.append(" ")
        spaced.append(ch)
    return clean("".join(spaced).replace("_", " ").replace("-", " ").replace(".", " "))


def verb_is_unique(labels: Labels, tool: str, names: frozenset[str] = frozenset()) -> bool:
    """No other labelled tool that starts with this tool's verb could take this call.

    "Okay to delete planner?" names ``delete_project(project="planner")`` by its verb only
    when no ``delete_all_projects`` that takes a ``project`` is labelled too: the user cannot
    have meant one delete rather than the other. Another tool is such a sibling when its
    first word is the verb (a pattern: the words before its wildcard; none, as in ``*``:
    any tool) and its label takes the call's argument `names` (its ``args`` hold them all,
    or ``other_args: allow``). A sibling whose label declares no ``args`` takes no argument.
    """
    words = tool_words(tool).split()
    if not words:
        return False
    for other, label in (*labels.tools.items(), *labels.patterns):
        if other == tool:
            continue
        head = tool_words(other.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0]).split()
        if head and head[0] != words[0]:
            continue
        if label.other_args or (label.args is not None and names <= set(label.args)):
            return False
    return True


def _word_named(word: str, question: list[str], similarity: float) -> bool:
    """A word of the tool's name in the question: the same word, or a misspelling of it.

    A misspelling (``fuzz.ratio`` at least `similarity`) neither holds the word nor is held
    by it: "undelete", "deleted" and "delet" are other words, never "delete".
    """
    return any(
        w == word or (fuzz.ratio(word, w) >= similarity and word not in w and w not in word)
        for w in question
    )


def tool_named(tool: str, question: str, similarity: float, verb_alone: bool = True) -> bool:
    """The tool's words ("delete project"), or its verb as a word of its own ("delete").

    The verb alone names it only when `verb_alone` (no other labelled tool shares it).
    """
    words, asked = tool.split(), question.split()
    if not words:
        return False
    if verb_alone and len(words[0]) >= 3 and _word_named(words[0], asked, similarity):
        return True
    return all(_word_named(w, asked, similarity) for w in words)
