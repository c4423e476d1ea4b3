"""The consent predicate: the host's signed review records approve this call."""

from __future__ import annotations

from typing import Any

from guardagent.trace.predicates.engine import TraceFacts, predicate
from guardagent.trace.predicates.fact import Fact
from guardagent.trace.predicates.options import under
from guardagent.trace.predicates.record import Consent, canon
from guardagent.trace.state import flatten
from guardagent.trace.temporal import same_value


def _consent_covers(record: Consent, facts: TraceFacts, arg: str | None) -> bool:
    call = facts.trace.call
    if record.tool != call.name:
        return False
    if record.call_id is not None and call.id is not None and record.call_id != call.id:
        return False
    if record.args is not None:
        return canon(dict(record.args)) == canon(call.args)
    if not record.values:
        return True  # a decision about the tool's calls as such
    if arg is None:
        return all(_values_match(facts, name, expected) for name, expected in record.values.items())
    if arg not in record.values:
        return False
    return _values_match(facts, arg, record.values[arg])


def _values_match(facts: TraceFacts, arg: str, expected: Any) -> bool:
    actual = [v for p, v in flatten(facts.trace.call.args) if under(p, arg)]
    wanted = expected if isinstance(expected, list) else [expected]
    region = facts.index.region
    return bool(actual) and all(any(same_value(a, w, region) for w in wanted) for a in actual)


@predicate
def consent_given(facts: TraceFacts, arg: str | None = None) -> Fact:
    """The host's review approved this call (or, with `arg`, this argument's values).

    A matching rejection wins over an approval.
    """
    covering = [r for r in facts.consent if _consent_covers(r, facts, arg)]
    what = f"{facts.trace.call.name!r}" + (f" argument {arg!r}" if arg else "")
    if any(r.decision == "reject" for r in covering):
        return Fact("consent_given", False, (), f"a reviewer rejected {what}")
    if covering:
        return Fact("consent_given", True, (), f"a reviewer approved {what}")
    return Fact("consent_given", False, (), f"no review record approves {what}")
