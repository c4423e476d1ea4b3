"""One guarded call of a trace, ready for the guard graph: event text, predicate values, state.

The API (`GuardAgent.check_trace`), the CLI (`check --trace`) and the middleware all do the
same few steps before the guard graph runs; this module is those steps, so each of them is
a few lines:

1. read the trace (:func:`~guardagent.trace.messages.parse_trace`, size limit, nothing cut);
2. restore the thread's index from its saved state and bring it up to date (a rewritten
   history is unreadable);
3. evaluate the policy's trace-bound predicates with the deployer's labels and the host's
   consent records;
4. render the trace as the GuardAgent event (agent_input, agent_output) for the program;
5. hand back the new thread state, to be saved with the thread.

Everything here is trusted host-side code: the values it produces are facts for the
verifier, assigned next to (never by) the guard program.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from guardagent.readers.evidence import UnreadableEvidence
from guardagent.trace.budget import reading_budget
from guardagent.trace.labels import Labels
from guardagent.trace.messages import MAX_TRACE_BYTES, Trace, parse_trace, render_event
from guardagent.trace.predicates import Consent, Fact, analyze, compile_bindings
from guardagent.trace.state import MAX_STATE_BYTES, TraceIndex


@dataclass(frozen=True)
class TraceEvent:
    """A trace prepared for one guard run.

    Attributes:
        trace: The parsed trace.
        agent_input: The event's input (user messages, then the host's user facts).
        agent_output: The whole conversation and the proposed call, uncut.
        facts: Each bound predicate's fact (value, deciding messages, detail).
        thread_state: The thread's updated index as JSON, to save with the thread.
    """

    trace: Trace
    agent_input: str
    agent_output: str
    facts: dict[str, Fact]
    thread_state: dict[str, Any]

    @property
    def assignments(self) -> dict[str, bool | None]:
        """``{predicate: value}`` for the verifier (None: open)."""
        return {name: fact.value for name, fact in self.facts.items()}

    def details(self) -> dict[str, Any]:
        """The facts as JSON, for the decision (which message decided each predicate)."""
        return {name: fact.to_json() for name, fact in self.facts.items()}


def prepare_trace_event(
    messages: Any,
    proposed_call: Any = None,
    *,
    labels: Labels,
    bindings: Mapping[str, str],
    user_facts: Mapping[str, Any] | None = None,
    consent: Iterable[Consent | Mapping[str, Any]] = (),
    thread_state: Mapping[str, Any] | None = None,
    max_bytes: int = MAX_TRACE_BYTES,
    max_state_bytes: int = MAX_STATE_BYTES,
    key: bytes | None = None,
    budget_ms: float | None = None,
) -> TraceEvent:
    """Prepare one guarded call (see the module docstring).

    Args:
        messages: The trace (see :func:`~guardagent.trace.messages.parse_trace`).
        proposed_call: The call to guard (None: the last message's only call).
        labels: The deployer's tool labels.
        bindings: ``{predicate name: trace predicate expression}`` from the policy model.
        user_facts: The host's facts about the user (rendered into the event input).
        consent: The host's review records for this thread.
        thread_state: The thread's saved index (None for a new thread).
        max_bytes: Trace size limit.
        max_state_bytes: State size budget.
        key: The deployment's key: the saved state must be signed with it (and is signed
            again), and consent records must be too (:meth:`Consent.signed`). Use one
            whenever the state or the records pass through storage others can write.
        budget_ms: Wall-clock budget of reading the trace (None: unbounded).

    Raises:
        UnreadableEvidence: the trace or the thread state cannot be read (too large,
            malformed, rewritten, or its reading exhausted `budget_ms`:
            ``trace_budget_exceeded``); the caller denies with the reason.
        PredicateSpecError: a binding that is not a trace predicate (configuration).
    """
    compiled = compile_bindings(bindings)
    with reading_budget(budget_ms):
        trace = parse_trace(messages, proposed_call, max_bytes=max_bytes)
        index = TraceIndex.from_json(thread_state, region=labels.phone_region,
                                     max_state_bytes=max_state_bytes, key=key)  # fmt: skip
        facts = analyze(trace, labels, index=index, consent=consent, key=key)
        values = {name: fn(facts) for name, fn in compiled.items()}
    agent_input, agent_output = render_event(trace, user_facts)
    return TraceEvent(trace, agent_input, agent_output, values, index.to_json(key))


def unreadable_fields(exc: UnreadableEvidence) -> dict[str, Any]:
    """`GuardDecision` fields for a trace that could not be read (a fail-closed denial)."""
    return {
        "allowed": False,
        "label": 1,
        "reason": f"denied: the trace cannot be guarded ({exc.reason}: {exc.detail})",
        "error": f"{exc.reason}: {exc.detail}",
        "unreadable": [{"reason": exc.reason, "detail": exc.detail}],
    }
