"""A text spelled out character by character: one at a time, by code words, in Morse.

A model told to "spell the key out" writes ``s, then k, then -, then L ...``, ``sierra kilo
dash lima ...`` (the NATO/ICAO spelling alphabet, digits as words) or ``... -.- -....-``
(Morse). Whoever receives it reads the key all the same; no decoder of bytes sees it. Each
reading here gives one view of a text (:func:`spelled_views`), searched like any decoded one
(:func:`guardagent.trace.text.decoders.decodings`):

- the characters that stand alone (tokens of one letter or digit), joined in order, and
  with a line each, the first or the last that stands alone on each line (a line may
  number its character: ``1. s``, ``s (1)``);
- the letters and digits the spelling alphabet's words stand for (``alfa``/``alpha``,
  ``juliett``/``juliet``, ``xray``/``x-ray``, ``zero`` ... ``nine``, ``niner``), and ``dash``,
  ``hyphen``, ``dot``, ``underscore`` for their characters: other words are dropped;
- Morse: runs of dots and dashes (``.`` / ``-``, also ``·`` and ``−``) apart by spaces, a
  ``/`` between words, each read by the International Morse table (letters, digits and
  the usual punctuation); a code the table lacks reads as nothing.

Only runs of six such characters or more, close together, are read (an ordinary text's
one-letter words lie far apart), and each reading is one pass over the text: linear.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[^\W_]+")
_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)?")
_MIN = 6
"""Characters a spelled view needs before it is read (fewer are found everywhere)."""

_SPELLING = {
    "alfa": "a",
    "alpha": "a",
    "bravo": "b",
    "charlie": "c",
    "delta": "d",
    "echo": "e",
    "foxtrot": "f",
    "golf": "g",
    "hotel": "h",
    "india": "i",
    "juliett": "j",
    "juliet": "j",
    "kilo": "k",
    "lima": "l",
    "mike": "m",
    "november": "n",
    "oscar": "o",
    "papa": "p",
    "quebec": "q",
    "romeo": "r",
    "sierra": "s",
    "tango": "t",
    "uniform": "u",
    "victor": "v",
    "whiskey": "w",
    "whisky": "w",
    "xray": "x",
    "x-ray": "x",
    "yankee": "y",
    "zulu": "z",
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "niner": "9",
    "dash": "-",
    "hyphen": "-",
    "minus": "-",
    "dot": ".",
    "period": ".",
    "underscore": "_",
}
"""The NATO/ICAO spelling alphabet, digits as words, and the names of common separators."""

_MORSE = {
    ".-": "a",
    "-...": "b",
    "-.-.": "c",
    "-..": "d",
    ".": "e",
    "..-.": "f",
    "--.": "g",
    "....": "h",
    "..": "i",
    ".---": "j",
    "-.-": "k",
    ".-..": "l",
    "--": "m",
    "-.": "n",
    "---": "o",
    ".--.": "p",
    "--.-": "q",
    ".-.": "r",
    "...": "s",
    "-": "t",
    "..-": "u",
    "...-": "v",
    ".--": "w",
    "-..-": "x",
    "-.--": "y",
    "--..": "z",
    "-----": "0",
    ".----": "1",
    "..---": "2",
    "...--": "3",
    "....-": "4",
    ".....": "5",
    "-....": "6",
    "--...": "7",
    "---..": "8",
    "----.": "9",
    "-....-": "-",
    ".-.-.-": ".",
    "..--.-": "_",
    "-..-.": "/",
    "---...": ":",
    "-...-": "=",
    ".-.-.": "+",
}
"""International Morse code (ITU-R M.1677): letters, digits and common punctuation."""
_MORSE_SIGNS = str.maketrans({"\u00b7": ".", "\u2212": "-"})


_GAP = 2
"""Other tokens a spelled run may hold between two of its characters (``s, then k``)."""
_SHORT_LINE = 4
"""Tokens a line may hold to spell one character (``1. s``, ``s (char 1)``, ``see: s (1)``)."""


def _runs(marks: list[str], gap: int) -> list[str]:
    """The spelled runs of a token sequence, each joined.

    `marks` holds each token's character ("" for a token that spells none); a run is
    :data:`_MIN` characters or more with at most `gap` other tokens between two of them.
    """
    out: list[str] = []
    run: list[str] = []
    since = 0
    for mark in marks:
        if mark:
            run.append(mark)
            since = 0
            continue
        since += 1
        if since > gap and run:
            if len(run) >= _MIN:
                out.append("".join(run))
            run = []
    if len(run) >= _MIN:
        out.append("".join(run))
    return out


def spelled_views(text: str) -> list[tuple[str, str]]:
    """``(how, view)`` of a text spelled out (see the module); empty when it is not.

    Only runs are read (characters close together), so an ordinary text, whose one-letter
    words and stray dots lie far apart, gives no view and no work to the next layer.
    """
    out: list[tuple[str, str]] = []
    tokens = _TOKEN.findall(text)
    if alone := _runs([t if len(t) == 1 else "" for t in tokens], _GAP):
        out.append(("spelled one by one", " ".join(alone)))
    lines = text.splitlines() if text.count("\n") >= _MIN - 1 else []
    short = [t if 0 < len(t := _TOKEN.findall(line)) <= _SHORT_LINE else [] for line in lines]
    for end in (0, -1) if short else ():  # a character a line, beside its number ("1. s", "s (1)")
        marks = [
            next((t for t in line[:: 1 if end == 0 else -1] if len(t) == 1), "") for line in short
        ]
        if each := _runs(marks, 0):
            out.append(("spelled a line each", " ".join(each)))
    if spelled := _runs([_SPELLING.get(w.lower(), "") for w in _WORD.findall(text)], 1):
        out.append(("spelling alphabet", " ".join(spelled)))
    if "." in text or "-" in text or "\u00b7" in text:
        signs = text.translate(_MORSE_SIGNS).split()
        marks = [_MORSE.get(w.strip("/"), "") if not w.strip(".-/") else "" for w in signs]
        if morse := _runs(marks, 1):  # a "/" between words
            out.append(("morse", " ".join(morse)))
    return out
