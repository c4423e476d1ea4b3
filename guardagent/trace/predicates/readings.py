"""Two readings of a call pattern's arguments: as written, and as the mail server reads them.

A pattern such as ``never_after("send_email", args={"to": "*@evil.example"})`` compares an
earlier call's argument with a glob. ``eve@evil.example, bob@x.example`` does not end in
``@evil.example`` as text, yet the server sent the mail to eve too. :func:`both_readings`
runs a history or sequence predicate a second time, reading every argument that holds
addresses as its addresses (:func:`~guardagent.trace.sources.temporal.sent_pieces`; one address
matching is enough, as for a list), but only when the first run compared such a value.
When the two answers differ, or an address cannot be read, the predicate is open (None):
a rule that needs it either way denies, however it is written.

Values are compared loosely (by words, any reading of a number) and, when that answered
otherwise for some value than a strict comparison would
(:func:`~guardagent.trace.sources.temporal.strict_values`: ``./secrets.txt`` is not
``secrets.txt``, the text ``1,500`` is not the amount 1500), the predicate is run again
strictly: answers that differ leave it open too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from guardagent.trace.predicates.engine import TraceFacts
from guardagent.trace.predicates.fact import Fact
from guardagent.trace.sources.temporal import UnsureReading, pattern_reading, strict_values

PatternPredicate = Callable[..., Fact]


def both_readings(func: PatternPredicate) -> PatternPredicate:
    """Wrap a predicate whose call patterns may compare argument values (see the module)."""

    @functools.wraps(func)
    def run(facts: TraceFacts, *args: Any, **kwargs: Any) -> Fact:
        with strict_values(False) as looser:
            fact = _addresses(func, facts, *args, **kwargs)
        if not looser or fact.value is None:
            return fact
        with strict_values(True):
            strict = _addresses(func, facts, *args, **kwargs)
        if strict.value == fact.value:
            return fact
        return Fact(
            fact.name,
            None,
            fact.sources + strict.sources,
            f"{fact.detail}; but compared with every character and every reading of "
            f"a number: {strict.detail}",
        )

    return run


def _addresses(func: PatternPredicate, facts: TraceFacts, *args: Any, **kwargs: Any) -> Fact:
    """One run of `func` as written and, when it compared addresses, as the server reads them."""
    with pattern_reading(False) as touched:
        written = func(facts, *args, **kwargs)
    if not touched:
        return written
    try:
        with pattern_reading(True):
            sent = func(facts, *args, **kwargs)
    except UnsureReading as exc:
        return Fact(
            written.name,
            None,
            written.sources,
            f"{written.detail}; but an "
            f"argument holding addresses does not read as addresses ({exc})",
        )
    if sent.value == written.value:
        return written
    return Fact(
        written.name,
        None,
        written.sources + sent.sources,
        f"{written.detail}; but as the mail server reads the addresses: {sent.detail}",
    )
