"""One event as the policy sees it: every predicate true, false or open, and its circuits.

A program assigns predicates; this module turns that into the values the verifier, the
probability and the remediation all reason over, with one reading of the action tree:

- An action is true when the program assigned it true or assigned one of its descendants
  true (updating a bio *is* modifying a profile); open when it or a descendant was assigned
  None and nothing made it true; false otherwise. Actions are what the event does, read
  from the agent's output, so an action the program read with the reader the policy
  declares for it and left out is not taken. Open means "may be taken", never "not
  taken": an unassigned action is open when its assigner is a model's question, or when
  the policy declares no way to read it and the program reported no action at all; the
  unassigned sub-actions of an action taken or open that did not name which one it is
  are open too. Every rule an open action could bring is then decided by z3.
- A condition the program did not assign (or assigned None) is open: nothing is assumed
  about it, and a rule that it could break denies (fail closed).
- The event's circuits are the rules of its true and open actions (ancestors included) and
  the rules attached to no action.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from guardagent.policy.model import PolicyModel, Predicate
from guardagent.policy.recorder import Assignments, normalize


class VerificationError(ValueError):
    """Assignments the policy cannot take (unknown predicates, a contradicted action tree)."""


@dataclass(frozen=True)
class EventValues:
    """Predicate values of one event.

    Attributes:
        values: Every declared predicate -> True / False / None (open).
        confidence: Assigned predicates -> probability that the assigned value is right
            (ancestors made true by the tree have none: they follow their descendants).
        direct: Actions the program itself assigned True or None (not via the tree).
        matched: Actions true or open after the tree closure, in policy order.
        circuit: Ids of the rules in the matched circuits (and global rules), in order.
    """

    values: dict[str, bool | None]
    confidence: dict[str, float]
    direct: dict[str, bool | None]
    matched: tuple[str, ...]
    circuit: tuple[str, ...]

    def open(self) -> list[str]:
        """Predicates with no value."""
        return [n for n, v in self.values.items() if v is None]


def event_values(model: PolicyModel, assignments: Mapping[str, Any]) -> EventValues:
    """Read a program's assignments against the policy model.

    Args:
        model: The policy model.
        assignments: ``{name: Assignment}`` as recorded by ``assign`` (plain ``{name: bool
            | None}`` is accepted too).

    Raises:
        VerificationError: a name the policy does not declare, or an action assigned False
            while one of its descendants is assigned True.
    """
    strict: Assignments = normalize(assignments)
    unknown = sorted(n for n in strict if n not in model.by_name)
    if unknown:
        shown = ", ".join(unknown[:10]) + (" ..." if len(unknown) > 10 else "")
        raise VerificationError(f"assigned predicates the policy does not declare: {shown}")
    tree = model.tree
    values: dict[str, bool | None] = {}
    confidence: dict[str, float] = {}
    direct: dict[str, bool | None] = {}
    reported = any(a in strict for a in model.actions)
    for pred in model.predicates:
        given = strict.get(pred.name)
        if pred.kind == "action":
            value = (
                given["value"] if given is not None else _unassigned_action(model, pred, reported)
            )
            if value is not False:
                direct[pred.name] = value
        else:
            value = given["value"] if given is not None else None
        values[pred.name] = value
        if given is not None and value is not None:
            p = given["probability"]
            confidence[pred.name] = (
                p if p is not None else (pred.probability if pred.probability is not None else 1.0)
            )
    for action in _unsaid_sub_actions(model, strict, direct):
        values[action] = direct[action] = None
    for action, value in direct.items():
        for ancestor in tree.ancestors(action):
            assigned = strict.get(ancestor)
            if value is True and assigned is not None and assigned["value"] is False:
                raise VerificationError(
                    f"action {ancestor!r} was assigned false, but its descendant {action!r} "
                    "was assigned true"
                )
            if value is True:
                values[ancestor] = True
            elif values[ancestor] is False and (assigned is None or assigned["value"] is None):
                values[ancestor] = None
    matched = tuple(a for a in model.actions if values[a] is not False)
    chosen: set[str] = set(model.global_rules)
    for action in matched:
        chosen.update(model.circuits.get(action, ()))
    circuit = tuple(r.id for r in model.rules if r.id in chosen)
    return EventValues(values, confidence, direct, matched, circuit)


def _unassigned_action(model: PolicyModel, pred: Predicate, reported: bool) -> bool | None:
    """An action the program did not assign: not taken, or open when nobody could tell.

    A program reads an action with the reader the policy declares for it (a toolbox
    function or an expression over the event): one it left out was read and is not taken.
    A model's yes/no question nobody answered is not a "no", so an action assigned by a
    query is open. So is a leaf action the policy gives no way to read when the program
    reported no action at all: nobody said what the agent does. (An action with
    sub-actions follows from them.)
    """
    how = pred.assigned_by
    if how is not None:
        return None if how.kind == "query" else False
    return None if not reported and not model.tree.children.get(pred.name) else False


def _unsaid_sub_actions(
    model: PolicyModel, strict: Assignments, direct: Mapping[str, bool | None]
) -> list[str]:
    """Unassigned actions below an action taken or open that did not say which it is.

    "The agent modifies the profile" without naming the bio or the account may be either:
    every sub-action it could be is open, so its rules are considered. A sub-action assigned
    false closes its own subtree (not taken, nor anything under it).
    """
    children = model.tree.children
    out: dict[str, None] = {}  # ordered, each once
    for head in direct:
        below = model.tree.descendants(head)
        if any(x in strict and strict[x]["value"] is True for x in below):
            continue  # the program named the sub-action taken
        stack = list(children.get(head, ()))
        while stack:
            node = stack.pop()
            given = strict.get(node)
            if given is not None and given["value"] is False:
                continue
            if given is None:
                out[node] = None
            stack.extend(children.get(node, ()))
    return list(out)
