"""Policy model types: predicates, rules, the action tree and the model, and rule sign-off.

What a loaded policy model is (:mod:`.reading` builds it from YAML, :mod:`.writing` dumps
it); :func:`guarding_model` keeps the rules that guard (rejected never, under
``approved_only`` only those a human signed off). :mod:`guardagent.policy.model` re-exports
all of it, with the file format's description.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from guardagent.policy.formula import Formula, occurrences, variables
from guardagent.trace.document.labels import Labels

if TYPE_CHECKING:
    from guardagent.trace.found.secrets import Secrets
    from guardagent.trace.sources.records import Records

FORMAT = "guardagent-policy/1"
"""The file layout this module reads and writes."""

SHIPPED_DIR = Path(__file__).resolve().parent.parent / "policies"
"""Policy models shipped with the package (`guardagent/policies/<name>.yaml`)."""

PredicateKind = Literal["action", "condition"]
AssignKind = Literal["tool", "expression", "query", "trace"]
ViolationsMode = Literal["rules", "targets"]
ReviewState = Literal["proposed", "approved", "edited", "rejected"]
REVIEW_STATES: tuple[str, ...] = ("proposed", "approved", "edited", "rejected")
"""A rule's human sign-off state; a rule without one was written by hand (not under review)."""
SIGNED_OFF: frozenset[str] = frozenset({"approved", "edited"})


@dataclass(frozen=True)
class Location:
    """A 1-based position in a policy file."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class PolicyIssue:
    """One problem found while loading, with where it is."""

    message: str
    location: Location | None = None

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


class PolicyError(ValueError):
    """A policy file that cannot be used; `issues` lists every problem with its position."""

    def __init__(self, issues: list[PolicyIssue]) -> None:
        super().__init__("\n".join(str(i) for i in issues))
        self.issues = issues


@dataclass(frozen=True)
class AssignedBy:
    """How a guard program assigns a predicate: exactly one of the three ways.

    Attributes:
        tool: A toolbox function whose result decides it (e.g. ``parse_user_info``).
        expression: An expression over event facts, as the program computes it
            (e.g. ``user["age"] < 18``); documentation for the program's author, never run
            by the engine.
        query: A yes/no question for a model; its answer carries a probability.
        trace: A trace predicate (``arg_only_untrusted("to")``, see
            :mod:`guardagent.trace.predicates`), assigned by the host from the whole
            conversation before the program runs (never by the program).
    """

    tool: str | None = None
    expression: str | None = None
    query: str | None = None
    trace: str | None = None

    @property
    def kind(self) -> AssignKind:
        """Which of the four ways this is."""
        if self.tool is not None:
            return "tool"
        if self.trace is not None:
            return "trace"
        return "expression" if self.expression is not None else "query"

    @property
    def text(self) -> str:
        """The function name, expression, question or trace predicate."""
        return self.tool or self.expression or self.query or self.trace or ""


@dataclass(frozen=True)
class Predicate:
    """A named fact an event is judged by.

    Attributes:
        name: Identifier used in rule logic.
        kind: ``action`` (what the agent does; extracted from its output) or ``condition``
            (a state of the world or the user).
        description: What it means, for people and for a model asked about it.
        assigned_by: How a program assigns it.
        probability: Calibrated confidence of an assignment that does not state its own
            (e.g. the measured accuracy of a model's yes/no answer); None means certain.
        changeable: Conditions only: whether remediation may ask for it to change (a user
            can give consent; a user's age cannot change). Actions can always be dropped.
        parent: Actions only: the parent in the action tree; a matched action brings its
            ancestors (and their rules) with it.
        target: Actions only: ``group.item`` reported in a decision's violations when the
            policy lists violations by target (e.g. ``lab.labresult``).
        permitted: Actions only: False declares that the policy never permits this action;
            the checker then confirms it is forbidden outright instead of warning about it.
        location: Where the entry starts in the file.
    """

    name: str
    kind: PredicateKind
    description: str = ""
    assigned_by: AssignedBy | None = None
    probability: float | None = None
    changeable: bool = True
    parent: str | None = None
    target: str | None = None
    permitted: bool = True
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Rule:
    """One verifiable rule.

    Attributes:
        id: Unique, stable identifier (decisions and reports name rules by it).
        logic: The formula as written.
        formula: The parsed formula.
        template: The logic with predicates renamed P1, P2, ... (derived).
        risk_types: e.g. ``access restriction``, ``content restriction``.
        source: Where the rule comes from (document and section).
        policy: The rule in plain words; a decision lists it when the rule is violated.
        explanation: Why an event that violates it is unsafe; defaults to the policy text.
        remediation: What the agent can do instead.
        weight: Relative importance; remediation prefers keeping heavier soft rules.
        hard: A violated hard rule denies; a soft one is reported only.
        actions: Actions the rule is attached to beyond those its logic names; the rule
            then applies only when one of them is taken.
        span: The verbatim text of the source the rule was extracted from (extraction keeps
            it so a reviewer sees what the rule claims to encode).
        review: Human sign-off: ``proposed`` (extracted, not yet reviewed), ``approved``,
            ``edited`` (a reviewer changed it) or ``rejected`` (never guards); None for
            rules written by hand.
        location: Where the entry starts; `logic_location` where its logic string starts
            (`logic_style` and `logic_indent` map columns inside it to the file).
    """

    id: str
    logic: str
    formula: Formula
    template: str
    risk_types: tuple[str, ...] = ()
    source: str = ""
    policy: str = ""
    explanation: str = ""
    remediation: str = ""
    weight: float = 1.0
    hard: bool = True
    actions: tuple[str, ...] = ()
    span: str = ""
    review: ReviewState | None = None
    location: Location | None = field(default=None, compare=False)
    logic_location: Location | None = field(default=None, compare=False)
    logic_style: str | None = field(default=None, compare=False)
    logic_indent: int = field(default=0, compare=False)

    @cached_property
    def predicates(self) -> tuple[str, ...]:
        """Every predicate the logic names, in order of first appearance."""
        return variables(self.formula)


@dataclass(frozen=True)
class ActionTree:
    """Actions with their parents (a forest); built from the action predicates."""

    parents: Mapping[str, str | None]

    @cached_property
    def children(self) -> dict[str, tuple[str, ...]]:
        """Action -> its direct children, in declaration order."""
        out: dict[str, list[str]] = {a: [] for a in self.parents}
        for action, parent in self.parents.items():
            if parent is not None and parent in out:
                out[parent].append(action)
        return {a: tuple(c) for a, c in out.items()}

    def ancestors(self, action: str) -> tuple[str, ...]:
        """Parent, grandparent, ... of `action` (stops at a cycle, which loading rejects)."""
        out: list[str] = []
        parent = self.parents.get(action)
        while parent is not None and parent not in out and parent != action:
            out.append(parent)
            parent = self.parents.get(parent)
        return tuple(out)

    def descendants(self, action: str) -> tuple[str, ...]:
        """Every action below `action`."""
        out: list[str] = []
        stack = list(self.children.get(action, ()))
        while stack:
            node = stack.pop()
            if node not in out:
                out.append(node)
                stack.extend(self.children.get(node, ()))
        return tuple(out)

    @property
    def depth(self) -> int:
        """Levels in the deepest branch (1 for actions without parents)."""
        return max((len(self.ancestors(a)) + 1 for a in self.parents), default=0)


@dataclass(frozen=True)
class PolicyModel:
    """A loaded policy model.

    Attributes:
        name: Short name.
        version: The policy's own revision (bump it when rules change).
        description: What the policy governs.
        threshold: Safety-probability threshold: an action whose probability of keeping every
            hard rule is below it is denied.
        violations: How a decision lists violations: ``rules`` (the violated rules' policy
            texts) or ``targets`` (``{group: [items]}`` from the matched actions' targets).
        predicates: Declared predicates, in file order.
        rules: Rules, in file order.
        path: The file it was loaded from.
        labels: The deployer's tool labels (``labels:`` section, the format of
            :mod:`guardagent.trace.document.labels`), for trace predicates; None without one.
        approved_only: Guard only with rules a human signed off (review ``approved`` or
            ``edited``); see :func:`guarding_model`.
        values: The user's records (``values:``, :mod:`guardagent.trace.sources.records`).
        secrets: Declared secrets (``secrets:``, :mod:`guardagent.trace.found.secrets`).
    """

    name: str
    version: str
    predicates: tuple[Predicate, ...]
    rules: tuple[Rule, ...]
    description: str = ""
    threshold: float = 0.5
    violations: ViolationsMode = "rules"
    path: str | None = field(default=None, compare=False)
    labels: Labels | None = None
    approved_only: bool = False
    values: Records | None = None
    secrets: Secrets | None = None

    @cached_property
    def trace_bindings(self) -> dict[str, str]:
        """Predicates the host assigns from the trace: name -> trace predicate expression."""
        return {
            p.name: p.assigned_by.text
            for p in self.predicates
            if p.assigned_by is not None and p.assigned_by.kind == "trace"
        }

    @cached_property
    def by_name(self) -> dict[str, Predicate]:
        """Predicate name -> predicate."""
        return {p.name: p for p in self.predicates}

    @cached_property
    def by_id(self) -> dict[str, Rule]:
        """Rule id -> rule."""
        return {r.id: r for r in self.rules}

    @cached_property
    def tree(self) -> ActionTree:
        """The action tree over the action predicates."""
        return ActionTree({p.name: p.parent for p in self.predicates if p.kind == "action"})

    @cached_property
    def actions(self) -> tuple[str, ...]:
        """Action predicate names."""
        return tuple(p.name for p in self.predicates if p.kind == "action")

    @cached_property
    def undefined(self) -> dict[str, list[tuple[str, Location | None]]]:
        """Predicate names used in rule logic but not declared -> (rule id, position) uses."""
        out: dict[str, list[tuple[str, Location | None]]] = {}
        for rule in self.rules:
            for ref in occurrences(rule.formula):
                if ref.name not in self.by_name:
                    where = logic_position(rule, 1, ref.column)
                    out.setdefault(ref.name, []).append((rule.id, where))
        return out

    def rule_actions(self, rule: Rule) -> tuple[str, ...]:
        """The actions whose circuit holds `rule`: those its logic names plus `actions`."""
        named = [n for n in rule.predicates if self.by_name.get(n, _NONE).kind == "action"]
        return tuple(dict.fromkeys([*named, *rule.actions]))

    @cached_property
    def circuits(self) -> dict[str, tuple[str, ...]]:
        """Action -> ids of the rules in its circuit (its own rules, not its ancestors')."""
        out: dict[str, list[str]] = {a: [] for a in self.actions}
        for rule in self.rules:
            for action in self.rule_actions(rule):
                out.setdefault(action, []).append(rule.id)
        return {a: tuple(ids) for a, ids in out.items()}

    @cached_property
    def global_rules(self) -> tuple[str, ...]:
        """Rules attached to no action: constraints on conditions that apply to every event."""
        return tuple(r.id for r in self.rules if not self.rule_actions(r))


_NONE = Predicate(name="", kind="condition")


def logic_position(rule: Rule, line: int, column: int) -> Location | None:
    """File position of (line, column) inside a rule's logic string.

    Exact for plain and quoted one-line scalars and for literal blocks (``|``); for folded
    or multi-line flow scalars the line is exact only for the first line.
    """
    start = rule.logic_location
    if start is None:
        return None
    style = rule.logic_style
    if style in ("|", ">"):  # content starts on the next line, at the block's indentation
        return Location(start.file, start.line + line, rule.logic_indent + column)
    offset = 1 if style in ("'", '"') else 0
    if line == 1:
        return Location(start.file, start.line, start.column + offset + column - 1)
    return Location(start.file, start.line + line - 1, column)


# --------------------------------------------------------------------------- sign-off


def guards(rule: Rule, *, approved_only: bool) -> bool:
    """Whether `rule` takes part in guarding.

    A rejected rule never guards. Under `approved_only`, only rules a human signed off
    (``approved`` or ``edited``) guard: extracted rules still ``proposed`` and hand-written
    rules without a review state do not, so nothing unreviewed can decide.
    """
    if rule.review == "rejected":
        return False
    return not approved_only or rule.review in SIGNED_OFF


def guarding_model(model: PolicyModel, *, approved_only: bool | None = None) -> PolicyModel:
    """The model with only the rules that guard (see :func:`guards`).

    `approved_only` None means the model's own setting; a profile may force it on (it can
    never turn off a policy's own `approved_only`). The model is returned unchanged when
    every rule guards, so compiled solvers cached on it are reused.
    """
    strict = model.approved_only or bool(approved_only)
    kept = tuple(r for r in model.rules if guards(r, approved_only=strict))
    if len(kept) == len(model.rules):
        return model
    return dataclasses.replace(model, rules=kept)
