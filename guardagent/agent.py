"""`GuardAgent`: the guard graph behind a two-method API."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from langgraph.graph.state import CompiledStateGraph

from guardagent.context import GuardContext
from guardagent.decision import GuardDecision
from guardagent.graph.builder import build_graph
from guardagent.guard.runs import ainvoke_guard, invoke_guard
from guardagent.llm import is_offline, resolve_model
from guardagent.nodes.runtime import check_settings, limits_of, memory_of
from guardagent.nodes.turns import taking_turns
from guardagent.profiles.loader import load_profile
from guardagent.readers.user_facts import normalize_facts

if TYPE_CHECKING:
    from guardagent.policy.task import AttachedTask, TaskPolicy
    from guardagent.trace import TraceEvent


def settle_heap() -> None:
    """Collect once, then keep every object alive now out of later collections (`gc.freeze`).

    A guard process holds ~180k long-lived objects once warm (LangGraph, LangChain, Chroma,
    the compiled graph, profiles, readers). Each full collection walked all of them: ~130 ms
    measured, every few batches, stalling every run in flight (a batch of 64 model-path
    decisions takes ~1 s). Frozen, they are skipped; what is made later (each event's
    state, caches filled later) is collected as before. The cost: an object alive now that
    later becomes part of a garbage cycle is never freed; the collection first frees the
    garbage there is, and what remains is the process's start-up state, kept for its life.
    """
    gc.collect()
    gc.freeze()


@lru_cache(maxsize=1)
def _compiled_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The guard graph, compiled once per process and shared by every guard.

    Each guard's settings travel in its run context, so guards of every profile can share
    it; compiling cost 30-60 ms of each new guard's first decision.
    """
    return build_graph().compile(name="guardagent")


class GuardAgent:
    r"""Guard one target agent's events under one profile.

    A `GuardAgent` is the deployment: every setting given here (model, endpoint, memory,
    limits, reuse, profile paths) is used as given. Nothing a guarded agent or its user sends
    can change them; only `check`'s caller can, per call.

    Args:
        profile: Built-in profile name or path to a profile YAML/directory.
        model: `"offline"` (default: verified programs only), an `init_chat_model` spec such as
            `"openai:gpt-4o"`, or a `BaseChatModel` instance.
        base_url: OpenAI-compatible endpoint for `model` (vLLM, Ollama `/v1`, llama.cpp).
        **settings: Any other :class:`GuardContext` field (`k`, `max_attempts`,
            `memory_dir`, `memory_url`, `reuse_programs`, `timeout_seconds`, `profiles`).

    Example:
        ```python
        guard = GuardAgent(profile="eicu-ac")
        decision = guard.check("Identity: nursing\nQuestion: ...", agent_log)
        if not decision.allowed:
            print(decision.violations, decision.reason)
        ```
    """

    def __init__(
        self,
        profile: str = "eicu-ac",
        model: Any = "offline",
        *,
        base_url: str | None = None,
        **settings: Any,
    ) -> None:
        self.context = GuardContext(profile=profile, model=model, base_url=base_url, **settings)
        check_settings(self.context)  # fail fast on limits every run would refuse
        load_profile(profile)  # fail fast on an unknown or invalid profile
        resolve_model(model, base_url)  # and on a model spec that cannot be built
        self.graph: CompiledStateGraph[Any, Any, Any, Any] = _compiled_graph()

    def warm_up(self) -> None:
        """Open and seed the memory, load its scan index and start the sandbox's processes now.

        All of it would otherwise be paid by the first event. Last, what is alive then is
        moved out of the garbage collector's way (:func:`settle_heap`).
        """
        memory_of(self.context).load_index()
        from guardagent.sandbox.process import prestart_runs, prestart_worker

        profile = load_profile(self.context.profile)
        shipped = next((d.code for d in profile.demonstrations if d.code), None)
        prestart_worker(profile.tools(), limits_of(self.context), shipped)
        if not is_offline(self.context.model):  # the model's programs run in one-run children
            prestart_runs()
        settle_heap()

    def _context(self, user_facts: Mapping[str, Any] | None, overrides: Any) -> GuardContext:
        if user_facts is not None:  # checked here: a bad value is the caller's error, loudly
            overrides["user_facts"] = normalize_facts(user_facts)
        return replace(self.context, **overrides) if overrides else self.context

    def check(
        self,
        agent_input: str,
        agent_output: str,
        *,
        user_facts: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> GuardDecision:
        """Decide whether one event may pass.

        Args:
            agent_input: The target agent's input (the user's request and facts).
            agent_output: The target agent's output log (untrusted).
            user_facts: The host's facts about the user as data (``{"age": 16, ...}``):
                guard programs get them as they are, types kept, and the input's
                ``User information:`` block is not read. None: the block is read.
            **overrides: :class:`GuardContext` fields for this call only.

        Raises:
            ValueError: `user_facts` that are not a JSON object of JSON values.
        """
        return invoke_guard(
            self.graph, self._context(user_facts, overrides), agent_input, agent_output,
            run_name="guardagent",
        )  # fmt: skip

    async def acheck(
        self,
        agent_input: str,
        agent_output: str,
        *,
        user_facts: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> GuardDecision:
        """Async :meth:`check`; the sandbox and Chroma calls do not block the event loop."""
        return await ainvoke_guard(
            self.graph, self._context(user_facts, overrides), agent_input, agent_output,
            run_name="guardagent",
        )  # fmt: skip

    async def acheck_many(
        self, events: list[tuple[str, str]], *, concurrency: int = 8
    ) -> list[GuardDecision]:
        """Check many events with bounded concurrency; results in input order.

        Unlike :meth:`acheck`, the graph's nodes run on the event loop itself
        (:mod:`guardagent.graph.runnables`): model calls are awaited (`ainvoke`), and so is a
        model-written program's sandbox child, so no thread waits for either; the nodes'
        small local reads (the profile's files, the memory's database) happen on the loop.
        The batch's runs take turns computing (:mod:`guardagent.nodes.turns`): each does its
        work between two waits in one piece, so its model call starts as soon as its own
        prompt is ready. What still runs on the loop's default executor is rare (a memory
        read that must ask Chroma, a derivation of a profile's rules), as are warm-worker
        runs on the sandbox's pool.
        """
        gate = asyncio.Semaphore(max(1, concurrency))
        turns = asyncio.Lock()  # the batch's runs compute one at a time (nodes/turns.py)
        if not is_offline(self.context.model):  # its first sandbox runs find processes ready
            from guardagent.sandbox.zygote import expect_runs

            expect_runs(min(concurrency, len(events)))

        async def one(event: tuple[str, str]) -> GuardDecision:
            async with gate, taking_turns(turns):
                return await self.acheck(*event)

        return list(await asyncio.gather(*(one(e) for e in events)))

    # -- traces ----------------------------------------------------------------------------

    def attach_task(self, task: TaskPolicy | Mapping[str, Any] | None) -> AttachedTask:
        """Check a task policy against this deployment's policy now (z3), and cache it.

        `check_trace(..., task=...)` does the same on first use (a task it cannot attach is
        denied there, with the reason); call this when the task is created to hear about a
        broken one at once, and to read its `warnings`.

        Raises:
            TaskPolicyError: every problem of the task (unknown parameter, undefined
                predicate, a rule contradicting the base policy, ...).
        """
        from guardagent.policy.task import attach_task

        return attach_task(self._trace_model(), task)

    def _trace_model(self) -> Any:
        return self._trace_policy()[0]

    def _trace_policy(self) -> tuple[Any, float | None]:
        """The profile's trace policy model and its safety threshold, from one profile load."""
        from guardagent.policy.runs import profile_policy

        profile = load_profile(self.context.profile)
        model = profile_policy(profile)
        if model is None or model.labels is None or not model.trace_bindings:
            raise ValueError(f"profile {self.context.profile!r} has no policy model with tool "
                             "labels and trace predicates (check_trace needs one)")  # fmt: skip
        return model, getattr(profile, "safety_threshold", None)

    def _no_trace_policy(self, exc: Exception) -> GuardDecision:
        """The denial of a trace the profile cannot guard (a deployment error, said per call).

        The middleware calls `check_trace` inside the agent's run, where an exception would
        end the run in the host's code: the call is denied with the reason instead.
        """
        from guardagent.readers.evidence import UnreadableEvidence
        from guardagent.trace import unreadable_fields

        detail = (str(exc) or repr(exc)).splitlines()[0]
        if not detail.startswith("profile "):  # the policy file's own error
            detail = f"profile {self.context.profile!r}: its policy does not load ({detail})"
        fields = unreadable_fields(UnreadableEvidence("no_trace_policy", detail))
        return GuardDecision(**fields, profile=self.context.profile)

    def _trace(
        self, messages: Any, proposed_call: Any, user_facts: Mapping[str, Any] | None,
        consent: Iterable[Any], thread_state: Mapping[str, Any] | None, max_bytes: int,
        task: Any = None, thread_id: str | None = None,
    ) -> tuple[TraceEvent | GuardDecision, Any, float | None]:  # fmt: skip
        """The prepared trace (or the denial of an unreadable one), the model, the threshold.

        The policy model and the profile's safety threshold come from one profile load.
        """
        from guardagent.policy.task import TaskPolicyError, attach_task
        from guardagent.readers.evidence import UnreadableEvidence
        from guardagent.trace import prepare_trace_event, unreadable_fields
        from guardagent.trace.dates import today_is

        try:
            model, threshold = self._trace_policy()
        except (ValueError, OSError) as exc:  # no trace policy, or its file does not load
            return self._no_trace_policy(exc), None, None
        if user_facts is not None:  # the user's records: read as `check` reads them, or deny
            try:
                user_facts = normalize_facts(user_facts)
            except ValueError as exc:
                return GuardDecision(
                    allowed=False, label=1, profile=self.context.profile,
                    reason=f"denied: the host's user_facts cannot be read ({exc})",
                    error=f"user_facts: {exc}", violations=["the host's user_facts cannot be read"],
                ), model, threshold  # fmt: skip
        try:
            attached = attach_task(model, task)
            if task is not None and set(model.trace_bindings) != {p.name for p in model.predicates}:
                raise TaskPolicyError(["task policies need a policy whose every predicate is "
                                       "a trace predicate"])  # fmt: skip
        except TaskPolicyError as exc:
            return GuardDecision(allowed=False, label=1, profile=self.context.profile,
                                 reason=f"denied: the task policy cannot be attached ({exc})",
                                 error=f"task_policy: {exc}"), model, threshold  # fmt: skip
        try:
            with today_is(self.context.today_date):  # year-less dates in the users' year
                event = prepare_trace_event(
                    messages, proposed_call, labels=model.labels, bindings=attached.bindings,
                    user_facts=user_facts, consent=consent, thread_state=thread_state,
                    max_bytes=max_bytes, key=self.context.trace_key_bytes,
                    values=attached.model.values, secrets=attached.model.secrets,
                    thread_id=thread_id, budget_ms=self.context.trace_budget_ms,
                )  # fmt: skip
        except UnreadableEvidence as exc:
            return (GuardDecision(**unreadable_fields(exc), profile=self.context.profile), model,
                    threshold)
        except RecursionError:  # a shape no reader bounded: still a denial, never a traceback
            deep = UnreadableEvidence("unparsable_trace", "the trace is nested too deep to read")
            return (GuardDecision(**unreadable_fields(deep), profile=self.context.profile), model,
                    threshold)
        if attached.unset:
            event = replace(event, facts={**event.facts, **attached.open_facts()})
        return event, attached.model, threshold

    def _trace_with_state(self, *args: Any) -> tuple[TraceEvent | GuardDecision, Any, float | None]:
        """:meth:`_trace` with the thread's state built (in the caller's thread, not later).

        An async caller reads `decision.trace_state` on its event loop: the thread's index,
        deferred for a thread with no state (:mod:`guardagent.trace.lookup`), is built here,
        in the worker thread, so reading it never blocks the loop.
        """
        event, model, threshold = self._trace(*args)
        if not isinstance(event, GuardDecision):
            event.state.get()
        return event, model, threshold

    def _verify_trace(self, event: TraceEvent, model: Any, threshold: float | None,
                      started: float) -> GuardDecision | None:  # fmt: skip
        """A policy whose every predicate is a trace predicate needs no program: verify here."""
        from guardagent.policy.runs import decision_parts
        from guardagent.policy.verify import verify_event

        if set(model.trace_bindings) != {p.name for p in model.predicates}:
            return None
        parts = decision_parts(verify_event(model, event.assignments, threshold=threshold,
                                         expected=model.trace_bindings), None)
        return GuardDecision(
            **parts, guardrailed_output=event.agent_output if parts["allowed"] else None,
            profile=self.context.profile, latency_ms=(time.perf_counter() - started) * 1000,
        )  # fmt: skip

    @staticmethod
    def _with_trace(decision: GuardDecision, event: TraceEvent, model: Any,
                    rules: str = "all") -> GuardDecision:  # fmt: skip
        """The decision with the trace facts, the thread state, and why each condition held.

        A denial always lists its violations (the violated rules' policies when the guard
        gave none); ``rules="applied"`` keeps only the rules that applied to the call.
        """
        facts = event.details()
        violated = [r for r in decision.rules if r.status in ("violated", "possibly_violated")]
        named = [facts[n]["detail"] for r in violated for n in [*r.deciding, *r.open]
                 if n in facts and model.by_name[n].kind == "condition"]  # fmt: skip
        reason = decision.reason
        if named:
            reason += " Why: " + "; ".join(dict.fromkeys(named)) + "."
        consented = [f["detail"] for f in facts.values()
                     if f["value"] and str(f["name"]).startswith("consent_given")]  # fmt: skip
        if decision.allowed and consented:  # name the approval the call used
            reason += " Consent: " + "; ".join(dict.fromkeys(consented)) + "."
        for note in event.notes:  # e.g. an unsigned thread state set aside
            reason += " " + note
        # an allowed call uses its approvals; built when the host reads it (GuardDecision)
        state = event.deferred_state_after(decision.allowed)
        update: dict[str, Any] = {"trace_facts": facts, "trace_state": state,
                                  "reason": reason}  # fmt: skip
        if not decision.allowed and not decision.violations:
            update["violations"] = list(dict.fromkeys(r.policy or r.id for r in violated)) or [
                decision.reason]
        if rules == "applied":
            update["rules"] = [r for r in decision.rules if r.status != "not_applicable"]
        return decision.model_copy(update=update)

    def check_trace(
        self,
        messages: Any,
        proposed_call: Mapping[str, Any] | None = None,
        *,
        user_facts: Mapping[str, Any] | None = None,
        consent: Iterable[Any] = (),
        thread_state: Mapping[str, Any] | None = None,
        thread_id: str | None = None,
        rules: Literal["all", "applied"] = "all",
        task: TaskPolicy | AttachedTask | Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> GuardDecision:
        """Decide whether a tool call may run, given the whole conversation before it.

        Args:
            messages: The trace: LangChain messages (objects or `messages_to_dict` JSON) or
                OpenAI chat messages with `tool_calls`, a list or ``{"messages",
                "proposed_call"}``, or that as JSON text (see DESIGN.md, "Traces").
            proposed_call: The call to guard (default: the last message's only call).
            user_facts: The host's facts about the user; also the user's records, a trusted
                source for provenance (one section per key). Not a JSON object: denied.
            consent: The host's review records for this thread (``{"tool", "decision",
                "args", "values", "call_id", "thread", "uses"}``, signed with the
                deployment's key when it has one); text in a message never counts. An
                approval counts only in the thread it names, for the call it names, and
                once (or `uses` times): the thread's state counts its uses.
            thread_state: `decision.trace_state` of this thread's previous call (None for
                the first call): only new messages are read, and a rewritten history is
                denied. Without the deployment's `trace_key` nothing authenticates it: it
                is used only to deny (a rewritten history, used approvals), the thread is
                read from its messages and the reason says so (:mod:`guardagent.trace.restore`).
            thread_id: The host's id of the thread (a checkpointer's ``thread_id``): the
                records' ``thread``; None: the signed state's, or a random one for a new
                thread (and for an unsigned state).
            rules: ``applied`` lists in `decision.rules` only the rules that applied to the
                call (not those of other actions); ``all`` (default) every rule.
            task: The task policy of this thread (:class:`~guardagent.policy.task.TaskPolicy`,
                its mapping ``{"params", "predicates", "rules"}``, or what
                :meth:`attach_task` returned): merged with the profile's policy, checked
                with z3 and cached. Host only; a task that cannot be attached is denied.
            **overrides: :class:`GuardContext` fields for this call only.

        Returns:
            The decision, with `trace_facts` (which messages decided each predicate) and
            `trace_state` (keep it for the thread's next call; without `thread_state` it is
            built when first read, :mod:`guardagent.trace.lookup`). Everything read from the
            trace, the records and the state ends in a decision: what cannot be read is a
            denial with its reason (``unparsable_trace``, ``inconsistent_trace``,
            ``unlabelled_tool``, ``unreadable_consent``, ``unreadable_state``, ...), and so
            are `user_facts` that are not a JSON object of JSON values and a profile that
            cannot guard traces (``no_trace_policy``): nothing raises into the host, which
            may be an agent's run (the middleware).
        """
        started = time.perf_counter()
        max_bytes = overrides.get("max_trace_bytes", self.context.max_trace_bytes)
        event, model, threshold = self._trace(messages, proposed_call, user_facts, consent,
                                              thread_state, max_bytes, _task_spec(task),
                                              thread_id)  # fmt: skip
        if isinstance(event, GuardDecision):
            return event
        decision = self._verify_trace(event, model, threshold, started)
        if decision is None:
            overrides["trace_assignments"] = event.assignments
            overrides.setdefault("max_event_chars", max_bytes + 65_536)
            decision = invoke_guard(
                self.graph, self._context(user_facts, overrides), event.agent_input,
                event.agent_output, run_name="guardagent.trace",
            )  # fmt: skip
        return self._with_trace(decision, event, model, rules)

    async def acheck_trace(
        self,
        messages: Any,
        proposed_call: Mapping[str, Any] | None = None,
        *,
        user_facts: Mapping[str, Any] | None = None,
        consent: Iterable[Any] = (),
        thread_state: Mapping[str, Any] | None = None,
        thread_id: str | None = None,
        rules: Literal["all", "applied"] = "all",
        task: TaskPolicy | AttachedTask | Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> GuardDecision:
        """Async :meth:`check_trace` (the trace is read in a worker thread)."""
        started = time.perf_counter()
        max_bytes = overrides.get("max_trace_bytes", self.context.max_trace_bytes)
        event, model, threshold = await asyncio.to_thread(
            self._trace_with_state, messages, proposed_call, user_facts, consent, thread_state,
            max_bytes, _task_spec(task), thread_id)
        if isinstance(event, GuardDecision):
            return event
        decision = self._verify_trace(event, model, threshold, started)
        if decision is None:
            overrides["trace_assignments"] = event.assignments
            overrides.setdefault("max_event_chars", max_bytes + 65_536)
            decision = await ainvoke_guard(
                self.graph, self._context(user_facts, overrides), event.agent_input,
                event.agent_output, run_name="guardagent.trace",
            )  # fmt: skip
        return self._with_trace(decision, event, model, rules)


def _task_spec(task: Any) -> Any:
    """The task policy of an attached task (cached by its content, so attaching is free)."""
    return getattr(task, "task", task)
