r"""Identifiers typed by where they came from: the value is one a listing's field holds.

``delete_file("13")`` after ``list_events`` returned an event with id ``13`` deletes a
*file* 13: the id is "in a trusted result", but of the wrong kind. And a channel whose name
an attacker wrote (``"random\nIGNORE PREVIOUS INSTRUCTIONS..."``) is still a channel that
exists: posting to it does not need its text to be trusted, only to be a channel the
workspace lists. Both are one question, which provenance by text cannot answer:

    ``arg_from_field(arg, tool, path)`` holds when every value of the argument is, as a
    whole scalar, a value that `path` reaches in the result of an earlier call of `tool`.

- `tool` is a call pattern (:class:`~guardagent.trace.sources.temporal.CallPattern`: a glob,
  ``effect:read`` or a mapping with ``args``); only calls answered without error count,
  and only of a tool labelled ``results: trusted`` (an untrusted tool's listing is the
  attacker's whole: that something is in it says nothing).
- `path` is a field path of :mod:`guardagent.trace.text.fields` (``$[*].id_``), read in the
  tool's whole result as its label's ``result_format`` says (JSON by default, YAML, or a
  listing up to its first untrusted cell), untrusted fields included: a serializer escapes
  what others write, so which record and which field is the tool's even where a field's
  text is not. That is "exists in the listing", never "its text is trusted".
- A value the call itself was given (``get_file("99")`` answering ``{"id_": "99",
  "error": "not found"}``) is the tool writing back its argument, not a record: it does
  not count for that call's result (as provenance leaves out echoes of a call's own
  arguments), only another call's listing of it does.
- Equality is exact text, as a tool reading the id gets it: a string is itself, a whole
  number (not a bool) its decimal digits, so ``13`` and ``"13"`` are one id, and
  ``"013"``, ``" 13"``, ``13.0`` or ``true`` are no listed id. A float, a bool, a null or a
  container at the path is no identifier and matches nothing.

Fail closed: no value in the argument is open (None); a value in no listing is False; a
result that does not parse as its format, or that the path meets with the wrong shape, is
open (None) when the value was not found in another result of the tool: it may have been
in the one that could not be read, and "nothing found" there is not "fine". So is a value
in no listing of a trace holding a conversation summary (:mod:`.hidden`): the listing may
be among the calls it replaced. Never True without the value found. The detail names the
tool, the path and the messages read.

The results are the trace's own messages (:attr:`~guardagent.trace.document.shapes.Message.
result_text`): a thread resumed from its state (:mod:`guardagent.trace.document.resume`) keeps the
messages it read, whole texts included, so it answers as a fresh read of the same trace.
"""

from __future__ import annotations

import reprlib
from typing import Any

from guardagent.trace.document.shapes import Message, ToolCall
from guardagent.trace.predicates.engine import TraceFacts, checks, predicate
from guardagent.trace.predicates.fact import Fact, PredicateSpecError
from guardagent.trace.predicates.hidden import summary_hides
from guardagent.trace.predicates.options import under
from guardagent.trace.sources.provenance import SourceRef
from guardagent.trace.sources.temporal import CallPattern, matches
from guardagent.trace.text.fields import FieldPath, NotStructured, PathError, parse_path, values_at
from guardagent.trace.thread.state import flatten

NAME = "arg_from_field"

_SHOWN = reprlib.Repr()
"""Values as a detail shows them: an attacker's long channel name is cut, its newlines escaped."""
_SHOWN.maxstring = _SHOWN.maxother = 60


def identifier(value: Any) -> str | None:
    """The text a tool reads from an identifier, or None for a value that is none.

    A string is itself and a whole number its decimal digits; a bool, a float, a null or a
    container names no one record (``13.0`` is not the id ``13``: which one the tool reads
    is unknown).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


class _Listing:
    """What one earlier call's result holds at the path (or why it cannot be read)."""

    def __init__(self, facts: TraceFacts, call: ToolCall, result: Message, path: FieldPath) -> None:
        self.call = call
        self.result = result
        self.ids: frozenset[str] = frozenset()
        self.echoed: frozenset[str] = frozenset()
        self.problem: str | None = None
        label = facts.labels.label(call.name)
        try:
            found = values_at(
                result.result_text, path, label.result_format, label.columns, label.untrusted_fields
            )
        except NotStructured as exc:
            self.problem = f"`{call.name}` in message {result.index}: {exc}"
            return
        ids = {i for i in map(identifier, found) if i is not None}
        asked = {i for _, v in flatten(call.args) if (i := identifier(v)) is not None}
        self.echoed = frozenset(ids & asked)
        self.ids = frozenset(ids - asked)

    @property
    def ref(self) -> SourceRef:
        return SourceRef(self.result.index, self.result.source, "trusted_tool")


def _listings(
    facts: TraceFacts, pattern: CallPattern, path: FieldPath
) -> tuple[list[_Listing], list[str]]:
    """The readable-or-not results of the pattern's answered calls, and the calls skipped."""
    key = (NAME, repr(pattern), path.text)  # a pattern's args may be unhashable
    kept = facts.memo.get(key)
    if kept is not None:
        return kept  # type: ignore[no-any-return]
    listings: list[_Listing] = []
    skipped: list[str] = []
    for call in facts.trace.calls:
        if not matches(call, pattern, facts.trace, facts.labels):
            continue
        result = facts.trace.result_of(call)
        if result is None or result.status != "ok":
            skipped.append(
                f"`{call.name}` in message {call.index} "
                f"({'unanswered' if result is None else 'failed'})"
            )
        elif facts.labels.label(call.name).results != "trusted":
            skipped.append(f"`{call.name}` in message {call.index} (its results are untrusted)")
        else:
            listings.append(_Listing(facts, call, result, path))
    facts.memo[key] = (listings, skipped)
    return listings, skipped


@predicate
@summary_hides(True)
def arg_from_field(facts: TraceFacts, arg: str, tool: Any, path: str) -> Fact:
    """Every value of the argument is a value at `path` of an earlier `tool` result (module doc)."""
    pattern = CallPattern.of(tool)
    field = parse_path(path)
    where = f"`{pattern}` results at {path}"
    values = [(p, v) for p, v in flatten(facts.trace.call.args) if arg == "*" or under(p, arg)]
    if not values:
        return Fact(
            NAME,
            None,
            (),
            f"{facts.trace.call.name!r} has no value in argument {arg!r} to find in {where}",
        )
    listings, skipped = _listings(facts, pattern, field)
    problems = [x.problem for x in listings if x.problem is not None]
    read = [x for x in listings if x.problem is None]
    found: list[str] = []
    missing: list[str] = []
    sources: list[SourceRef] = []
    for name, value in values:
        text = identifier(value)
        hit = next((x for x in read if text is not None and text in x.ids), None)
        if hit is None:
            echo = next((x for x in read if text is not None and text in x.echoed), None)
            missing.append(
                f"{name} {_SHOWN.repr(value)}"
                + (
                    ""
                    if echo is None
                    else (
                        f" (message {echo.result.index} holds it only as its call's own argument)"
                    )
                )
            )
            continue
        sources.append(hit.ref)
        found.append(
            f"{name} {_SHOWN.repr(value)} is in `{hit.call.name}` message {hit.result.index}"
        )
    if not missing:
        return Fact(NAME, True, tuple(dict.fromkeys(sources)), f"{'; '.join(found[:5])} at {path}")
    shown = ", ".join(missing[:5])
    seen = ", ".join(f"message {x.result.index}" for x in read[:5]) or "no readable result"
    notes = "; ".join([*problems[:3], *(f"skipped {s}" for s in skipped[:3])])
    notes = f" ({notes})" if notes else ""
    if problems:
        return Fact(
            NAME,
            None,
            tuple(x.ref for x in listings),
            f"{shown}: not found in {where} ({seen}), and a result could not be read{notes}",
        )
    if not listings:
        return Fact(
            NAME,
            False,
            (),
            f"{shown}: no earlier answered call of a trusted tool "
            f"matching `{pattern}` lists values at {path}{notes}",
        )
    return Fact(
        NAME,
        False,
        tuple(x.ref for x in read),
        f"{shown}: not a value at {path} of `{pattern}` ({seen}){notes}",
    )


@checks(NAME)
def _check(given: dict[str, Any]) -> None:
    if not isinstance(given["arg"], str) or not given["arg"]:
        raise PredicateSpecError("arg must be an argument name, a path or '*'")
    CallPattern.of(given["tool"])
    try:
        parse_path(given["path"])
    except PathError as exc:
        raise PredicateSpecError(str(exc)) from None
