"""The public result of one guard check."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from guardagent.policy.results import Remediation, RuleResult
from guardagent.readers.evidence import Unreadable
from guardagent.surrogates import without_surrogates

ProgramSource = Literal["memory", "generated", "none"]
T = TypeVar("T")


class Deferred(Generic[T]):
    """A value computed when first asked for, once (thread-safe), then kept.

    A decision's ``trace_state`` is one: a host that keeps no thread state never pays for
    reading the whole thread into an index (:mod:`guardagent.trace.sources.lookup`); a host that
    keeps it gets the same state as if it had been built at once.
    """

    __slots__ = ("_build", "_lock", "_value")

    def __init__(self, build: Callable[[], T]) -> None:
        self._build: Callable[[], T] | None = build
        self._value: T | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(cls, value: T) -> Deferred[T]:
        """A value already computed."""
        done: Deferred[T] = cls(lambda: value)
        done._value, done._build = value, None
        return done

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        """Pickled and deep-copied as its value (built then): a decision stays plain data."""
        return (_done, (self.get(),))

    def get(self) -> T:
        """The value (computed now if it was not yet)."""
        with self._lock:
            if self._build is not None:
                self._value = self._build()
                self._build = None  # the closure (a trace, an index) is let go
            return self._value  # type: ignore[return-value]


class GuardDecision(BaseModel):
    """Whether an event may pass, what it violated, and how the guard got there.

    `label` mirrors the paper's convention (1 = denied) so decisions score directly against
    the benchmarks; `allowed` is the same fact for callers. `unreadable` lists what the
    readers could not read when that is why the event was denied, so a caller can tell a
    blind guard from a strict one.

    Under a policy model (verifiable rules) `rules` holds every rule's result (holds /
    violated / possibly violated / not applicable, the predicate values that decided it,
    explanation, remediation), `safety_probability` the probability that every hard rule
    holds if the action executes, and `remediation` the computed remedies of a denial.

    From `check_trace`: `trace_facts` holds each trace predicate's value with the messages
    that decided it, and `trace_state` the thread's updated index (for the caller to keep
    with the thread; left out of dumps; built when first read after a call with no thread
    state: :class:`Deferred`).
    """

    allowed: bool
    label: Literal[0, 1]
    violations: dict[str, list[str]] | list[str] = Field(default_factory=list)
    reason: str = ""
    guardrailed_output: str | None = None
    program_source: ProgramSource = "none"
    program: str | None = None
    attempts: int = 0
    attempt_errors: list[str | None] = Field(default_factory=list)
    llm_calls: int = 0
    tokens: int = 0
    latency_ms: float = 0.0
    error: str | None = None
    unreadable: list[Unreadable] = Field(default_factory=list)
    profile: str = ""
    rules: list[RuleResult] = Field(default_factory=list)
    safety_probability: float | None = None
    remediation: Remediation | None = None
    trace_facts: dict[str, Any] | None = None
    trace_state: dict[str, Any] | None = Field(default=None, exclude=True, repr=False)

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Dumped with each lone surrogate as U+FFFD (:mod:`guardagent.surrogates`).

        A decision quotes trace text (a result's value, a tool's name), which may hold one;
        no UTF-8 encoder takes it, and ``model_dump_json`` raised: every dump is writable.
        """
        return without_surrogates(handler(self))

    @property
    def failed_closed(self) -> bool:
        """True when the guard denied because it could not reach a verdict."""
        return self.error is not None and not self.allowed

    def __getitem__(self, name: str) -> Any:
        """``decision["allowed"]``: the field, as the dict `GuardClient` used to return.

        Raises:
            KeyError: no decision has a field of that name.
        """
        if name not in type(self).model_fields:
            raise KeyError(name)
        return getattr(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        """``decision.get("reason")``: the field, or `default` when no decision has one."""
        return getattr(self, name) if name in type(self).model_fields else default

    def __iter__(self) -> Any:
        """The fields as pairs (``dict(decision)``), the thread's state built, never deferred."""
        _trace_state(self)
        return super().__iter__()

    def __eq__(self, other: object) -> bool:
        """Field by field, as pydantic compares, on built states (a Deferred has no equality)."""
        _trace_state(self)
        if isinstance(other, GuardDecision):
            _trace_state(other)
        return super().__eq__(other)


def _done(value: T) -> Deferred[T]:
    return Deferred.of(value)


def _trace_state(self: GuardDecision) -> dict[str, Any] | None:
    """The thread's state, built on first access when it was deferred (see :class:`Deferred`)."""
    value = self.__dict__.get("trace_state")
    if isinstance(value, Deferred):
        value = value.get()
        self.__dict__["trace_state"] = value
    return value


def _set_trace_state(self: GuardDecision, value: dict[str, Any] | None) -> None:
    self.__dict__["trace_state"] = value


# `trace_state` stays a field (its type, `model_fields`, `--fields`), read through a property
# so a `Deferred` stored by `GuardAgent.check_trace` is built only when a caller reads it.
setattr(GuardDecision, "trace_state", property(_trace_state, _set_trace_state))  # noqa: B010
