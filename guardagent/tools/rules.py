"""The rule checks guard programs call: a reader's facts against the policy's table.

Readers (:mod:`guardagent.readers`) turn an event into facts; these functions compare those
facts with the policy literal of a program and return what is violated. They never read
event text themselves.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from guardagent.tools.compare import compare, unmet_requirements


def check_access(
    accessed: dict[str, list[str]], permissions: dict[str, list[str]]
) -> dict[str, list[str]]:
    """The accessed columns that the permissions do not allow.

    Args:
        accessed: Table -> columns the code reads (as from `ehr_accessed_columns`).
        permissions: Table -> columns the user's role may read. A table missing here is not
            readable at all, so every accessed column of it is inaccessible.

    Returns:
        Table -> sorted inaccessible columns; tables with nothing inaccessible are left out,
        so an empty dict means the access is allowed.

    """
    denied: dict[str, list[str]] = {}
    for table, cols in accessed.items():
        allowed = set(permissions.get(table, ()))
        bad = sorted({c for c in cols if c not in allowed})
        if bad:
            denied[table] = bad
    return denied


def check_rules(user_info: dict[str, Any], category: str, rules: list[dict[str, Any]]) -> list[str]:
    """Return the violation texts of the rules for `category` that the user does not meet.

    Each rule is ``{"category": str, "field": str, "op": str, "value": Any,
    "violation": str}`` and states a REQUIREMENT (e.g. ``age >= 18`` to book a hotel).
    Only rules whose category equals `category` (case-insensitive) apply. Fail closed: a
    field missing from `user_info` (or None), a value of the wrong type (e.g. "yes" for a
    bool, or 1 for True) or an uncomparable value counts as not meeting the requirement.

    Args:
        user_info: User facts from ``parse_user_info`` (never from the agent output).
        category: The action's category from ``web_action_category``.
        rules: The policy as a list of rule dicts. Ops: ==, !=, >=, >, <=, <, in, not in.

    Returns:
        The violation texts, in rule order without duplicates; ``[]`` when every applicable
        requirement is met or no rule applies (e.g. category "other").

    Raises:
        ValueError: When a rule is not a dict, lacks a key, or uses an unknown op.

    """
    wanted = str(category).strip().lower()
    return unmet_requirements(
        user_info, rules, "category", lambda rule: str(rule["category"]).strip().lower() == wanted
    )


def _applies(call: dict[str, Any], rule: dict[str, Any]) -> bool:
    """Whether a rule covers this call; a condition that cannot be evaluated counts as met."""
    tool = str(rule["tool"]).strip().lower()
    if tool not in ("*", str(call.get("name", "")).strip().lower()):
        return False
    raw = call.get("args")
    args: dict[str, Any] = raw if isinstance(raw, dict) else {}
    for cond in rule.get("when") or []:
        if not isinstance(cond, dict) or not {"arg", "op", "value"} <= set(cond):
            raise ValueError(f"each 'when' condition needs arg, op, value: {cond!r}")
        if cond["arg"] not in args:
            continue  # unknown argument value: fail closed, the rule applies
        holds = compare(args[cond["arg"]], cond["op"], cond["value"])
        if holds is False:
            return False
    return True


def check_tool_rules(
    call: dict[str, Any] | list[dict[str, Any]],
    user_info: dict[str, Any],
    rules: list[dict[str, Any]],
) -> list[str]:
    """Return the violation texts of the rules that cover `call` and the user does not meet.

    Each rule is ``{"tool": str, "when": [{"arg": str, "op": str, "value": Any}, ...],
    "field": str, "op": str, "value": Any, "violation": str}``: when the call's tool name
    equals ``tool`` (case-insensitive; ``"*"`` matches every tool) and every ``when``
    condition on the call's args holds, the user must satisfy ``user_info[field] <op>
    value``. ``when`` is optional. Category and amount arguments are read first
    (``read_call_args``: any alcoholic drink is ``"alcohol"``; an unplaced category or a
    negative amount is None). Fail closed: an argument missing from the call, None or of an
    uncomparable type makes its condition count as holding (the rule applies); a user field
    that is missing, None, of the wrong type (e.g. "yes" or 1 for True) or uncomparable
    counts as not meeting the requirement.

    Args:
        call: One call ``{"name", "args"}`` (an item of ``parse_tool_calls``), or the whole
            list from ``parse_tool_calls``: then every call is checked.
        user_info: User facts from ``parse_user_info(agent_input)`` (never the output).
        rules: The policy as rule dicts. Ops: ==, !=, >=, >, <=, <, in, not in.

    Returns:
        The violation texts in rule order without duplicates (over every call of a list);
        ``[]`` when no rule covers the call(s) or every covering requirement is met.

    Raises:
        ValueError: When a rule is not a dict, lacks a key, or uses an unknown op, or when
            `call` is neither a call dict nor a list of them (a call that cannot be read
            must not pass unchecked).

    """
    calls = call if isinstance(call, list) else [call]
    from guardagent.readers.call_values import read_call_args  # (imports the tools)

    calls = read_call_args(calls)  # categories and amounts as the shop and the bank read them
    violated = unmet_requirements(user_info, rules, "tool", lambda rule: False)  # rules valid?
    for pending in calls:
        if not isinstance(pending, dict):
            raise ValueError(f"a tool call must be a dict with name and args, got {pending!r:.80}")
        covered = partial(_applies, pending)
        for text in unmet_requirements(user_info, rules, "tool", covered):
            if text not in violated:
                violated.append(text)
    return violated
