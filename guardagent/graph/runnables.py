"""How the guard graph's functions become LangGraph runnables, for `invoke` and `ainvoke` alike.

LangGraph runs a plain sync function under `ainvoke` on the event loop's default executor: a
thread hop per node and per conditional edge, each waiting for the GIL behind every other
run's (the hops, not the work, capped `acheck_many`'s throughput). Every function of the
graph is therefore given in two forms:

- `invoke` calls the sync function, as before;
- `ainvoke` of a run that takes turns (:mod:`guardagent.nodes.turns`: `acheck_many`'s runs)
  runs the node on the event loop: a node that waits (model, sandbox, memory) awaits its
  waits (:mod:`guardagent.nodes.steps`) and holds no thread, and a node that only computes
  (admit, verify, decide) is called inline;
- a node that branches routes itself (:func:`routed`), in the same call, on both paths;
- any other `ainvoke` (a served graph, a host graph's subgraph, `acheck`, the middleware)
  runs the sync function on the loop's default executor, as LangGraph does for a plain
  function: those loops must never block, and the nodes read small local files (the
  profile's, the memory's database), which a batch of `acheck_many` accepts on its loop.

All use `RunnableCallable`, the class LangGraph itself wraps every function node in
(`langgraph._internal`: pinned with LangGraph's major version in pyproject.toml). This is the
one module of the package that imports LangGraph's private API (tests/test_private_api.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Any

from langchain_core.runnables.config import run_in_executor
from langgraph._internal._runnable import RunnableCallable
from langgraph.types import Command

from guardagent.nodes.turns import TURN


def dual(func: Callable[..., Any], afunc: Callable[..., Awaitable[Any]]) -> RunnableCallable:
    """A node run by `func` under `invoke`, by `afunc` under a batch's `ainvoke`.

    Untraced as a callable: the node's task is its run, as LangGraph does for function nodes.
    """

    async def either(*args: Any, **kwargs: Any) -> Any:
        if TURN.get() is not None:
            return await afunc(*args, **kwargs)
        return await run_in_executor(None, func, *args, **kwargs)

    return RunnableCallable(func, either, name=func.__name__, trace=False)


def inline(func: Callable[..., Any]) -> RunnableCallable:
    """A compute-only node, inline in a batch's run.

    Untraced as a callable: the node's task is its run, as LangGraph does for function nodes.
    """

    async def either(*args: Any, **kwargs: Any) -> Any:
        if TURN.get() is not None:
            return func(*args, **kwargs)
        return await run_in_executor(None, func, *args, **kwargs)

    return RunnableCallable(func, either, name=func.__name__, trace=False)


def paired(
    func: Callable[..., Any], afunc: Callable[..., Awaitable[Any]], name: str | None = None
) -> RunnableCallable:
    """A node run by `func` under `invoke` and by `afunc` under every `ainvoke`.

    For a node whose async form never blocks the loop (the served graph's `guard` node
    awaits the guard graph's own `ainvoke`). Untraced as a callable, as above.
    """
    return RunnableCallable(func, afunc, name=name or func.__name__, trace=False)


def routed(
    func: Callable[..., Any],
    route: Callable[[Any, Any], Hashable],
    ends: Mapping[Hashable, str] | Sequence[str],
) -> Callable[..., Any]:
    """A node followed by its conditional edge: one function that returns a `Command`.

    LangGraph routes a conditional edge on a fresh read of the state: a copy of every
    channel with the node's writes applied (~50 us a routing, five per model-path decision,
    on the event loop that every decision of a batch shares). The node holds both halves of
    that state already, and every channel of the guard's state keeps its last value (no
    reducers), so `{**state, **update}` is what the edge would read. The graph keeps its
    shape: each such node declares where it may go (`destinations`), drawn as before.

    Args:
        func: The node, sync or async, called as `func(state, runtime)`.
        route: The edge, called as `route(state, runtime)` on the state the node leaves.
        ends: The edge's path map (its return value -> node), or the nodes it returns.
    """

    def command(state: Any, update: Any, runtime: Any) -> Command[Any]:
        key = route({**state, **(update or {})}, runtime)
        goto = ends[key] if isinstance(ends, Mapping) else key
        return Command(update=update, goto=str(goto))

    if inspect.iscoroutinefunction(func):

        async def anode(state: Any, runtime: Any) -> Command[Any]:
            return command(state, await func(state, runtime), runtime)

        wrapper: Callable[..., Any] = anode
    else:

        def node(state: Any, runtime: Any) -> Command[Any]:
            return command(state, func(state, runtime), runtime)

        wrapper = node
    wrapper.__name__ = getattr(func, "__name__", "node")
    wrapper.__qualname__ = getattr(func, "__qualname__", wrapper.__name__)
    wrapper.__doc__ = func.__doc__
    return wrapper
