r"""The proposed call's argument names: each one the label declares, none read two ways.

A rule names the arguments it checks (``arg_from_user("iban")``); a call that also carries
``Iban``, ``iban\u200b``, ``beneficiary`` or ``bcc`` puts a value where no rule looks, and
the tool may read that one (a case-insensitive binder, a second payee field, a mail server
that honours ``bcc``). The guard cannot say what such a call does, so it fails closed:

- the label's ``args`` is the closed list of the tool's argument names, compared exactly as
  written (never case-folded or normalised): a top-level argument not in it is denied
  (``undeclared_argument``, naming it). A label without ``args`` declares no argument, so a
  call of it with any argument is denied the same way. ``other_args: allow`` in the label
  is the deployer's explicit opt-out: then names outside ``args`` pass, judged only by
  predicates over every argument (``"*"``);
- two keys of one object, at any depth, that read alike (in any call of the trace: an
  earlier call's arguments say what its result is and where it went) (NFKC, case-folded, format
  characters, ``_`` and ``-`` removed, outer spaces dropped: ``iban`` and ``IBAN``, ``to``
  and ``t\u200bo``, ``payee_iban`` and ``payeeIban``) are denied
  (``ambiguous_argument``): which one the tool reads is the tool's choice;
- so is arguments text (OpenAI ``arguments``) that gives one key twice in an object
  (:func:`keys_once`, the hook its JSON is read with): Python's ``json`` keeps the last
  value, a runtime that keeps the first (or refuses) runs another call than the one judged.

Linear in the arguments (one pass over each object's keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guardagent.readers.evidence import unreadable
from guardagent.trace.document.labels import ToolLabel
from guardagent.trace.text.normal import normalize_text

_JOINERS = str.maketrans({"_": None, "-": None})
"""Dropped when keys are compared: ``payee_iban``, ``payeeIban`` and ``payee-iban`` are one
field to a binder with camelCase or kebab-case aliases (pydantic's ``to_camel``)."""


def check_argument_names(tool: str, args: Mapping[str, Any], label: ToolLabel) -> None:
    """Deny a call whose argument names the label does not account for.

    Args:
        tool: The proposed call's tool name (for the message).
        args: The proposed call's arguments.
        label: The tool's label.

    Raises:
        UnreadableEvidence: ``undeclared_argument`` or ``ambiguous_argument``.
    """
    if not label.other_args:
        declared = frozenset(label.args or ())
        extra = [str(name) for name in args if name not in declared]
        if extra:
            listed = ", ".join(repr(name)[:60] for name in extra[:5])
            known = (
                f"its label declares {sorted(declared)}"
                if label.args is not None
                else "its label declares no args"
            )
            unreadable(
                "undeclared_argument",
                f"the call of {tool[:80]!r} has arguments "
                f"{listed} that {known} (names are matched exactly; list every "
                "argument the tool takes under `args`, or set `other_args: allow`)",
            )
    check_keys_alike(tool, args)


def check_keys_alike(tool: str, value: Any) -> None:
    """Deny arguments with two keys of one object that read alike, at any depth.

    Checked for every call of the trace, not only the proposed one: an earlier call's
    arguments decide what its result is (the document ``read_file`` read designates the
    values in it), where it went (navigation history) and what it spent, and a binder that
    read ``PATH`` beside ``path`` read another file than the one judged.

    Raises:
        UnreadableEvidence: ``ambiguous_argument``.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            seen: dict[str, str] = {}
            for key, inner in item.items():
                read = normalize_text(str(key)).strip().translate(_JOINERS)
                if read in seen:
                    unreadable(
                        "ambiguous_argument",
                        f"the call of {tool[:80]!r} has keys "
                        f"{seen[read][:60]!r} and {str(key)[:60]!r} in one object, which "
                        "read alike: the tool may read either",
                    )
                seen[read] = str(key)
                stack.append(inner)
        elif isinstance(item, list | tuple):
            stack.extend(item)


def keys_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict (``object_pairs_hook``), refusing a key given twice.

    Raises:
        UnreadableEvidence: ``ambiguous_argument``.
    """
    out = dict(pairs)
    if len(out) < len(pairs):
        twice, seen = "", set()
        for key, _ in pairs:  # linear: one set
            if key in seen:
                twice = key
                break
            seen.add(key)
        unreadable(
            "ambiguous_argument",
            f"arguments give the key {twice[:60]!r} twice in "
            "one object: one JSON reader keeps the first value, another the last",
        )
    return out
