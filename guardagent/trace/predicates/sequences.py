"""Sequence predicates: what came right before this call, how recently, and how often.

"Confirm right after the preview", "a transfer only within two steps of looking the
balance up", "never write after reading a secret", "at most three e-mails per thread",
"the form was filled and saved as contiguous steps" (``called_in_a_row``).
Steps are the thread's calls (every call of the assistant messages before the proposed
one, in order; messages that are not calls do not count as steps). Patterns are
:class:`~guardagent.trace.sources.temporal.CallPattern` (a tool glob, ``effect:<effect>``, or a
mapping with ``tool``, ``effect``, ``args`` and ``status``), with the same ``args=`` and
``status=`` keywords as ``called_before``.
"""

from __future__ import annotations

from typing import Any

from guardagent.trace.document.shapes import ToolCall
from guardagent.trace.predicates.engine import TraceFacts, checks, predicate
from guardagent.trace.predicates.fact import Fact, PredicateSpecError
from guardagent.trace.predicates.hidden import steps, summary_hides
from guardagent.trace.predicates.readings import both_readings
from guardagent.trace.sources.provenance import SourceRef
from guardagent.trace.sources.temporal import CallPattern, matches


def _refs(facts: TraceFacts, calls: list[ToolCall]) -> tuple[SourceRef, ...]:
    return facts.search.refs(c.index for c in calls if c.index < facts.index.count)


def _matching(
    facts: TraceFacts, calls: tuple[ToolCall, ...] | list[ToolCall], pat: CallPattern
) -> list[ToolCall]:
    return [c for c in calls if matches(c, pat, facts.trace, facts.labels)]


@predicate
@summary_hides(None, lambda args, kwargs: 1)
@both_readings
def immediately_after(
    facts: TraceFacts, pattern: Any, args: Any = None, status: Any = None
) -> Fact:
    """The call just before this one (no call in between) matches the pattern."""
    pat = CallPattern.of(pattern, args=args, status=status)
    calls = facts.trace.calls
    if not calls:
        return Fact("immediately_after", False, (), "no call before this one")
    last = calls[-1]
    hit = bool(_matching(facts, [last], pat))
    return Fact(
        "immediately_after",
        hit,
        _refs(facts, [last]),
        f"the call before this one, {last.name!r} (message {last.index}), "
        f"{'matches' if hit else 'does not match'} {pat}",
    )


@predicate
@summary_hides(None, steps)
@both_readings
def within_steps(
    facts: TraceFacts, pattern: Any, n: int, args: Any = None, status: Any = None
) -> Fact:
    """One of the last `n` calls before this one matches the pattern."""
    pat = CallPattern.of(pattern, args=args, status=status)
    recent = list(facts.trace.calls[-int(n) :])
    hits = _matching(facts, recent, pat)
    if hits:
        return Fact(
            "within_steps",
            True,
            _refs(facts, hits[-1:]),
            f"{hits[-1].name!r} (message {hits[-1].index}) matches {pat}, within {n} step(s)",
        )
    return Fact("within_steps", False, (), f"none of the last {len(recent)} call(s) matches {pat}")


@predicate
@summary_hides(False)
@both_readings
def never_after(facts: TraceFacts, pattern: Any, args: Any = None, status: Any = None) -> Fact:
    """No earlier call of the thread matches the pattern (this call is not after one)."""
    pat = CallPattern.of(pattern, args=args, status=status)
    hits = _matching(facts, facts.trace.calls, pat)
    if hits:
        return Fact(
            "never_after",
            False,
            _refs(facts, hits[:1]),
            f"this call comes after {hits[0].name!r} (message {hits[0].index}), "
            f"which matches {pat}",
        )
    return Fact("never_after", True, (), f"no earlier call matches {pat}")


@predicate
@summary_hides(False)
@both_readings
def at_most(facts: TraceFacts, pattern: Any, n: int, args: Any = None, status: Any = None) -> Fact:
    """At most `n` calls of the thread match the pattern, this one included if it does."""
    pat = CallPattern.of(pattern, args=args, status=status)
    hits = _matching(facts, facts.trace.calls, pat)
    this = matches(facts.trace.call, pat, facts.trace, facts.labels)
    total = len(hits) + (1 if this else 0)
    return Fact(
        "at_most",
        total <= int(n),
        _refs(facts, hits),
        f"{total} call(s) of the thread match {pat}"
        + (" (this one included)" if this else "")
        + f"; at most {n}",
    )


MAX_RUN = 20
"""The most patterns ``called_in_a_row`` takes (a few steps, so matching stays linear)."""


@predicate
@summary_hides(True)
@both_readings
def called_in_a_row(facts: TraceFacts, *patterns: Any) -> Fact:
    """Some run of consecutive earlier calls matches the patterns, in order, none in between.

    Contiguous steps ("fill the name, then save, with nothing else done between"): each
    earlier call is tested once against each pattern, so the work is the calls times the
    patterns (at most :data:`MAX_RUN`). Messages that are not calls are no steps.
    """
    pats = [CallPattern.of(p) for p in patterns]
    calls = facts.trace.calls
    hit = [[matches(c, p, facts.trace, facts.labels) for p in pats] for c in calls]
    k = len(pats)
    start = next(
        (i for i in range(len(calls) - k + 1) if all(hit[i + j][j] for j in range(k))), None
    )
    shown = ", ".join(map(str, pats))
    if start is None:
        return Fact(
            "called_in_a_row",
            False,
            (),
            f"no {k} consecutive earlier calls of the {len(calls)} match {shown} in order",
        )
    run = list(calls[start : start + k])
    return Fact(
        "called_in_a_row",
        True,
        _refs(facts, run),
        f"the calls in messages {', '.join(str(c.index) for c in run)} match {shown}, in a row",
    )


def _check_pattern(given: dict[str, Any], counted: bool) -> None:
    CallPattern.of(given["pattern"], args=given.get("args"), status=given.get("status"))
    if counted:
        n = given["n"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise PredicateSpecError(f"n must be a whole number >= 0, not {n!r}")


@checks("immediately_after")
def _check_immediately(given: dict[str, Any]) -> None:
    _check_pattern(given, False)


@checks("never_after")
def _check_never(given: dict[str, Any]) -> None:
    _check_pattern(given, False)


@checks("within_steps")
def _check_within(given: dict[str, Any]) -> None:
    _check_pattern(given, True)
    if given["n"] < 1:
        raise PredicateSpecError("n must be at least 1")


@checks("called_in_a_row")
def _check_in_a_row(given: dict[str, Any]) -> None:
    patterns = given["patterns"]
    if len(patterns) < 2:
        raise PredicateSpecError("give at least two call patterns (one is called_before)")
    if len(patterns) > MAX_RUN:
        raise PredicateSpecError(f"give at most {MAX_RUN} call patterns")
    for spec in patterns:
        CallPattern.of(spec)


@checks("at_most")
def _check_at_most(given: dict[str, Any]) -> None:
    _check_pattern(given, True)
