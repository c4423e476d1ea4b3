r"""Comparison of policy literals (`{"op": ">=", "value": 18}`) with values read from events.

Policies are written by people; the values they are compared with often are not: a tool
call's arguments are chosen by the model (and whoever steers it through its input), so a
rule `category == "alcohol"` meets `"Alcohol"`, `"ａｌｃｏｈｏｌ"`, `"al\\u200bcohol"`, `NaN`
or `"5000"`. A comparison here therefore either judges the value as the literal it spells or
reports that the two cannot be compared (None), and the callers fail closed on None: a
`when` condition that cannot be evaluated holds (the rule applies) and a requirement that
cannot be evaluated is unmet.

- Strings are compared after :func:`normalise_text` (Unicode NFKC, invisible format
  characters dropped, casefolded, whitespace collapsed), by equality only: string order
  (`"10" < "9"`) is no policy a rule can rely on, so ordering strings is uncomparable.
- Numbers (int, float, Decimal, Fraction) compare with numbers; NaN and ±infinity compare
  with nothing.
- Booleans compare only with booleans (1 is not True), by equality only.
- Anything else (None, a list or dict argument, a string against a number) is uncomparable.
- A list, tuple or set value is a set of allowed literals: `in` / `not in` test membership
  with the same normalisation elementwise, and `==` / `!=` with such a value mean `in` /
  `not in` (a scalar never equals a list, so the literal reading would be a rule that never
  holds: an author who writes a list means "one of").

Normalisation only removes spelling: no normalisation makes `"wine"` equal `"alcohol"`.
A rule that means a class of things lists its members:
`{"arg": "category", "op": "in", "value": ["alcohol", "wine", "beer", "spirits"]}`.
"""

from __future__ import annotations

import math
import numbers
import operator
import unicodedata
from collections.abc import Callable, Iterable
from decimal import Decimal
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
ORDER_OPS = frozenset({">=", ">", "<=", "<"})
MEMBERSHIP_OPS = frozenset({"in", "not in"})
LITERAL_SETS = (list, tuple, set, frozenset)


def check_op(op: Any) -> None:
    """Raise ValueError for an operator the policy language does not have."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; use one of {sorted(OPS)}")


def check_literal(op: Any, value: Any) -> None:
    """Raise ValueError for a rule whose op and value do not go together.

    `in` / `not in` need a list of literals (a string value would make membership a
    substring test, which `""` and `"l"` pass), and a list has no order to compare with.
    """
    check_op(op)
    if op in MEMBERSHIP_OPS and not isinstance(value, LITERAL_SETS):
        raise ValueError(f"op {op!r} needs a list value, got {type(value).__name__}: {value!r}")
    if op in ORDER_OPS and isinstance(value, LITERAL_SETS):
        raise ValueError(f"op {op!r} cannot compare with a list value {value!r}")


def normalise_text(text: str) -> str:
    r"""The spelling-free form of a string, to compare a value with a policy literal.

    NFKC, format characters (Unicode category Cf: zero-width spaces and joiners, soft
    hyphen, BOM, bidi marks) dropped, casefolded, surrounding whitespace stripped and inner
    runs of whitespace made one space.
    `"Alcohol"`, `" ALCOHOL "`, full-width `"ａｌｃｏｈｏｌ"` and `"al\\u200bcohol"` (zero-width
    space: Unicode category Cf) all become `"alcohol"`; `"red  wine"` becomes `"red wine"`.
    """
    text = unicodedata.normalize("NFKC", text)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    # Folding can yield text that is not in NFKC (as in Unicode's NFKC_Casefold): once more.
    text = unicodedata.normalize("NFKC", text.casefold())
    return " ".join(text.split())


def _kind(value: Any) -> str | None:
    """The comparison kind of a scalar: "bool", "number", "text", or None (uncomparable)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, numbers.Real | Decimal):  # Decimal is no numbers.Real
        return "number"
    if isinstance(value, str):
        return "text"
    return None


def _finite(value: Any) -> bool:
    """Whether a number is neither NaN nor infinite (an int always is, however large)."""
    if isinstance(value, numbers.Integral):
        return True
    if isinstance(value, Decimal):
        return value.is_finite()
    try:
        return math.isfinite(value)
    except (TypeError, ValueError, OverflowError):
        return False


def _compare_scalar(actual: Any, op: str, expected: Any) -> bool | None:
    kind = _kind(actual)
    if kind is None or kind != _kind(expected):
        return None
    if kind == "number":
        if not (_finite(actual) and _finite(expected)):
            return None
    elif op in ORDER_OPS:
        return None  # strings and booleans have no order a policy can rely on
    elif kind == "text":
        actual, expected = normalise_text(actual), normalise_text(expected)
    try:
        return bool(OPS[op](actual, expected))
    except (TypeError, ValueError, ArithmeticError):
        return None


def _member(actual: Any, literals: Iterable[Any]) -> bool | None:
    """True if `actual` equals one literal; False if it compares unequal to all; else None."""
    uncomparable = False
    for literal in literals:
        equal = _compare_scalar(actual, "==", literal)
        if equal:
            return True
        uncomparable = uncomparable or equal is None
    return None if uncomparable else False


def compare(actual: Any, op: str, expected: Any) -> bool | None:
    """`actual <op> expected` under the policy semantics above, or None when uncomparable.

    Args:
        actual: The value read from the event (a tool argument, a user fact).
        op: One of ``==, !=, >=, >, <=, <, in, not in``.
        expected: The rule's literal: a string, number or bool, or a list of them for
            membership (`in`, `not in`, and `==` / `!=`, which then mean membership).

    Returns:
        The comparison's truth, or None when the two cannot be compared (NaN, infinity, a
        bool against a number, a string against a number, strings or bools under an order,
        a non-scalar `actual`): callers treat None as "condition holds" / "requirement unmet".
        Note that `"wine"` is not `"alcohol"` under any normalisation: use membership.

    Raises:
        ValueError: An unknown op, `in`/`not in` without a list value, or an order op with
            a list value (a malformed rule, not a value to judge).
    """
    check_literal(op, expected)
    if isinstance(expected, LITERAL_SETS):
        member = _member(actual, expected)
        if member is None or op in ("==", "in"):
            return member
        return not member
    return _compare_scalar(actual, op, expected)


def unmet_requirements(
    user_info: Any, rules: Iterable[Any], scope: str, applies: Callable[[dict[str, Any]], bool]
) -> list[str]:
    """Violation texts of the applicable rules whose requirement the user does not meet.

    Each rule states a requirement `user_info[field] <op> value` plus its `violation` text and
    a `scope` key (what it applies to, judged by `applies`). Fail closed: a missing or None
    field, or a value that does not compare (see :func:`compare`: NaN, infinity, wrong type),
    does not meet the requirement. Texts come in rule order without duplicates.

    Raises:
        ValueError: A rule that is not a dict, lacks a key, uses an unknown op, or pairs its
            op with a value it cannot take (see :func:`check_literal`).
    """
    info = user_info if isinstance(user_info, dict) else {}
    violations: list[str] = []
    for rule in rules:
        if not isinstance(rule, dict):
            raise ValueError(f"each rule must be a dict, got {type(rule).__name__}")
        missing = [k for k in (scope, "field", "op", "value", "violation") if k not in rule]
        if missing:
            raise ValueError(f"rule {rule!r} lacks {missing}")
        check_literal(rule["op"], rule["value"])
        if not applies(rule):
            continue
        actual = info.get(rule["field"])
        met = actual is not None and compare(actual, rule["op"], rule["value"]) is True
        if not met and rule["violation"] not in violations:
            violations.append(str(rule["violation"]))
    return violations
