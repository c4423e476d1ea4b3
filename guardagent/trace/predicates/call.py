"""Predicates on the proposed call itself: its tool and the tool's effect."""

from __future__ import annotations

import fnmatch

from guardagent.trace.predicates.engine import TraceFacts, predicate
from guardagent.trace.predicates.fact import Fact


@predicate
def tool_is(facts: TraceFacts, *globs: str) -> Fact:
    """The proposed call's tool matches one of the name globs."""
    name = facts.trace.call.name
    hit = any(fnmatch.fnmatchcase(name, g) for g in globs)
    return Fact("tool_is", hit, (), f"the call is {name!r}")


@predicate
def effect_is(facts: TraceFacts, *effects: str) -> Fact:
    """The proposed call's tool has one of the effect labels."""
    label = facts.labels.label(facts.trace.call.name)
    note = "" if label.labelled else " (unlabelled: irreversible)"
    return Fact(
        "effect_is",
        label.effect in effects,
        (),
        f"{facts.trace.call.name!r} has effect {label.effect}{note}",
    )


@predicate
def tool_labelled(facts: TraceFacts) -> Fact:
    """The deployer labelled the proposed call's tool."""
    labelled = facts.labels.label(facts.trace.call.name).labelled
    return Fact(
        "tool_labelled",
        labelled,
        (),
        f"{facts.trace.call.name!r} is {'' if labelled else 'not '}labelled",
    )
