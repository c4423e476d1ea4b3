"""Dates, read into ``date:YYYY-MM-DD`` keys.

Forms: ISO (``2024-05-14``, a time after it ignored), numeric ``14.05.2024`` and
``05/14/2024`` (day-month and month-day readings, both when both are valid; two-digit
years are 20xx), ``14 May 2024``, ``14th of May``, ``May 14, 2024`` (English month names,
full or abbreviated). A date written without a year (``June 13``, ``13 June``) is a date in
the trace's year: the year of the trace's own current date when it states one (a system
message's "today is ..."), else the host's (see :func:`trace_year`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date

MONTHS = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
MONTH = "(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + ")"


def iso(year: int, month: int, day: int) -> str | None:
    """``YYYY-MM-DD`` of a valid date, else None."""
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def full_year(text: str) -> int:
    """A written year (two digits are 20xx)."""
    value = int(text)
    return value + 2000 if len(text) == 2 else value


_TODAY: ContextVar[date | None] = ContextVar("guardagent_today", default=None)


def host_year() -> int:
    """The current year: the deployment's stated date (:func:`today_is`), else the host's."""
    return (_TODAY.get() or date.today()).year


@contextmanager
def today_is(day: date | None) -> Iterator[None]:
    """Read year-less dates in `day`'s year within the block (None: the host's clock).

    A deployment whose host clock is not the users' date (a replay, a test, a time zone near
    New Year) states it (`GuardContext.today`, ``GUARDAGENT_TODAY``); a trace's own "Today
    is ..." line still wins for that trace.
    """
    token = _TODAY.set(day)
    try:
        yield
    finally:
        _TODAY.reset(token)
