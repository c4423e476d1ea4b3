"""The consent predicate: the host's signed review records approve this call, once.

A record approves a call when it names the call's tool, the thread (:attr:`Consent.thread`
equals the ledger's), the call (:attr:`Consent.call_id`, when set, equals the call's id: a
call without an id is never an id-bound record's call), and its arguments or values, and
has uses left: the thread's ledger counts the calls each approval let through, and an
earlier call of the same assistant message (a parallel call not yet run) or an earlier call
with the record's call id takes a use too. Opt in with ``conversation=True`` and the user's
own answer to the assistant's question approves the call too (:mod:`.conversation`).
"""

from __future__ import annotations

from typing import Any

from guardagent.trace.document.shapes import Message, ToolCall
from guardagent.trace.predicates.conversation import MATCHES, asked_in_conversation
from guardagent.trace.predicates.engine import TraceFacts, checks, predicate
from guardagent.trace.predicates.fact import Fact, PredicateSpecError
from guardagent.trace.predicates.ledger import use_of
from guardagent.trace.predicates.options import under
from guardagent.trace.predicates.record import Consent, canon
from guardagent.trace.sources.temporal import same_value, strict_values
from guardagent.trace.thread.state import flatten


def _about(record: Consent, call: ToolCall, facts: TraceFacts, arg: str | None) -> bool:
    """The record is about this call: its tool, its id (if bound) and its arguments."""
    if record.tool != call.name:
        return False
    if record.call_id is not None and record.call_id != call.id:
        return False  # bound to a call: never a call with another id, or with none
    if record.args is not None:
        return canon(dict(record.args)) == canon(call.args)
    if not record.values:
        return True  # a decision about the tool's calls as such
    if arg is None:
        return all(
            _values_match(facts, call, name, expected) for name, expected in record.values.items()
        )
    if arg not in record.values:
        return False
    return _values_match(facts, call, arg, record.values[arg])


def _values_match(facts: TraceFacts, call: ToolCall, arg: str, expected: Any) -> bool:
    actual = [v for p, v in flatten(call.args) if under(p, arg)]
    wanted = expected if isinstance(expected, list) else [expected]
    region = facts.index.region
    with strict_values():  # an approval names the value with every character, one reading
        return bool(actual) and all(any(same_value(a, w, region) for w in wanted) for a in actual)


def _uses_taken(record: Consent, facts: TraceFacts, arg: str | None) -> int:
    """Uses already taken: the ledger's, plus earlier calls that are this record's for sure.

    Those are parallel calls of the same message (not yet run), earlier calls with the id
    the record is bound to, and earlier calls of the record that ran (a result that is not
    an error), when the ledger does not list them: a state from before a use (an older one,
    or none) never gives the use back. A denied attempt (an error result) used nothing.
    """
    call, trace = facts.trace.call, facts.trace
    recorded = facts.ledger.uses.get(record.identity(), [])
    seen = [
        c
        for c in trace.calls
        if (
            c.index == call.index
            or (record.call_id is not None and c.id == record.call_id)
            or _ran(trace.result_of(c))
        )
        and _about(record, c, facts, arg)
        and use_of(c) not in recorded
    ]
    return len(recorded) + len(seen)


def _ran(result: Message | None) -> bool:
    """The call ran: its result is in the trace, and the host did not mark it an error."""
    return result is not None and result.status != "error"


def _from_records(facts: TraceFacts, arg: str | None, what: str) -> Fact:
    thread = facts.ledger.thread
    about = [r for r in facts.consent if _about(r, facts.trace.call, facts, arg)]
    if any(r.decision == "reject" and r.thread in (None, thread) for r in about):
        return Fact("consent_given", False, (), f"a reviewer rejected {what}")
    approvals = [r for r in about if r.decision != "reject"]
    here = [r for r in approvals if r.thread is not None and r.thread == thread]
    for record in here:
        taken = _uses_taken(record, facts, arg)
        if taken < record.uses:
            facts.consumed[record.identity()] = None
            left = record.uses - taken - 1
            return Fact(
                "consent_given",
                True,
                (),
                f"a reviewer approved {what} (in this thread; {left} use(s) left after this call)",
            )
    if here:
        return Fact(
            "consent_given",
            False,
            (),
            f"the reviewer's approval of {what} is used "
            "up (an approval lets through one call, or the count its record sets)",
        )
    if approvals:
        return Fact(
            "consent_given",
            False,
            (),
            f"the approval of {what} is not bound to this "
            "thread (a record approves calls of the thread it names)",
        )
    return Fact("consent_given", False, (), f"no review record approves {what}")


@predicate
def consent_given(
    facts: TraceFacts,
    arg: str | None = None,
    conversation: bool = False,
    similarity: float = 85,
    match: str = "both",
    via: str | None = None,
) -> Fact:
    """The host's review approved this call (or, with `arg`, this argument's values), once.

    A matching rejection wins over an approval. With ``conversation=True``, the user's
    affirmative answer to the assistant's question naming this call also approves it (see
    :func:`~guardagent.trace.predicates.conversation.asked_in_conversation`; `similarity`
    and `match` tune how the question must name it; `via`, a tool glob, names the tool the
    agent asks the user with, such as a web agent's ``send_msg_to_user``: :mod:`.told`).
    """
    what = f"{facts.trace.call.name!r}" + (f" argument {arg!r}" if arg else "")
    fact = _from_records(facts, arg, what)
    if fact.value or not conversation or fact.detail.startswith("a reviewer rejected"):
        return fact
    asked = asked_in_conversation(facts, arg=arg, similarity=similarity, match=match, via=via)
    if asked.value:
        return asked
    return Fact("consent_given", False, asked.sources, f"{fact.detail}; {asked.detail}")


@checks("consent_given")
def _check_options(options: dict[str, Any]) -> None:
    arg, similarity = options["arg"], options["similarity"]
    if arg is not None and not isinstance(arg, str):
        raise PredicateSpecError("arg must be an argument name")
    if not isinstance(options["conversation"], bool):
        raise PredicateSpecError("conversation must be True or False")
    if (
        isinstance(similarity, bool)
        or not isinstance(similarity, int | float)
        or not (50 <= similarity <= 100)
    ):
        raise PredicateSpecError("similarity must be a number from 50 to 100")
    via = options["via"]
    if via is not None and (not isinstance(via, str) or not via.strip()):
        raise PredicateSpecError(
            "via must be a tool name or glob (the tool the agent asks the user with)"
        )
    if via is not None and not options["conversation"]:
        raise PredicateSpecError(
            "via reads questions in the conversation: give conversation=True too"
        )
    if options["match"] not in MATCHES:
        raise PredicateSpecError(f"match must be one of {', '.join(MATCHES)}")
