"""Secret predicates: a sensitive tool's value reaching a send."""

from __future__ import annotations

from typing import Any

from guardagent.trace.predicates.engine import TraceFacts, predicate
from guardagent.trace.predicates.fact import Fact
from guardagent.trace.predicates.options import under
from guardagent.trace.provenance import ValueProvenance
from guardagent.trace.temporal import secret_flow as flow_of


@predicate
def secret_flow(facts: TraceFacts, effects: Any = "send") -> Fact:
    """A sensitive tool's value (not the user's) reaches a send to an unapproved recipient.

    The recipient is unapproved when it is not from the user or a trusted source, or when
    the call has no recipient that can be traced.
    """
    wanted = [e.strip() for e in effects.split(",")] if isinstance(effects, str) else list(effects)
    flow = facts.flow if wanted == ["send"] else flow_of(facts.search, facts.labels, wanted)  # type: ignore[arg-type]
    if not flow.send:
        return Fact("secret_flow", False, (), f"{facts.trace.call.name!r} does not send")
    if not flow.leaked:
        return Fact("secret_flow", False, (), "no value of the call comes from a sensitive tool")
    sources = tuple(dict.fromkeys(s for v in flow.leaked for s in v.sources
                                  if facts.labels.sensitive(s.source)))  # fmt: skip
    leaked = "; ".join(_leak(facts, v) for v in flow.leaked[:3])
    if not flow.recipients:
        return Fact("secret_flow", True, sources, f"{leaked}; and the call has no recipient "
                    "that could be traced")  # fmt: skip
    if flow.unapproved:
        bad = "; ".join(v.describe() for v in flow.unapproved[:3])
        more = tuple(s for v in flow.unapproved for s in v.sources)
        return Fact("secret_flow", True, tuple(dict.fromkeys(sources + more)),
                    f"{leaked}; sent to {bad}")  # fmt: skip
    return Fact("secret_flow", False, sources, f"{leaked}; every recipient is from the user or "
                "a trusted source")  # fmt: skip


def _leak(facts: TraceFacts, value: ValueProvenance) -> str:
    shown = value.value.text if len(value.value.text) <= 40 else value.value.text[:40] + "..."
    where = ", ".join(f"{s} sensitive" for s in value.sources if facts.labels.sensitive(s.source))
    return f"{shown!r} in {value.path} comes from {where}"


@predicate
def value_from_sensitive(facts: TraceFacts, arg: str = "*") -> Fact:
    """Some value of the argument comes from a sensitive tool (and not from the user)."""
    leaked = [v for v in facts.flow.leaked if arg == "*" or under(v.path, arg)]
    sources = tuple(dict.fromkeys(s for v in leaked for s in v.sources
                                  if facts.labels.sensitive(s.source)))  # fmt: skip
    detail = "; ".join(_leak(facts, v) for v in leaked[:3]) or "no value from a sensitive tool"
    return Fact("value_from_sensitive", bool(leaked), sources, detail)
