"""The current date a trace's system messages state ("Today is 2025-01-09").

Read with the value reader (:mod:`guardagent.trace.found.locate`), so it sits above it:
:mod:`guardagent.trace.found.dates` (month names, years, the host's date) imports
nothing above it, and the dates / locate / scan circle is gone.
"""

from __future__ import annotations

from guardagent.trace.found.locate import extract_values

_TODAY_WORDS = ("today is", "current date", "today's date", "the date is", "date:", "today:")


def trace_year(system_texts: list[str]) -> int | None:
    """The year of the current date a trace's system messages state, if they state one.

    A full date within 40 characters after "today is", "current date", "date:" and the like.

    Args:
        system_texts: The system messages, in reading form.
    """
    for text in system_texts:
        for word in _TODAY_WORDS:
            at = text.find(word)
            if at == -1:
                continue
            window = text[at + len(word) : at + len(word) + 40]
            for found in extract_values(window, year=0):
                if found.value.kind == "date" and found.value.keys:
                    year = int(found.value.keys[0][5:9])
                    if year > 0:
                        return year
    return None
