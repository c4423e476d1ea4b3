"""How the guard graph's functions become LangGraph runnables, for `invoke` and `ainvoke` alike.

LangGraph runs a plain sync function under `ainvoke` on the event loop's default executor: a
thread hop per node and per conditional edge, each waiting for the GIL behind every other
run's (the hops, not the work, capped `acheck_many`'s throughput). Every function of the
graph is therefore given in two forms:

- `invoke` calls the sync function, as before;
- `ainvoke` of a run that takes turns (:mod:`guardagent.nodes.turns`: `acheck_many`'s runs)
  runs the node on the event loop: a node that waits (model, sandbox, memory) awaits its
  waits (:mod:`guardagent.nodes.steps`) and holds no thread, and a node or edge that only
  computes (admit, verify, decide, the routers) is called inline;
- any other `ainvoke` (a served graph, a host graph's subgraph, `acheck`, the middleware)
  runs the sync function on the loop's default executor, as LangGraph does for a plain
  function: those loops must never block, and the nodes read small local files (the
  profile's, the memory's database), which a batch of `acheck_many` accepts on its loop.

All use `RunnableCallable`, the class LangGraph itself wraps every function node and edge in
(`langgraph._internal`: pinned with LangGraph's major version in pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables.config import run_in_executor
from langgraph._internal._runnable import RunnableCallable

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


def inline(func: Callable[..., Any], *, edge: bool = False) -> RunnableCallable:
    """A compute-only node (or, with `edge`, a conditional edge), inline in a batch's run.

    Untraced: a node's task is its run; a routing shows as the node run that follows it (a
    traced router, LangGraph's default for a function, is a child run per routing: ~55 us
    of callbacks each, six per model-path decision, and nothing a trace needs).
    """

    async def either(*args: Any, **kwargs: Any) -> Any:
        if TURN.get() is not None:
            return func(*args, **kwargs)
        return await run_in_executor(None, func, *args, **kwargs)

    return RunnableCallable(func, either, name=None if edge else func.__name__, trace=False)
