"""Remediation: z3's optimiser returns minimal change sets, checked by brute force."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.policy.event import event_values
from guardagent.policy.formula import And, Const, Iff, Implies, Not, Or, Var, render
from guardagent.policy.model import load_policy, load_policy_text
from guardagent.policy.remediation import remediate
from guardagent.policy.verify import verify_event
from tests.test_policy_grammar import truth

TOOLS = load_policy("tool-calls")
WEB = load_policy("mind2web-sc")


def changes(remedy):
    return {(c.predicate, c.after) for c in remedy.changes}


def test_a_large_unverified_transfer_has_three_single_change_remedies():
    verdict = verify_event(
        TOOLS,
        {
            "calls_transfer_funds": True,
            "transfer_amount_over_1000": True,
            "user_is_verified": False,
        },
    )
    fix = verdict.remediation
    assert fix.feasible and all(r.cost == 1 for r in fix.remedies)
    assert {frozenset(changes(r)) for r in fix.remedies} == {
        frozenset({("transfer_amount_over_1000", False)}),
        frozenset({("user_is_verified", True)}),
        frozenset({("calls_transfer_funds", False)}),
    }
    assert fix.texts == ["Transfer at most 1000, or have the user verified first."]
    summary = fix.summary()
    assert summary.startswith("To comply: ") and "make user_is_verified true" in summary


def test_facts_that_cannot_change_leave_only_dropping_the_action():
    verdict = verify_event(WEB, {"books_hotel": True, "user_age_under_18": True})
    [remedy] = verdict.remediation.remedies
    assert changes(remedy) == {("books_hotel", False)}
    assert remedy.changes[0].how == "do not take the action books_hotel"


def test_an_open_predicate_can_be_settled_as_one_change():
    verdict = verify_event(TOOLS, {"calls_delete_file": True})  # the role is unknown
    assert not verdict.allowed
    found = {frozenset(changes(r)) for r in verdict.remediation.remedies}
    assert frozenset({("user_role_is_admin", True)}) in found
    assert frozenset({("calls_delete_file", False)}) in found
    settle = next(
        c
        for r in verdict.remediation.remedies
        for c in r.changes
        if c.predicate == "user_role_is_admin"
    )
    assert settle.before is None and settle.how == "establish that user_role_is_admin is true"


def test_no_allowed_change_means_not_feasible():
    model = load_policy_text(
        """
format: guardagent-policy/1
name: stuck
version: "1"
predicates:
  - {name: act, kind: action}
  - {name: adult, kind: condition, changeable: false}
rules:
  - {id: adults-only, logic: adult}
""",
        "stuck.yaml",
    )
    verdict = verify_event(model, {"act": True, "adult": False})
    assert not verdict.remediation.feasible and verdict.remediation.remedies == []
    assert "No allowed change" in verdict.remediation.summary()


def test_dropping_a_child_action_drops_the_ancestor_it_alone_made_true():
    reddit = load_policy("tests/policies/reddit_profile.yaml")
    verdict = verify_event(
        reddit, {"update_bio": True, "user_consent": True, "exact_user_request": False}
    )
    found = {frozenset(changes(r)) for r in verdict.remediation.remedies}
    assert frozenset({("update_bio", False)}) in found  # content_access goes with it
    assert frozenset({("exact_user_request", True)}) in found


# --------------------------------------------------------------------------- brute force

ACTIONS = ["a", "b"]
CONDITIONS = ["x", "y", "z"]  # x cannot change
HEADER = """format: guardagent-policy/1
name: random
version: "1"
predicates:
  - {name: a, kind: action}
  - {name: b, kind: action}
  - {name: x, kind: condition, changeable: false}
  - {name: y, kind: condition}
  - {name: z, kind: condition}
rules:
"""


def small_formulas():
    leaf = st.one_of(st.sampled_from(ACTIONS + CONDITIONS).map(Var), st.booleans().map(Const))

    def extend(children):
        pair = st.tuples(children, children)
        return st.one_of(
            children.map(Not),
            pair.map(lambda p: And(p)),
            pair.map(lambda p: Or(p)),
            pair.map(lambda p: Implies(*p)),
            pair.map(lambda p: Iff(*p)),
        )

    return st.recursive(leaf, extend, max_leaves=5)


def _holds_everywhere(rules, values, opens):
    for bits in itertools.product((False, True), repeat=len(opens)):
        env = {**values, **dict(zip(opens, bits, strict=True))}
        if not all(truth(r, env) for r in rules):
            return False
    return True


def _brute_force_min(ev, rules):
    """Smallest number of allowed changes after which every rule holds for every completion."""
    options = []  # per predicate: list of (value or None=open, cost)
    names = ACTIONS + CONDITIONS
    for n in names:
        v = ev.values[n]
        if n in ACTIONS:
            direct = ev.direct.get(n, False)
            options.append([(False, 0)] if direct is False else [(direct, 0), (False, 1)])
        elif v is None:
            options.append([(None, 0), (True, 1), (False, 1)])
        elif n == "x":
            options.append([(v, 0)])
        else:
            options.append([(v, 0), (not v, 1)])
    best = None
    for combo in itertools.product(*options):
        cost = sum(c for _, c in combo)
        if best is not None and cost >= best:
            continue
        values = {n: v for n, (v, _) in zip(names, combo, strict=True) if v is not None}
        opens = [n for n, (v, _) in zip(names, combo, strict=True) if v is None]
        if _holds_everywhere(rules, values, opens):
            best = cost
    return best


@settings(max_examples=120, deadline=None)
@given(
    st.lists(small_formulas(), min_size=1, max_size=3),
    st.lists(st.sampled_from([True, False, None]), min_size=5, max_size=5),
)
def test_remedies_are_valid_and_minimal(formulas, picks):
    text = HEADER + "".join(
        f'  - id: r{i}\n    logic: "{render(f)}"\n' for i, f in enumerate(formulas)
    )
    model = load_policy_text(text, "random.yaml")
    assigned = dict(zip(ACTIONS + CONDITIONS, picks, strict=True))
    ev = event_values(model, assigned)
    rules = [model.by_id[r].formula for r in ev.circuit if model.by_id[r].hard]
    best = _brute_force_min(ev, rules)
    fix = remediate(model, ev)
    assert fix.feasible == (best is not None)
    for remedy in fix.remedies:
        assert remedy.cost == best
        changed = {c.predicate: c.after for c in remedy.changes}
        values = {n: v for n, v in ev.values.items() if v is not None and n in CONDITIONS}
        values.update({a: ev.direct.get(a, False) for a in ACTIONS})
        values.update(changed)
        opens = [n for n in ACTIONS + CONDITIONS if n not in values or values[n] is None]
        values = {n: v for n, v in values.items() if v is not None}
        assert _holds_everywhere(rules, values, opens)
    assert len({frozenset(changes(r)) for r in fix.remedies}) == len(fix.remedies)
