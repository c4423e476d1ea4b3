"""How a declared secret is looked for: the folded reading of text and the secret's forms.

A reader does not see what the characters are, only what they look like: a Cyrillic ``а``
in ``sk-Livе`` reads as a Latin ``a``, and a default-ignorable code point between two
letters (a Hangul filler U+3164, a variation selector, a combining grapheme joiner) is not
seen at all. :func:`fold` reads text that way, on both sides of the search:
:func:`~guardagent.trace.text.normal.normalize_text` (NFKC, case folding, format characters
removed), then every code point with the Unicode property ``Default_Ignorable_Code_Point``
removed (the ``regex`` module's Unicode data, not a hand list), then every non-ASCII
character that the Unicode confusables data (UTS #39 ``confusables.txt``, as the
``confusable_homoglyphs`` package ships it) lists as a look-alike of an ASCII letter or
digit read as that letter or digit (the first the data lists). Since several ASCII
characters look alike too, a view that was not ASCII is also searched in its
:func:`skeleton` (``0``/``o`` and ``1``/``i``/``l``/``|`` made one), for the forms'.

A secret is looked for in each of its :func:`forms`: as written and reversed, each under
every Caesar shift of its letters (ROT13 is the shift by 13), also with its digits turned
by the same amount, and in ROT47 (these for secrets of :data:`COMPACT_MIN` letters and
digits); and, when it has at least
:data:`COMPACT_MIN` letters and digits, also with everything but letters and digits removed
from both sides (``s-k 1 2 3`` is ``sk123``), in atbash, and reordered by a rule one line
of script undoes (:func:`reorderings`: interleaved strands, chunks last first). Shifts
other than ROT13 are only tried for such secrets: a short word shifted is too often another
word. All forms of all secrets go into a few Aho-Corasick automata (:class:`Matcher`), so a
view is scanned a few times, in linear time, however many forms there are. The automaton
lives for one check only: a secret from the environment is not kept.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import unicodedata
from collections.abc import Iterator
from importlib import resources

import ahocorasick
import regex

from guardagent.trace.found.values import normalize_text

COMPACT_MIN = 8
"""Letters and digits a secret needs before it is also looked for with separators removed
(and under Caesar shifts other than ROT13)."""

_IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}+")
_NOT_ALNUM = re.compile(r"[\W_]+")
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_DIGITS = "0123456789"
_SKELETON = str.maketrans("01il|", "ollll")


@functools.cache
def _lookalikes() -> dict[int, str]:
    """Non-ASCII character -> the ASCII letter or digit it looks like (confusables data).

    Read once from the package's copy of the Unicode confusables data. A character listed
    as a look-alike of several ASCII characters reads as the first one the data lists; both
    cases of a letter are keys, since text is case-folded before it is read.
    """
    data: dict[str, list[dict[str, str]]] = json.loads(
        resources.files("confusable_homoglyphs")
        .joinpath("confusables.json")
        .read_text(encoding="utf-8")
    )
    table: dict[int, str] = {}
    for char, similar in data.items():
        if len(char) != 1 or char.isascii():
            continue
        ascii_like = [
            s["c"] for s in similar if len(s["c"]) == 1 and s["c"].isascii() and s["c"].isalnum()
        ]
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


_TAGS = {c: c - 0xE0000 for c in range(0xE0020, 0xE007F)}
"""Unicode tag characters: invisible, yet each spells an ASCII character to whoever decodes."""


def hidden_readings(text: str) -> list[str]:
    """Readings of `text` beside :func:`fold`'s, each folded: what fold drops or keeps whole.

    Tag characters (U+E0020-E007E, "ASCII smuggling") as the ASCII they spell (fold drops
    them as default-ignorable), and the letters without the combining marks set on them
    (``ṡk̇``: NFKC composes a dot above into one letter, which is not the ``s``). Linear.
    """
    if text.isascii():
        return []
    out = []
    if any(ord(c) in _TAGS for c in text):
        out.append(fold(text.translate(_TAGS)))
    bare = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    if len(bare) != len(unicodedata.normalize("NFKD", text)):
        out.append(fold(bare))
    return out


def compact(text: str) -> str:
    """Letters and digits only (``s-k 1 2 3`` is ``sk123``)."""
    return _NOT_ALNUM.sub("", text)


def _shift(text: str, by: int, digits: bool = False) -> str:
    """The ASCII letters of (folded, so lower-case) `text` shifted `by` places.

    With `digits`, its digits are turned by the same amount (modulo 10) too.
    """
    if by == 0:
        return text
    table = str.maketrans(
        _LOWER + (_DIGITS if digits else ""),
        _LOWER[by:] + _LOWER[:by] + (_DIGITS[by % 10 :] + _DIGITS[: by % 10] if digits else ""),
    )
    return text.translate(table)


def rot47(text: str) -> str:
    """ROT47: every printable ASCII character but the space turned by 47 of the 94."""
    return "".join(chr(33 + (ord(c) - 33 + 47) % 94) if "!" <= c <= "~" else c for c in text)


def _atbash(text: str, digits: bool = False) -> str:
    """Atbash: the letters of (folded, lower-case) `text` mirrored, a to z (digits 0 to 9 too)."""
    table = str.maketrans(
        _LOWER + (_DIGITS if digits else ""), _LOWER[::-1] + (_DIGITS[::-1] if digits else "")
    )
    return text.translate(table)


def _label(turned: bool, by: int, digits: bool = False) -> str:
    shift = "" if by == 0 else "rot13" if by == 13 else f"caesar +{by}"
    parts = [p for p in ("reversed" if turned else "", shift, "digits too" if digits else "") if p]
    return f" ({', '.join(parts)})" if parts else ""


def forms(secret: str) -> Iterator[tuple[str, str, bool]]:
    """``(turn, form, compacted)`` of a secret: see the module (the first of equals wins)."""
    norm = fold(secret).strip()
    short = compact(norm)
    wide = len(short) >= COMPACT_MIN
    for turned in (False, True):
        base, base_short = (norm[::-1], short[::-1]) if turned else (norm, short)
        for by in range(26):
            if by not in (0, 13) and not wide:
                continue
            for digits in (False, True) if wide and by % 10 else (False,):
                label = _label(turned, by, digits)
                yield label, _shift(base, by, digits), False
                if wide:
                    yield label, _shift(base_short, by, digits), True
        if wide:  # ROT47 turns case apart: from the secret as written, then folded
            yield (
                _label(turned, 0).rstrip(")") + (", rot47)" if turned else " (rot47)"),
                fold(rot47(secret.strip()[::-1] if turned else secret.strip())),
                False,
            )
            for digits in (False, True):
                parts = ["atbash"] + ["reversed"] * turned + ["digits too"] * digits
                yield f" ({', '.join(parts)})", compact(_atbash(base, digits)), True
    if wide:
        yield from reorderings(norm, short)


_STRIDES = (2, 3)
"""Every second or third character: the strands a secret is interleaved into, in any order."""
_CHUNKS = range(2, 9)
"""Sizes of the chunks a secret is cut into and sent last chunk first."""


def reorderings(norm: str, short: str) -> Iterator[tuple[str, str, bool]]:
    """The secret's characters reordered by a rule one line of script undoes (compacted forms).

    The strands of every second or third character, concatenated in each order
    (``k[0::2] + k[1::2]``), and the secret cut into chunks of 2 to 8 characters sent last
    chunk first; each cut from the folded secret and from its compact form (the sender may
    have dropped the separators first). Each form is as long as the secret: no ordinary
    text is more likely to hold one than the secret itself.
    """
    for base in (norm, short):
        for stride in _STRIDES:
            strands = [base[i::stride] for i in range(stride)]
            for order in itertools.permutations(range(stride)):
                yield (
                    f" (every {stride} characters, strands in order "
                    f"{'-'.join(str(i + 1) for i in order)})",
                    compact("".join(strands[i] for i in order)),
                    True,
                )
        for size in _CHUNKS:
            chunks = [base[i : i + size] for i in range(0, len(base), size)]
            yield (
                f" ({size}-character chunks in reverse order)",
                compact("".join(reversed(chunks))),
                True,
            )


def skeleton(folded: str) -> str:
    """A folded text with the ASCII characters that look alike made one.

    ``0`` and ``o``; ``1``, ``i``, ``l`` and ``|``: a look-alike the confusables data reads
    as one of them may stand for any (a Cyrillic palochka is an ``l``, an ``I`` or a ``1``).
    """
    return folded.translate(_SKELETON)


class Matcher:
    """Every form of every secret, found in a folded view with one automaton pass each.

    A view that was not ASCII is also searched in its :func:`skeleton`, for the secret's
    forms in theirs.

    Args:
        secrets: ``(name, value)`` of the secrets to look for.
    """

    def __init__(self, secrets: list[tuple[str, str]]) -> None:
        self.names = [name for name, _ in secrets]
        self._automata = [ahocorasick.Automaton() for _ in range(4)]  # plain, compact, and
        for name, value in secrets:  # the skeletons of both
            for turn, form, compacted in forms(value):
                for at, text in ((int(compacted), form), (2 + int(compacted), skeleton(form))):
                    if text and text not in self._automata[at]:
                        self._automata[at].add_word(text, (name, turn))
        for automaton in self._automata:
            if len(automaton):
                automaton.make_automaton()

    def find(self, folded: str, lookalikes: bool = False) -> Iterator[tuple[str, str]]:
        """``(name, turn)`` of each form in a folded view (some may repeat).

        With `lookalikes` (the view was not ASCII), in its skeleton too.
        """
        yield from self._find(folded, 0)
        if lookalikes:
            yield from self._find(skeleton(folded), 2)

    def _find(self, text: str, at: int) -> Iterator[tuple[str, str]]:
        plain, compacted = self._automata[at], self._automata[at + 1]
        if len(plain):
            yield from (found for _, found in plain.iter(text))
        if len(compacted) and (short := compact(text)):
            yield from (found for _, found in compacted.iter(short))
