"""How deep, and how many, host values a trace holds: walked by nodes visited, not by size.

A host hands the guard Python objects, not JSON text, and Python objects may share
sub-objects: ``x = [x, x]`` forty times is 41 lists in memory but 2**40 values to whoever
walks it as a tree (a JSON encoder, ``model_dump``, every reader after this one). And a list
may contain itself. The walk here is the first to meet such a value: it visits the values as
a tree, a level at a time (no recursion), and stops when either bound is passed:

- depth: :data:`MAX_NESTING` levels (no reader needs more);
- nodes: :func:`max_nodes` of ``max_bytes`` (each value of a trace's JSON takes two bytes
  at least, ``1,`` or ``[]``, so a trace of at most ``max_bytes`` has at most half as many;
  never fewer than :data:`MIN_NODES`, for a small limit).

So the walk is linear in what it may visit (a value shared a million times is visited a
million times, then refused), and a value within both bounds is one every later reader can
walk as a tree in bounded time and memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

MAX_NESTING = 64
"""Objects and lists nested deeper than this (a message, its content parts, arguments) make the
trace unparsable: every reader after this one walks values, and none needs more depth."""
MIN_NODES = 1 << 16
"""Values a trace may hold at least, whatever its byte limit."""

_TOO_MANY = (
    "more than {} values to read (objects or lists shared or repeated, read as a "
    "tree, are more than a trace of max_trace_bytes holds)"
)

CONTAINERS = (Mapping, list, tuple)
PLAIN = frozenset({dict, list, tuple})
LEAVES = frozenset({str, int, float, bool, type(None)})
"""Types that are never containers (checked by exact type first: the ABC check is slow)."""


def max_nodes(max_bytes: int) -> int:
    """Values (of every level, shared ones counted each time) a trace of `max_bytes` holds."""
    return max(max_bytes // 2, MIN_NODES)


def is_container(value: Any) -> bool:
    """``isinstance(value, (Mapping, list, tuple))``, plain types checked without the ABC."""
    kind = type(value)
    return kind in PLAIN or (kind not in LEAVES and isinstance(value, CONTAINERS))


class Problem(NamedTuple):
    """Why values cannot be read as a tree: too deep, or too large (``large``)."""

    large: bool
    text: str


def nesting_problem(values: Sequence[Any], nodes: int) -> Problem | None:
    """What makes the values unreadable as a tree, or None (see :func:`walk`)."""
    return walk(values, nodes).problem


class Walked(NamedTuple):
    """What a :func:`walk` visited, and what stopped it (None: nothing)."""

    visited: int
    problem: Problem | None


def walk(values: Sequence[Any], nodes: int) -> Walked:
    """Walk the values as a tree (see the module docstring).

    Each value's depth is counted from its own top, so a message list is checked in one
    pass; `nodes` bounds the values visited in all (shared ones each time they are met).

    Returns:
        The values visited (every value of the tree, when it was read to the end), and the
        problem: None, nested too deep, or a tree of more than `nodes` values (``large``).
    """
    level = [value for value in values if is_container(value)]
    visited, depth = len(values), 0
    while level:
        if depth >= MAX_NESTING:
            return Walked(
                visited, Problem(False, f"objects or lists are nested more than {MAX_NESTING} deep")
            )
        kids = [
            item.values()
            if type(item) is dict or (type(item) not in PLAIN and isinstance(item, Mapping))
            else item
            for item in level
        ]
        visited += sum(map(len, kids))  # counted before the next level is built
        if visited > nodes:
            return Walked(visited, Problem(True, _TOO_MANY.format(nodes)))
        level = [
            child
            for children in kids
            for child in children
            if type(child) not in LEAVES and is_container(child)
        ]
        depth += 1
    return Walked(visited, None)
