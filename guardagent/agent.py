"""`GuardAgent`: the guard graph behind a two-method API."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from langgraph.graph.state import CompiledStateGraph

from guardagent.context import GuardContext
from guardagent.decision import GuardDecision
from guardagent.graph.builder import build_graph
from guardagent.guard.runs import ainvoke_guard, invoke_guard
from guardagent.guard.tool_calls import trace_decision, trace_policy
from guardagent.llm import is_offline, resolve_model
from guardagent.nodes.runtime import check_settings, limits_of, memory_of
from guardagent.nodes.turns import taking_turns
from guardagent.profiles.loader import load_profile
from guardagent.readers.user_facts import normalize_facts
from guardagent.twins import Twin, arun, run

if TYPE_CHECKING:
    from guardagent.policy.task import AttachedTask, TaskPolicy


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
            self.graph,
            self._context(user_facts, overrides),
            agent_input,
            agent_output,
            run_name="guardagent",
        )

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
            self.graph,
            self._context(user_facts, overrides),
            agent_input,
            agent_output,
            run_name="guardagent",
        )

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

        return attach_task(trace_policy(self.context)[0], task)

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
                read from its messages and the reason says so
                (:mod:`guardagent.trace.event.restore`).
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
            built when first read, :mod:`guardagent.trace.sources.lookup`). Everything read from the
            trace, the records and the state ends in a decision: what cannot be read is a
            denial with its reason (``unparsable_trace``, ``inconsistent_trace``,
            ``unlabelled_tool``, ``unreadable_consent``, ``unreadable_state``, ...), and so
            are `user_facts` that are not a JSON object of JSON values and a profile that
            cannot guard traces (``no_trace_policy``): nothing raises into the host, which
            may be an agent's run (the middleware).
        """
        return run(
            self._trace_decision(
                messages,
                proposed_call,
                user_facts,
                consent,
                thread_state,
                thread_id,
                rules,
                task,
                overrides,
            )
        )

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
        return await arun(
            self._trace_decision(
                messages,
                proposed_call,
                user_facts,
                consent,
                thread_state,
                thread_id,
                rules,
                task,
                overrides,
            )
        )

    def _trace_decision(
        self,
        messages: Any,
        proposed_call: Any,
        user_facts: Mapping[str, Any] | None,
        consent: Iterable[Any],
        thread_state: Mapping[str, Any] | None,
        thread_id: str | None,
        rules: str,
        task: Any,
        overrides: dict[str, Any],
    ) -> Twin[GuardDecision]:
        return trace_decision(
            self.graph,
            self.context,
            self._context,
            messages,
            proposed_call,
            user_facts=user_facts,
            consent=consent,
            thread_state=thread_state,
            thread_id=thread_id,
            rules=rules,
            task=task,
            overrides=overrides,
        )
