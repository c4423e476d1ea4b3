"""History predicates: earlier calls, their order and counts, and navigation scope."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from guardagent.trace.document.shapes import ToolCall
from guardagent.trace.found.redirects import every_carried
from guardagent.trace.predicates.engine import TraceFacts, predicate
from guardagent.trace.predicates.fact import Fact
from guardagent.trace.predicates.hidden import summary_hides
from guardagent.trace.predicates.lookalikes import WrittenIdnScope, idn_wildcard_hosts
from guardagent.trace.predicates.options import top_arg, under
from guardagent.trace.predicates.readings import both_readings
from guardagent.trace.sources.provenance import SourceRef
from guardagent.trace.sources.temporal import (
    CallPattern,
    Scope,
    earlier_calls,
    order_violations,
    out_of_scope,
    scope_verdict,
    url_location,
    urls_at,
)
from guardagent.trace.text.kinds import Value
from guardagent.trace.thread.state import flatten


def _refs(facts: TraceFacts, indices: Iterable[int]) -> tuple[SourceRef, ...]:
    return facts.search.refs(i for i in indices if i < facts.index.count)


@predicate
@summary_hides(True)
@both_readings
def called_before(facts: TraceFacts, pattern: Any, args: Any = None, status: Any = None) -> Fact:
    """An earlier call matches the pattern."""
    pat = CallPattern.of(pattern, args=args, status=status)
    calls = earlier_calls(facts.trace, pat, facts.labels)
    detail = (
        f"{len(calls)} earlier call(s) match {pat}" if calls else f"no earlier call matches {pat}"
    )
    return Fact("called_before", bool(calls), _refs(facts, (c.index for c in calls)), detail)


@predicate
@summary_hides(True)
@both_readings
def called_at_least(
    facts: TraceFacts, pattern: Any, n: int, args: Any = None, status: Any = None
) -> Fact:
    """At least `n` earlier calls match the pattern."""
    pat = CallPattern.of(pattern, args=args, status=status)
    calls = earlier_calls(facts.trace, pat, facts.labels)
    return Fact(
        "called_at_least",
        len(calls) >= int(n),
        _refs(facts, (c.index for c in calls)),
        f"{len(calls)} earlier call(s) match {pat}",
    )


@predicate
@both_readings
def order_holds(facts: TraceFacts, first: Any, then: Any) -> Fact:
    """Every call matching `then` (earlier ones and this one) comes after a `first` call."""
    a, b = CallPattern.of(first), CallPattern.of(then)
    bad = order_violations(facts.trace, a, b, facts.labels)
    if not bad:
        return Fact("order_holds", True, (), f"every {b} call comes after a {a} call")
    shown = ", ".join(
        "the proposed call" if c is facts.trace.call else f"message {c.index}" for c in bad[:5]
    )
    return Fact(
        "order_holds",
        False,
        _refs(facts, (c.index for c in bad)),
        f"{b} without an earlier {a}: {shown}",
    )


@predicate
def nothing_after(facts: TraceFacts, pattern: Any, args: Any = None, status: Any = None) -> Fact:
    """No earlier call matches the pattern (so this call does not come after one)."""
    fact = called_before(facts, pattern, args, status)
    value = None if fact.value is None else not fact.value  # open stays open
    return Fact("nothing_after", value, fact.sources, fact.detail)


@predicate
def navigation_in_scope(facts: TraceFacts, *scopes: str, arg: str = "url") -> Fact:
    """Every URL of the proposed call's argument is inside one of the scopes."""
    parsed = [WrittenIdnScope.of(s) for s in scopes]
    call = facts.trace.call
    outside = out_of_scope([call], parsed, arg, facts.index.region)
    values = urls_at(call, arg, facts.index.region)
    if not values:
        return Fact("navigation_in_scope", False, (), f"argument {arg!r} holds no URL")
    if outside:
        shown = ", ".join(repr(u) for _, u, _ in outside[:3])
        lookalike = idn_wildcard_hosts(values, parsed)
        if lookalike and all(verdict is None for *_, verdict in outside):
            return Fact(
                "navigation_in_scope",
                None,
                (),
                f"the host {lookalike[0]!r} is inside "
                f"{', '.join(map(str, parsed))} only through a wildcard over an "
                "internationalised label (it may render like another site)",
            )
        if all(verdict is None for *_, verdict in outside):  # open: a rule either way denies
            return Fact(
                "navigation_in_scope",
                None,
                (),
                f"{shown} inside "
                f"{', '.join(map(str, parsed))} by one reading only (the path as "
                "the browser sends it or as a server may resolve it, or a URL it "
                "carries, which the browser is sent on to)",
            )
        return Fact(
            "navigation_in_scope",
            False,
            (),
            f"{shown} outside {', '.join(map(str, parsed))}{_carried_note(values, parsed)}",
        )
    return Fact("navigation_in_scope", True, (), f"inside {', '.join(map(str, parsed))}")


def _carried_note(values: Sequence[Value | None], scopes: Sequence[Scope]) -> str:
    """Why a URL a scope admits is outside: the target it sends the browser on to.

    ``google.com/amp/s/evil.example`` is on google.com, yet outside ``google.com``: the
    detail names what the redirector carries, so the user is asked about that site.
    """
    for value in values:
        where = url_location(value) if value is not None else None
        if value is None or where is None or not any(s.verdict(value) is True for s in scopes):
            continue
        for target in every_carried(where):
            if target is None:
                return (
                    " (it sends the browser on to a URL that cannot be read: a link "
                    "shortener's, or one encoded past reading)"
                )
            if scope_verdict(target, scopes) is not True:
                return f" (it sends the browser on to {target.text!r})"
    return ""


@predicate
@summary_hides(False)
def history_in_scope(facts: TraceFacts, *scopes: str, tool: str = "*", arg: str = "url") -> Fact:
    """Every earlier call of the tool(s) navigated inside one of the scopes.

    Open (None) when an earlier call of a tool that declares `arg` also carries an argument
    its label does not declare: where that call went is not known; and when an earlier URL
    is inside by one reading only (as :func:`navigation_in_scope` is open for it), so that
    ``NOT history_in_scope(<forbidden>)`` does not hold for it either.
    """
    parsed = [WrittenIdnScope.of(s) for s in scopes]
    calls = earlier_calls(facts.trace, CallPattern.of(tool), facts.labels)
    unknown = [c for c in calls if _undeclared(facts, c, arg)]
    calls = [c for c in calls if any(under(p, arg) for p, _ in flatten(c.args))]
    outside = out_of_scope(calls, parsed, arg, facts.index.region)
    if any(verdict is False for *_, verdict in outside):
        out = [(c, u) for c, u, verdict in outside if verdict is False]
        return Fact(
            "history_in_scope",
            False,
            _refs(facts, (c.index for c, _ in out)),
            f"earlier {out[0][1]!r} outside {', '.join(map(str, parsed))}",
        )
    if outside:  # inside by one reading only, or through a wildcard over an IDN label: open
        return Fact(
            "history_in_scope",
            None,
            _refs(facts, (c.index for c, *_ in outside)),
            f"earlier {outside[0][1]!r} inside {', '.join(map(str, parsed))} by one "
            "reading only (its path as a server may resolve it, a URL it carries, "
            "or a wildcard over an internationalised host label)",
        )
    if unknown:
        names = ", ".join(
            repr(n)[:40]
            for n in unknown[0].args
            if n not in (facts.labels.label(unknown[0].name).args or ())
        )
        return Fact(
            "history_in_scope",
            None,
            _refs(facts, (c.index for c in unknown)),
            f"the earlier call in message {unknown[0].index} has arguments {names} "
            f"that the label of {unknown[0].name!r} does not declare: where it "
            "navigated is not known",
        )
    return Fact("history_in_scope", True, (), f"{len(calls)} earlier navigation(s) in scope")


def _undeclared(facts: TraceFacts, call: ToolCall, arg: str) -> bool:
    """A call of a tool that takes `arg` (its label declares it) with an argument it does not.

    The tool may read the other one (``href`` beside ``url``): where it went is not known.
    """
    label = facts.labels.label(call.name)
    if label.other_args or label.args is None or top_arg(arg) not in label.args:
        return False
    return any(name not in label.args for name in call.args)
