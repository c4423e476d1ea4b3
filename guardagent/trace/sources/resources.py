r"""Which resource a call names, and which earlier call of the agent wrote to it.

An injected model calls ``write_file("invoice-0425.txt", <attacker IBAN>)``, reads the file
back and pays: the user named that file, but what it now returns is what the model wrote into
it. Data flows through the agent's own writes (as in CaMeL): a tool's result about a resource
that a writing call named earlier in the thread holds what the agent put there, whose sources
are the model's (an untrusted message, or nothing), not the document the user pointed at.

A **writing call** is a call of a tool whose label's effect is ``write``, ``send`` or
``irreversible`` (an unlabelled tool is ``irreversible``): it may store what it is given
(a file, a note, a post to a channel, a transaction's subject). It **names** the resource of
a later call when one of its argument values and one of the later call's are the same name
under every folding some store applies (:func:`names`): case, Unicode compatibility forms,
invisible characters, outer spaces, trailing dots and spaces (Windows), NTFS's
``::$DATA`` (the file's own stream), percent-decoding (a store behind a URL), ``\`` for
``/``, ``./`` and ``a/../``, and the last path segment alone (``/home/u/invoice-0425.txt`` is the
``invoice-0425.txt`` of another working directory). Reading more names the same can only
deny. Short numbers (``1``, ``900``) are compared only between arguments of the same name
(``id`` and ``id``): a page number is not the amount of a payment. A write in the same
assistant message as the read (parallel calls, run in any order) counts too, and so does a
writing call that names the resource as a mapping key (``{"invoice-0425.txt": body}``).
A shell command (:mod:`guardagent.trace.text.shell_writes`) names the files it writes
(``echo ... > invoice-0425.txt``), and one it cannot read names every resource after it, as
does a call of a tool that runs a program (``python_repl``, ``jupyter``:
:func:`~guardagent.trace.text.shell_writes.runs_code`). A patch names the files its headers name
(:mod:`guardagent.trace.text.patch_writes`), and a name holding a NUL also names what a store
written in C reads of it (up to the NUL).

Linear: each call's arguments are read once into a table of names.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from guardagent.trace.document.labels import Effect, Labels
from guardagent.trace.document.shapes import ToolCall, Trace
from guardagent.trace.found.written import target_shaped
from guardagent.trace.text.normal import normalize_text
from guardagent.trace.text.patch_writes import patched_files
from guardagent.trace.text.shell_writes import runs_code, shell_args, written_by
from guardagent.trace.thread.state import flatten

WRITING_EFFECTS: frozenset[Effect] = frozenset({"write", "send", "irreversible"})
"""Effects of tools that may store what they are given."""

_MAX_NAME = 200
"""A longer value with a space in it is a body, not a name."""
_DECODINGS = 2
"""Percent-decodings of a name read beside it (``invoice-0425%2etxt``, ``%252e``)."""


def names(scalar: Any) -> set[str]:
    """Every name a scalar may be to some store: the whole path and its last segment, folded."""
    if isinstance(scalar, bool) or scalar is None or not isinstance(scalar, str | int | float):
        return set()
    text = str(scalar)
    if "\x00" in text:  # a store written in C reads the name up to the NUL
        return names(text.split("\x00", 1)[0]) | names(text.replace("\x00", ""))
    if len(text) > _MAX_NAME and not target_shaped(text):
        return set()
    out: set[str] = set()
    for _ in range(_DECODINGS + 1):  # as written, then percent-decoded (a store behind a URL)
        folded = " ".join(normalize_text(text).replace("\\", "/").split()).rstrip(". ")
        folded = folded.removesuffix("::$data").rstrip(". ")  # NTFS: the file's own stream
        path = posixpath.normpath(folded).rstrip(". ") if folded else ""
        last = path.rsplit("/", 1)[-1].rstrip(". ")
        out.update(n for n in (folded, path, last) if n and n not in (".", "..", "/"))
        if (decoded := unquote(text)) == text:
            break
        text = decoded
    return out


def _keys(args: Any) -> list[tuple[str, str]]:
    """``(argument, key)`` for every mapping key under a call's arguments.

    A key may name the resource (``write_files({"invoice-0425.txt": body})``). Each node is
    visited once (a shared sub-object is not read twice).
    """
    found: list[tuple[str, str]] = []
    seen: set[int] = set()
    stack = [(str(arg), value) for arg, value in args.items()]
    while stack:
        arg, node = stack.pop()
        if id(node) in seen or not isinstance(node, Mapping | list | tuple):
            continue
        seen.add(id(node))
        if isinstance(node, Mapping):
            found.extend((arg, key) for key in node if isinstance(key, str))
        stack.extend((arg, v) for v in (node.values() if isinstance(node, Mapping) else node))
    return found


def _short_number(name: str) -> bool:
    return len(name) < 3 or all(c.isdigit() or c in ".,-+ " for c in name)


class Writes:
    """The names each writing call of a trace gave, looked up by name.

    Args:
        trace: The trace.
        labels: The deployer's labels (which tools write).
    """

    def __init__(self, trace: Trace, labels: Labels) -> None:
        self._by_name: dict[str, list[tuple[str, ToolCall]]] = {}
        self._anything: list[ToolCall] = []  # shell commands that may write any resource
        self._why: dict[int, str] = {}  # their positions -> why the command is not read
        for call in trace.calls:
            if labels.label(call.name).effect not in WRITING_EFFECTS:
                continue
            named = [(p.split(".", 1)[0].split("[", 1)[0], v) for p, v in flatten(call.args)]
            shell = shell_args(call.name, call.args)
            if runs_code(call.name):  # a program: what it opens is computed when it runs
                self._anything.append(call)
                self._why.setdefault(
                    call.position, f"`{call.name[:40]}` runs a program, which may write any file"
                )
            for arg, scalar in named:
                if arg in shell and isinstance(scalar, str):
                    self._shell(call, arg, scalar)  # read as the shell reads it
                else:
                    self._name(call, arg, scalar)
                    for target in patched_files(scalar) if isinstance(scalar, str) else ():
                        self._name(call, arg, target)  # a patch writes what its headers name
            for arg, key in _keys(call.args):
                self._name(call, arg, key)

    def _name(self, call: ToolCall, arg: str, scalar: Any) -> None:
        for name in names(scalar):
            self._by_name.setdefault(name, []).append((arg, call))

    def _shell(self, call: ToolCall, arg: str, command: str) -> None:
        """Index the files a shell command writes (:mod:`.shell_writes`).

        A command it cannot read may write any resource (fail closed).
        """
        found = written_by(command)
        if found.unknown is not None:
            self._anything.append(call)
            self._why.setdefault(call.position, f"a shell command not read: {found.unknown}")
        for target in found.targets:
            self._name(call, arg, target)

    def unread(self, writer: ToolCall) -> str | None:
        """Why a writing call may have written any resource (None: it names what it wrote)."""
        return self._why.get(writer.position)

    def writer(self, call: ToolCall) -> ToolCall | None:
        """The first earlier writing call that names a resource `call` names, if any.

        Earlier: made in an earlier message, or in the same one (run in any order).
        """
        found: ToolCall | None = None
        for other in self._anything:  # a shell command that may have written anything
            if (
                other.position != call.position
                and other.index <= call.index
                and (found is None or other.position < found.position)
            ):
                found = other
        for path, scalar in flatten(call.args):
            arg = path.split(".", 1)[0].split("[", 1)[0]
            for name in names(scalar):
                for their_arg, other in self._by_name.get(name, ()):
                    if other.position == call.position or other.index > call.index:
                        continue
                    if _short_number(name) and their_arg != arg:
                        continue
                    if found is None or other.position < found.position:
                        found = other
        return found
