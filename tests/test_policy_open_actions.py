"""Open means not allowed: an action whose value is unknown brings every rule it could.

An action is unknown when the program assigned it None, when its declared assigner is a
model query that gave no answer, when the program reported no action at all, or when it
sits below an action that was reported without saying which of its sub-actions it is.
Each of these must select every circuit the action could select, and z3 then decides the
rules with the action open: a rule that the action could break denies, naming the action.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.policy.event import event_values
from guardagent.policy.formula import render
from guardagent.policy.model import PolicyModel, load_policy_text
from guardagent.policy.verify import verify_event
from tests.test_policy_grammar import formulas, truth

HEAD = "format: guardagent-policy/1\nname: open\nversion: '1'\npredicates:\n"

# (how the agent's action is declared, the rule about it) -> a policy. `act` is the action
# the rules are about; `other` is a second, unrelated action; `c` and `d` are conditions.
ASSIGNERS = {
    "none": "",
    "tool": ", assign: {tool: parse_tool_call}",
    "expression": ", assign: {expression: \"call['name'] == 'act'\"}",
    "query": ", assign: {query: 'Does the agent do it?'}",
}
RULES = {  # each is violated when `act` is taken while c = false and d = false
    "implies-not": "NOT c IMPLIES NOT act",
    "implies": "act IMPLIES c OR d",
    "forbidden": "NOT act",
    "iff": "act IFF c",
    "attached": "c",  # attached with `actions: [act]`
}


def _policy(rule: str, *, act_assign: str = "", parent: bool = False) -> PolicyModel:
    """A policy whose rule is about `act`; with `parent`, `act` sits under `kind`."""
    under = ", parent: kind" if parent else ""
    preds = (
        "  - {name: kind, kind: action}\n"
        f"  - {{name: act, kind: action{under}{act_assign}}}\n"
        f"  - {{name: sibling, kind: action{under}}}\n"
        "  - {name: other, kind: action}\n"
        "  - {name: c, kind: condition}\n  - {name: d, kind: condition}\n"
    )
    logic = RULES[rule]
    attach = ", actions: [act]" if rule == "attached" else ""
    rules = f"rules:\n  - {{id: r, logic: '{logic}'{attach}}}\n"
    return load_policy_text(HEAD + preds + rules, "open.yaml")


FALSE_CONDITIONS = {"c": False, "d": False}
TRUE_CONDITIONS = {"c": True, "d": True}

# How the event leaves `act` unknown: (policy options, the program's assignments).
UNKNOWN: dict[str, tuple[dict[str, Any], dict[str, bool | None]]] = {
    "assigned open": ({}, {"act": None}),
    "query unanswered": ({"act_assign": ASSIGNERS["query"]}, {"other": False}),
    "query unanswered, another action taken": ({"act_assign": ASSIGNERS["query"]}, {"other": True}),
    "no action reported": ({}, {}),
    "parent open": ({"parent": True}, {"kind": None}),
    "parent taken, which child unsaid": ({"parent": True}, {"kind": True}),
    "parent open, other taken": ({"parent": True}, {"kind": None, "other": True}),
}


@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize("how", sorted(UNKNOWN))
def test_an_unknown_action_that_could_break_a_rule_denies_naming_it(rule, how):
    options, assigned = UNKNOWN[how]
    model = _policy(rule, **options)
    verdict = verify_event(model, {**assigned, **FALSE_CONDITIONS})
    assert not verdict.allowed, (rule, how, verdict.reason)
    result = next(r for r in verdict.rules if r.id == "r")
    assert result.status == "possibly_violated", (rule, how, result.status)
    assert "act" in result.open and "act" in verdict.reason
    assert "0 rule(s)" not in verdict.reason


@pytest.mark.parametrize("how", sorted(UNKNOWN))
def test_an_unknown_action_under_rules_that_hold_either_way_is_allowed(how):
    options, assigned = UNKNOWN[how]
    for rule in ("implies-not", "implies", "attached"):  # hold whenever c and d hold
        verdict = verify_event(_policy(rule, **options), {**assigned, **TRUE_CONDITIONS})
        assert verdict.allowed, (rule, how, verdict.reason)
    verdict = verify_event(_policy("forbidden", **options), {**assigned, **TRUE_CONDITIONS})
    assert not verdict.allowed, how  # a forbidden action that may be taken: never allowed


REPORTED: dict[str, tuple[dict[str, Any], dict[str, bool | None]]] = {
    # An action read by a toolbox function or an expression: the program read it, and left
    # it out because it is not taken (the shipped programs assign only the action taken).
    "no action reported (tool)": ({"act_assign": ASSIGNERS["tool"]}, {}),
    "no action reported (expression)": ({"act_assign": ASSIGNERS["expression"]}, {}),
    "another action taken": ({}, {"other": True}),
    "another action taken (tool)": ({"act_assign": ASSIGNERS["tool"]}, {"other": True}),
    "act said not taken": ({}, {"act": False}),
    "query answered no": ({"act_assign": ASSIGNERS["query"]}, {"act": False}),
    "sibling named": ({"parent": True}, {"sibling": True}),
    "parent taken, sibling named": ({"parent": True}, {"kind": True, "sibling": True}),
    "parent open, act said not taken": ({"parent": True}, {"kind": None, "act": False}),
}


@pytest.mark.parametrize("rule", sorted(set(RULES) - {"forbidden"}))
@pytest.mark.parametrize("how", sorted(REPORTED))
def test_an_action_reported_not_taken_stays_out_of_the_circuits(rule, how):
    options, assigned = REPORTED[how]
    verdict = verify_event(_policy(rule, **options), {**assigned, **FALSE_CONDITIONS})
    assert verdict.allowed, (rule, how, verdict.reason)
    assert next(r for r in verdict.rules if r.id == "r").status == "not_applicable"


def test_an_event_that_reports_no_action_leaves_every_action_it_cannot_read_open():
    ev = event_values(_policy("implies-not"), FALSE_CONDITIONS)
    assert set(ev.matched) == {"kind", "act", "sibling", "other"}
    assert all(ev.values[a] is None for a in ev.matched)
    ev = event_values(_policy("implies-not", parent=True), FALSE_CONDITIONS)
    assert set(ev.matched) == {"kind", "act", "sibling", "other"}  # `kind` follows its children
    ev = event_values(_policy("implies-not", act_assign=ASSIGNERS["tool"]), FALSE_CONDITIONS)
    assert set(ev.matched) == {"kind", "sibling", "other"}  # `act` was read: not taken


# --------------------------------------------------------------------------- soundness


ACTIONS = ["a", "b", "c"]
CONDITIONS = ["d", "e", "f"]


@st.composite
def _cases(draw: Any) -> tuple[PolicyModel, dict[str, bool | None]]:
    parents = {
        "a": None,
        "b": draw(st.sampled_from([None, "a"])),
        "c": draw(st.sampled_from([None, "a", "b"])),
    }
    kinds = {a: draw(st.sampled_from(sorted(ASSIGNERS))) for a in ACTIONS}
    preds = "".join(
        f"  - {{name: {a}, kind: action"
        + (f", parent: {parents[a]}" if parents[a] else "")
        + f"{ASSIGNERS[kinds[a]]}}}\n"
        for a in ACTIONS
    ) + "".join(f"  - {{name: {c}, kind: condition}}\n" for c in CONDITIONS)
    rules = ""
    for i in range(draw(st.integers(1, 3))):
        logic = render(draw(formulas(max_leaves=6)))
        attach = draw(st.sampled_from(["", ", actions: [a]", ", actions: [b, c]"]))
        rules += f'  - {{id: r{i}, logic: "{logic}"{attach}}}\n'
    model = load_policy_text(HEAD + preds + "rules:\n" + rules, "p.yaml", strict=False)
    picks = st.sampled_from([True, False, None, "unassigned"])
    raw = {n: draw(picks) for n in ACTIONS + CONDITIONS}
    assigned = {n: v for n, v in raw.items() if v != "unassigned"}
    for action, value in list(assigned.items()):  # no parent false under a true child
        if value is True:
            for up in model.tree.ancestors(action):
                if assigned.get(up) is False:
                    assigned[up] = True
    return model, assigned


def _may_be_taken(model: PolicyModel, assigned: dict[str, bool | None]) -> set[str]:
    """Actions a careful reader cannot rule out (the semantics the verifier must honour)."""
    reported = any(a in assigned for a in model.actions)
    unknown = {a for a in model.actions if assigned.get(a, "gap") is None}
    for action in model.actions:
        how = model.by_name[action].assigned_by
        leaf = not model.tree.children.get(action)
        if action not in assigned and (
            (how is not None and how.kind == "query") or (how is None and leaf and not reported)
        ):
            unknown.add(action)
    heads = unknown | {a for a in model.actions if assigned.get(a) is True}
    for action in heads:  # taken or maybe, without saying which sub-action: any of them
        below = model.tree.descendants(action)
        if not any(assigned.get(x) is True for x in below):
            unknown.update(x for x in below if x not in assigned)
    return unknown


@settings(max_examples=150, deadline=None)
@given(_cases())
def test_an_allowed_event_breaks_no_hard_rule_under_any_completion(case):
    model, assigned = case
    verdict = verify_event(model, assigned, remediation=False, probability=False)
    if not verdict.allowed:
        return
    unknown = sorted(_may_be_taken(model, assigned))
    open_conditions = [c for c in CONDITIONS if assigned.get(c) is None]
    free = unknown + open_conditions
    for bits in itertools.product((False, True), repeat=len(free)):
        env = {n: bool(assigned.get(n)) for n in ACTIONS + CONDITIONS}
        env.update(zip(free, bits, strict=True))
        for action in ACTIONS:  # the tree: a taken action takes its ancestors
            if env[action]:
                env.update({up: True for up in model.tree.ancestors(action)})
        if any(env[a] and assigned.get(a) is False for a in ACTIONS):
            continue  # a child of an action said not taken is not taken either
        for rule in model.rules:
            applies = not model.rule_actions(rule) or any(env[a] for a in model.rule_actions(rule))
            guarded = not rule.actions or any(env[a] for a in rule.actions)
            assert not (applies and guarded) or truth(rule.formula, env), (
                render(rule.formula),
                rule.actions,
                assigned,
                env,
                verdict.reason,
            )
