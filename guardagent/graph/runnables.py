"""How the guard graph's functions become LangGraph runnables, for `invoke` and `ainvoke` alike.

LangGraph runs a plain sync function under `ainvoke` on the event loop's default executor: a
thread hop per node and per conditional edge, each waiting for the GIL behind every other
run's (the hops, not the work, capped the async throughput). So:

- a node that waits (model, sandbox, memory) is given as both a sync function and a
  coroutine function (:mod:`guardagent.nodes.steps`): `invoke` calls the one, `ainvoke`
  awaits the other and holds no thread while it waits;
- a node or edge that only computes (admit, verify, decide, the routers) has no async
  twin and runs inline on either path: LangGraph's callable calls its sync function when
  it has no async one, which is what it was doing in a thread, minus the hop.

Both use `RunnableCallable`, the class LangGraph itself wraps every function node and edge
in (`langgraph._internal`: pinned with LangGraph's major version in pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langgraph._internal._runnable import RunnableCallable


def dual(func: Callable[..., Any], afunc: Callable[..., Awaitable[Any]]) -> RunnableCallable:
    """A node run by `func` under `invoke` and by `afunc` under `ainvoke`.

    Untraced as a callable: the node's task is its run, as LangGraph does for function nodes.
    """
    return RunnableCallable(func, afunc, name=func.__name__, trace=False)


def inline(func: Callable[..., Any], *, edge: bool = False) -> RunnableCallable:
    """A compute-only node (or, with `edge`, a conditional edge) run inline on both paths.

    Edges keep LangGraph's tracing of them (a run per routing, as for a plain function),
    through the sync callback manager on both paths: LangChain runs an async callback
    handler's coroutines from there on its own thread pool.
    """
    return RunnableCallable(func, None, name=None if edge else func.__name__, trace=edge)
