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
invisible characters, outer spaces, trailing dots and spaces (Windows), ``\`` for ``/``,
``./`` and ``a/../``, and the last path segment alone (``/home/u/invoice-0425.txt`` is the
``invoice-0425.txt`` of another working directory). Reading more names the same can only
deny. Short numbers (``1``, ``900``) are compared only between arguments of the same name
(``id`` and ``id``): a page number is not the amount of a payment. A write in the same
assistant message as the read (parallel calls, run in any order) counts too.

Linear: each call's arguments are read once into a table of names.
"""

from __future__ import annotations

import posixpath
from typing import Any

from guardagent.trace.labels import Effect, Labels
from guardagent.trace.messages import ToolCall, Trace
from guardagent.trace.normal import normalize_text
from guardagent.trace.state import flatten
from guardagent.trace.written import target_shaped

WRITING_EFFECTS: frozenset[Effect] = frozenset({"write", "send", "irreversible"})
"""Effects of tools that may store what they are given."""

_MAX_NAME = 200
"""A longer value with a space in it is a body, not a name."""


def names(scalar: Any) -> set[str]:
    """Every name a scalar may be to some store: the whole path and its last segment, folded."""
    if isinstance(scalar, bool) or scalar is None or not isinstance(scalar, str | int | float):
        return set()
    text = str(scalar)
    if len(text) > _MAX_NAME and not target_shaped(text):
        return set()
    folded = " ".join(normalize_text(text).replace("\\", "/").split()).rstrip(". ")
    if not folded:
        return set()
    path = posixpath.normpath(folded).rstrip(". ")
    last = path.rsplit("/", 1)[-1].rstrip(". ")
    return {n for n in (folded, path, last) if n and n not in (".", "..", "/")}


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
        for call in trace.calls:
            if labels.label(call.name).effect not in WRITING_EFFECTS:
                continue
            for path, scalar in flatten(call.args):
                arg = path.split(".", 1)[0].split("[", 1)[0]
                for name in names(scalar):
                    self._by_name.setdefault(name, []).append((arg, call))

    def writer(self, call: ToolCall) -> ToolCall | None:
        """The first earlier writing call that names a resource `call` names, if any.

        Earlier: made in an earlier message, or in the same one (run in any order).
        """
        found: ToolCall | None = None
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
