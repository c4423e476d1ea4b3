"""Strict comparison for policy literals (`{"op": ">=", "value": 18}`), shared by rule checks.

Policies are written by people and values come from parsed text, so comparisons are strict:
booleans compare only with booleans (1 is not True) and uncomparable values (a string against a
number) are reported as such instead of raising or silently passing.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
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


def unmet_requirements(
    user_info: Any, rules: Iterable[Any], scope: str, applies: Callable[[dict[str, Any]], bool]
) -> list[str]:
    """Violation texts of the applicable rules whose requirement the user does not meet.

    Each rule states a requirement `user_info[field] <op> value` plus its `violation` text and
    a `scope` key (what it applies to, judged by `applies`). Fail closed: a missing or None
    field, or a value that does not compare, does not meet the requirement. Texts come in
    rule order without duplicates.

    Raises:
        ValueError: A rule that is not a dict, lacks a key, or uses an unknown op.
    """
    info = user_info if isinstance(user_info, dict) else {}
    violations: list[str] = []
    for rule in rules:
        if not isinstance(rule, dict):
            raise ValueError(f"each rule must be a dict, got {type(rule).__name__}")
        missing = [k for k in (scope, "field", "op", "value", "violation") if k not in rule]
        if missing:
            raise ValueError(f"rule {rule!r} lacks {missing}")
        check_op(rule["op"])
        if not applies(rule):
            continue
        actual = info.get(rule["field"])
        met = actual is not None and compare(actual, rule["op"], rule["value"]) is True
        if not met and rule["violation"] not in violations:
            violations.append(str(rule["violation"]))
    return violations
