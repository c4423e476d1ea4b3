"""Code written once and run two ways: a body is a generator of the waits it needs.

A sync function and its async twin written side by side drift apart (one gets a fix, the
other does not, and the two paths decide differently). Written once, a body yields a
:class:`Wait` naming the blocking call and its awaitable twin and receives the result (or
has the call's exception thrown in at the `yield`); :func:`run` performs each wait by
calling it, :func:`arun` awaits it. Everything else the body does is the same code on both
paths. The graph's nodes add taking turns on the async path (:mod:`guardagent.nodes.steps`).

At the bottom of the package: imports nothing of it.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Wait:
    """One blocking call: `call()` on the sync path, `await acall()` on the async one."""

    call: Callable[[], Any]
    acall: Callable[[], Awaitable[Any]]


Twin = Generator[Wait, Any, T]
"""A body written once: yields waits, returns its result."""


def in_thread(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Wait:
    """A blocking call with no async twin: in a worker thread on the async path."""
    call = functools.partial(func, *args, **kwargs)
    return Wait(call, functools.partial(asyncio.to_thread, call))


def sync_only(call: Callable[[], Any]) -> Wait:
    """A wait that exists on the sync path only (a caller's sync callback)."""
    return Wait(call, functools.partial(_wrong_path, "a sync-only wait awaited"))


def async_only(acall: Callable[[], Awaitable[Any]]) -> Wait:
    """A wait that exists on the async path only (a caller's async callback)."""
    return Wait(functools.partial(_wrong_path, "an async-only wait called"), acall)


def _wrong_path(what: str) -> Any:
    raise RuntimeError(f"{what}: a twin body met a wait of the other path")


def run(body: Twin[T]) -> T:
    """Drive `body`, performing each wait by calling it."""
    try:
        wait = next(body)
        while True:
            try:
                result = wait.call()
            except BaseException as exc:  # the body's own `except` decides (cancellation too)
                wait = body.throw(exc)
            else:
                wait = body.send(result)
    except StopIteration as done:
        out: T = done.value
        return out


async def arun(body: Twin[T]) -> T:
    """Drive `body`, awaiting each wait."""
    try:
        wait = next(body)
        while True:
            try:
                result = await wait.acall()
            except BaseException as exc:  # the body's own `except` decides (cancellation too)
                wait = body.throw(exc)
            else:
                wait = body.send(result)
    except StopIteration as done:
        out: T = done.value
        return out
