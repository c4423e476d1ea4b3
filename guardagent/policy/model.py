"""The policy model: predicates, rules and the action tree, loaded from and dumped to YAML.

The one import path for all of it: the types and rule sign-off live in :mod:`.schema`,
reading a file (with every problem's position) in :mod:`.reading`, writing one in
:mod:`.writing`; this module re-exports their public names.

A policy model is what people read and audit, so the file is the source of truth and is kept
diff-friendly: one entry per predicate and rule, a fixed key order, defaults left out, and a
`format` line so a future layout can be told apart. Loading reports every problem it finds,
each with the file, line and column it comes from (for a rule's logic: the column inside the
logic string, mapped into the file), instead of stopping at the first.

Example::

    format: guardagent-policy/1
    name: publishing
    version: "1"
    threshold: 0.5
    predicates:
      - name: publish_data
        kind: action
        description: The agent publishes data.
        assign: {tool: parse_tool_call}
      - name: user_consent
        kind: condition
        description: The user consented to publishing.
        assign: {query: "Did the user consent to publishing this data?"}
        probability: 0.9
    rules:
      - id: consent-before-publishing
        logic: NOT user_consent IMPLIES NOT publish_data
        policy: Personal data is published only with the user's consent.
        remediation: Ask the user for consent first, or do not publish.
"""

from __future__ import annotations

from guardagent.policy.reading import (
    load_policy,
    load_policy_text,
    policy_digest,
    policy_path,
    resolve_policy,
    shipped_policies,
)
from guardagent.policy.schema import (
    FORMAT,
    REVIEW_STATES,
    SHIPPED_DIR,
    SIGNED_OFF,
    ActionTree,
    AssignedBy,
    AssignKind,
    Location,
    PolicyError,
    PolicyIssue,
    PolicyModel,
    Predicate,
    PredicateKind,
    ReviewState,
    Rule,
    ViolationsMode,
    guarding_model,
    guards,
    logic_position,
)
from guardagent.policy.writing import dump_policy

__all__ = [
    "ActionTree",
    "AssignKind",
    "AssignedBy",
    "FORMAT",
    "Location",
    "PolicyError",
    "PolicyIssue",
    "PolicyModel",
    "Predicate",
    "PredicateKind",
    "REVIEW_STATES",
    "ReviewState",
    "Rule",
    "SHIPPED_DIR",
    "SIGNED_OFF",
    "ViolationsMode",
    "dump_policy",
    "guarding_model",
    "guards",
    "load_policy",
    "load_policy_text",
    "logic_position",
    "policy_digest",
    "policy_path",
    "resolve_policy",
    "shipped_policies",
]
