"""A proposed tool call decided from the whole conversation before it (`check_trace`).

The trace is read under the profile's policy model (its labels, trace predicates, values and
secrets), with the host's facts, review records and the thread's state; what cannot be read
is a denial with its reason, never an exception into the host (which may be an agent's run,
the middleware). A policy whose every predicate is a trace predicate is verified here with
no program; otherwise the trace's assignments go to the guard graph with the event it
renders (:mod:`guardagent.guard.runs`). The decision then names which messages decided each
predicate and carries the thread's next state.

Written once for both paths (:func:`trace_decision`, :mod:`guardagent.twins`):
`GuardAgent.check_trace` and `acheck_trace` drive it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from guardagent.context import GuardContext
from guardagent.decision import GuardDecision
from guardagent.guard.runs import Graph, guard_run
from guardagent.readers.user_facts import normalize_facts
from guardagent.twins import Twin, Wait

if TYPE_CHECKING:
    from guardagent.trace import TraceEvent

Prepared = tuple["TraceEvent | GuardDecision", Any, "float | None"]
"""The prepared trace (or the denial of an unreadable one), the policy model, the threshold."""


def trace_policy(context: GuardContext) -> tuple[Any, float | None]:
    """The profile's trace policy model and its safety threshold, from one profile load.

    Raises:
        ValueError: the profile has no policy model with tool labels and trace predicates.
        OSError: its policy file does not load.
    """
    from guardagent.policy.runs import profile_policy
    from guardagent.profiles.loader import load_profile

    profile = load_profile(context.profile)
    model = profile_policy(profile)
    if model is None or model.labels is None or not model.trace_bindings:
        raise ValueError(
            f"profile {context.profile!r} has no policy model with tool "
            "labels and trace predicates (check_trace needs one)"
        )
    return model, getattr(profile, "safety_threshold", None)


def no_trace_policy(context: GuardContext, exc: Exception) -> GuardDecision:
    """The denial of a trace the profile cannot guard (a deployment error, said per call).

    The middleware calls `check_trace` inside the agent's run, where an exception would
    end the run in the host's code: the call is denied with the reason instead.
    """
    from guardagent.readers.evidence import UnreadableEvidence
    from guardagent.trace import unreadable_fields

    detail = (str(exc) or repr(exc)).splitlines()[0]
    if not detail.startswith("profile "):  # the policy file's own error
        detail = f"profile {context.profile!r}: its policy does not load ({detail})"
    fields = unreadable_fields(UnreadableEvidence("no_trace_policy", detail))
    return GuardDecision(**fields, profile=context.profile)


def prepare(
    context: GuardContext,
    messages: Any,
    proposed_call: Any,
    user_facts: Mapping[str, Any] | None,
    consent: Iterable[Any],
    thread_state: Mapping[str, Any] | None,
    max_bytes: int,
    task: Any = None,
    thread_id: str | None = None,
) -> Prepared:
    """The prepared trace (or the denial of an unreadable one), the model, the threshold.

    The policy model and the profile's safety threshold come from one profile load.
    """
    from guardagent.policy.task import TaskPolicyError, attach_task
    from guardagent.readers.evidence import UnreadableEvidence
    from guardagent.trace import prepare_trace_event, unreadable_fields
    from guardagent.trace.found.dates import today_is

    try:
        model, threshold = trace_policy(context)
    except (ValueError, OSError) as exc:  # no trace policy, or its file does not load
        return no_trace_policy(context, exc), None, None
    if user_facts is not None:  # the user's records: read as `check` reads them, or deny
        try:
            user_facts = normalize_facts(user_facts)
        except ValueError as exc:
            return (
                GuardDecision(
                    allowed=False,
                    label=1,
                    profile=context.profile,
                    reason=f"denied: the host's user_facts cannot be read ({exc})",
                    error=f"user_facts: {exc}",
                    violations=["the host's user_facts cannot be read"],
                ),
                model,
                threshold,
            )
    try:
        attached = attach_task(model, task)
        if task is not None and set(model.trace_bindings) != {p.name for p in model.predicates}:
            raise TaskPolicyError(
                ["task policies need a policy whose every predicate is a trace predicate"]
            )
    except TaskPolicyError as exc:
        return (
            GuardDecision(
                allowed=False,
                label=1,
                profile=context.profile,
                reason=f"denied: the task policy cannot be attached ({exc})",
                error=f"task_policy: {exc}",
            ),
            model,
            threshold,
        )
    try:
        with today_is(context.today_date):  # year-less dates in the users' year
            event = prepare_trace_event(
                messages,
                proposed_call,
                labels=model.labels,
                bindings=attached.bindings,
                user_facts=user_facts,
                consent=consent,
                thread_state=thread_state,
                max_bytes=max_bytes,
                key=context.trace_key_bytes,
                values=attached.model.values,
                secrets=attached.model.secrets,
                thread_id=thread_id,
                budget_ms=context.trace_budget_ms,
            )
    except UnreadableEvidence as exc:
        return (GuardDecision(**unreadable_fields(exc), profile=context.profile), model, threshold)
    except RecursionError:  # a shape no reader bounded: still a denial, never a traceback
        deep = UnreadableEvidence("unparsable_trace", "the trace is nested too deep to read")
        return (GuardDecision(**unreadable_fields(deep), profile=context.profile), model, threshold)
    if attached.unset:
        event = replace(event, facts={**event.facts, **attached.open_facts()})
    return event, attached.model, threshold


def prepare_with_state(context: GuardContext, *args: Any) -> Prepared:
    """:func:`prepare` with the thread's state built (in the caller's thread, not later).

    An async caller reads `decision.trace_state` on its event loop: the thread's index,
    deferred for a thread with no state (:mod:`guardagent.trace.sources.lookup`), is built here,
    in the worker thread, so reading it never blocks the loop.
    """
    event, model, threshold = prepare(context, *args)
    if not isinstance(event, GuardDecision):
        event.state.get()
    return event, model, threshold


def verify_trace(
    context: GuardContext, event: TraceEvent, model: Any, threshold: float | None, started: float
) -> GuardDecision | None:
    """A policy whose every predicate is a trace predicate needs no program: verify here."""
    from guardagent.policy.runs import decision_parts
    from guardagent.policy.verify import verify_event

    if set(model.trace_bindings) != {p.name for p in model.predicates}:
        return None
    parts = decision_parts(
        verify_event(model, event.assignments, threshold=threshold, expected=model.trace_bindings),
        None,
    )
    return GuardDecision(
        **parts,
        guardrailed_output=event.agent_output if parts["allowed"] else None,
        profile=context.profile,
        latency_ms=(time.perf_counter() - started) * 1000,
    )


def with_trace(
    decision: GuardDecision, event: TraceEvent, model: Any, rules: str = "all"
) -> GuardDecision:
    """The decision with the trace facts, the thread state, and why each condition held.

    A denial always lists its violations (the violated rules' policies when the guard
    gave none); ``rules="applied"`` keeps only the rules that applied to the call.
    """
    facts = event.details()
    violated = [r for r in decision.rules if r.status in ("violated", "possibly_violated")]
    named = [
        facts[n]["detail"]
        for r in violated
        for n in [*r.deciding, *r.open]
        if n in facts and model.by_name[n].kind == "condition"
    ]
    reason = decision.reason
    if named:
        reason += " Why: " + "; ".join(dict.fromkeys(named)) + "."
    consented = [
        f["detail"]
        for f in facts.values()
        if f["value"] and str(f["name"]).startswith("consent_given")
    ]
    if decision.allowed and consented:  # name the approval the call used
        reason += " Consent: " + "; ".join(dict.fromkeys(consented)) + "."
    for note in event.notes:  # e.g. an unsigned thread state set aside
        reason += " " + note
    # an allowed call uses its approvals; built when the host reads it (GuardDecision)
    state = event.deferred_state_after(decision.allowed)
    update: dict[str, Any] = {"trace_facts": facts, "trace_state": state, "reason": reason}
    if not decision.allowed and not decision.violations:
        update["violations"] = list(dict.fromkeys(r.policy or r.id for r in violated)) or [
            decision.reason
        ]
    if rules == "applied":
        update["rules"] = [r for r in decision.rules if r.status != "not_applicable"]
    return decision.model_copy(update=update)


def task_spec(task: Any) -> Any:
    """The task policy of an attached task (cached by its content, so attaching is free)."""
    return getattr(task, "task", task)


def trace_decision(
    graph: Graph,
    context: GuardContext,
    run_context: Any,
    messages: Any,
    proposed_call: Any,
    *,
    user_facts: Mapping[str, Any] | None,
    consent: Iterable[Any],
    thread_state: Mapping[str, Any] | None,
    thread_id: str | None,
    rules: str,
    task: Any,
    overrides: dict[str, Any],
) -> Twin[GuardDecision]:
    """`check_trace`, written once: the trace read, then verified here or by the graph.

    Args:
        graph: The compiled guard graph.
        context: The guard's settings.
        run_context: Callable ``(user_facts, overrides) -> GuardContext``: the settings of
            the graph's run when the policy needs a program.
        messages: The trace (as `check_trace` takes it).
        proposed_call: The call to guard (None: the last message's only call).
        user_facts: The host's facts about the user, or None.
        consent: The host's review records for this thread.
        thread_state: The thread's state from its previous call, or None.
        thread_id: The host's id of the thread, or None.
        rules: ``applied`` or ``all`` (the rules listed in the decision).
        task: The thread's task policy, or None.
        overrides: :class:`GuardContext` fields for this call only.
    """
    started = time.perf_counter()
    max_bytes = overrides.get("max_trace_bytes", context.max_trace_bytes)
    args = (
        messages,
        proposed_call,
        user_facts,
        consent,
        thread_state,
        max_bytes,
        task_spec(task),
        thread_id,
    )
    # The sync path leaves the thread's index to be built when read; the async path reads
    # the trace in a worker thread and builds it there (never on the loop).
    event, model, threshold = yield Wait(
        partial(prepare, context, *args),
        partial(asyncio.to_thread, prepare_with_state, context, *args),
    )
    if isinstance(event, GuardDecision):
        return event
    decision = verify_trace(context, event, model, threshold, started)
    if decision is None:
        overrides["trace_assignments"] = event.assignments
        overrides.setdefault("max_event_chars", max_bytes + 65_536)
        decision = yield from guard_run(
            graph,
            run_context(user_facts, overrides),
            event.agent_input,
            event.agent_output,
            run_name="guardagent.trace",
        )
    return with_trace(decision, event, model, rules)
