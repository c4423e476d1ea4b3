"""What a reader could not read, and the per-run ledger that makes it deny.

A reader that finds no evidence, cannot parse it, or meets a construct it does not
understand calls :func:`unreadable`. That raises :class:`UnreadableEvidence` *and* writes an
entry into the ledger of the current program run, so a guard program that catches the
exception (or simply ignores a missing fact) still cannot allow the event: the sandbox reads
the ledger after the run and turns any entry into a denial naming what could not be read.
Outside a run (a reader called from plain Python) only the exception is raised.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import NoReturn

from typing_extensions import TypedDict

MAX_DETAIL_CHARS = 300
"""Details quote attacker text (a column name, a line of code): keep them short."""


class Unreadable(TypedDict):
    """One thing a reader could not read: a short stable `reason` code and a detail."""

    reason: str
    detail: str


class UnreadableEvidence(ValueError):
    """A reader met evidence it cannot read; the event must be denied with this reason."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


_LEDGER: ContextVar[list[Unreadable] | None] = ContextVar("guardagent_unreadable", default=None)


def unreadable(reason: str, detail: str) -> NoReturn:
    """Record `reason` in the current run's ledger and raise :class:`UnreadableEvidence`.

    Args:
        reason: A short stable code (`no_code`, `unparsable_code`, `unknown_column`, ...);
            metrics count denials by it.
        detail: One sentence for the user, naming what could not be read.

    """
    detail = detail if len(detail) <= MAX_DETAIL_CHARS else detail[:MAX_DETAIL_CHARS] + "..."
    ledger = _LEDGER.get()
    if ledger is not None:
        ledger.append(Unreadable(reason=reason, detail=detail))
    raise UnreadableEvidence(reason, detail)


def open_ledger() -> list[Unreadable]:
    """Start the ledger of one program run (in the child that runs it) and return it."""
    ledger: list[Unreadable] = []
    _LEDGER.set(ledger)
    return ledger


def describe(entries: list[Unreadable]) -> str:
    """One line for a decision: every distinct thing that could not be read."""
    seen: list[str] = []
    for entry in entries:
        text = f"{entry['reason']}: {entry['detail']}"
        if text not in seen:
            seen.append(text)
    return "; ".join(seen)
