"""How a declared secret is looked for: the folded reading of text and the secret's forms.

A reader does not see what the characters are, only what they look like: a Cyrillic ``а``
in ``sk-Livе`` reads as a Latin ``a``, and a default-ignorable code point between two
letters (a Hangul filler U+3164, a variation selector, a combining grapheme joiner) is not
seen at all. :func:`fold` reads text that way, on both sides of the search:
:func:`~guardagent.trace.normal.normalize_text` (NFKC, case folding, format characters
removed), then every code point with the Unicode property ``Default_Ignorable_Code_Point``
removed (the ``regex`` module's Unicode data, not a hand list), then every non-ASCII
character that the Unicode confusables data (UTS #39 ``confusables.txt``, as the
``confusable_homoglyphs`` package ships it) lists as a look-alike of an ASCII letter or
digit read as that letter or digit.

A secret is looked for in each of its :func:`forms`: as written and reversed, each under
every Caesar shift of its letters (ROT13 is the shift by 13); and, when it has at least
:data:`COMPACT_MIN` letters and digits, also with everything but letters and digits removed
from both sides (``s-k 1 2 3`` is ``sk123``). Shifts other than ROT13 are only tried for
such secrets: a short word shifted is too often another word. All forms of all secrets go
into one Aho-Corasick automaton (:class:`Matcher`), so a view is scanned once, in linear
time, however many forms there are. The automaton lives for one check only: a secret from
the environment is not kept.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from importlib import resources

import ahocorasick
import regex

from guardagent.trace.values import normalize_text

COMPACT_MIN = 8
"""Letters and digits a secret needs before it is also looked for with separators removed
(and under Caesar shifts other than ROT13)."""

_IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}+")
_NOT_ALNUM = re.compile(r"[\W_]+")
_LOWER = "abcdefghijklmnopqrstuvwxyz"


@functools.cache
def _lookalikes() -> dict[int, str]:
    """Non-ASCII character -> the ASCII letter or digit it looks like (confusables data).

    Read once from the package's copy of the Unicode confusables data. A character listed
    as a look-alike of several ASCII characters reads as the first one the data lists; both
    cases of a letter are keys, since text is case-folded before it is read.
    """
    data: dict[str, list[dict[str, str]]] = json.loads(
        resources.files("confusable_homoglyphs").joinpath("confusables.json")
        .read_text(encoding="utf-8"))  # fmt: skip
    table: dict[int, str] = {}
    for char, similar in data.items():
        if len(char) != 1 or char.isascii():
            continue
        ascii_like = [s["c"] for s in similar if len(s["c"]) == 1 and s["c"].isascii()
                      and s["c"].isalnum()]  # fmt: skip
        if not ascii_like:
            continue
        for key in {char, char.casefold()}:
            if len(key) == 1 and not key.isascii():
                table.setdefault(ord(key), ascii_like[0].lower())
    return table


def fold(text: str) -> str:
    """`text` as a reader sees it (see the module): normalised, invisibles out, look-alikes read."""
    norm = normalize_text(text)
    if norm.isascii():
        return norm
    seen: str = _IGNORABLE.sub("", norm)
    return seen.translate(_lookalikes())


def compact(text: str) -> str:
    """Letters and digits only (``s-k 1 2 3`` is ``sk123``)."""
    return _NOT_ALNUM.sub("", text)


def _shift(text: str, by: int) -> str:
    """The ASCII letters of (folded, so lower-case) `text` shifted `by` places."""
    if by == 0:
        return text
    return text.translate(str.maketrans(_LOWER, _LOWER[by:] + _LOWER[:by]))


def _label(turned: bool, by: int) -> str:
    shift = "" if by == 0 else "rot13" if by == 13 else f"caesar +{by}"
    parts = [p for p in ("reversed" if turned else "", shift) if p]
    return f" ({', '.join(parts)})" if parts else ""


def forms(secret: str) -> Iterator[tuple[str, str, bool]]:
    """``(turn, form, compacted)`` of a secret: see the module (the first of equals wins)."""
    norm = fold(secret).strip()
    short = compact(norm)
    wide = len(short) >= COMPACT_MIN
    for turned in (False, True):
        for by in range(26):
            if by not in (0, 13) and not wide:
                continue
            label = _label(turned, by)
            yield label, _shift(norm[::-1] if turned else norm, by), False
            if wide:
                yield label, _shift(short[::-1] if turned else short, by), True


class Matcher:
    """Every form of every secret, found in a folded view with one automaton pass each.

    Args:
        secrets: ``(name, value)`` of the secrets to look for.
    """

    def __init__(self, secrets: list[tuple[str, str]]) -> None:
        self.names = [name for name, _ in secrets]
        self._plain = ahocorasick.Automaton()
        self._compact = ahocorasick.Automaton()
        for name, value in secrets:
            for turn, form, compacted in forms(value):
                automaton = self._compact if compacted else self._plain
                if form and form not in automaton:
                    automaton.add_word(form, (name, turn))
        for automaton in (self._plain, self._compact):
            if len(automaton):
                automaton.make_automaton()

    def find(self, folded: str) -> Iterator[tuple[str, str]]:
        """``(name, turn)`` of each form in a folded view (some may repeat)."""
        if len(self._plain):
            yield from (found for _, found in self._plain.iter(folded))
        if len(self._compact):
            short = compact(folded)
            if short:
                yield from (found for _, found in self._compact.iter(short))
