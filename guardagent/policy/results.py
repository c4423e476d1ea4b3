"""What verifying one event against a policy model produces (pydantic, so it is JSON).

These are the "decision parts" the `verify` node hands to `decide`: per-rule results, the
safety probability and the computed remediation. They are pydantic models because a
`GuardDecision` carries them to callers as JSON.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

RuleStatus = Literal["holds", "violated", "possibly_violated", "not_applicable"]


class RuleResult(BaseModel):
    """One rule's verdict on one event.

    Attributes:
        id: The rule's id.
        status: ``holds`` / ``violated`` (under every completion of the open predicates) /
            ``possibly_violated`` (under some) / ``not_applicable`` (not in the circuits of
            the event's actions).
        hard: Whether a violation denies.
        logic: The rule as written.
        policy: The rule in plain words.
        deciding: Predicate values that decided the status (a minimal set z3 needed).
        open: For ``possibly_violated``: the open predicates whose values would settle it.
        witness: For ``possibly_violated``: one completion of the open predicates that
            violates the rule.
        explanation: Why the event violates (or may violate) the rule.
        remediation: The rule's remediation text (for violated / possibly violated rules).
    """

    id: str
    status: RuleStatus
    hard: bool = True
    logic: str = ""
    policy: str = ""
    deciding: dict[str, bool] = Field(default_factory=dict)
    open: list[str] = Field(default_factory=list)
    witness: dict[str, bool] = Field(default_factory=dict)
    explanation: str = ""
    remediation: str = ""
    risk_types: list[str] = Field(default_factory=list)
    source: str = ""

    @property
    def denies(self) -> bool:
        """A hard rule that is violated or possibly violated denies the event."""
        return self.hard and self.status in ("violated", "possibly_violated")


class SafetyProbability(BaseModel):
    """Probability that every hard rule of the event's circuits holds.

    Attributes:
        execute: ... if the event's actions are executed.
        not_execute: ... if they are not (the matched actions switched off).
        margin: ``execute - not_execute`` (ShieldAgent reports it as a barrier margin).
        threshold: The policy's threshold; ``execute`` below it denies.
        method: ``exact`` (weighted enumeration) or ``sampled`` (Monte Carlo).
        error_bound: For ``sampled``: half-width of the interval holding the true value
            with probability ``confidence`` (Hoeffding); 0 when exact.
        confidence: Confidence of `error_bound`.
        samples: Samples drawn (0 when exact).
        uncertain: Predicates counted over (probability below 1, or open).
    """

    execute: float
    not_execute: float
    margin: float
    threshold: float
    method: Literal["exact", "sampled"] = "exact"
    error_bound: float = 0.0
    confidence: float = 1.0
    samples: int = 0
    uncertain: list[str] = Field(default_factory=list)

    @property
    def below_threshold(self) -> bool:
        """Executing is not safe enough."""
        return self.execute < self.threshold


class Change(BaseModel):
    """One predicate change in a remedy."""

    predicate: str
    kind: Literal["action", "condition"]
    before: bool | None
    after: bool
    how: str


class Remedy(BaseModel):
    """A set of changes after which every hard rule holds (for every open completion)."""

    changes: list[Change]

    @property
    def cost(self) -> int:
        """Number of changes."""
        return len(self.changes)

    def describe(self) -> str:
        """e.g. ``make user_consent true``; ``do not take publish_data``."""
        return " and ".join(c.how for c in self.changes) or "no change needed"


class Remediation(BaseModel):
    """What the agent could do instead, computed with z3's optimiser.

    Attributes:
        feasible: False when no allowed change makes every hard rule hold (e.g. a global
            rule broken by facts that cannot change).
        remedies: Minimal remedies, smallest first; all of the same (minimal) size.
        texts: The remediation texts of the rules that denied.
    """

    feasible: bool
    remedies: list[Remedy] = Field(default_factory=list)
    texts: list[str] = Field(default_factory=list)

    def summary(self) -> str:
        """One paragraph for an agent: the minimal changes, then the rules' advice."""
        parts = []
        if self.remedies:
            options = [r.describe() for r in self.remedies]
            parts.append("To comply: " + "; or ".join(options) + ".")
        elif not self.feasible:
            parts.append("No allowed change makes this action comply.")
        parts += [t if t.endswith((".", "!", "?")) else t + "." for t in self.texts]
        return " ".join(parts)


class PolicyVerdict(BaseModel):
    """The decision parts from verifying one event against a policy model.

    Attributes:
        policy: ``name@version`` of the policy model.
        allowed: No hard rule of the matched circuits is violated or possibly violated,
            and the safety probability is not below the threshold.
        violations: The denying rules' policy texts, or ``{group: [items]}`` of the matched
            actions' targets when the policy lists violations by target.
        reason: One readable sentence.
        matched_actions: The event's actions with their ancestors (true or open).
        open_predicates: Predicates the program left open that the circuits use.
        rules: Every rule's result (``not_applicable`` for rules outside the circuits).
        safety_probability: See :class:`SafetyProbability`.
        remediation: For a denial: the computed remedies and the rules' texts.
    """

    policy: str
    allowed: bool
    violations: list[str] | dict[str, list[str]] = Field(default_factory=list)
    reason: str = ""
    matched_actions: list[str] = Field(default_factory=list)
    open_predicates: list[str] = Field(default_factory=list)
    rules: list[RuleResult] = Field(default_factory=list)
    safety_probability: SafetyProbability | None = None
    remediation: Remediation | None = None

    def applicable(self) -> list[RuleResult]:
        """The rules of the matched circuits."""
        return [r for r in self.rules if r.status != "not_applicable"]

    def denying(self) -> list[RuleResult]:
        """The hard rules that deny."""
        return [r for r in self.rules if r.denies]
