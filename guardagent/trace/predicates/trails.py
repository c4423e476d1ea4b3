"""The chain each judged value came by, as data for a decision (:class:`~.fact.Trail`).

A provenance predicate's `detail` says it in a sentence; a picture of the decision
(:mod:`guardagent.explain`) needs the steps: which message holds the value, which call's
result that is, and which words of the user asked for that call. Built only from what the
predicate already decided (its deciding values and their sources), so it adds no reading of
the trace beyond locating the user's words (:func:`~guardagent.trace.found.written.exact_spans`,
linear in the message).
"""

from __future__ import annotations

from collections.abc import Sequence

from guardagent.trace.found.written import exact_spans
from guardagent.trace.predicates.engine import TraceFacts
from guardagent.trace.predicates.fact import Step, Trail
from guardagent.trace.sources.provenance import SourceRef, ValueProvenance
from guardagent.trace.thread.state import flatten

SHOWN_CHARS = 60
"""A value or argument is cut here in a trail (the decision's detail cuts the same)."""
_AROUND = 24
"""Characters of the user's message kept either side of the words that asked."""
_MAX_ARGS = 3

_HOLDS = {
    "user": "the user wrote it",
    "system": "the system prompt holds it",
    "trusted_tool": "a trusted result holds it",
    "untrusted_tool": "an untrusted result holds it",
    "model": "only the model wrote it",
}
_DECIDING = {
    "user": ("user",),
    "trusted": ("system", "trusted_tool"),
    "untrusted": ("untrusted_tool",),
    "invented": ("model",),
}


def shown(text: str) -> str:
    """A value as a trail shows it: cut at :data:`SHOWN_CHARS`."""
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


def plain(value: ValueProvenance, records: bool = False) -> Trail:
    """A value's trail by its origin alone: the messages that decided its origin.

    Args:
        value: The value and its sources.
        records: The user's records hold it (and no user or trusted message does).
    """
    if records and value.origin not in ("user", "trusted"):
        return Trail(value.path, shown(value.value.text), "records")
    refs = value.of(*_DECIDING[value.origin])  # type: ignore[arg-type]
    steps = tuple(Step(ref, _HOLDS.get(ref.kind, "")) for ref in refs)
    return Trail(value.path, shown(value.value.text), value.origin, steps)


def designated(facts: TraceFacts, value: ValueProvenance, refs: Sequence[SourceRef]) -> Trail:
    """The trail of a value derived from what the user designated.

    Args:
        facts: The analysed trace.
        value: The value.
        refs: The derivation's messages, from the one holding the value back to the
            user's request (as :func:`~.derived.derivation` gives them).
    """
    ordered = sorted(dict.fromkeys(refs), key=lambda r: r.index)
    steps = []
    for k, ref in enumerate(ordered):
        later = ordered[k + 1] if k + 1 < len(ordered) else None
        steps.append(Step(ref, _note(facts, ref, later, value)))
    return Trail(value.path, shown(value.value.text), "designated", tuple(steps))


def _call_text(facts: TraceFacts, ref: SourceRef) -> tuple[str, list[str]]:
    """``read_file(path='invoice-0425.txt')`` for a tool result, and its text arguments."""
    message = facts.trace.messages[ref.index]
    call = facts.trace.call_of(message)
    if call is None:
        return "", []
    leaves = flatten(call.args)
    args = ", ".join(f"{path}={shown(str(scalar))!r}" for path, scalar in leaves[:_MAX_ARGS])
    more = ", ..." if len(leaves) > _MAX_ARGS else ""
    return f"{call.name}({args}{more})", [s for _, s in leaves if isinstance(s, str)]


def _around(text: str, start: int, end: int) -> str:
    """The words around ``text[start:end]``: whole words only, ``...`` where text was left."""
    lo, hi = start - _AROUND, end + _AROUND
    if lo > 0:
        cut = text.find(" ", lo, start)
        lo = cut + 1 if cut >= 0 else lo
    if hi < len(text):
        cut = text.rfind(" ", end, hi)
        hi = cut if cut >= 0 else hi
    lo, hi = max(lo, 0), min(hi, len(text))
    words = " ".join(text[lo:hi].split())
    return ("..." if lo > 0 else "") + words + ("..." if hi < len(text) else "")


def _note(
    facts: TraceFacts, ref: SourceRef, later: SourceRef | None, value: ValueProvenance
) -> str:
    """What one message did: the user's words that asked, or the call it is the result of."""
    if ref.kind in ("trusted_tool", "untrusted_tool"):
        call, _ = _call_text(facts, ref)
        return f"result of {call}" if call else _HOLDS[ref.kind]
    if ref.kind != "user":
        return _HOLDS.get(ref.kind, "")
    wanted = _call_text(facts, later)[1] if later is not None else [value.value.text]
    text = facts.trace.messages[ref.index].text
    for name in wanted:
        spans = exact_spans(text, name)
        if spans:
            return f"asked: {_around(text, *spans[0])!r}"
    return "asked for it"
