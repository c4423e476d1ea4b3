r"""What a ``sed`` script does besides editing its stream: write files, run commands.

A sed script is a program: ``w FILE`` and ``W FILE`` write a file, ``e`` runs a shell
command, and the ``s`` command's ``w FILE`` and ``e`` flags do the same
(``sed 's/x/y/e' f`` runs each edited line). Looking for the letter ``w`` in the script's
text both misses ``e`` and takes ``s/new/old/`` for a write, so :func:`script_effects`
reads the script as GNU sed does: addresses (line numbers, ``$``, ``/regex/``,
``\cregexc``, ranges, ``!``), then one command; ``s`` and ``y`` with their delimiters and
backslash escapes, the ``s`` flags; ``a``, ``i``, ``c``, ``r``, ``R``, ``w``, ``W`` and
labels up to the end of the line (``;`` ends a label, as GNU sed reads one). A script it
cannot read (a command letter it does not know, a delimiter never closed) is unreadable:
the caller takes it as writing anything. Linear: one pass over the script.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_SIMPLE = frozenset("=dDgGhHlnNpPxzFqQ{}")
"""Commands that take nothing but an optional number (``q5``) or nothing at all."""
_TO_LINE_END = frozenset("aicrRwWe")
"""Commands whose argument runs to the end of the line."""
_LABELS = frozenset(":btT")


@dataclass
class Effects:
    """What a sed script does to other files (``unreadable``: why it could not be read)."""

    writes: list[str] = field(default_factory=list)
    runs: bool = False
    unreadable: str | None = None


def script_effects(script: str) -> Effects:
    """The files a sed script writes and whether it runs commands (module doc)."""
    out = Effects()
    i, n = 0, len(script)
    while i < n:
        i = _skip(script, i, " \t\n;")
        if i >= n:
            break
        i = _address(script, i, out)
        if out.unreadable:
            return out
        i = _skip(script, i, " \t!")
        if i >= n:
            out.unreadable = "a sed address with no command"
            return out
        command = script[i]
        i += 1
        if command == "#":
            i = _line_end(script, i)
        elif command in _SIMPLE:
            while i < n and script[i].isdigit():
                i += 1
        elif command in _TO_LINE_END:
            end = _line_end(script, i)
            argument = script[i:end].strip()
            if command in "wW":
                out.writes.append(argument)
            elif command == "e":
                out.runs = True
            i = end
        elif command in _LABELS:
            i = _label_end(script, i)
        elif command in "sy":
            i = _substitution(script, i, command, out)
        else:
            out.unreadable = f"the sed command {command!r} is not one the guard reads"
        if out.unreadable:
            return out
    return out


def _skip(script: str, i: int, chars: str) -> int:
    while i < len(script) and script[i] in chars:
        i += 1
    return i


def _line_end(script: str, i: int) -> int:
    end = script.find("\n", i)
    return len(script) if end < 0 else end


def _label_end(script: str, i: int) -> int:
    ends = [e for e in (script.find("\n", i), script.find(";", i)) if e >= 0]
    return min(ends) if ends else len(script)


def _delimited(script: str, i: int, delimiter: str) -> int:
    """The index after the next unescaped `delimiter` from `i` (-1: never closed)."""
    while i < len(script):
        if script[i] == "\\":
            i += 2
            continue
        if script[i] == delimiter:
            return i + 1
        i += 1
    return -1


def _address(script: str, i: int, out: Effects) -> int:
    r"""Skip one address or a range of two (``1``, ``$``, ``/re/I``, ``\%re%``, ``1~2``)."""
    for _ in range(2):
        if i < len(script) and (script[i].isdigit() or script[i] in "$~+"):
            while i < len(script) and (script[i].isdigit() or script[i] in "$~+"):
                i += 1
        elif i < len(script) and script[i] in "/\\":
            delimiter = "/" if script[i] == "/" else script[i + 1 : i + 2]
            start = i + (1 if script[i] == "/" else 2)
            end = _delimited(script, start, delimiter) if delimiter else -1
            if end < 0:
                out.unreadable = "a sed address whose delimiter is never closed"
                return i
            i = end
            while i < len(script) and script[i] in "IM":
                i += 1
        i = _skip(script, i, " \t")
        if i < len(script) and script[i] == ",":
            i = _skip(script, i + 1, " \t")
            continue
        break
    return i


def _substitution(script: str, i: int, command: str, out: Effects) -> int:
    """Read ``s/re/replacement/flags`` or ``y/abc/xyz/``; note a ``w`` or ``e`` flag."""
    if i >= len(script) or script[i] in "\n\\":
        out.unreadable = f"a sed `{command}` command without a delimiter"
        return i
    delimiter = script[i]
    i += 1
    for _ in range(2):
        i = _delimited(script, i, delimiter)
        if i < 0:
            out.unreadable = f"a sed `{command}` command whose delimiter is never closed"
            return len(script)
    if command == "y":
        return i
    while i < len(script) and script[i] not in ";\n}":
        flag = script[i]
        if flag == "w":
            end = _line_end(script, i + 1)
            out.writes.append(script[i + 1 : end].strip())
            return end
        if flag == "e":
            out.runs = True
        elif not (flag.isdigit() or flag in "gpiImM \t"):
            out.unreadable = f"the sed flag {flag!r} is not one the guard reads"
            return i
        i += 1
    return i
