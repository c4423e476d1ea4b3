"""The rule circuit of a decision: predicates -> rules -> verdict, deciding values marked.

ShieldAgent draws each action's rule circuit; a policy decision here holds the same parts:
every rule's status with the predicate values that decided it (``deciding``, a minimal set
z3 needed) or would settle it (``open``). Only the rules that applied to the call are drawn
(a rule of another action decided nothing). What is marked is what decided: for a denial
the rules that deny and their deciding predicates, for an allowed call every applicable
rule (each had to hold). The provenance chain of each predicate is drawn by
:mod:`guardagent.explain.chain`.
"""

from __future__ import annotations

from guardagent.explain.chain import MAX_SOURCES, MessageNodes, chain_of
from guardagent.explain.diagram import Diagram, Edge, Node, checked, one_line, wrapped
from guardagent.explain.reading import DecisionView, FactJson
from guardagent.policy.formula import variables
from guardagent.policy.grammar import parse_logic
from guardagent.policy.results import RuleResult

MAX_LOGIC_CHARS = 4000
"""Rule logic longer than this is not parsed (its deciding values still name predicates)."""


def rule_predicates(rule: RuleResult) -> list[str]:
    """The predicates a rule reads: its logic's, parsed; else those its result names.

    A decision file is data, so a logic that does not parse is not guessed at: the
    predicates its result names (deciding, open, witness) are still drawn.
    """
    names: list[str] = []
    if rule.logic and len(rule.logic) <= MAX_LOGIC_CHARS:
        try:
            names = list(variables(parse_logic(rule.logic)))
        except (ValueError, RecursionError):
            names = []
    return list(dict.fromkeys([*names, *rule.deciding, *rule.open, *rule.witness]))


def deciding_rules(view: DecisionView) -> list[RuleResult]:
    """The rules that decided: those that deny (denied), else every applicable one."""
    applied = [r for r in view.rules if r.status != "not_applicable"]
    if view.allowed:
        return applied
    denying = [r for r in applied if r.denies]
    return denying or [r for r in applied if r.status in ("violated", "possibly_violated")]


def _value(name: str, fact: FactJson | None, rules: list[RuleResult]) -> str:
    """A predicate's value: the trace fact's, else a rule's deciding value, else open."""
    if fact is not None and fact.value is not None:
        return str(fact.value).lower()
    for rule in rules:
        if name in rule.deciding:
            return str(rule.deciding[name]).lower()
    return "open"


def _verdict(view: DecisionView) -> Node:
    lines = ["ALLOWED" if view.allowed else "DENIED"]
    if view.safety_probability is not None:
        lines.append(f"safety probability {view.safety_probability:.2f}")
    if view.error:
        lines.append(one_line("error: " + view.error))
    lines += [one_line(f"unreadable: {u['reason']}: {u['detail']}") for u in view.unreadable[:3]]
    if not view.rules and view.reason:
        lines.append(one_line(view.reason))
    return Node(
        "verdict", "verdict", tuple(lines), "allowed" if view.allowed else "denied", marked=True
    )


def draw(view: DecisionView) -> Diagram:
    """The whole picture of one decision: provenance chains, rule circuit, verdict."""
    applied = [r for r in view.rules if r.status != "not_applicable"]
    deciders = {id(r) for r in deciding_rules(view)}
    facts = view.trace_facts or {}
    reads = [rule_predicates(r) for r in applied]  # parsed once per rule
    names = list(dict.fromkeys(n for r in reads for n in r))
    box = {name: f"p{i}" for i, name in enumerate(names)}
    marked = {n for r in applied if id(r) in deciders for n in [*r.deciding, *r.open]}
    messages = MessageNodes()
    nodes: list[Node] = []
    edges: list[Edge] = []
    for i, name in enumerate(names):
        fact = facts.get(name)
        value = _value(name, fact, applied)
        lines = [one_line(f"{name} = {value}")]
        if fact is not None:
            lines += [one_line(fact.name), *wrapped(fact.detail)]
            if not fact.values and len(fact.sources) > MAX_SOURCES:
                lines.append(f"(and {len(fact.sources) - MAX_SOURCES} more messages)")
        pid = box[name]
        nodes.append(Node(pid, "predicate", tuple(x for x in lines if x), value, name in marked))
        if fact is not None:
            found_nodes, found_edges = chain_of(fact, pid, name in marked, messages, f"v{i}_")
            nodes += found_nodes
            edges += found_edges
    for j, (rule, read) in enumerate(zip(applied, reads, strict=True)):
        rid = f"r{j}"
        status = rule.status.replace("_", " ") + ("" if rule.hard else " (soft rule)")
        lines = [
            one_line(f"{rule.id}: {status}"),
            *wrapped(rule.logic, 2),
            *wrapped(rule.policy, 2),
        ]
        nodes.append(
            Node(rid, "rule", tuple(x for x in lines if x), rule.status, id(rule) in deciders)
        )
        for name in read:
            pid = box[name]
            said = rule.deciding.get(name)
            label = "open" if name in rule.open else "" if said is None else str(said).lower()
            edges.append(Edge(pid, rid, label, id(rule) in deciders and bool(label)))
        edges.append(Edge(rid, "verdict", "", id(rule) in deciders))
    nodes.append(_verdict(view))
    return checked(messages.nodes() + nodes, edges)
