"""One guarded call of a trace, ready for the guard graph: event text, predicate values, state.

The API (`GuardAgent.check_trace`), the CLI (`check --trace`) and the middleware all do the
same few steps before the guard graph runs; this module is those steps, so each of them is
a few lines:

1. read the trace (:func:`~guardagent.trace.document.messages.parse_trace`, size limit, nothing cut)
   and refuse a proposed call of a tool the labels do not name (``unlabelled_tool``: the
   policy's rules never see it, whatever they say), one with an argument its label does not
   declare or two keys that read alike (``undeclared_argument``, ``ambiguous_argument``:
   :mod:`~guardagent.trace.document.declared`) and host records that do not read
   (``unreadable_consent``);
2. restore the thread's index from its saved state and bring it up to date (a rewritten
   history is unreadable, but for a conversation summary, :mod:`~guardagent.trace.event.restore`);
   when this process served the thread's previous call, step 1
   parsed only the messages after those it read then (:mod:`~guardagent.trace.document.resume`).
   A state without the deployment's key is used only to deny
   (:mod:`~guardagent.trace.event.restore`). With no state, the index defers its reading and
   the predicates' questions are answered from the messages that may hold what they ask
   about (:mod:`~guardagent.trace.sources.lookup`);
3. evaluate the policy's trace-bound predicates with the deployer's labels and the host's
   consent records (bound to the thread; the state's ledger counts their uses);
4. render the trace as the GuardAgent event (agent_input, agent_output) for the program;
5. hand back the new thread state, to be saved with the thread (with the approvals this
   call used once it is allowed: :meth:`TraceEvent.state_after`); a deferred index is read
   in full when the state is first asked for (a host that keeps no state never asks).

Everything here is trusted host-side code: the values it produces are facts for the
verifier, assigned next to (never by) the guard program.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from guardagent.decision import Deferred
from guardagent.readers.evidence import UnreadableEvidence, unreadable
from guardagent.trace.document.declared import check_argument_names
from guardagent.trace.document.labels import Labels
from guardagent.trace.document.messages import (
    FINAL_ANSWER,
    MAX_TRACE_BYTES,
    check_nesting,
    parse_trace,
    render_event,
)
from guardagent.trace.document.resume import remember, resumable
from guardagent.trace.document.shapes import Trace
from guardagent.trace.event.restore import restore
from guardagent.trace.found.secrets import Secrets
from guardagent.trace.predicates import Consent, Fact, analyze, compile_bindings
from guardagent.trace.predicates.ledger import spend_in_state, use_of, with_ledger
from guardagent.trace.sources.records import Records
from guardagent.trace.text.budget import reading_budget
from guardagent.trace.thread.state import MAX_STATE_BYTES


@dataclass(frozen=True)
class TraceEvent:
    """A trace prepared for one guard run.

    Attributes:
        trace: The parsed trace.
        agent_input: The event's input (user messages, then the host's user facts).
        agent_output: The whole conversation and the proposed call, uncut.
        facts: Each bound predicate's fact (value, deciding messages, detail).
        state: The thread's updated index and consent ledger as JSON, to save with the
            thread when the call is denied (:meth:`state_after`); built when first asked
            for (:attr:`thread_state`): a thread with no state was read only as far as the
            decision needed (:mod:`~guardagent.trace.sources.lookup`), and its index is read in full
            then.
        consumed: The approvals the consent predicates used for this call.
        notes: What the decision's reason adds about the thread's state (an unsigned state
            set aside: :mod:`~guardagent.trace.event.restore`).
    """

    trace: Trace
    agent_input: str
    agent_output: str
    facts: dict[str, Fact]
    state: Deferred[dict[str, Any]] = field(repr=False)
    consumed: tuple[str, ...] = ()
    key: bytes | None = field(default=None, repr=False)
    notes: tuple[str, ...] = ()

    @property
    def thread_state(self) -> dict[str, Any]:
        """The thread's updated state (built now if it was not yet)."""
        return self.state.get()

    def state_after(self, allowed: bool) -> dict[str, Any]:
        """The state to save once the call is decided: an allowed call uses its approvals."""
        return self.deferred_state_after(allowed).get()

    def deferred_state_after(self, allowed: bool) -> Deferred[dict[str, Any]]:
        """:meth:`state_after`, built when first asked for."""
        if not allowed or not self.consumed:
            return self.state
        return Deferred(
            lambda: spend_in_state(
                self.thread_state, self.consumed, use_of(self.trace.call), self.key
            )
        )

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
    values: Records | None = None,
    secrets: Secrets | None = None,
    thread_id: str | None = None,
    budget_ms: float | None = None,
) -> TraceEvent:
    """Prepare one guarded call (see the module docstring).

    Args:
        messages: The trace (see :func:`~guardagent.trace.document.messages.parse_trace`).
        proposed_call: The call to guard (None: the last message's only call).
        labels: The deployer's tool labels.
        bindings: ``{predicate name: trace predicate expression}`` from the policy model.
        user_facts: The host's facts about the user (rendered into the event input).
        consent: The host's review records for this thread.
        thread_state: The thread's saved index (None for a new thread); without `key` it is
            used only to deny (:mod:`~guardagent.trace.event.restore`).
        max_bytes: Trace size limit.
        max_state_bytes: State size budget.
        key: The deployment's key: the saved state must be signed with it (and is signed
            again), and consent records must be too (:meth:`Consent.signed`). Use one
            whenever the state or the records pass through storage others can write.
        values: The policy's ``values:`` (the user's records); with `user_facts`, a
            trusted source for provenance (:mod:`guardagent.trace.sources.records`).
        secrets: The policy's declared ``secrets:`` (:mod:`guardagent.trace.found.secrets`).
        thread_id: The host's id of the thread: consent records approve calls of the
            thread they name, and a state of another thread is unreadable (None: the
            state's id, or a random one for a new thread).
        budget_ms: Wall-clock budget of reading the trace (None: unbounded).

    Raises:
        UnreadableEvidence: the trace, the consent records or the thread state cannot be
            read (too large, malformed, rewritten, or its reading exhausted `budget_ms`:
            ``trace_budget_exceeded``), or the proposed tool is not labelled; the caller
            denies with the reason.
        PredicateSpecError: a binding that is not a trace predicate (configuration).
    """
    compiled = compile_bindings(bindings)
    answers = FINAL_ANSWER if FINAL_ANSWER in labels.tools else None  # labelled: guarded
    with reading_budget(budget_ms):
        trace = parse_trace(
            messages,
            proposed_call,
            max_bytes=max_bytes,
            labels=labels,
            final_answer=answers,
            resume=resumable(thread_state),
        )
        name = trace.call.name
        if not labels.label(name).labelled:
            unreadable(
                "unlabelled_tool",
                f"the tool {name[:80]!r} is not labelled (names are "
                "matched exactly); a tool with no label is denied",
            )
        check_argument_names(name, trace.call.args, labels.label(name))
        consent = _readable_consent(consent)
        restored = restore(
            thread_state,
            trace,
            region=labels.phone_region,
            key=key,
            thread_id=thread_id,
            max_state_bytes=max_state_bytes,
        )
        index, ledger = restored.index, restored.ledger
        records = (values or Records()).with_user_facts(user_facts, labels.phone_region)
        facts = analyze(
            trace,
            labels,
            index=index,
            consent=consent,
            key=key,
            records=records,
            secrets=secrets,
            ledger=ledger,
            lazy=True,
        )
        found = {name: fn(facts) for name, fn in compiled.items()}
    remember(index.chain, trace.read, getattr(index, "hasher", None))  # for the next call
    agent_input, agent_output = render_event(trace, user_facts)
    state = Deferred(lambda: with_ledger(index.to_json(key), ledger, key))
    if index.deferred is None:  # read already: the state costs little, build it now
        state.get()
    return TraceEvent(
        trace, agent_input, agent_output, found, state, tuple(facts.consumed), key, restored.notes
    )


def _readable_consent(
    consent: Iterable[Consent | Mapping[str, Any]],
) -> list[Consent | Mapping[str, Any]]:
    """The host's records, each checked to read before any predicate looks at it."""
    if consent is None:
        return []
    records = list(consent) if isinstance(consent, Iterable) else [consent]
    for i, record in enumerate(records):
        if isinstance(record, Consent):
            continue
        check_nesting(record, f"consent record {i}", reason="unreadable_consent")
        try:
            Consent.from_json(record)
        except (ValueError, TypeError) as exc:
            unreadable("unreadable_consent", f"consent record {i}: {str(exc)[:200]}")
    return records


def unreadable_fields(exc: UnreadableEvidence) -> dict[str, Any]:
    """`GuardDecision` fields for a trace that could not be read (a fail-closed denial)."""
    return {
        "allowed": False,
        "label": 1,
        "reason": f"denied: the trace cannot be guarded ({exc.reason}: {exc.detail})",
        "error": f"{exc.reason}: {exc.detail}",
        "unreadable": [{"reason": exc.reason, "detail": exc.detail}],
        "violations": [f"the trace cannot be guarded ({exc.reason})"],
    }
