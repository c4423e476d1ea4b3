r"""Normalised text: the word reading (tokens) and the value reading (typed values).

Two readings of one text, because the tools that consume values do not fold case the same
way words do:

- :func:`normalize_text` (words): Unicode NFKC, case folding, NFKC again, and removal of
  format characters (category ``Cf``: zero-width spaces, bidi controls, soft hyphens), which
  change nothing a reader sees but split naive matches. ``Straße`` reads ``strasse``.
- :func:`reading_form` (typed values): the same, except that the IDNA deviation characters
  (``ß``, final ``ς``, ZWJ and ZWNJ) are kept, because UTS-46 non-transitional processing
  (what browsers and mail servers do) keeps them: ``straße.ch`` is not ``strasse.ch``.

:func:`unescape` reads the escapes of JSON and Python string literals (``\n``, ``\t``,
``\"``, ``\uXXXX``...) that a tool result carries when it prints structured data, so a value
escaped inside it is read as written.
"""

from __future__ import annotations

import re
import unicodedata

_FORMAT_RANGES: tuple[tuple[int, int], ...] = (
    (0xAD, 0xAD),
    (0x600, 0x605),
    (0x61C, 0x61C),
    (0x6DD, 0x6DD),
    (0x70F, 0x70F),
    (0x890, 0x891),
    (0x8E2, 0x8E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)
"""Unicode category ``Cf`` (format characters), as ranges; a test checks it against
:mod:`unicodedata` so a newer Unicode version cannot silently widen it."""

_DROP_FORMAT = {c: None for lo, hi in _FORMAT_RANGES for c in range(lo, hi + 1)}
_FORMAT_CHARS = re.compile(
    "[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in _FORMAT_RANGES) + "]"
)
_KEPT = frozenset("\u00df\u03c2\u200c\u200d")
"""The IDNA deviation characters (ß, final ς, ZWNJ, ZWJ): kept by the value reading."""
_TOKEN = re.compile(r"\w+")  # one character class, one run: linear, nothing to backtrack


def normalize_text(text: str) -> str:
    """NFKC, case-folded, NFKC again, format characters removed (the word reading).

    Idempotent: ``normalize_text(normalize_text(s)) == normalize_text(s)``.
    """
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    if _FORMAT_CHARS.search(folded):
        folded = unicodedata.normalize("NFKC", folded.translate(_DROP_FORMAT))
    return folded


def without_format(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """`text` without format characters, and `spans` moved to the same characters in it.

    "Do n\u200bo\u200bt pay X" shows "Do not pay X": a reader of words reads it so.
    Linear: one pass to build the offsets.
    """
    if not _FORMAT_CHARS.search(text):
        return text, spans
    at = [0] * (len(text) + 1)  # old offset -> new offset
    kept: list[str] = []
    for i, c in enumerate(text):
        at[i] = len(kept)
        if ord(c) not in _DROP_FORMAT:
            kept.append(c)
    at[len(text)] = len(kept)
    return "".join(kept), [(at[a], at[b]) for a, b in spans]


def fold_case(text: str) -> str:
    """Case folding that keeps the IDNA deviation characters: ``STRAẞE`` is ``straße``.

    Full case folding maps ``ß`` to ``ss``, which UTS-46 non-transitional processing (and a
    mail server reading a UTF-8 local part) does not; ``ẞ`` reads ``ß``, as UTS-46 maps
    it. Character by character, so no placeholder can be forged by the text.
    """
    if text.isascii():
        return text.lower()
    return "".join(c if c in _KEPT else ("\u00df" if c == "\u1e9e" else c.casefold()) for c in text)


def reading_form(text: str) -> str:
    """Like :func:`normalize_text`, but the IDNA deviation characters survive (see above).

    ``ẞ`` (capital sharp s) reads ``ß``, as UTS-46 maps it.
    """
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", fold_case(unicodedata.normalize("NFKC", text)))
    if _FORMAT_CHARS.search(folded):
        kept = {c: v for c, v in _DROP_FORMAT.items() if chr(c) not in _KEPT}
        folded = unicodedata.normalize("NFKC", folded.translate(kept))
    return folded


def tokens(normalized: str) -> list[str]:
    """Word tokens of normalised text (runs of letters, digits and ``_``)."""
    return _TOKEN.findall(normalized)


def secret_like(token: str) -> bool:
    """Whether a token looks like an identifier or secret (a code, key, account number).

    Such tokens identify what they came from; common words do not. Used to follow values
    from `sensitive` tools into outgoing text.
    """
    n = len(token)
    return n >= 16 or (n >= 6 and any(map(str.isdigit, token)))


_SIMPLE = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "0": "\0",
    '"': '"',
    "'": "'",
    "\\": "\\",
    "/": "/",
    "a": "\a",
}
_HEX_WIDTH = {"x": 2, "u": 4, "U": 8}
_HEX = frozenset("0123456789abcdefABCDEF")
_MAX_ROUNDS = 3


def _unescape_once(text: str) -> str:
    out: list[str] = []
    pos = 0
    surrogates = False
    while (at := text.find("\\", pos)) != -1:
        out.append(text[pos:at])
        c = text[at + 1 : at + 2]
        width = _HEX_WIDTH.get(c, 0)
        digits = text[at + 2 : at + 2 + width]
        if width and len(digits) == width and all(d in _HEX for d in digits):
            code = int(digits, 16)
            if code > 0x10FFFF:
                out.append("\\")
                pos = at + 1
                continue
            surrogates = surrogates or 0xD800 <= code <= 0xDFFF
            out.append(chr(code))
            pos = at + 2 + width
        elif c in _SIMPLE:
            out.append(_SIMPLE[c])
            pos = at + 2
        else:
            out.append("\\")
            pos = at + 1
    out.append(text[pos:])
    joined = "".join(out)
    if surrogates:  # JSON writes astral characters as surrogate pairs
        joined = joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return joined


def unescape(text: str) -> str:
    r"""The text with string-literal escapes read (``\n``, ``\"``, ``\u00e9``, ``\x41``...).

    Escapes nested by repeated encoding (JSON inside JSON) are read up to three levels deep.
    A backslash that starts no escape stays. Linear: one pass over the text per level.
    """
    for _ in range(_MAX_ROUNDS):
        if "\\" not in text:
            break
        read = _unescape_once(text)
        if read == text:
            break
        text = read
    return text
