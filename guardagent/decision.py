"""The public result of one guard check."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from guardagent.policy.results import Remediation, RuleResult
from guardagent.readers.evidence import Unreadable

ProgramSource = Literal["memory", "generated", "none"]


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
    with the thread; left out of dumps).
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

    @property
    def failed_closed(self) -> bool:
        """True when the guard denied because it could not reach a verdict."""
        return self.error is not None and not self.allowed
