"""Nodes written once and run two ways: a node's body is a generator of the waits it needs.

The pattern of :mod:`guardagent.twins`, with the graph's turns. A node that waits (on the
model, on a sandbox child, on a shared memory) yields a :class:`~guardagent.twins.Wait`
naming the blocking call and its awaitable twin, and receives the result (or has the call's
exception thrown in at the `yield`). :func:`run_sync` performs each wait by
calling it, for `invoke` (and for an `ainvoke` that runs nodes on executor threads);
:func:`run_async` awaits it, for the runs of `acheck_many` (:mod:`guardagent.graph.runnables`),
so such a run holds no executor thread while a model answers and its CPU work runs on the
event loop in one piece between two waits. Everything else the node does is the same code
on both paths, so the two cannot decide differently.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from langgraph.runtime import Runtime

from guardagent.nodes.turns import TURN
from guardagent.twins import Wait, run

Steps = Generator[Wait, Any, dict[str, Any]]
"""A node's body: yields waits, returns the state update."""


def run_sync(steps: Steps) -> dict[str, Any]:
    """Drive a node's steps, performing each wait by calling it."""
    return run(steps)


async def run_async(steps: Steps) -> dict[str, Any]:
    """Drive a node's steps, awaiting each wait (giving up the run's turn while it waits)."""
    turn = TURN.get()
    try:
        wait = next(steps)
        while True:
            if turn is not None:
                turn.give()
            try:
                result = await wait.acall()
            except Exception as exc:  # noqa: BLE001 - the node's own `except` decides
                if turn is not None:
                    await turn.take()
                wait = steps.throw(exc)
            else:
                if turn is not None:
                    await turn.take()
                wait = steps.send(result)
    except StopIteration as done:
        update: dict[str, Any] = done.value
        return update


Body = Callable[[Any, Runtime[Any]], Steps]


def sync_node(body: Body) -> Callable[[Any, Runtime[Any]], dict[str, Any]]:
    """The node `body` as a plain function (the sync path and direct callers)."""

    def node(state: Any, runtime: Runtime[Any]) -> dict[str, Any]:
        return run_sync(body(state, runtime))

    return _named(node, body)


def async_node(body: Body) -> Callable[[Any, Runtime[Any]], Awaitable[dict[str, Any]]]:
    """The node `body` as a coroutine function (the async path)."""

    async def anode(state: Any, runtime: Runtime[Any]) -> dict[str, Any]:
        return await run_async(body(state, runtime))

    return _named(anode, body)


F = TypeVar("F", bound=Callable[..., Any])


def _named(func: F, body: Body) -> F:
    name = body.__name__.removesuffix("_steps")
    func.__name__ = func.__qualname__ = name
    func.__doc__ = body.__doc__
    func.__module__ = body.__module__
    return func
