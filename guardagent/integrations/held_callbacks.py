"""The host's callback handlers while a final answer is held: told only what is released.

A model called while its answer is held (:mod:`guardagent.integrations.held_answers`)
reports its run to every callback handler of the run: LangChain hands the handlers of the
run's config (``{"callbacks": [...]}``, inherited by every child run) and those bound to
the model (``ChatModel(callbacks=...)``) ``on_chat_model_start``, each token
(``on_llm_new_token``) and the result (``on_llm_end``). A chat UI shows what those report
(Chainlit's LangChain handler, a websocket handler): removing only LangChain's streaming
handlers left a withheld answer, a secret in it, on the user's screen.

So while the model runs, every handler is replaced by a :class:`_Recorder` that calls
nothing and notes each event (with the handler's own ``ignore_*`` flags, so it is given
exactly the events the handler would take). Once the answer is decided, the events are
played to the handlers through LangChain's own dispatch (``handle_event``), in order and
before the model node ends, so a tracer's run tree is whole: as they were when the answer
is allowed or the response is not a final answer; when it is withheld, without its tokens
and with ``on_llm_end`` reporting the refusal put in its place, and no other event (a custom
event may carry the text: fail closed). A model call interrupted for a review reports
nothing (the resumed node judges the response held, without calling the model again).
Streaming handlers (``stream_mode="messages"``, ``astream_events``) are removed outright:
the stream shows the node's output, the answer allowed or the refusal, once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.callbacks.manager import ahandle_event, handle_event
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables.config import var_child_runnable_config

try:
    from langchain_core.tracers._streaming import _StreamingCallbackHandler as _Streaming
except ImportError:  # pragma: no cover - an older langchain-core: no handler is a stream
    _Streaming = ()  # type: ignore[assignment,misc]

Event = tuple[BaseCallbackHandler, str, tuple[Any, ...], dict[str, Any]]

_EVENTS = tuple(n for n in dir(BaseCallbackHandler) if n.startswith("on_"))
_FLAGS = (
    "ignore_llm",
    "ignore_chat_model",
    "ignore_retry",
    "ignore_custom_event",
    "ignore_chain",
    "ignore_agent",
    "ignore_retriever",
    "raise_error",
)
_KEPT_WHEN_WITHHELD = frozenset(
    {"on_chat_model_start", "on_llm_start", "on_llm_end", "on_llm_error", "on_retry"}
)
"""The events a handler is told of a withheld answer's run (``on_llm_end`` rewritten)."""


class _Recorder(BaseCallbackHandler):
    """Stands in for one host handler while the model runs: notes each event, calls nothing."""

    run_inline = True  # in order, on the caller's thread (an async manager would use a pool)

    def __init__(self, handler: BaseCallbackHandler, events: list[Event]) -> None:
        self.handler = handler
        self.events = events


def _recording(name: str) -> Any:
    def record(self: _Recorder, *args: Any, **kwargs: Any) -> None:
        self.events.append((self.handler, name, args, kwargs))

    record.__name__ = name
    return record


def _mirrored(flag: str) -> property:
    return property(lambda self: bool(getattr(self.handler, flag, False)))


for _name in _EVENTS:
    setattr(_Recorder, _name, _recording(_name))
for _flag in _FLAGS:
    setattr(_Recorder, _flag, _mirrored(_flag))


class HeldCallbacks:
    """The events of one held model call, played to the host's handlers once it is decided."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def recorder(self, handler: BaseCallbackHandler) -> BaseCallbackHandler:
        """The stand-in for `handler` (a streaming handler has none: callers drop it)."""
        return _Recorder(handler, self.events)

    def released(self, withheld: AIMessage | None) -> list[Event]:
        """The events to play: all of them, or a withheld answer's (the module's list)."""
        events, self.events[:] = list(self.events), []
        if withheld is None:
            return events
        out: list[Event] = []
        for handler, name, args, kwargs in events:
            if name not in _KEPT_WHEN_WITHHELD:
                continue
            if name == "on_llm_end":
                args = (
                    _replaced(args[0] if args else kwargs.pop("response", None), withheld),
                    *args[1:],
                )
            out.append((handler, name, args, kwargs))
        return out

    def replay(self, withheld: AIMessage | None = None) -> None:
        """Tell the handlers (see :meth:`released`)."""
        for handler, name, args, kwargs in self.released(withheld):
            handle_event([handler], name, None, *args, **kwargs)

    async def areplay(self, withheld: AIMessage | None = None) -> None:
        """Async :meth:`replay`."""
        for handler, name, args, kwargs in self.released(withheld):
            await ahandle_event([handler], name, None, *args, **kwargs)


def _replaced(result: Any, withheld: AIMessage) -> LLMResult:
    """The model's result as the host is told it: the refusal as its one generation."""
    message = AIMessage(content=withheld.content, id=withheld.id)
    output = result.llm_output if isinstance(result, LLMResult) else None
    return LLMResult(generations=[[ChatGeneration(message=message)]], llm_output=output)


def _standing_in(callbacks: Any, held: HeldCallbacks) -> Any:
    """`callbacks` (a manager, a list of handlers or None) with each handler stood in for."""
    if isinstance(callbacks, BaseCallbackManager):
        quiet = callbacks.copy()
        handlers, inherited = list(callbacks.handlers), list(callbacks.inheritable_handlers)
        for handler in handlers + inherited:
            quiet.remove_handler(handler)
        for handler in handlers + [h for h in inherited if h not in handlers]:
            if isinstance(handler, _Streaming):
                continue
            stand_in = held.recorder(handler)
            if handler in handlers:
                quiet.add_handler(stand_in, inherit=handler in inherited)
            else:
                quiet.inheritable_handlers.append(stand_in)
        return quiet
    if isinstance(callbacks, list | tuple):
        return [
            held.recorder(h)
            for h in callbacks
            if isinstance(h, BaseCallbackHandler) and not isinstance(h, _Streaming)
        ]
    return callbacks


def model_standing_in(model: Any, held: HeldCallbacks) -> Any:
    """The model with the handlers bound to it stood in for (itself when it has none)."""
    own = getattr(model, "callbacks", None)
    if not own or not hasattr(model, "model_copy"):
        return model
    return model.model_copy(update={"callbacks": _standing_in(own, held)})


@contextmanager
def held_callbacks() -> Iterator[HeldCallbacks]:
    """Run the block with the run's callback handlers stood in for (see the module)."""
    held = HeldCallbacks()
    config = var_child_runnable_config.get()
    callbacks = config.get("callbacks") if isinstance(config, Mapping) else None
    if config is None or callbacks is None:
        yield held
        return
    token = var_child_runnable_config.set({**config, "callbacks": _standing_in(callbacks, held)})
    try:
        yield held
    finally:
        var_child_runnable_config.reset(token)
