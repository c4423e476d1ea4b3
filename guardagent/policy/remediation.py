"""Remediation computed with z3's optimiser: the fewest predicate changes that comply.

For a denied event we look for the smallest set of changes after which every hard rule of
the event's circuits holds:

- a changeable condition may flip (``user_consent`` becomes true: "ask for consent"); a
  condition declared ``changeable: false`` (a user's age) may not;
- an action the program reported may be dropped (switched off), never added; dropping an
  action also drops the ancestors it alone made true;
- an open predicate may be settled to a value (one change), or left open, in which case the
  rules must hold whatever its value: each rule is expanded over the completions of the open
  predicates it depends on, so the remedy is checked against every one of them (up to
  `EXPAND_LIMIT` open predicates per rule; above that, they must be settled).

The number of changes is minimised first; then the weight of the soft rules kept. Up to
`max_remedies` different minimal remedies are returned (each found remedy is blocked and the
optimiser asked again), so an agent can choose "obtain consent" or "do not publish".
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import z3

from guardagent.policy.event import EventValues
from guardagent.policy.model import PolicyModel
from guardagent.policy.results import Change, Remediation, Remedy
from guardagent.policy.solver import CompiledPolicy, Z3Bool, compiled

SEARCH_FACTOR = 3
"""Minimal remedies collected per remedy returned (they are sorted before the cut)."""

EXPAND_LIMIT = 8
"""Open predicates per rule whose 2^k completions are expanded; above it they must be settled."""


@dataclass
class _Choice:
    """The optimiser's handle on one predicate."""

    name: str
    kind: str
    before: bool | None
    var: Z3Bool | None = None  # new value (fixed conditions, settled opens)
    changed: Z3Bool | None = None  # true when this predicate changes


def _names(model: PolicyModel, comp: CompiledPolicy, ev: EventValues) -> set[str]:
    names: set[str] = set()
    for rule_id in ev.circuit:
        names.update(comp.names_of(model.by_id[rule_id]))
    tree = model.tree
    for action in [n for n in names if model.by_name[n].kind == "action"]:
        names.update(tree.descendants(action))
    return names


def _build(
    model: PolicyModel, comp: CompiledPolicy, ev: EventValues, names: set[str]
) -> tuple[z3.Optimize, list[_Choice], list[str]]:
    """The optimiser with every hard rule required and a cost per change."""
    opt = z3.Optimize(ctx=comp.ctx)
    choices: list[_Choice] = []
    own: dict[str, Z3Bool] = {}  # the action's own (directly reported) value
    settled_vars: dict[str, tuple[Z3Bool, Z3Bool]] = {}  # open name -> (settle?, value)
    fixed: dict[str, Z3Bool] = {}
    opens: list[str] = []
    for name in sorted(names):
        pred = model.by_name[name]
        if pred.kind == "action":
            direct = ev.direct.get(name, False)
            if direct is False:
                own[name] = comp.true(False)
                continue
            keep = comp.fresh(f"__keep__{name}")
            if direct is None:  # open: may be left open (expanded) or ruled out
                opens.append(name)
                rule_out = z3.Not(keep)
                settled_vars[name] = (rule_out, comp.true(False))
                choices.append(_Choice(name, "action", None, comp.true(False), rule_out))
            else:
                own[name] = keep
                choices.append(_Choice(name, "action", True, keep, z3.Not(keep)))
            continue
        value = ev.values[name]
        if value is None:
            opens.append(name)
            settle, settled = comp.fresh(f"__settle__{name}"), comp.fresh(f"__value__{name}")
            settled_vars[name] = (settle, settled)
            choices.append(_Choice(name, "condition", None, settled, settle))
            continue
        if pred.changeable:
            new = comp.fresh(f"__new__{name}")
            fixed[name] = new
            choices.append(_Choice(name, "condition", value, new, new != comp.true(value)))
        else:
            fixed[name] = comp.true(value)
    tree = model.tree
    open_set = set(opens)

    def sources(name: str) -> tuple[str, ...]:
        """The leaves a predicate's value is made of (an action: itself and descendants)."""
        if model.by_name[name].kind == "action":
            return (name, *tree.descendants(name))
        return (name,)

    def expr_of(name: str, bits: dict[str, bool]) -> Z3Bool:
        def leaf(n: str) -> Z3Bool:
            if n in open_set:
                settle, settled = settled_vars[n]
                if n not in bits:  # over EXPAND_LIMIT: settling it is required, so it is settled
                    return settled
                return z3.If(settle, settled, comp.true(bits[n]))
            if model.by_name[n].kind == "action":
                return own.get(n, comp.true(False))
            return fixed[n]

        parts = [leaf(n) for n in sources(name)]
        return parts[0] if len(parts) == 1 else z3.Or(*parts)

    def instances(rule_id: str) -> list[Z3Bool]:
        """The rule for every completion of the open predicates it depends on.

        "Holds whatever the open values" distributes over the rules, so each rule is
        expanded over its own open predicates only (2^k copies for k of them).
        """
        names = comp.names_of(model.by_id[rule_id])
        rule_opens = sorted({n for name in names for n in sources(name)} & open_set)
        if len(rule_opens) > EXPAND_LIMIT:  # too many completions: they must be settled
            for n in rule_opens:
                opt.add(settled_vars[n][0])
            rule_opens = []
        out = []
        for combo in itertools.product((False, True), repeat=len(rule_opens)):
            bits = dict(zip(rule_opens, combo, strict=True))
            pairs = [(comp.bools[n], expr_of(n, bits)) for n in names]
            out.append(z3.substitute(comp.terms[rule_id], *pairs))
        return out

    hard = [r for r in ev.circuit if model.by_id[r].hard]
    for rule_id in hard:
        opt.add(*instances(rule_id))
    soft_parts = {r: instances(r) for r in ev.circuit if not model.by_id[r].hard}
    for choice in choices:
        assert choice.changed is not None
        opt.add_soft(z3.Not(choice.changed), 1, id="changes")
    for rule_id, parts in soft_parts.items():
        weight = model.by_id[rule_id].weight
        if weight > 0:
            opt.add_soft(z3.And(*parts), weight, id="soft_rules")
    return opt, choices, hard


def _how(choice: _Choice, after: bool) -> str:
    if choice.kind == "action":
        return f"do not take the action {choice.name}"
    if choice.before is None:
        return f"establish that {choice.name} is {str(after).lower()}"
    return f"make {choice.name} {str(after).lower()}"


def _search(
    model: PolicyModel, comp: CompiledPolicy, ev: EventValues, max_remedies: int
) -> list[Remedy]:
    """Minimal remedies: optimise, block the change set found, optimise again.

    Up to `SEARCH_FACTOR` times more minimal remedies than returned are collected and then
    sorted, so the answer does not depend on the order z3 happens to find them in.
    """
    opt, choices, _ = _build(model, comp, ev, _names(model, comp, ev))
    remedies: list[Remedy] = []
    best: int | None = None
    while len(remedies) < max_remedies * SEARCH_FACTOR and opt.check() == z3.sat:
        found = opt.model()
        made = [
            c for c in choices if c.changed is not None and z3.is_true(found.eval(c.changed, True))
        ]
        if best is None:
            best = len(made)
        elif len(made) > best:
            break
        changes = [
            Change(
                predicate=c.name,
                kind="action" if c.kind == "action" else "condition",
                before=c.before,
                after=z3.is_true(found.eval(c.var, True)),
                how=_how(c, z3.is_true(found.eval(c.var, True))),
            )
            for c in made
        ]
        remedies.append(Remedy(changes=changes))
        if not made:
            break
        opt.add(z3.Not(z3.And(*[c.changed for c in made])))
    remedies.sort(key=lambda r: [(c.predicate, c.after) for c in r.changes])
    return remedies[:max_remedies]


def remediate(
    model: PolicyModel,
    ev: EventValues,
    *,
    denying: list[str] | None = None,
    max_remedies: int = 3,
) -> Remediation:
    """The minimal remedies for an event (every hard rule of its circuits holding after).

    Args:
        model: The policy model.
        ev: The event's values.
        denying: Ids of the rules that denied (their remediation texts are returned);
            default every rule of the circuits that has one.
        max_remedies: Different minimal remedies to return at most.
    """
    comp = compiled(model)
    ids = ev.circuit if denying is None else denying
    texts = list(
        dict.fromkeys(model.by_id[r].remediation for r in ids if model.by_id[r].remediation)
    )
    with comp.lock:  # the optimiser and its temporaries live and die under the lock
        remedies = _search(model, comp, ev, max_remedies)
    return Remediation(feasible=bool(remedies), remedies=remedies, texts=texts)
