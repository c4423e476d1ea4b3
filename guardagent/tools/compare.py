"""Strict comparison for policy literals (`{"op": ">=", "value": 18}`), shared by rule checks.

Policies are written by people and values come from parsed text, so comparisons are strict:
booleans compare only with booleans (1 is not True) and uncomparable values (a string against a
number) are reported as such instead of raising or silently passing.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}


def check_op(op: Any) -> None:
    """Raise ValueError for an operator the policy language does not have."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; use one of {sorted(OPS)}")


def compare(actual: Any, op: str, expected: Any) -> bool | None:
    """`actual <op> expected`, or None when the two cannot be compared."""
    check_op(op)
    if (isinstance(actual, bool) or isinstance(expected, bool)) and type(actual) is not type(
        expected
    ):
        return None
    try:
        return bool(OPS[op](actual, expected))
    except TypeError:
        return None
