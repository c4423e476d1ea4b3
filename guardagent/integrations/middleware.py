r"""GuardAgent as LangChain 1.x agent middleware: every tool call is guarded before it runs.

```python
from langchain.agents import create_agent
from guardagent.integrations import GuardAgentMiddleware

agent = create_agent(model, tools, middleware=[GuardAgentMiddleware("tool-calls")])
agent.invoke({"messages": [("user", "send 2500 to acct-9")]},
             context={"user_info": {"verified": False}})
```

`wrap_tool_call` turns each call (name, args and the conversation so far) into one GuardAgent
event. Allowed: the tool runs. Denied: the tool does not run, and the model gets
``ToolMessage(content="GuardAgent blocked <tool>: <violations>. Reason: <reason>",
status="error")`` so it can tell the user or try something else.

Event format for a tool call (see :mod:`guardagent.integrations.events`)::

    agent_input:
        Task: <the user's (human) messages, oldest first>
        User information:
           verified: false,
           role: "analyst"
    agent_output:
        (Conversation)
          USER: ...
          AI: calls lookup_balance({"account": "checking"})
          TOOL RESULT [lookup_balance]: 4210.55
        (Tool call)
        TOOL: transfer_funds
        ARGS: {"amount": 2500, "to": "acct-77"}

The user's facts come only from the host, and reach the guard program as data (the
event's ``User information:`` block is for display and memory, never re-parsed): the
constructor's ``user_info`` (a mapping, or a callable of the `ToolCallRequest`), else the
run's context (``context={"user_info": {...}}``: ``Runtime.context`` as a dict or an object
with a ``user_info`` attribute, or ``config["configurable"]["user_info"]``). The agent state
is read only when the host opts in (``facts_from_state=True``, which adds ``user_info`` to the
state schema): whoever invokes the agent, and any tool returning ``Command(update=...)``, can
write state. Conversation lines are indented so tool results (attacker-controlled) cannot
forge the ``TOOL:``/``ARGS:`` block. The built-in ``tool-calls`` profile guards exactly this
format.

Human review (``review=``): ``"never"`` (default) answers every denial with the error
ToolMessage; ``"on_fail"`` pauses with `langgraph.types.interrupt` when the guard failed
closed (it could not decide, ``decision.error`` set); ``"on_deny"`` pauses on every denial.
The pause needs a checkpointer; resume with ``Command(resume="approve")`` /
``Command(resume={"type": "reject", "message": "..."})`` (also accepted: ``True``/``False``
and HITL-style ``{"decisions": [{"type": ...}]}``). Anything else is a rejection.
"""

from __future__ import annotations

import hashlib
import json
import operator
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Mapping
from functools import partial
from typing import Annotated, Any, Literal, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command, interrupt

from guardagent.agent import GuardAgent
from guardagent.decision import GuardDecision
from guardagent.integrations.answers import (
    TaskSource,
    answer_review,
    delivered,
    final_answer,
    labels_respond,
    refusal,
    task_for,
    thread_of_runtime,
)
from guardagent.integrations.events import tool_call_event
from guardagent.integrations.held_answers import HeldResponses, HoldsAnswers
from guardagent.integrations.runner import (
    arun_guard,
    as_guard,
    describe_denial,
    facts_in,
    run_guard,
)
from guardagent.policy.task import AttachedTask
from guardagent.trace.predicates import Consent
from guardagent.trace.predicates.ledger import LEDGER_FIELD, spend_in_state, thread_of
from guardagent.twins import Twin, Wait, arun, async_only, run, sync_only

Review = Literal["never", "on_fail", "on_deny"]
UserInfo = Mapping[str, Any] | Callable[[ToolCallRequest], Mapping[str, Any] | None] | None
ToolResult = ToolMessage | Command[Any]

REVIEW_TYPE = "guardagent_review"
TRACE_KEY = "guardagent_trace"
"""State key of the thread's trace index (``trace=True``): only new messages are read."""
CONSENT_KEY = "guardagent_consent"
"""State key of the reviewers' approvals (``trace=True``): signed records, each bound to its
thread and call and used by it (kept for the record; the thread's ledger counts the use)."""
NEEDS_KEY = (
    "GuardAgentMiddleware(trace=True) keeps the thread's index and the reviewers' "
    "approvals in the agent state, which the invoker can write: give the guard the "
    "deployment's key, GuardAgent(..., trace_key=os.environ['GUARDAGENT_TRACE_KEY']) "
    "(e.g. export GUARDAGENT_TRACE_KEY=$(openssl rand -hex 32))"
)
USER_INFO_KEY = "user_info"
"""Where the host puts its facts about the user: the run's context (or, opted in, the state)."""


class GuardedAgentState(AgentState[Any]):
    """The agent state plus the user's facts, for hosts that opt in to facts from state."""

    user_info: NotRequired[dict[str, Any]]


def _newest_trace(old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any] | None:
    """Parallel calls of one step each write the index: keep the one that read the most.

    Of two that read as much, the one whose consent ledger records more uses: an approval
    a parallel call used stays used (both cannot be kept: each ledger is signed whole). A
    state written after a conversation summary (``summaries``: the thread is shorter, and
    the state before it is stale) wins over those before it.
    """
    if new is None:
        return old
    if old is None:
        return new
    return new if _age(new) >= _age(old) else old


def _age(state: dict[str, Any]) -> tuple[int, Any, int]:
    """How far a state has come: summaries first (one shortens the thread), then its length."""
    summaries = state.get("summaries", 0)
    return (summaries if type(summaries) is int else 0, state.get("count", 0), _uses(state))


def _uses(state: dict[str, Any]) -> int:
    ledger = state.get(LEDGER_FIELD)
    uses = ledger.get("uses") if isinstance(ledger, dict) else None
    if not isinstance(uses, dict):
        return 0
    return sum(len(v) for v in uses.values() if isinstance(v, list))


class GuardedTraceState(AgentState[Any]):
    """The agent state plus the thread's trace index and consent (``trace=True``)."""

    user_info: NotRequired[dict[str, Any]]
    guardagent_trace: NotRequired[Annotated[dict[str, Any] | None, _newest_trace]]
    guardagent_consent: NotRequired[Annotated[list[dict[str, Any]], operator.add]]


class GuardAgentMiddleware(HoldsAnswers, AgentMiddleware[AgentState[Any], Any, Any]):
    """Guard each tool call of a `create_agent` agent with a GuardAgent profile.

    Args:
        guard: A :class:`GuardAgent`, or a profile name/path (default ``tool-calls``).
        user_info: Trusted user facts: a mapping, a callable of the request (for a final
            answer, a request for the pseudo-call ``respond``), or None to read
            ``user_info`` from the run's context.
        facts_from_state: Also read the agent state's ``user_info`` when the context has
            none. Off by default: the invoker and tools returning `Command` can set state.
        tools: Names of the tools to guard; None guards every tool.
        review: When to ask a human (``"never"``, ``"on_fail"``, ``"on_deny"``).
        run_name: Trace name of each guard run (its outcome is ``<run_name>.decision``).
        trace: Guard each call with the whole conversation (`GuardAgent.check_trace`): the
            profile's policy model needs tool labels and trace predicates (without them
            every call is denied, ``no_trace_policy``). The thread's
            index and the reviewers' approvals live in the agent state (`guardagent_trace`,
            `guardagent_consent`: keep a checkpointer), signed with the guard's
            ``trace_key`` (required: without one the middleware refuses to start). An
            approval made in review approves that one call: it is recorded as a consent
            record bound to the thread (the checkpointer's ``thread_id``) and the call's
            id, and the thread's ledger counts it used, so the same call proposed again
            is reviewed again. When the policy labels the pseudo-tool ``respond`` (and
            `tools` is None or names it), the agent's final answer (a model message making
            no call) is guarded too, in ``after_model``: a denied answer is replaced by a
            refusal saying why (same message id), or held for review with ``review=``.
        task: With ``trace=True``, the thread's task policy (host only): a task
            (``{"name", "params", "predicates", "rules"}``, a ``TaskPolicy``, or what
            ``guard.attach_task`` returned), attached now (a broken one raises
            ``TaskPolicyError``), or a callable of the run's runtime returning the thread's
            task or None (``runtime.context``, ``runtime.execution_info.thread_id``; a task
            it returns that cannot be attached, or an exception it raises, denies the call).
            Never read a task from a served graph's context: its client writes it.
        **settings: :class:`~guardagent.context.GuardContext` fields (``model``,
            ``memory_dir``, ...) for the guard: the deployment's, never the run's.
    """

    state_schema = AgentState

    def __init__(
        self,
        guard: GuardAgent | str = "tool-calls",
        *,
        user_info: UserInfo = None,
        facts_from_state: bool = False,
        tools: Collection[str] | None = None,
        review: Review = "never",
        run_name: str = "guardagent.tool_call",
        trace: bool = False,
        task: TaskSource = None,
        **settings: Any,
    ) -> None:
        super().__init__()
        if review not in ("never", "on_fail", "on_deny"):
            raise ValueError(f"review must be 'never', 'on_fail' or 'on_deny', not {review!r}")
        self.guard = as_guard(guard, **settings)
        if trace and self.guard.context.trace_key_bytes is None:
            raise ValueError(NEEDS_KEY)
        self.user_info = user_info
        self.facts_from_state = facts_from_state
        if facts_from_state:
            self.state_schema = GuardedAgentState
        self.trace = trace
        if trace:
            self.state_schema = GuardedTraceState
        self.guarded_tools = frozenset(tools) if tools is not None else None
        self.task = self._checked_task(task)
        self.review = review
        self.run_name = run_name
        # Decisions awaiting a reviewer, so a resumed tool node does not guard the call again
        # (with a model behind the guard, a second run could even decide differently).
        self._pending: OrderedDict[str, GuardDecision] = OrderedDict()
        self._lock = threading.Lock()
        self._held = HeldResponses()  # final answers held in the model call (trace=True)

    # -- event -----------------------------------------------------------------------------

    def facts(self, request: ToolCallRequest) -> dict[str, Any]:
        """The user's facts for this call, from the host only (``{}`` when it gave none).

        In order: the constructor's ``user_info``; the run's context, then its config's
        ``configurable``; the agent state only with ``facts_from_state=True``.
        """
        found: Mapping[str, Any] | None
        if callable(self.user_info):
            found = self.user_info(request)
        elif self.user_info is not None:
            found = self.user_info
        else:
            runtime = getattr(request, "runtime", None)
            config = getattr(runtime, "config", None) or {}
            found = facts_in(getattr(runtime, "context", None), USER_INFO_KEY) or facts_in(
                config.get("configurable"), USER_INFO_KEY
            )
            if found is None and self.facts_from_state:
                found = facts_in(request.state, USER_INFO_KEY)
        return dict(found or {})

    def event(self, request: ToolCallRequest) -> tuple[str, str]:
        """The GuardAgent event (agent_input, agent_output) of one pending tool call."""
        return self._event(request, self.facts(request))

    @staticmethod
    def _event(request: ToolCallRequest, facts: Mapping[str, Any]) -> tuple[str, str]:
        state = request.state
        messages: list[BaseMessage] = []
        if isinstance(state, Mapping):
            messages = [m for m in state.get("messages", []) if isinstance(m, BaseMessage)]
        call = request.tool_call
        return tool_call_event(call["name"], call.get("args") or {}, messages, facts)

    def _guarded(self, request: ToolCallRequest) -> bool:
        return self.guarded_tools is None or request.tool_call["name"] in self.guarded_tools

    def _metadata(self, request: ToolCallRequest) -> dict[str, Any]:
        return {
            "guardagent_integration": "middleware",
            "guardagent_tool": request.tool_call["name"],
            "guardagent_tool_call_id": request.tool_call.get("id") or "",
        }

    @classmethod
    def _key(cls, request: ToolCallRequest, event: tuple[str, str]) -> str:
        body = "\x00".join([cls._thread_id(request) or "", *event])
        digest = hashlib.sha256(body.encode("utf-8")).hexdigest()[:24]
        return f"{request.tool_call.get('id') or ''}:{digest}"

    # -- outcome ---------------------------------------------------------------------------

    def _asks(self, decision: GuardDecision) -> bool:
        if decision.allowed or self.review == "never":
            return False
        return self.review == "on_deny" or decision.error is not None

    def _denied(
        self, request: ToolCallRequest, decision: GuardDecision, note: str = ""
    ) -> ToolMessage:
        call = request.tool_call
        text = f"GuardAgent blocked {call['name']}: {describe_denial(decision)}"
        if decision.remediation is not None:  # a policy model's computed remedies and advice
            text += f" {decision.remediation.summary()}"
        return ToolMessage(
            content=text + note,
            tool_call_id=call.get("id") or "",
            name=call["name"],
            status="error",
        )

    def _ask(self, request: ToolCallRequest, decision: GuardDecision) -> tuple[bool, str]:
        """Pause for a reviewer; returns (approved, the reviewer's message)."""
        call = request.tool_call
        answer = interrupt(
            {
                "type": REVIEW_TYPE,
                "tool_call": {
                    "name": call["name"],
                    "args": call.get("args") or {},
                    "id": call.get("id"),
                },
                "decision": decision.model_dump(
                    mode="json",
                    include={
                        "allowed",
                        "violations",
                        "reason",
                        "error",
                        "program_source",
                        "attempts",
                        "profile",
                    },
                ),
                "question": f"GuardAgent denied {call['name']} ({describe_denial(decision)}). "
                "Approve the call anyway?",
                "options": ["approve", "reject"],
            }
        )
        return parse_review(answer)

    def _pending_or(self, key: str) -> GuardDecision | None:
        with self._lock:
            return self._pending.get(key)

    def _remember(self, key: str, decision: GuardDecision) -> None:
        with self._lock:
            self._pending[key] = decision
            while len(self._pending) > 1024:
                self._pending.popitem(last=False)

    def _forget(self, key: str) -> None:
        with self._lock:
            self._pending.pop(key, None)

    def _resolve(
        self, request: ToolCallRequest, key: str, decision: GuardDecision
    ) -> ToolMessage | None:
        """None: run the tool. A ToolMessage: the call is blocked (after review, if any)."""
        if decision.allowed:
            return None
        if not self._asks(decision):
            return self._denied(request, decision)
        self._remember(key, decision)
        approved, message = self._ask(request, decision)  # raises GraphInterrupt the 1st time
        self._forget(key)
        if approved:
            return None
        note = f" A reviewer rejected the call{': ' + message if message else ''}."
        return self._denied(request, decision, note)

    # -- traces ----------------------------------------------------------------------------

    @staticmethod
    def _thread_id(request: ToolCallRequest) -> str | None:
        """The checkpointer's ``thread_id`` (None without one: the state's own id is used)."""
        config = getattr(getattr(request, "runtime", None), "config", None) or {}
        configurable = config.get("configurable") if isinstance(config, Mapping) else None
        thread = configurable.get("thread_id") if isinstance(configurable, Mapping) else None
        return str(thread) if thread is not None else None

    def _trace_check(
        self, request: ToolCallRequest, facts: Mapping[str, Any]
    ) -> Twin[GuardDecision]:
        state = request.state if isinstance(request.state, Mapping) else {}
        task = task_for(self.task, request.runtime, self.guard.context.profile)
        if isinstance(task, GuardDecision):
            return task
        args = (list(state.get("messages", [])), dict(request.tool_call))
        kwargs: dict[str, Any] = {
            "user_facts": facts,
            "consent": state.get(CONSENT_KEY) or [],
            "thread_state": state.get(TRACE_KEY),
            "thread_id": self._thread_id(request),
            "task": task,
        }
        decision: GuardDecision = yield Wait(
            partial(self.guard.check_trace, *args, **kwargs),
            partial(self.guard.acheck_trace, *args, **kwargs),
        )
        return decision

    @classmethod
    def _trace_key(cls, request: ToolCallRequest) -> str:
        """A pending review's key: the thread, the call's id and its arguments.

        The model chooses call ids, so the thread is part of the key: a call of another
        thread with the same id and arguments never gets this thread's decision (its state,
        its ledger, its approval).
        """
        call = request.tool_call
        body = json.dumps(
            [cls._thread_id(request), call.get("id") or "", call.get("args") or {}],
            sort_keys=True,
            default=str,
        )
        return f"trace:{hashlib.sha256(body.encode()).hexdigest()[:32]}"

    def _with_state(
        self, request: ToolCallRequest, result: ToolResult, decision: GuardDecision, reviewed: bool
    ) -> ToolResult:
        """The tool's result plus the thread's index (and a reviewer's approval, used)."""
        update: dict[str, Any] = {}
        state = decision.trace_state
        if reviewed:
            call = request.tool_call
            key = self.guard.context.trace_key_bytes
            # one approval of this one call, in this thread: it let this call through
            record = Consent(
                call["name"],
                "approve",
                args=dict(call.get("args") or {}),
                call_id=call.get("id") or None,
                thread=thread_of(state) or self._thread_id(request),
            )
            update[CONSENT_KEY] = [record.signed(key) if key else record.to_json()]
            if state is not None:
                use = str(call.get("id") or "@review")
                state = spend_in_state(state, [record.identity()], use, key)
        if state is not None:
            update[TRACE_KEY] = state
        if not update:
            return result
        if isinstance(result, ToolMessage):
            return Command(update={"messages": [result], **update})
        if isinstance(result.update, dict):
            return Command(
                graph=result.graph,
                update={**result.update, **update},
                resume=result.resume,
                goto=result.goto,
            )
        return result

    # -- tasks and final answers (trace=True) ---------------------------------------------

    def _checked_task(self, task: TaskSource) -> TaskSource:
        """The constructor's task: a fixed one is attached now, so a broken one is loud."""
        if task is None:
            return None
        if not self.trace:
            raise ValueError("task= goes with trace=True (task policies scope trace policies)")
        if callable(task) or isinstance(task, AttachedTask):
            return task
        return self.guard.attach_task(task)

    def _answer(self, state: Any, runtime: Any) -> tuple[AIMessage, ToolCallRequest] | None:
        """The final answer to guard, as the `respond` call the policy judges (else None)."""
        if not self.trace:
            return None
        message = final_answer(state)
        if message is None or not labels_respond(self.guard):
            return None
        call = {"name": "respond", "args": {"content": delivered(message)}, "id": message.id}
        request = ToolCallRequest(
            tool_call=call,  # type: ignore[arg-type]
            tool=None,
            state=state,
            runtime=runtime,
        )
        return (message, request) if self._guarded(request) else None

    def _answer_args(self, state: Any, request: ToolCallRequest) -> tuple[Any, dict[str, Any]]:
        """The task and the keyword arguments of `check_trace` for a final answer."""
        task = task_for(self.task, request.runtime, self.guard.context.profile)
        kwargs = {
            "user_facts": self.facts(request),
            "consent": state.get(CONSENT_KEY) or [],
            "thread_state": state.get(TRACE_KEY),
            "task": task,
            "thread_id": thread_of_runtime(request.runtime),
        }
        return task, kwargs

    def _answer_outcome(
        self, message: AIMessage, key: str, decision: GuardDecision
    ) -> dict[str, Any] | None:
        """The state update of a guarded answer: the index, or the answer replaced."""
        if decision.allowed:
            return {TRACE_KEY: decision.trace_state} if decision.trace_state else None
        if not self._asks(decision):
            return {"messages": [refusal(message, decision)]}
        self._remember(key, decision)
        approved, note = parse_review(interrupt(answer_review(message, decision)))
        self._forget(key)
        if approved:
            return {TRACE_KEY: decision.trace_state} if decision.trace_state else None
        note = f" A reviewer rejected the answer{': ' + note if note else ''}."
        return {"messages": [refusal(message, decision, note)]}

    @staticmethod
    def _answer_key(message: AIMessage, runtime: Any) -> str:
        """A pending answer review's key: the thread, the message's id and its text."""
        body = json.dumps([thread_of_runtime(runtime), message.id, delivered(message)])
        return f"answer:{hashlib.sha256(body.encode()).hexdigest()[:32]}"

    def _guarded_answer(self, state: Any, runtime: Any) -> Twin[dict[str, Any] | None]:
        """:meth:`after_model` and :meth:`aafter_model`, written once (:mod:`guardagent.twins`)."""
        found = self._answer(state, runtime)
        if found is None:
            return None
        message, request = found
        key = self._answer_key(message, runtime)
        if self._held.was_guarded(self._answer_key(message, None)):
            return None
        decision = self._pending_or(key)
        if decision is None:
            task, kwargs = self._answer_args(state, request)
            if isinstance(task, GuardDecision):
                decision = task
            else:
                said = list(state["messages"])
                decision = yield Wait(
                    partial(self.guard.check_trace, said, **kwargs),
                    partial(self.guard.acheck_trace, said, **kwargs),
                )
        return self._answer_outcome(message, key, decision)

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Guard the agent's final answer when the policy labels ``respond`` (trace=True).

        An answer the model call already guarded (:meth:`wrap_model_call`) is left as it is.
        """
        return run(self._guarded_answer(state, runtime))

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Async :meth:`after_model`."""
        return await arun(self._guarded_answer(state, runtime))

    # -- hooks -----------------------------------------------------------------------------

    def _tool_call(self, request: ToolCallRequest, tool: Wait) -> Twin[ToolResult]:
        """Both hooks' body, written once: `tool` runs the tool (:mod:`guardagent.twins`)."""
        if not self._guarded(request):
            result: ToolResult = yield tool
            return result
        facts = self.facts(request)
        if self.trace:
            key = self._trace_key(request)
            decision = self._pending_or(key) or (yield from self._trace_check(request, facts))
            blocked = self._resolve(request, key, decision)
            result = (yield tool) if blocked is None else blocked
            reviewed = blocked is None and not decision.allowed
            return self._with_state(request, result, decision, reviewed)
        event = self._event(request, facts)
        key = self._key(request, event)
        found = self._pending_or(key)
        if found is None:
            settings: dict[str, Any] = {
                "run_name": self.run_name,
                "user_facts": facts,
                "metadata": self._metadata(request),
            }
            found = yield Wait(
                partial(run_guard, self.guard, *event, **settings),
                partial(arun_guard, self.guard, *event, **settings),
            )
        blocked = self._resolve(request, key, found)
        if blocked is not None:
            return blocked
        result = yield tool
        return result

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """Run the tool only if GuardAgent allows the call (or a reviewer approves it)."""
        return run(self._tool_call(request, sync_only(partial(handler, request))))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Async :meth:`wrap_tool_call`; the guard's sandbox and store calls do not block."""
        return await arun(self._tool_call(request, async_only(partial(handler, request))))


def parse_review(answer: Any) -> tuple[bool, str]:
    """A reviewer's resume value as (approved, message); anything unclear is a rejection."""
    if isinstance(answer, Mapping) and isinstance(answer.get("decisions"), list):
        answer = answer["decisions"][0] if answer["decisions"] else None
    if isinstance(answer, bool):
        return answer, ""
    if isinstance(answer, str):
        return answer.strip().lower() in {"approve", "approved", "yes", "allow"}, ""
    if isinstance(answer, Mapping):
        kind = str(answer.get("type", "")).strip().lower()
        return kind == "approve", str(answer.get("message", "") or "")
    return False, ""


__all__ = [
    "CONSENT_KEY",
    "REVIEW_TYPE",
    "TRACE_KEY",
    "USER_INFO_KEY",
    "GuardAgentMiddleware",
    "GuardedAgentState",
    "GuardedTraceState",
    "Review",
    "parse_review",
]
