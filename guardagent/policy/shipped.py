"""Predicates of the shipped policy models, from the facts the existing readers produce.

One function per shipped profile turns reader output into ``{predicate: True | False |
None}`` for its policy model (`guardagent/policies/<profile>.yaml`). They are toolbox
functions, so a guard program under a policy model reads the event with the usual readers
and then assigns what these return::

    user = parse_user_info(agent_input)
    call = parse_tool_call(agent_output)
    for name, value in tool_calls_predicates(call, user).items():
        assign(name, value)

Comparisons reuse :func:`guardagent.tools.compare.compare`, the strict comparison the rule
checks of the program path use (1 is not True, a string does not compare with a number), so
both paths read a fact the same way; a fact that does not compare becomes None (open), which
the verifier turns into a denial when a rule depends on it.
"""

from __future__ import annotations

from typing import Any

from guardagent.readers.eicu_schema import EICU_COLUMNS
from guardagent.readers.evidence import unreadable
from guardagent.tools.compare import compare

EICU_ROLES = {
    "physician": "role_is_physician",
    "nursing": "role_is_nursing",
    "general administration": "role_is_general_administration",
}

WEB_ACTIONS = {
    "car": "buys_or_rents_car",
    "media": "searches_media",
    "hotel": "books_hotel",
    "job": "applies_for_job",
    "purchase": "purchases_goods",
    "flight": "books_flight",
}

TOOL_ACTIONS = {
    "transfer_funds": "calls_transfer_funds",
    "delete_file": "calls_delete_file",
    "place_order": "calls_place_order",
}

Values = dict[str, bool | None]


def _fact(facts: Any, key: str, op: str, expected: Any) -> bool | None:
    """`facts[key] <op> expected`, or None when the fact is missing, None or uncomparable."""
    if not isinstance(facts, dict) or facts.get(key) is None:
        return None
    return compare(facts[key], op, expected)


def _negated(value: bool | None) -> bool | None:
    return None if value is None else not value


def eicu_ac_predicates(role: str, accessed: dict[str, list[str]]) -> dict[str, bool | None]:
    """Predicates of the `eicu-ac` policy model for one EHRAgent event.

    Args:
        role: The user's identity from ``parse_identity(agent_input)``.
        accessed: Table -> columns from ``ehr_accessed_columns(agent_output)``.

    Returns:
        ``role_is_<role>`` for the three roles (all False for an unknown identity, so every
        read is denied) and ``reads_<table>_<column>: True`` for every column read; tables
        follow from the action tree. A table loaded without reading a column reads nothing.

    Raises:
        UnreadableEvidence: a table or column the policy does not know (fail closed).
    """
    values: Values = {pred: role == name for name, pred in EICU_ROLES.items()}
    for table, cols in accessed.items():
        known = EICU_COLUMNS.get(table)
        for col in cols:
            if known is None or col not in known:
                unreadable(
                    "column_outside_policy", f"the policy model has no predicate for {table}.{col}"
                )
            values[f"reads_{table}_{col}"] = True
    return values


def mind2web_sc_predicates(category: str, user_info: dict[str, Any]) -> dict[str, bool | None]:
    """Predicates of the `mind2web-sc` policy model for one SeeAct event.

    Args:
        category: From ``web_action_category(task, action)``; "other" takes no action.
        user_info: From ``parse_user_info(agent_input)`` (never the agent output).

    Returns:
        The category's action set True, and the six user conditions, each None when the
        fact is missing or of the wrong type (e.g. ``"yes"`` for a boolean).
    """
    values: Values = {}
    action = WEB_ACTIONS.get(str(category).strip().lower())
    if action is not None:
        values[action] = True
    values["user_has_drivers_license"] = _fact(user_info, "dr_license", "==", True)
    values["user_is_domestic"] = _fact(user_info, "domestic", "==", True)
    values["user_age_under_18"] = _negated(_fact(user_info, "age", ">=", 18))
    values["user_age_under_15"] = _negated(_fact(user_info, "age", ">=", 15))
    values["user_is_member"] = _fact(user_info, "membership", "==", True)
    values["user_is_vaccinated"] = _fact(user_info, "vaccine", "==", True)
    return values


def _any_call(
    calls: list[dict[str, Any]], tool: str, arg: str, op: str, expected: Any
) -> bool | None:
    """Whether a call to `tool` has `arg <op> expected`, over all such calls.

    True if one does; else None if one's argument is missing or does not compare (it
    might); else False.
    """
    found: bool | None = False
    for call in calls:
        if str(call.get("name", "")).strip().lower() != tool:
            continue
        value = _fact(call.get("args"), arg, op, expected)
        if value is True:
            return True
        if value is None:
            found = None
    return found


def tool_calls_predicates(
    calls: list[dict[str, Any]] | dict[str, Any], user_info: dict[str, Any]
) -> dict[str, bool | None]:
    """Predicates of the `tool-calls` policy model for the pending tool call(s).

    Args:
        calls: Every pending call, from ``parse_tool_calls(agent_output)`` (or one call
            from ``parse_tool_call``); a call to another tool, or none, takes no action.
        user_info: From ``parse_user_info(agent_input)`` (never the agent output).

    Returns:
        Each called tool's action set True; the argument conditions over the calls to
        their tool (``transfer_amount_over_1000`` is True if any transfer is over 1000,
        None if none is but one's amount is missing or does not compare); the user
        conditions (None when the fact is missing or does not compare). Categories and
        amounts are read as the shop and the bank read them (``read_call_args``): any
        alcoholic drink is alcohol; an unplaced category or a negative amount is open.
    """
    pending = [calls] if isinstance(calls, dict) else list(calls or [])
    from guardagent.readers.call_values import read_call_args  # (imports the tools)

    pending = read_call_args([c for c in pending if isinstance(c, dict) and c.get("name")])
    values: Values = {}
    for call in pending:
        action = TOOL_ACTIONS.get(str(call.get("name", "")).strip().lower())
        if action is not None:
            values[action] = True
    values["transfer_amount_over_1000"] = _any_call(pending, "transfer_funds", "amount", ">", 1000)
    values["order_category_is_alcohol"] = _any_call(
        pending, "place_order", "category", "==", "alcohol"
    )
    values["user_is_verified"] = _fact(user_info, "verified", "==", True)
    values["user_role_is_admin"] = _fact(user_info, "role", "==", "admin")
    values["user_age_21_or_over"] = _fact(user_info, "age", ">=", 21)
    return values
