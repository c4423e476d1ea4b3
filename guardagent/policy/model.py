"""The policy model: predicates, rules and the action tree, loaded from and dumped to YAML.

A policy model is what people read and audit, so the file is the source of truth and is kept
diff-friendly: one entry per predicate and rule, a fixed key order, defaults left out, and a
`format` line so a future layout can be told apart. Loading reports every problem it finds,
each with the file, line and column it comes from (for a rule's logic: the column inside the
logic string, mapped into the file), instead of stopping at the first.

Example::

    format: guardagent-policy/1
    name: publishing
    version: "1"
    threshold: 0.5
    predicates:
      - name: publish_data
        kind: action
        description: The agent publishes data.
        assign: {tool: parse_tool_call}
      - name: user_consent
        kind: condition
        description: The user consented to publishing.
        assign: {query: "Did the user consent to publishing this data?"}
        probability: 0.9
    rules:
      - id: consent-before-publishing
        logic: NOT user_consent IMPLIES NOT publish_data
        policy: Personal data is published only with the user's consent.
        remediation: Ask the user for consent first, or do not publish.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from guardagent.policy.formula import Formula, occurrences, variables
from guardagent.policy.formula import template as derive_template
from guardagent.policy.grammar import LogicSyntaxError, parse_logic
from guardagent.policy.screen import screen_yaml
from guardagent.trace.labels import Labels

if TYPE_CHECKING:
    from guardagent.trace.records import Records
    from guardagent.trace.secrets import Secrets

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

_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


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
            :mod:`guardagent.trace.labels`), for trace predicates; None without one.
        approved_only: Guard only with rules a human signed off (review ``approved`` or
            ``edited``); see :func:`guarding_model`.
        values: The user's records (``values:``, :mod:`guardagent.trace.records`).
        secrets: Declared secrets (``secrets:``, :mod:`guardagent.trace.secrets`).
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
        return {p.name: p.assigned_by.text for p in self.predicates
                if p.assigned_by is not None and p.assigned_by.kind == "trace"}  # fmt: skip

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


# --------------------------------------------------------------------------- loading


class _Reader:
    """Walks the YAML node tree so every value keeps its position."""

    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        self.issues: list[PolicyIssue] = []

    def at(self, node: yaml.Node) -> Location:
        return Location(self.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def problem(self, node: yaml.Node | None, message: str) -> None:
        self.issues.append(PolicyIssue(message, self.at(node) if node is not None else None))

    def block_indent(self, node: yaml.Node) -> int:
        """Column (1-based, minus one) where a block scalar's content lines start."""
        lines = self.text.splitlines()
        first = node.start_mark.line + 1
        if first < len(lines):
            content = lines[first]
            return len(content) - len(content.lstrip(" "))
        return 0

    @staticmethod
    def value(node: yaml.Node) -> Any:
        """The plain Python value of a node (safe constructors only)."""
        loader = yaml.SafeLoader("")
        try:
            return loader.construct_object(node, deep=True)
        finally:
            loader.dispose()

    def mapping(
        self, node: yaml.Node, what: str, allowed: tuple[str, ...]
    ) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            self.problem(node, f"{what} must be a mapping")
            return {}
        out: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str):
                self.problem(key_node, f"{what}: keys must be strings")
            elif key not in allowed:
                self.problem(
                    key_node, f"{what}: unknown key {key!r} (known: {', '.join(allowed)})"
                )
            elif key in out:
                self.problem(key_node, f"{what}: duplicate key {key!r}")
            else:
                out[key] = value_node
        return out

    def string(
        self, fields: dict[str, yaml.Node], key: str, what: str, *, required: bool = False
    ) -> str | None:
        node = fields.get(key)
        if node is None:
            if required:
                self.problem(None, f"{what}: missing required key {key!r}")
            return None
        value = self.value(node)
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.problem(node, f"{what}: {key} must be a string")
            return None
        return str(value)

    def boolean(self, fields: dict[str, yaml.Node], key: str, what: str, default: bool) -> bool:
        node = fields.get(key)
        if node is None:
            return default
        value = self.value(node)
        if type(value) is not bool:
            self.problem(node, f"{what}: {key} must be true or false")
            return default
        return value

    def number(
        self, fields: dict[str, yaml.Node], key: str, what: str, *, low: float, high: float
    ) -> float | None:
        node = fields.get(key)
        if node is None:
            return None
        value = self.value(node)
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and low <= value <= high
        ):
            self.problem(node, f"{what}: {key} must be a number in [{low}, {high}]")
            return None
        return float(value)

    def strings(self, fields: dict[str, yaml.Node], key: str, what: str) -> tuple[str, ...]:
        node = fields.get(key)
        if node is None:
            return ()
        value = self.value(node)
        if isinstance(value, str):
            return (value,)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(node, f"{what}: {key} must be a string or a list of strings")
            return ()
        return tuple(value)


_TOP_KEYS = (
    "format", "name", "version", "description", "threshold", "violations", "labels",
    "values", "secrets", "approved_only", "predicates", "rules",
)  # fmt: skip
_PREDICATE_KEYS = (
    "name", "kind", "description", "assign", "probability", "changeable", "parent", "target",
    "permitted",
)  # fmt: skip
_RULE_KEYS = (
    "id", "logic", "template", "risk_types", "source", "policy", "explanation", "remediation",
    "weight", "hard", "actions", "span", "review",
)  # fmt: skip


def _is_identifier(name: str) -> bool:
    return bool(name) and not name[0].isdigit() and set(name) <= _IDENT_CHARS


def _predicate(reader: _Reader, node: yaml.Node, index: int) -> Predicate | None:
    what = f"predicates[{index}]"
    fields = reader.mapping(node, what, _PREDICATE_KEYS)
    name = reader.string(fields, "name", what, required=True)
    if name is None:
        return None
    what = f"predicate {name!r}"
    if not _is_identifier(name):
        reader.problem(fields["name"], f"{what}: use letters, digits and _ (no leading digit)")
    kind = reader.string(fields, "kind", what, required=True)
    if kind not in ("action", "condition"):
        if kind is not None:
            reader.problem(fields["kind"], f"{what}: kind must be 'action' or 'condition'")
        kind = "condition"
    assigned = None
    if "assign" in fields:
        how = reader.mapping(fields["assign"], f"{what}: assign",
                             ("tool", "expression", "query", "trace"))  # fmt: skip
        if len(how) != 1:
            reader.problem(fields["assign"], f"{what}: assign needs exactly one of tool, "
                           "expression, query, trace")  # fmt: skip
        else:
            key, _ = next(iter(how.items()))
            text = reader.string(how, key, f"{what}: assign")
            if text is not None and key == "trace":
                from guardagent.trace.params import check_template
                from guardagent.trace.predicates import PredicateSpecError

                try:  # with task parameters ("$name"), values are checked when a task sets them
                    check_template(text)
                except PredicateSpecError as exc:
                    reader.problem(how[key], f"{what}: {exc}")
            if text is not None:
                assigned = AssignedBy(**{key: text})
    parent = reader.string(fields, "parent", what)
    target = reader.string(fields, "target", what)
    if kind == "condition":
        for key in ("parent", "target", "permitted"):
            if key in fields:
                reader.problem(fields[key], f"{what}: {key} is for action predicates only")
    elif "changeable" in fields:
        reader.problem(fields["changeable"], f"{what}: changeable is for conditions only "
                       "(an action can always be dropped)")  # fmt: skip
    if target is not None and (target.count(".") != 1 or target.startswith(".")):
        reader.problem(fields["target"], f"{what}: target must look like group.item")
    return Predicate(
        name=name,
        kind="action" if kind == "action" else "condition",
        description=reader.string(fields, "description", what) or "",
        assigned_by=assigned,
        probability=reader.number(fields, "probability", what, low=0.0, high=1.0),
        changeable=reader.boolean(fields, "changeable", what, True),
        parent=parent,
        target=target,
        permitted=reader.boolean(fields, "permitted", what, True),
        location=reader.at(node),
    )


def _rule(reader: _Reader, node: yaml.Node, index: int) -> Rule | None:
    what = f"rules[{index}]"
    fields = reader.mapping(node, what, _RULE_KEYS)
    rule_id = reader.string(fields, "id", what, required=True)
    if rule_id is None:
        return None
    what = f"rule {rule_id!r}"
    logic = reader.string(fields, "logic", what, required=True)
    if logic is None:
        return None
    logic_node = fields["logic"]
    style = getattr(logic_node, "style", None)
    indent = reader.block_indent(logic_node) if style in ("|", ">") else 0
    try:
        formula = parse_logic(logic)
    except LogicSyntaxError as exc:
        probe = Rule(rule_id, logic, _PLACEHOLDER, "", logic_location=reader.at(logic_node),
                     logic_style=style, logic_indent=indent)  # fmt: skip
        where = logic_position(probe, exc.line, exc.column)
        reader.issues.append(PolicyIssue(
            f"{what} logic: {exc.message} (logic line {exc.line}, column {exc.column})", where
        ))
        return None
    derived = derive_template(formula)
    given = reader.string(fields, "template", what)
    if given is not None and " ".join(given.split()) != derived:
        reader.problem(fields["template"], f"{what}: template {given!r} does not match the "
                       f"logic (its template is {derived!r}); drop it, it is derived")  # fmt: skip
    weight = reader.number(fields, "weight", what, low=0.0, high=1e9)
    review = reader.string(fields, "review", what)
    if review is not None and review not in REVIEW_STATES:
        reader.problem(fields["review"], f"{what}: review must be one of "
                       f"{', '.join(REVIEW_STATES)}")  # fmt: skip
        review = "proposed"
    return Rule(
        id=rule_id,
        logic=logic,
        formula=formula,
        template=derived,
        risk_types=reader.strings(fields, "risk_types", what),
        source=reader.string(fields, "source", what) or "",
        policy=reader.string(fields, "policy", what) or "",
        explanation=reader.string(fields, "explanation", what) or "",
        remediation=reader.string(fields, "remediation", what) or "",
        weight=1.0 if weight is None else weight,
        hard=reader.boolean(fields, "hard", what, True),
        actions=reader.strings(fields, "actions", what),
        span=reader.string(fields, "span", what) or "",
        review=_review_state(review),
        location=reader.at(node),
        logic_location=reader.at(logic_node),
        logic_style=style,
        logic_indent=indent,
    )


_PLACEHOLDER: Formula = parse_logic("TRUE")


def _review_state(text: str | None) -> ReviewState | None:
    if text == "approved":
        return "approved"
    if text == "edited":
        return "edited"
    if text == "rejected":
        return "rejected"
    return None if text is None else "proposed"


def _sequence(reader: _Reader, fields: dict[str, yaml.Node], key: str) -> list[yaml.Node]:
    node = fields.get(key)
    if node is None:
        return []
    if not isinstance(node, yaml.SequenceNode):
        reader.problem(node, f"{key} must be a list")
        return []
    return list(node.value)


def _structure(reader: _Reader, predicates: list[Predicate], rules: list[Rule]) -> None:
    """Cross-entry checks: duplicates, the action tree, rules' explicit actions."""
    seen: dict[str, Predicate] = {}
    for pred in predicates:
        if pred.name in seen:
            reader.issues.append(PolicyIssue(f"duplicate predicate {pred.name!r}", pred.location))
        seen[pred.name] = pred
    for pred in predicates:
        if pred.parent is None:
            continue
        parent = seen.get(pred.parent)
        if parent is None:
            reader.issues.append(PolicyIssue(
                f"predicate {pred.name!r}: parent {pred.parent!r} is not declared", pred.location
            ))
        elif parent.kind != "action":
            reader.issues.append(PolicyIssue(
                f"predicate {pred.name!r}: parent {pred.parent!r} is not an action", pred.location
            ))
    parents = {p.name: p.parent for p in predicates if p.kind == "action"}
    cycles: set[frozenset[str]] = set()
    for name in parents:
        chain, node = [name], parents.get(name)
        while node is not None and node in parents:
            if node in chain:
                loop = chain[chain.index(node):]
                if frozenset(loop) not in cycles:
                    cycles.add(frozenset(loop))
                    reader.issues.append(PolicyIssue(
                        f"action tree has a cycle: {' -> '.join([*loop, node])}",
                        seen[loop[0]].location,
                    ))
                break
            chain.append(node)
            node = parents.get(node)
    ids: set[str] = set()
    for rule in rules:
        if rule.id in ids:
            reader.issues.append(PolicyIssue(f"duplicate rule id {rule.id!r}", rule.location))
        ids.add(rule.id)
        for action in rule.actions:
            declared = seen.get(action)
            if declared is None or declared.kind != "action":
                reader.issues.append(PolicyIssue(
                    f"rule {rule.id!r}: actions names {action!r}, which is not a declared "
                    "action predicate", rule.location,
                ))  # fmt: skip


def load_policy_text(text: str, file: str = "<policy>", *, strict: bool = True) -> PolicyModel:
    """Parse a policy model from YAML text.

    Args:
        text: The YAML.
        file: Name used in error positions.
        strict: Also refuse rules that use undeclared predicates (the checker passes False to
            report them among its other findings).

    Raises:
        PolicyError: every problem found, each with its position.
    """
    reader = _Reader(text, file)
    screened = screen_yaml(text)
    if screened is not None:
        raise PolicyError([PolicyIssue(screened[0], Location(file, screened[1], screened[2]))])
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)  # C: 5-10x faster
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = Location(file, mark.line + 1, mark.column + 1) if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise PolicyError([PolicyIssue(f"not valid YAML: {problem}", where)]) from None
    if root is None:
        raise PolicyError([PolicyIssue("the policy file is empty", Location(file, 1, 1))])
    top = reader.mapping(root, "policy", _TOP_KEYS)
    fmt = reader.string(top, "format", "policy", required=True)
    if fmt is not None and fmt != FORMAT:
        reader.problem(top["format"], f"unknown format {fmt!r}; this version reads {FORMAT!r}")
    name = reader.string(top, "name", "policy", required=True) or ""
    version = reader.string(top, "version", "policy", required=True) or ""
    violations = reader.string(top, "violations", "policy") or "rules"
    if violations not in ("rules", "targets"):
        reader.problem(top["violations"], "violations must be 'rules' or 'targets'")
        violations = "rules"
    threshold = reader.number(top, "threshold", "policy", low=0.0, high=1.0)
    predicates = [
        p for i, n in enumerate(_sequence(reader, top, "predicates"))
        if (p := _predicate(reader, n, i)) is not None
    ]  # fmt: skip
    rules = [
        r for i, n in enumerate(_sequence(reader, top, "rules"))
        if (r := _rule(reader, n, i)) is not None
    ]  # fmt: skip
    _structure(reader, predicates, rules)
    labels = None
    if "labels" in top:
        from guardagent.trace.labels import LabelError

        raw = reader.value(top["labels"])
        try:
            labels = Labels.from_mapping(raw if isinstance(raw, dict) else {"tools": raw})
        except LabelError as exc:
            for problem in exc.problems:
                reader.problem(top["labels"], f"labels: {problem}")
    values, secrets = _records(reader, top, predicates)
    model = PolicyModel(
        name=name,
        version=version,
        description=reader.string(top, "description", "policy") or "",
        threshold=0.5 if threshold is None else threshold,
        violations="targets" if violations == "targets" else "rules",
        predicates=tuple(predicates),
        rules=tuple(rules),
        path=file,
        labels=labels,
        approved_only=reader.boolean(top, "approved_only", "policy", False),
        values=values,
        secrets=secrets,
    )
    if strict:
        for pred_name, uses in model.undefined.items():
            for rule_id, where in uses:
                reader.issues.append(PolicyIssue(
                    f"rule {rule_id!r} uses undefined predicate {pred_name!r}", where
                ))
    if reader.issues:
        raise PolicyError(sorted(reader.issues, key=_issue_order))
    return model


def _records(reader: _Reader, top: dict[str, yaml.Node], predicates: list[Predicate]
             ) -> tuple[Records | None, Secrets | None]:  # fmt: skip
    """The ``values:`` and ``secrets:`` sections (parsed by their own modules)."""
    from guardagent.trace.records import Records, RecordsError
    from guardagent.trace.secrets import Secrets, SecretsError

    found: list[Any] = [None, None]
    for i, (key, parse) in enumerate((("values", Records.from_mapping),
                                      ("secrets", Secrets.from_mapping))):  # fmt: skip
        if key in top:
            try:
                found[i] = parse(reader.value(top[key]))
            except (RecordsError, SecretsError) as exc:
                for problem in exc.problems:
                    reader.problem(top[key], problem)
    for pred in predicates:  # a secret check with nothing to look for is a mistake
        if (found[1] is None and "secrets" not in top and pred.assigned_by is not None
                and pred.assigned_by.kind == "trace"
                and pred.assigned_by.text.lstrip().startswith("secret_in_args")):  # fmt: skip
            reader.issues.append(PolicyIssue(f"predicate {pred.name!r}: secret_in_args needs "
                                             "a secrets: section", pred.location))  # fmt: skip
    return found[0], found[1]


def _issue_order(issue: PolicyIssue) -> tuple[int, int]:
    loc = issue.location
    return (loc.line, loc.column) if loc else (0, 0)


def shipped_policies() -> list[str]:
    """Names of the policy models shipped with the package."""
    return sorted(p.stem for p in SHIPPED_DIR.glob("*.yaml"))


def policy_path(name_or_path: str | Path) -> Path:
    """A shipped policy's file by name (``tool-calls``), or the path as given."""
    text = str(name_or_path)
    shipped = SHIPPED_DIR / f"{text}.yaml"
    if "/" not in text and not text.endswith((".yaml", ".yml")) and shipped.is_file():
        return shipped
    return Path(name_or_path)


def resolve_policy(root: Path | None, name_or_path: str) -> Path:
    """A profile's `policy_model` entry as a file: relative to the profile, else shipped."""
    if root is not None and not Path(name_or_path).is_absolute():
        local = root / name_or_path
        if local.is_file():
            return local
    return policy_path(name_or_path)


def policy_digest(path: Path) -> str:
    """SHA-256 of a policy file's bytes (``unreadable:<path>`` when it cannot be read)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return f"unreadable:{path}"


def load_policy(path: str | Path, *, strict: bool = True) -> PolicyModel:
    """Load a policy model file, or a shipped one by name (see :func:`load_policy_text`).

    Raises:
        PolicyError: unreadable file or invalid content, with positions.
    """
    from guardagent.eval.textio import read_text_file

    file = policy_path(path)
    try:
        text = read_text_file(file)
    except (OSError, ValueError) as exc:
        raise PolicyError([PolicyIssue(f"cannot read {file}: {exc}")]) from None
    return load_policy_text(text, str(file), strict=strict)


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


# --------------------------------------------------------------------------- dumping


class _Flow(list[str]):
    """A short list written on one line (`[a, b]`), so a change is a one-line diff."""


def _flow_representer(dumper: yaml.SafeDumper, data: _Flow) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Flow, _flow_representer)


def _predicate_entry(pred: Predicate) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": pred.name, "kind": pred.kind}
    if pred.description:
        entry["description"] = pred.description
    if pred.parent is not None:
        entry["parent"] = pred.parent
    if pred.target is not None:
        entry["target"] = pred.target
    if not pred.permitted:
        entry["permitted"] = False
    if pred.assigned_by is not None:
        entry["assign"] = {pred.assigned_by.kind: pred.assigned_by.text}
    if pred.probability is not None:
        entry["probability"] = pred.probability
    if not pred.changeable:
        entry["changeable"] = False
    return entry


def _rule_entry(rule: Rule) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": rule.id, "logic": rule.logic}
    for key in ("policy", "explanation", "remediation", "source"):
        if getattr(rule, key):
            entry[key] = getattr(rule, key)
    if rule.risk_types:
        entry["risk_types"] = _Flow(rule.risk_types)
    if rule.actions:
        entry["actions"] = _Flow(rule.actions)
    if rule.weight != 1.0:
        entry["weight"] = rule.weight
    if not rule.hard:
        entry["hard"] = False
    if rule.span:
        entry["span"] = rule.span
    if rule.review is not None:
        entry["review"] = rule.review
    return entry


def dump_policy(model: PolicyModel) -> str:
    """The model as YAML in the canonical layout (fixed key order, defaults left out).

    `load_policy_text(dump_policy(m)) == m` (tested), so tools can rewrite a policy (merge
    predicates, prune rules) and the diff shows only what changed.
    """
    doc: dict[str, Any] = {"format": FORMAT, "name": model.name, "version": model.version}
    if model.description:
        doc["description"] = model.description
    doc["threshold"] = model.threshold
    if model.violations != "rules":
        doc["violations"] = model.violations
    if model.labels is not None:
        doc["labels"] = model.labels.to_json()
    if model.values is not None:
        doc["values"] = model.values.to_json()
    if model.secrets is not None:
        doc["secrets"] = model.secrets.to_json()
    if model.approved_only:
        doc["approved_only"] = True
    doc["predicates"] = [_predicate_entry(p) for p in model.predicates]
    doc["rules"] = [_rule_entry(r) for r in model.rules]
    text: str = yaml.dump(
        doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100,
        default_flow_style=False,
    )  # fmt: skip
    return text
