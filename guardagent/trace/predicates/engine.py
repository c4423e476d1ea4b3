"""The analysed trace and the predicate registry: expressions bound once, evaluated per call."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property, lru_cache
from typing import Any

from guardagent.readers.evidence import UnreadableEvidence
from guardagent.trace.document.labels import EFFECTS, Labels
from guardagent.trace.document.shapes import Trace
from guardagent.trace.found.secrets import Secrets
from guardagent.trace.predicates.fact import Fact, PredicateSpecError
from guardagent.trace.predicates.ledger import ConsentLedger
from guardagent.trace.predicates.options import parse_kinds, parse_part, top_arg
from guardagent.trace.predicates.record import Consent
from guardagent.trace.sources.lookup import LookupSearch
from guardagent.trace.sources.provenance import CallProvenance, Search, call_provenance
from guardagent.trace.sources.records import Records
from guardagent.trace.sources.temporal import CallPattern, Flow, PatternError, Scope
from guardagent.trace.sources.temporal import secret_flow as flow_of
from guardagent.trace.thread.state import TraceIndex, verify


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
        records: The user's records (the policy's ``values:`` and the host's user facts,
            :mod:`guardagent.trace.sources.records`): a trusted source for provenance.
        secrets: The policy's declared secrets (:mod:`guardagent.trace.found.secrets`).
        thread: The thread's id (approvals count only in their thread); ignored when a
            `ledger` is given (its thread).
        ledger: The thread's consent ledger (which approvals are used up); None starts one.
        lazy: With a fresh index (no thread state), read only the messages that may hold
            what the predicates ask about (:mod:`~guardagent.trace.sources.lookup`); the index
            reads the rest if its state is asked for (:meth:`TraceIndex.complete`).

    Attributes:
        consumed: The approvals the consent predicates used to approve this call; the
            caller records them in the ledger once the call is allowed.
    """

    def __init__(
        self,
        trace: Trace,
        labels: Labels,
        *,
        index: TraceIndex | None = None,
        consent: Iterable[Consent | Mapping[str, Any]] = (),
        key: bytes | None = None,
        records: Records | None = None,
        secrets: Secrets | None = None,
        thread: str | None = None,
        ledger: ConsentLedger | None = None,
        lazy: bool = False,
    ) -> None:
        self.trace = trace
        self.records = records if records is not None else Records()
        self.secrets = secrets if secrets is not None else Secrets()
        self.memo: dict[Any, Any] = {}  # per-call work shared by predicates (derived chains)
        self.labels = labels
        self.index = index if index is not None else TraceIndex(labels.phone_region)
        if self.index.region != labels.phone_region:
            raise ValueError("the index was built for another phone region")
        if lazy and not self.index.count and not self.index.postings and not self.index.written:
            self.index.defer(trace)
            self.search: Search = LookupSearch(trace, self.index, labels)
        else:
            self.index.update(trace)
            self.search = Search(trace, self.index, labels)
        reviews = list(consent)
        if key is not None:
            reviews = [c for c in reviews if isinstance(c, Mapping) and verify(c, key)]
        self.consent = tuple(Consent.from_json(c) for c in reviews)
        self.ledger = ledger if ledger is not None else ConsentLedger(thread)
        self.consumed: dict[str, None] = {}

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


analyze = TraceFacts
"""Analyse a trace for its proposed call: :class:`TraceFacts` under the name the engine's
callers use (one signature, so a new option is added once)."""


# -- registry ------------------------------------------------------------------------------

Predicate = Callable[..., Fact]
PREDICATES: dict[str, Predicate] = {}


OptionCheck = Callable[[dict[str, Any]], None]
CHECKS: dict[str, OptionCheck] = {}


def predicate(func: Predicate) -> Predicate:
    """Register a predicate under its function name."""
    PREDICATES[func.__name__] = func
    return func


def checks(name: str) -> Callable[[OptionCheck], OptionCheck]:
    """Register the option check of a predicate: run when an expression is bound.

    The check gets the expression's arguments by parameter name (defaults filled in) and raises
    :class:`PredicateSpecError` (or :class:`PatternError`) for a bad one, so a typo is a
    configuration error when the policy loads, not a denial at the first event.
    """

    def register(check: OptionCheck) -> OptionCheck:
        CHECKS[name] = check
        return check

    return register


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
        raise PredicateSpecError(f'{expression!r}: write a call such as arg_from_user("to")')
    func = PREDICATES.get(call.func.id)
    if func is None:
        known = ", ".join(sorted(PREDICATES))
        raise PredicateSpecError(
            f"{expression!r}: unknown predicate {call.func.id!r} (known: {known})"
        )
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
        try:
            fact = func(facts, *args, **kwargs)
        except UnreadableEvidence:
            raise  # the trace or its state is unreadable: the caller denies with that reason
        except (ArithmeticError, LookupError, RecursionError, TypeError, ValueError) as exc:
            # fail closed: a predicate that cannot be told is open, never "holds"
            return Fact(name, None, (), f"cannot be evaluated ({type(exc).__name__}: {exc})")
        return Fact(name, fact.value, fact.sources, fact.detail, fact.values)

    return bound


def _check(func: Predicate, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    try:
        given = inspect.signature(func).bind(None, *args, **kwargs)
    except TypeError as exc:
        raise PredicateSpecError(f"{name}: {exc}") from None
    given.apply_defaults()
    try:  # options are checked now, against an empty trace, not at the first event
        for key in ("kinds", "part"):
            if key in kwargs:
                parse_kinds(kwargs["kinds"]) if key == "kinds" else parse_part(kwargs["part"])
        if func.__name__ in ("called_before", "called_at_least", "nothing_after"):
            CallPattern.of(
                args[0] if args else kwargs.get("pattern", ""),
                args=kwargs.get("args"),
                status=kwargs.get("status"),
            )
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
    check = CHECKS.get(func.__name__)
    if check is not None:
        try:
            check(dict(given.arguments))
        except (PredicateSpecError, PatternError) as exc:
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


def unknown_arguments(bindings: Mapping[str, str], labels: Labels) -> list[str]:
    """Bindings naming an argument no labelled tool declares (a typo never fires).

    Only meaningful when the labels list tools' ``args``; checked when a policy is loaded.
    """
    declared = {
        a
        for lab in [*labels.tools.values(), *(p[1] for p in labels.patterns)]
        if lab.args is not None
        for a in lab.args
    }
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
            top = top_arg(arg)
            if top not in declared:
                problems.append(f"{name}: no labelled tool has an argument {top!r}")
    return problems


def facts_json(facts: Mapping[str, Fact]) -> dict[str, Any]:
    """Facts as JSON-able data (for a decision's details)."""
    return {name: fact.to_json() for name, fact in facts.items()}
