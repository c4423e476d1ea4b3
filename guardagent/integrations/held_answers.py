"""A final answer held inside the model call until the guard decides (no stream sees it first).

Guarded after the model node (``after_model``), a denied answer had already left: token by
token through ``stream_mode="messages"`` (and ``astream_events``), whole through
``"updates"`` and ``"values"`` (the model node's output) and in the checkpoint written after
the node. So when the middleware guards answers, the model runs with the run's callback
handlers stood in for (:mod:`.held_callbacks`: its tokens reach no stream, and the host's
own handlers are told of the run once the answer is decided, a withheld one replaced by the
refusal) and its answer
is guarded before the model node returns; the node's output is the answer allowed, or the
refusal in its place. A review pauses inside the model node; the model's response is held
meanwhile (:class:`HeldResponses`), so the resumed node judges the same answer instead of
asking the model again.

A stream therefore shows an answer only whole and only once it is allowed: when answers
are guarded, the model's output (its calls too: which it will make is not known before it
ends) is not streamed token by token. Without ``respond`` labelled nothing is held.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

from langchain.agents.middleware import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage
from langgraph.types import Command

from guardagent.decision import GuardDecision
from guardagent.integrations.answers import labels_respond, thread_of_runtime
from guardagent.integrations.held_callbacks import HeldCallbacks, held_callbacks, model_standing_in
from guardagent.trace.document.messages import FINAL_ANSWER
from guardagent.twins import Twin, Wait, arun, async_only, run, sync_only

_KEPT = 1024
"""Entries a bounded table keeps (answers awaiting review, answers already guarded)."""


def answer_of(response: Any) -> AIMessage | None:
    """The final answer a model response gives (its last message, making no call)."""
    result = getattr(response, "result", None)
    last = result[-1] if isinstance(result, list) and result else None
    return last if isinstance(last, AIMessage) and not last.tool_calls else None


def with_answer(state: Any, answer: AIMessage) -> dict[str, Any]:
    """The agent state as it will be once the answer is added (what the guard reads)."""
    base = dict(state) if isinstance(state, Mapping) else {}
    return {**base, "messages": [*base.get("messages", []), answer]}


def swapped(response: Any, answer: AIMessage, replacement: AIMessage) -> ModelResponse[Any]:
    """The response with the answer replaced (a refusal in its place)."""
    result = [replacement if m is answer else m for m in response.result]
    return ModelResponse(result=result, structured_response=response.structured_response)


def request_key(state: Any, thread: str | None) -> str:
    """A model call's key: the thread and the messages it answers (count and last id)."""
    messages = state.get("messages", []) if isinstance(state, Mapping) else []
    last = getattr(messages[-1], "id", None) if messages else None
    body = json.dumps([thread, len(messages), last], default=str)
    return f"model:{hashlib.sha256(body.encode()).hexdigest()[:32]}"


def _put(table: OrderedDict[str, Any], key: str, value: Any) -> None:
    """Store under `key`, dropping the oldest entries past :data:`_KEPT`."""
    table[key] = value
    while len(table) > _KEPT:
        table.popitem(last=False)


class HeldResponses:
    """Bounded, thread-safe tables: responses awaiting a review, answers already guarded."""

    def __init__(self) -> None:
        self._held: OrderedDict[str, Any] = OrderedDict()
        self._guarded: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def held(self, key: str) -> Any:
        """The response kept under `key` (None: none)."""
        with self._lock:
            return self._held.get(key)

    def hold(self, key: str, response: Any) -> None:
        """Keep a response while a reviewer decides on its answer."""
        with self._lock:
            _put(self._held, key, response)

    def release(self, key: str) -> None:
        """Forget a held response (its answer was decided)."""
        with self._lock:
            self._held.pop(key, None)

    def guarded(self, answer_key: str) -> None:
        """Note an answer the model call guarded: ``after_model`` leaves it as it is."""
        with self._lock:
            _put(self._guarded, answer_key, None)

    def was_guarded(self, answer_key: str) -> bool:
        """Whether the model call guarded this answer (asked once: the note is used up)."""
        with self._lock:
            return self._guarded.pop(answer_key, 0) is None


class HoldsAnswers:
    """The model-call hooks of ``GuardAgentMiddleware``: its final answers held until guarded.

    A mixin of the middleware: it uses the middleware's answer guard (``_answer``,
    ``_answer_key``, ``_answer_args``, ``_pending_or``, ``_answer_outcome``, ``guard``,
    ``trace``) and its :class:`HeldResponses` (``_held``).
    """

    def _held_call(self, request: Any, call_model: Callable[[Any], Wait]) -> Twin[Any]:
        """Both hooks' body, written once (:mod:`guardagent.twins`); `call_model` calls it."""
        host: Any = self
        if not _guards_answers(host):
            return (yield call_model(request))
        where = request_key(request.state, thread_of_runtime(request.runtime))
        response = host._held.held(where)
        told = HeldCallbacks()
        if response is None:
            with held_callbacks() as told:
                try:
                    response = yield call_model(
                        request.override(model=model_standing_in(request.model, told))
                    )
                except BaseException:
                    yield _replay(told)
                    raise
        found = _found(host, request, response)
        if found is None:
            yield _replay(told)
            return response
        answer, asked, key, state = found
        decision = host._pending_or(key)
        if decision is None:
            task, kwargs = host._answer_args(state, asked)
            if isinstance(task, GuardDecision):
                decision = task
            else:
                said = list(state["messages"])
                decision = yield Wait(
                    partial(host.guard.check_trace, said, **kwargs),
                    partial(host.guard.acheck_trace, said, **kwargs),
                )
        output, withheld = _decided(host, where, response, answer, key, decision)
        yield _replay(told, withheld)
        return output

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Hold the model's final answer until it is guarded (see the module)."""
        return run(self._held_call(request, lambda r: sync_only(partial(handler, r))))

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async :meth:`wrap_model_call`."""
        return await arun(self._held_call(request, lambda r: async_only(partial(handler, r))))


def _replay(told: HeldCallbacks, withheld: AIMessage | None = None) -> Wait:
    """The callbacks held during the model call, replayed (awaited on the async path)."""
    return Wait(partial(told.replay, withheld), partial(told.areplay, withheld))


def _guards_answers(host: Any) -> bool:
    """Whether the middleware guards final answers (else the model streams as it likes)."""
    guarded = host.guarded_tools
    return (
        bool(host.trace)
        and (guarded is None or FINAL_ANSWER in guarded)
        and labels_respond(host.guard)
    )


def _found(host: Any, request: Any, response: Any) -> tuple[Any, ...] | None:
    """``(answer, its guard request, its key, the state with it)``, or None: not guarded."""
    answer = answer_of(response)
    if answer is None:
        return None
    state = with_answer(request.state, answer)
    found = host._answer(state, request.runtime)
    if found is None:
        return None
    return answer, found[1], host._answer_key(answer, request.runtime), state


def _decided(
    host: Any, where: str, response: Any, answer: AIMessage, key: str, decision: GuardDecision
) -> tuple[Any, AIMessage | None]:
    """The model node's output once the answer is decided, and the refusal if withheld.

    The output is the response, or the refusal in the answer's place. A review pauses here
    (the response held under `where`, so the resumed node judges the same answer);
    ``after_model`` then leaves the output as it is.
    """
    host._held.hold(where, response)
    outcome = host._answer_outcome(answer, key, decision)
    host._held.release(where)
    if outcome is not None and "messages" in outcome:
        withheld = outcome["messages"][0]
        host._held.guarded(host._answer_key(withheld, None))
        return swapped(response, answer, withheld), withheld
    host._held.guarded(host._answer_key(answer, None))
    if outcome is None:
        return response, None
    return ExtendedModelResponse(model_response=response, command=Command(update=outcome)), None
