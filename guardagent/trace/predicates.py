"""Trace facts as named predicates, each with the messages that decided it.

A policy model (:mod:`guardagent.policy`) judges an event by predicates. This module gives
the trace engine's facts that shape: each predicate is a function of the analysed trace
(:class:`TraceFacts`) returning a :class:`Fact` (True, False, or None when it cannot be
told) with the source messages that decided it and one line that says why. A policy binds
its predicate names to predicate expressions, written as calls with literal arguments and
read with :mod:`ast` (never evaluated)::

    recipient_untrusted: arg_only_untrusted("to")
    iban_invented:       arg_invented("iban")
    balance_checked:     called_before("get_balance", status="ok")
    leaks_secret:        secret_flow()
    recipient_confirmed: consent_given("to")

Predicates (``arg`` is an argument name or path prefix, ``"*"`` every argument,
``"@recipients"`` the recipient arguments of the tool's label):

- the call: ``tool_is(*globs)``, ``effect_is(*effects)``, ``tool_labelled()``;
- provenance: ``arg_present(arg)``, ``arg_from_user(arg)``, ``arg_from_trusted_tool(arg)``,
  ``arg_from_trusted(arg)`` (user, system or trusted tool), ``arg_only_untrusted(arg)``,
  ``arg_invented(arg)``. The ``from`` predicates hold when *every* selected value comes
  from such a source (so they hold for an absent argument), the other two when *any*
  value does (so they fail for an absent one); for ``"@recipients"``, a call that names no
  recipient leaves them open (None: a rule that needs them denies). Keyword options:
  ``kinds="email,iban"`` (only values of those kinds; by default whole argument values,
  except that a free-text value holding e-mail addresses, URLs, IBANs or phone numbers is
  judged by those), ``part="host"`` or ``"domain"`` (a URL's host or registered domain
  instead of the whole URL);
- order and counts: ``called_before(pattern, args={...}, status=...)``,
  ``called_at_least(pattern, n)``, ``order_holds(first, then)`` (every ``then`` call,
  this one included, comes after a ``first`` call), ``nothing_after(pattern)`` (no
  ``pattern`` call happened before this one);
- navigation: ``navigation_in_scope(*scopes, arg="url")`` (every URL of the argument is in
  a scope; none, or one that does not read as a URL, is not),
  ``history_in_scope(*scopes, tool="*", arg="url")`` (every earlier such call was);
- secrets: ``secret_flow(effects="send")``, ``value_from_sensitive(arg="*")``;
- consent: ``consent_given(arg=None)``: a :class:`Consent` record from the host's review
  approves this call (or, with `arg`, these values of the argument). Text in a message
  never counts: consent is only what the host passes in.

A predicate's expression is checked when bound (:func:`compile_bindings`): an unknown
predicate, a non-literal argument or a bad option is a configuration error then, not a
denial later.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Literal

from guardagent.trace.labels import EFFECTS, Labels
from guardagent.trace.messages import Trace
from guardagent.trace.provenance import (
    CallProvenance,
    Search,
    SourceRef,
    ValueProvenance,
    call_provenance,
)
from guardagent.trace.state import TraceIndex, flatten, sign, verify
from guardagent.trace.temporal import (
    RECIPIENT_KINDS,
    CallPattern,
    Flow,
    PatternError,
    Scope,
    earlier_calls,
    order_violations,
    out_of_scope,
    same_value,
    urls_at,
)
from guardagent.trace.temporal import secret_flow as flow_of
from guardagent.trace.values import TYPED_KINDS, ValueKind

INNER_KINDS: tuple[ValueKind, ...] = ("email", "url", "iban", "phone")
"""Typed values inside free text that provenance predicates look at by default."""

Decision = Literal["approve", "edit", "reject"]


class PredicateSpecError(ValueError):
    """A predicate expression that cannot be bound."""


@dataclass(frozen=True)
class Fact:
    """One predicate's value for the proposed call.

    Attributes:
        name: The predicate expression (``arg_only_untrusted("to")``).
        value: True, False, or None when it cannot be told.
        sources: The messages that decided it.
        detail: Why, in one line (names the values and messages).
    """

    name: str
    value: bool | None
    sources: tuple[SourceRef, ...] = ()
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        """JSON-able form, for a decision."""
        return {"name": self.name, "value": self.value, "detail": self.detail,
                "sources": [{"index": s.index, "source": s.source, "kind": s.kind}
                            for s in self.sources]}  # fmt: skip


@dataclass(frozen=True)
class Consent:
    """A reviewer's decision on a call, recorded by the host (never read from messages).

    Attributes:
        tool: The tool the decision is about.
        decision: ``approve``, ``edit`` (the edited call is approved) or ``reject``.
        args: The exact arguments decided on (None: any arguments of the tool).
        values: Specific argument values decided on (``{"to": "x@y.com"}``), when the
            review was about them rather than the whole call.
        call_id: The call the review was about, when known (then only that call).
    """

    tool: str
    decision: Decision = "approve"
    args: Mapping[str, Any] | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    call_id: str | None = None

    def signed(self, key: bytes) -> dict[str, Any]:
        """The record as JSON, signed with the deployment's key (see :class:`TraceFacts`)."""
        data = self.to_json()
        data["mac"] = sign(data, key)
        return data

    @classmethod
    def from_json(cls, raw: Any) -> Consent:
        """Read a record (``{"tool", "decision", "args", "values", "call_id"}``)."""
        if isinstance(raw, Consent):
            return raw
        if not isinstance(raw, Mapping) or not isinstance(raw.get("tool"), str):
            raise PredicateSpecError("a consent record needs a 'tool'")
        decision = raw.get("decision", "approve")
        if decision not in ("approve", "edit", "reject"):
            raise PredicateSpecError(f"consent decision must be approve, edit or reject, not "
                                     f"{decision!r}")  # fmt: skip
        args, values = raw.get("args"), raw.get("values") or {}
        if (args is not None and not isinstance(args, Mapping)) or not isinstance(values, Mapping):
            raise PredicateSpecError("consent args and values must be mappings")
        call_id = raw.get("call_id")
        return cls(raw["tool"], decision, dict(args) if args is not None else None, dict(values),
                   str(call_id) if call_id else None)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """JSON-able form (for a checkpoint)."""
        return {"tool": self.tool, "decision": self.decision, "args": self.args,
                "values": dict(self.values), "call_id": self.call_id}  # fmt: skip


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


class TraceFacts:
    """The analysed trace: provenance, history, labels and consent for one proposed call.

    Args:
        trace: The trace.
        labels: The deployer's labels.
        index: The thread's index (updated here with this trace); None builds one.
        consent: The host's review records for this thread.
        key: The deployment's key: the index must be signed with it (checked by
            :meth:`TraceIndex.from_json` when the caller restores it) and so must every
            consent record (:meth:`Consent.signed`); an unsigned or altered record is
            ignored, as if the reviewer never approved.
    """

    def __init__(
        self,
        trace: Trace,
        labels: Labels,
        *,
        index: TraceIndex | None = None,
        consent: Iterable[Consent | Mapping[str, Any]] = (),
        key: bytes | None = None,
    ) -> None:
        self.trace = trace
        self.labels = labels
        self.index = index if index is not None else TraceIndex(labels.phone_region)
        if self.index.region != labels.phone_region:
            raise ValueError("the index was built for another phone region")
        self.index.update(trace)
        self.search = Search(trace, self.index, labels)
        records = list(consent)
        if key is not None:
            records = [c for c in records if isinstance(c, Mapping) and verify(c, key)]
        self.consent = tuple(Consent.from_json(c) for c in records)

    @cached_property
    def provenance(self) -> CallProvenance:
        """Provenance of every value of the proposed call."""
        return call_provenance(self.search)

    @cached_property
    def flow(self) -> Flow:
        """The proposed call's secret flow (with the default `send` effect)."""
        return flow_of(self.search, self.labels)

    def fact(self, expression: str) -> Fact:
        """Evaluate one predicate expression."""
        return compile_predicate(expression)(self)

    def evaluate(self, bindings: Mapping[str, str]) -> dict[str, Fact]:
        """Evaluate named predicate expressions (a policy's bindings)."""
        compiled = compile_bindings(bindings)
        return {name: fn(self) for name, fn in compiled.items()}

    def assignments(self, bindings: Mapping[str, str]) -> dict[str, bool | None]:
        """``{name: True | False | None}`` ready for a policy's ``assign`` / ``verify_event``."""
        return {name: fact.value for name, fact in self.evaluate(bindings).items()}


def analyze(
    trace: Trace,
    labels: Labels,
    *,
    index: TraceIndex | None = None,
    consent: Iterable[Consent | Mapping[str, Any]] = (),
    key: bytes | None = None,
) -> TraceFacts:
    """Analyse a trace for its proposed call (see :class:`TraceFacts`)."""
    return TraceFacts(trace, labels, index=index, consent=consent, key=key)


# -- registry ------------------------------------------------------------------------------

Predicate = Callable[..., Fact]
PREDICATES: dict[str, Predicate] = {}


def predicate(func: Predicate) -> Predicate:
    """Register a predicate under its function name."""
    PREDICATES[func.__name__] = func
    return func


BoundPredicate = Callable[[TraceFacts], Fact]


@lru_cache(maxsize=4096)
def compile_predicate(expression: str) -> BoundPredicate:
    """Read a predicate expression (``name(literal, ..., key=literal)``) with :mod:`ast`.

    Raises:
        PredicateSpecError: not a call of a known predicate with literal arguments, or
            arguments the predicate does not take.
    """
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise PredicateSpecError(f"{expression!r}: not a predicate call ({exc.msg})") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise PredicateSpecError(f"{expression!r}: write a call such as arg_from_user(\"to\")")
    func = PREDICATES.get(call.func.id)
    if func is None:
        known = ", ".join(sorted(PREDICATES))
        raise PredicateSpecError(f"{expression!r}: unknown predicate {call.func.id!r} "
                                 f"(known: {known})")  # fmt: skip
    try:
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg is not None}
    except ValueError:
        raise PredicateSpecError(f"{expression!r}: arguments must be literals") from None
    if any(k.arg is None for k in call.keywords):
        raise PredicateSpecError(f"{expression!r}: ** arguments are not allowed")
    name = ast.unparse(call)
    _check(func, name, args, kwargs)

    def bound(facts: TraceFacts) -> Fact:
        fact = func(facts, *args, **kwargs)
        return Fact(name, fact.value, fact.sources, fact.detail)

    return bound


def _check(func: Predicate, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    import inspect

    try:
        inspect.signature(func).bind(None, *args, **kwargs)
    except TypeError as exc:
        raise PredicateSpecError(f"{name}: {exc}") from None
    try:  # options are checked now, against an empty trace, not at the first event
        for key in ("kinds", "part"):
            if key in kwargs:
                _kinds(kwargs["kinds"]) if key == "kinds" else _part(kwargs["part"])
        if func.__name__ in ("called_before", "called_at_least", "nothing_after"):
            CallPattern.of(args[0] if args else kwargs.get("pattern", ""),
                           args=kwargs.get("args"), status=kwargs.get("status"))  # fmt: skip
        elif func.__name__ == "order_holds":
            for spec in args:
                CallPattern.of(spec)
        elif func.__name__ in ("navigation_in_scope", "history_in_scope"):
            if not args:
                raise PredicateSpecError(f"{name}: give at least one scope")
            for spec in args:
                Scope.of(spec)
        elif func.__name__ == "effect_is":
            for effect in args:
                if effect not in EFFECTS:
                    raise PredicateSpecError(f"{name}: unknown effect {effect!r}")
    except PatternError as exc:
        raise PredicateSpecError(f"{name}: {exc}") from None


def compile_bindings(bindings: Mapping[str, str]) -> dict[str, BoundPredicate]:
    """Compile a policy's ``{predicate name: expression}``; every error reported at once."""
    out: dict[str, BoundPredicate] = {}
    problems: list[str] = []
    for name, expression in bindings.items():
        try:
            out[name] = compile_predicate(expression)
        except PredicateSpecError as exc:
            problems.append(f"{name}: {exc}")
    if problems:
        raise PredicateSpecError("; ".join(problems))
    return out


# -- the call ------------------------------------------------------------------------------


@predicate
def tool_is(facts: TraceFacts, *globs: str) -> Fact:
    """The proposed call's tool matches one of the name globs."""
    import fnmatch

    name = facts.trace.call.name
    hit = any(fnmatch.fnmatchcase(name, g) for g in globs)
    return Fact("tool_is", hit, (), f"the call is {name!r}")


@predicate
def effect_is(facts: TraceFacts, *effects: str) -> Fact:
    """The proposed call's tool has one of the effect labels."""
    label = facts.labels.label(facts.trace.call.name)
    note = "" if label.labelled else " (unlabelled: irreversible)"
    return Fact("effect_is", label.effect in effects, (),
                f"{facts.trace.call.name!r} has effect {label.effect}{note}")  # fmt: skip


@predicate
def tool_labelled(facts: TraceFacts) -> Fact:
    """The deployer labelled the proposed call's tool."""
    labelled = facts.labels.label(facts.trace.call.name).labelled
    return Fact("tool_labelled", labelled, (),
                f"{facts.trace.call.name!r} is {'' if labelled else 'not '}labelled")  # fmt: skip


# -- provenance ----------------------------------------------------------------------------


def _under(path: str, arg: str) -> bool:
    return path == arg or path.startswith((arg + "[", arg + "."))


def _kinds(raw: Any) -> tuple[ValueKind, ...] | None:
    if raw is None:
        return None
    items = [s.strip() for s in raw.split(",")] if isinstance(raw, str) else list(raw)
    known: tuple[ValueKind, ...] = (*TYPED_KINDS, "text")
    bad = [k for k in items if k not in known]
    if bad:
        raise PredicateSpecError(f"unknown value kinds {bad}")
    return tuple(k for k in known if k in items)


def _part(raw: Any) -> str | None:
    if raw not in (None, "host", "domain"):
        raise PredicateSpecError(f"part must be 'host' or 'domain', not {raw!r}")
    return str(raw) if raw is not None else None


def _select(facts: TraceFacts, arg: str, kinds: Any) -> list[ValueProvenance]:
    wanted = _kinds(kinds)
    label = facts.labels.label(facts.trace.call.name)
    if arg == "@recipients" and not label.recipients:
        chosen = [v for v in facts.provenance.values if v.value.kind in RECIPIENT_KINDS]
    else:
        names = list(label.recipients) if arg == "@recipients" else [arg]
        chosen = [v for name in names for v in facts.provenance.select(name)]
    if wanted is not None:
        return [v for v in chosen if v.value.kind in wanted]
    # by default a free-text value holding addresses, URLs, IBANs or phone numbers is judged
    # by those (a model-written "Alice <alice@x.org>" is as trusted as the address in it)
    holders = {v.path for v in chosen if v.inner and v.value.kind in INNER_KINDS}
    return [v for v in chosen if (v.value.kind in INNER_KINDS if v.inner
                                  else v.value.kind != "text" or v.path not in holders)]


def _with_part(
    facts: TraceFacts, values: list[ValueProvenance], part: Any
) -> list[ValueProvenance]:
    which = _part(part)
    if which is None:
        return values
    parts = (facts.search.part_provenance(v, which) for v in values)
    return [p for p in parts if p is not None]


def _provenance(facts: TraceFacts, name: str, arg: str, kinds: Any, part: Any,
                test: Callable[[ValueProvenance], bool], every: bool) -> Fact:  # fmt: skip
    values = _with_part(facts, _select(facts, arg, kinds), part)
    if not values and arg == "@recipients":
        return Fact(name, None, (), f"{facts.trace.call.name!r} names no recipient to trace")
    if not values:
        label = facts.labels.label(facts.trace.call.name)
        top = arg.split("[", 1)[0].split(".", 1)[0]
        note = (f" ({facts.trace.call.name!r} has no such argument)" if label.args is not None
                and arg not in ("*", "@recipients") and top not in label.args else "")  # fmt: skip
        return Fact(name, every, (), f"argument {arg!r} has no value to trace{note}")
    hits = [v for v in values if test(v)]
    if every:
        value = len(hits) == len(values)
        deciding = values if value else [v for v in values if not test(v)]
    else:
        value = bool(hits)
        deciding = hits if value else values
    sources = tuple(dict.fromkeys(s for v in deciding for s in v.sources))
    return Fact(name, value, sources, "; ".join(v.describe() for v in deciding[:5]))


@predicate
def arg_present(facts: TraceFacts, arg: str) -> Fact:
    """The argument is present with at least one non-empty value."""
    present = [p for p, v in flatten(facts.trace.call.args)
               if _under(p, arg) and v not in (None, "")]  # fmt: skip
    return Fact("arg_present", bool(present), (),
                f"argument {arg!r} is {'present' if present else 'absent'}")  # fmt: skip


@predicate
def arg_from_user(facts: TraceFacts, arg: str, kinds: Any = None, part: Any = None) -> Fact:
    """Every value of the argument is in a user message."""
    return _provenance(facts, "arg_from_user", arg, kinds, part,
                       lambda v: "user" in v.kinds(), every=True)  # fmt: skip


@predicate
def arg_from_trusted_tool(facts: TraceFacts, arg: str, kinds: Any = None, part: Any = None) -> Fact:
    """Every value of the argument is in a trusted tool's result."""
    return _provenance(facts, "arg_from_trusted_tool", arg, kinds, part,
                       lambda v: "trusted_tool" in v.kinds(), every=True)  # fmt: skip


@predicate
def arg_from_trusted(facts: TraceFacts, arg: str, kinds: Any = None, part: Any = None) -> Fact:
    """Every value of the argument comes from the user, the system prompt or a trusted tool."""
    return _provenance(facts, "arg_from_trusted", arg, kinds, part,
                       lambda v: v.origin in ("user", "trusted"), every=True)  # fmt: skip


@predicate
def arg_only_untrusted(facts: TraceFacts, arg: str, kinds: Any = None, part: Any = None) -> Fact:
    """Some value of the argument is found only in untrusted tool results."""
    return _provenance(facts, "arg_only_untrusted", arg, kinds, part,
                       lambda v: v.origin == "untrusted", every=False)  # fmt: skip


@predicate
def arg_invented(facts: TraceFacts, arg: str, kinds: Any = None, part: Any = None) -> Fact:
    """Some value of the argument is in no user, system or tool message."""
    return _provenance(facts, "arg_invented", arg, kinds, part,
                       lambda v: v.origin == "invented", every=False)  # fmt: skip


# -- order and counts ----------------------------------------------------------------------


def _refs(facts: TraceFacts, indices: Iterable[int]) -> tuple[SourceRef, ...]:
    return facts.search.refs(i for i in indices if i < facts.index.count)


@predicate
def called_before(facts: TraceFacts, pattern: Any, args: Any = None, status: Any = None) -> Fact:
    """An earlier call matches the pattern."""
    pat = CallPattern.of(pattern, args=args, status=status)
    calls = earlier_calls(facts.trace, pat, facts.labels)
    detail = (f"{len(calls)} earlier call(s) match {pat}" if calls
              else f"no earlier call matches {pat}")  # fmt: skip
    return Fact("called_before", bool(calls), _refs(facts, (c.index for c in calls)), detail)


@predicate
def called_at_least(facts: TraceFacts, pattern: Any, n: int, args: Any = None,
                    status: Any = None) -> Fact:  # fmt: skip
    """At least `n` earlier calls match the pattern."""
    pat = CallPattern.of(pattern, args=args, status=status)
    calls = earlier_calls(facts.trace, pat, facts.labels)
    return Fact("called_at_least", len(calls) >= int(n), _refs(facts, (c.index for c in calls)),
                f"{len(calls)} earlier call(s) match {pat}")  # fmt: skip


@predicate
def order_holds(facts: TraceFacts, first: Any, then: Any) -> Fact:
    """Every call matching `then` (earlier ones and this one) comes after a `first` call."""
    a, b = CallPattern.of(first), CallPattern.of(then)
    bad = order_violations(facts.trace, a, b, facts.labels)
    if not bad:
        return Fact("order_holds", True, (), f"every {b} call comes after a {a} call")
    shown = ", ".join("the proposed call" if c is facts.trace.call else f"message {c.index}"
                      for c in bad[:5])  # fmt: skip
    return Fact("order_holds", False, _refs(facts, (c.index for c in bad)),
                f"{b} without an earlier {a}: {shown}")  # fmt: skip


@predicate
def nothing_after(facts: TraceFacts, pattern: Any, args: Any = None, status: Any = None) -> Fact:
    """No earlier call matches the pattern (so this call does not come after one)."""
    fact = called_before(facts, pattern, args, status)
    return Fact("nothing_after", not fact.value, fact.sources, fact.detail)


# -- navigation ----------------------------------------------------------------------------


@predicate
def navigation_in_scope(facts: TraceFacts, *scopes: str, arg: str = "url") -> Fact:
    """Every URL of the proposed call's argument is inside one of the scopes."""
    parsed = [Scope.of(s) for s in scopes]
    call = facts.trace.call
    outside = out_of_scope([call], parsed, arg, facts.index.region)
    if not urls_at(call, arg, facts.index.region):
        return Fact("navigation_in_scope", False, (), f"argument {arg!r} holds no URL")
    if outside:
        shown = ", ".join(repr(u) for _, u in outside[:3])
        return Fact("navigation_in_scope", False, (),
                    f"{shown} outside {', '.join(map(str, parsed))}")  # fmt: skip
    return Fact("navigation_in_scope", True, (), f"inside {', '.join(map(str, parsed))}")


@predicate
def history_in_scope(facts: TraceFacts, *scopes: str, tool: str = "*", arg: str = "url") -> Fact:
    """Every earlier call of the tool(s) navigated inside one of the scopes."""
    parsed = [Scope.of(s) for s in scopes]
    calls = earlier_calls(facts.trace, CallPattern.of(tool), facts.labels)
    calls = [c for c in calls if any(_under(p, arg) for p, _ in flatten(c.args))]
    outside = out_of_scope(calls, parsed, arg, facts.index.region)
    if outside:
        return Fact("history_in_scope", False, _refs(facts, (c.index for c, _ in outside)),
                    f"earlier {outside[0][1]!r} outside {', '.join(map(str, parsed))}")  # fmt: skip
    return Fact("history_in_scope", True, (), f"{len(calls)} earlier navigation(s) in scope")


# -- secrets -------------------------------------------------------------------------------


@predicate
def secret_flow(facts: TraceFacts, effects: Any = "send") -> Fact:
    """A sensitive tool's value (not the user's) reaches a send to an unapproved recipient.

    The recipient is unapproved when it is not from the user or a trusted source, or when
    the call has no recipient that can be traced.
    """
    wanted = [e.strip() for e in effects.split(",")] if isinstance(effects, str) else list(effects)
    flow = facts.flow if wanted == ["send"] else flow_of(facts.search, facts.labels, wanted)  # type: ignore[arg-type]
    if not flow.send:
        return Fact("secret_flow", False, (), f"{facts.trace.call.name!r} does not send")
    if not flow.leaked:
        return Fact("secret_flow", False, (), "no value of the call comes from a sensitive tool")
    sources = tuple(dict.fromkeys(s for v in flow.leaked for s in v.sources
                                  if facts.labels.sensitive(s.source)))  # fmt: skip
    leaked = "; ".join(_leak(facts, v) for v in flow.leaked[:3])
    if not flow.recipients:
        return Fact("secret_flow", True, sources, f"{leaked}; and the call has no recipient "
                    "that could be traced")  # fmt: skip
    if flow.unapproved:
        bad = "; ".join(v.describe() for v in flow.unapproved[:3])
        more = tuple(s for v in flow.unapproved for s in v.sources)
        return Fact("secret_flow", True, tuple(dict.fromkeys(sources + more)),
                    f"{leaked}; sent to {bad}")  # fmt: skip
    return Fact("secret_flow", False, sources, f"{leaked}; every recipient is from the user or "
                "a trusted source")  # fmt: skip


def _leak(facts: TraceFacts, value: ValueProvenance) -> str:
    shown = value.value.text if len(value.value.text) <= 40 else value.value.text[:40] + "..."
    where = ", ".join(f"{s} sensitive" for s in value.sources if facts.labels.sensitive(s.source))
    return f"{shown!r} in {value.path} comes from {where}"


@predicate
def value_from_sensitive(facts: TraceFacts, arg: str = "*") -> Fact:
    """Some value of the argument comes from a sensitive tool (and not from the user)."""
    leaked = [v for v in facts.flow.leaked if arg == "*" or _under(v.path, arg)]
    sources = tuple(dict.fromkeys(s for v in leaked for s in v.sources
                                  if facts.labels.sensitive(s.source)))  # fmt: skip
    detail = "; ".join(_leak(facts, v) for v in leaked[:3]) or "no value from a sensitive tool"
    return Fact("value_from_sensitive", bool(leaked), sources, detail)


# -- consent -------------------------------------------------------------------------------


def _consent_covers(record: Consent, facts: TraceFacts, arg: str | None) -> bool:
    call = facts.trace.call
    if record.tool != call.name:
        return False
    if record.call_id is not None and call.id is not None and record.call_id != call.id:
        return False
    if record.args is not None:
        return _canon(dict(record.args)) == _canon(call.args)
    if not record.values:
        return True  # a decision about the tool's calls as such
    if arg is None:
        return all(_values_match(facts, name, expected) for name, expected in record.values.items())
    if arg not in record.values:
        return False
    return _values_match(facts, arg, record.values[arg])


def _values_match(facts: TraceFacts, arg: str, expected: Any) -> bool:
    actual = [v for p, v in flatten(facts.trace.call.args) if _under(p, arg)]
    wanted = expected if isinstance(expected, list) else [expected]
    region = facts.index.region
    return bool(actual) and all(any(same_value(a, w, region) for w in wanted) for a in actual)


@predicate
def consent_given(facts: TraceFacts, arg: str | None = None) -> Fact:
    """The host's review approved this call (or, with `arg`, this argument's values).

    A matching rejection wins over an approval.
    """
    covering = [r for r in facts.consent if _consent_covers(r, facts, arg)]
    what = f"{facts.trace.call.name!r}" + (f" argument {arg!r}" if arg else "")
    if any(r.decision == "reject" for r in covering):
        return Fact("consent_given", False, (), f"a reviewer rejected {what}")
    if covering:
        return Fact("consent_given", True, (), f"a reviewer approved {what}")
    return Fact("consent_given", False, (), f"no review record approves {what}")


def unknown_arguments(bindings: Mapping[str, str], labels: Labels) -> list[str]:
    """Bindings naming an argument no labelled tool declares (a typo never fires).

    Only meaningful when the labels list tools' ``args``; checked when a policy is loaded.
    """
    declared = {a for lab in [*labels.tools.values(), *(p[1] for p in labels.patterns)]
                if lab.args is not None for a in lab.args}  # fmt: skip
    if not declared:
        return []
    problems = []
    for name, expression in bindings.items():
        call = ast.parse(expression.strip(), mode="eval").body
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            continue
        if not call.func.id.startswith("arg_") or not call.args:
            continue
        try:
            arg = ast.literal_eval(call.args[0])
        except ValueError:
            continue
        if isinstance(arg, str) and arg not in ("*", "@recipients"):
            top = arg.split("[", 1)[0].split(".", 1)[0]
            if top not in declared:
                problems.append(f"{name}: no labelled tool has an argument {top!r}")
    return problems


def facts_json(facts: Mapping[str, Fact]) -> dict[str, Any]:
    """Facts as JSON-able data (for a decision's details)."""
    return {name: fact.to_json() for name, fact in facts.items()}


__all__: Sequence[str] = [
    "INNER_KINDS", "PREDICATES", "Consent", "Fact", "PredicateSpecError", "TraceFacts",
    "analyze", "compile_bindings", "compile_predicate", "facts_json", "predicate",
    "unknown_arguments",
]  # fmt: skip
