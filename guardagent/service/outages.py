"""What the service answers when it cannot decide now, and the deadline that ends a request.

A request the service could not decide (its database down or stalled, no connection free,
its run past the deadline) is answered 503 with ``Retry-After`` and a denial as the body: a
client that reads the status retries (the same idempotency key, on another replica), and
one that reads only the body still denies. Not decided is never answered 200.

A request's deadline (`GUARDAGENT_REQUEST_SECONDS`) must end the request *at* the deadline,
even when what it waits on does not give up: a query on a stalled database is cancelled by
psycopg, which then waits (up to 10 s) for the server to confirm; so the work is cancelled
and left to finish its clean-up on its own (:func:`within`), and the answer goes out now.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

log = logging.getLogger("guardagent.service")

T = TypeVar("T")

RETRY_AFTER_SECONDS = 1
"""What a 503 asks the client to wait before trying this replica again (another one at once)."""

_LEFT: set[asyncio.Task[Any]] = set()
"""Work cancelled at its deadline and still cleaning up (kept referenced until it ends)."""


class ServiceUnavailable(Exception):
    """The service cannot decide now (its database, a connection, the deadline): retry."""


async def within(work: Coroutine[Any, Any, T], seconds: float, what: str) -> T:
    """`work`'s result, or :class:`ServiceUnavailable` once `seconds` have passed.

    At the deadline `work` is cancelled but not waited for: its clean-up (a query's
    cancellation on a stalled server, a connection going back to its pool) goes on in the
    background, and a lock it held is freed when that ends.

    Raises:
        ServiceUnavailable: the deadline passed (naming `what`).
    """
    task = asyncio.ensure_future(work)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if task in done:
        return task.result()
    task.cancel()
    _LEFT.add(task)
    task.add_done_callback(_finished)
    raise ServiceUnavailable(f"{what} did not finish within {seconds:g} s")


def _finished(task: asyncio.Task[Any]) -> None:
    _LEFT.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.warning("work ended after its deadline: %r", task.exception())
