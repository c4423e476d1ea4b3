"""A text spelled out character by character: one at a time, by code words, in Morse.

A model told to "spell the key out" writes ``s, then k, then -, then L ...``, ``sierra kilo
dash lima ...`` (the NATO/ICAO spelling alphabet, digits as words) or ``... -.- -....-``
(Morse). Whoever receives it reads the key all the same; no decoder of bytes sees it. Each
reading here gives one view of a text (:func:`spelled_views`), searched like any decoded one
(:func:`guardagent.trace.decoders.decodings`):

- the characters that stand alone (tokens of one letter or digit), joined in order, and
  with a line each, the first or the last that stands alone on each line (a line may
  number its character: ``1. s``, ``s (1)``);
- the letters and digits the spelling alphabet's words stand for (``alfa``/``alpha``,
  ``juliett``/``juliet``, ``xray``/``x-ray``, ``zero`` ... ``nine``, ``niner``), and ``dash``,
  ``hyphen``, ``dot``, ``underscore`` for their characters: other words are dropped;
- Morse: runs of dots and dashes (``.`` / ``-``, also ``·`` and ``−``) apart by spaces, a
  ``/`` between words, each read by the International Morse table (letters, digits and
  the usual punctuation); a code the table lacks reads as nothing.

Each view is made only when the text holds six such characters or more (an ordinary
sentence holds few), and each is one pass over the text: linear.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[^\W_]+|[-_.]")
_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)?")
_MORSE_RUN = re.compile(r"[.\-\u00b7\u2212]+")
_MIN = 6
"""Characters a spelled view needs before it is read (fewer are found everywhere)."""

_SPELLING = {
    "alfa": "a", "alpha": "a", "bravo": "b", "charlie": "c", "delta": "d", "echo": "e",
    "foxtrot": "f", "golf": "g", "hotel": "h", "india": "i", "juliett": "j", "juliet": "j",
    "kilo": "k", "lima": "l", "mike": "m", "november": "n", "oscar": "o", "papa": "p",
    "quebec": "q", "romeo": "r", "sierra": "s", "tango": "t", "uniform": "u", "victor": "v",
    "whiskey": "w", "whisky": "w", "xray": "x", "x-ray": "x", "yankee": "y", "zulu": "z",
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "niner": "9", "dash": "-", "hyphen": "-",
    "minus": "-", "dot": ".", "period": ".", "underscore": "_",
}  # fmt: skip
"""The NATO/ICAO spelling alphabet, digits as words, and the names of common separators."""

_MORSE = {
    ".-": "a", "-...": "b", "-.-.": "c", "-..": "d", ".": "e", "..-.": "f", "--.": "g",
    "....": "h", "..": "i", ".---": "j", "-.-": "k", ".-..": "l", "--": "m", "-.": "n",
    "---": "o", ".--.": "p", "--.-": "q", ".-.": "r", "...": "s", "-": "t", "..-": "u",
    "...-": "v", ".--": "w", "-..-": "x", "-.--": "y", "--..": "z", "-----": "0",
    ".----": "1", "..---": "2", "...--": "3", "....-": "4", ".....": "5", "-....": "6",
    "--...": "7", "---..": "8", "----.": "9", "-....-": "-", ".-.-.-": ".", "..--.-": "_",
    "-..-.": "/", "---...": ":", "-...-": "=", ".-.-.": "+",
}  # fmt: skip
"""International Morse code (ITU-R M.1677): letters, digits and common punctuation."""
_MORSE_SIGNS = str.maketrans({"\u00b7": ".", "\u2212": "-"})


def spelled_views(text: str) -> list[tuple[str, str]]:
    """``(how, view)`` of a text spelled out (see the module); empty when it is not."""
    out: list[tuple[str, str]] = []
    alone = "".join(t for t in _TOKEN.findall(text) if len(t) == 1)
    if len(alone) >= _MIN:
        out.append(("spelled one by one", alone))
        lines = [[t for t in _TOKEN.findall(line) if len(t) == 1] for line in text.splitlines()]
        lines = [line for line in lines if line]
        if len(lines) >= _MIN:  # a character a line, beside its number ("1. s", "s (1)")
            out.append(("spelled a line each", "".join(line[0] for line in lines)))
            out.append(("spelled a line each", "".join(line[-1] for line in lines)))
    words = [_SPELLING.get(w.lower(), "") for w in _WORD.findall(text)]
    if sum(1 for w in words if w) >= _MIN:
        out.append(("spelling alphabet", "".join(words)))
    if "." in text or "-" in text or "\u00b7" in text:
        codes = _MORSE_RUN.findall(text.translate(_MORSE_SIGNS))
        if len(codes) >= _MIN:
            read = "".join(_MORSE.get(c, "") for c in codes)
            if len(read) >= _MIN:
                out.append(("morse", read))
    return out
