"""History a conversation summary hides: a history predicate answers only what it can see.

A summary (:mod:`~guardagent.trace.text.summaries`) stands where earlier messages were, and
their calls went with them: two payments made before it are not in the trace. A predicate
over the thread's calls (``at_most``, ``never_after``, ``called_before``, ...) that counted
only the visible ones would hold for a third payment. So, in a trace holding a summary, a
history predicate keeps only an answer no hidden call could change (a limit already
exceeded by visible calls, a visible earlier call found), and is open (None) otherwise: a
rule that needs it denies, naming the summary.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from guardagent.trace.document.shapes import Trace
from guardagent.trace.predicates.engine import TraceFacts
from guardagent.trace.predicates.fact import Fact
from guardagent.trace.text.summaries import SUMMARY_SOURCE

HistoryPredicate = Callable[..., Fact]
Window = Callable[[tuple[Any, ...], dict[str, Any]], int]


def last_summary(trace: Trace) -> int | None:
    """The last summary message of the trace (None: it holds none)."""
    return next((m.index for m in reversed(trace.messages) if m.source == SUMMARY_SOURCE), None)


def summary_hides(
    certain: bool | None, window: Window | None = None
) -> Callable[[HistoryPredicate], HistoryPredicate]:
    """Make a history predicate open where calls a summary replaced could change it.

    Args:
        certain: The value hidden calls cannot change (True: a visible call found is
            found; False: a visible call over the limit stays over); None: neither.
        window: For predicates over the last `n` calls: `n`, from the predicate's
            arguments. When at least that many calls follow the summary, every call the
            predicate looks at is visible and its answer stands.
    """

    def wrap(func: HistoryPredicate) -> HistoryPredicate:
        @functools.wraps(func)
        def run(facts: TraceFacts, *args: Any, **kwargs: Any) -> Fact:
            fact = func(facts, *args, **kwargs)
            if fact.value is None or fact.value is certain:
                return fact
            at = facts.memo.get("last_summary", -1)
            if at == -1:
                at = facts.memo["last_summary"] = last_summary(facts.trace)
            if at is None:
                return fact
            if window is not None:
                after = sum(1 for c in facts.trace.calls if c.index > at)
                if after >= window(args, kwargs):
                    return fact
            return Fact(
                fact.name,
                None,
                fact.sources,
                f"{fact.detail}; but a conversation summary (message {at}) replaced "
                "earlier messages, whose calls are not known",
            )

        return run

    return wrap


def steps(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """The `n` of ``within_steps(pattern, n)``."""
    n = kwargs["n"] if "n" in kwargs else args[1]
    return int(n)
