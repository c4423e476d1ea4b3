"""A wall-clock budget for reading one trace: an event that exhausts it is denied.

Every reader of the trace path is linear in the text, but a deployment still bounds the
time one decision may spend reading (a huge trace, a slow machine). The budget is set by
the host (``GuardContext.trace_budget_ms``, env ``GUARDAGENT_TRACE_BUDGET_MS``) around the
reading of one trace (:func:`reading_budget`); the readers call :func:`check_budget` at
regular points (per message, per few hundred candidates), which raises
``UnreadableEvidence("trace_budget_exceeded", ...)``: the guard denies with that reason.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from guardagent.readers.evidence import unreadable

DEFAULT_BUDGET_MS = 2000
"""Default budget of reading one trace, in milliseconds."""

_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("trace_deadline", default=None)


@contextmanager
def reading_budget(budget_ms: float | None) -> Iterator[None]:
    """Bound the reading done inside the block to `budget_ms` (None: no bound)."""
    if budget_ms is None:
        yield
        return
    token = _DEADLINE.set((time.monotonic() + budget_ms / 1000, budget_ms))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_budget() -> None:
    """Deny (raise ``trace_budget_exceeded``) when the current budget is spent."""
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline[0]:
        unreadable(
            "trace_budget_exceeded",
            f"reading the trace took more than its budget of "
            f"{deadline[1]:g} ms (trace_budget_ms, GUARDAGENT_TRACE_BUDGET_MS)",
        )
