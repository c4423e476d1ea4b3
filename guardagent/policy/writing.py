"""Writing a policy model as YAML in the canonical, diff-friendly layout.

Fixed key order, defaults left out, short lists on one line; ``load_policy_text(dump_policy(
m)) == m`` (tested), so tools can rewrite a policy and the diff shows only what changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    pass

from guardagent.policy.schema import (
    FORMAT,
    PolicyModel,
    Predicate,
    Rule,
)


class _Flow(list[str]):
    """A short list written on one line (`[a, b]`), so a change is a one-line diff."""


def _flow_representer(dumper: yaml.SafeDumper, data: _Flow) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Flow, _flow_representer)


def _predicate_entry(pred: Predicate) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": pred.name, "kind": pred.kind}
    if pred.description:
        entry["description"] = pred.description
    if pred.parent is not None:
        entry["parent"] = pred.parent
    if pred.target is not None:
        entry["target"] = pred.target
    if not pred.permitted:
        entry["permitted"] = False
    if pred.assigned_by is not None:
        entry["assign"] = {pred.assigned_by.kind: pred.assigned_by.text}
    if pred.probability is not None:
        entry["probability"] = pred.probability
    if not pred.changeable:
        entry["changeable"] = False
    return entry


def _rule_entry(rule: Rule) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": rule.id, "logic": rule.logic}
    for key in ("policy", "explanation", "remediation", "source"):
        if getattr(rule, key):
            entry[key] = getattr(rule, key)
    if rule.risk_types:
        entry["risk_types"] = _Flow(rule.risk_types)
    if rule.actions:
        entry["actions"] = _Flow(rule.actions)
    if rule.weight != 1.0:
        entry["weight"] = rule.weight
    if not rule.hard:
        entry["hard"] = False
    if rule.span:
        entry["span"] = rule.span
    if rule.review is not None:
        entry["review"] = rule.review
    return entry


def dump_policy(model: PolicyModel) -> str:
    """The model as YAML in the canonical layout (fixed key order, defaults left out).

    `load_policy_text(dump_policy(m)) == m` (tested), so tools can rewrite a policy (merge
    predicates, prune rules) and the diff shows only what changed.
    """
    doc: dict[str, Any] = {"format": FORMAT, "name": model.name, "version": model.version}
    if model.description:
        doc["description"] = model.description
    doc["threshold"] = model.threshold
    if model.violations != "rules":
        doc["violations"] = model.violations
    if model.labels is not None:
        doc["labels"] = model.labels.to_json()
    if model.values is not None:
        doc["values"] = model.values.to_json()
    if model.secrets is not None:
        doc["secrets"] = model.secrets.to_json()
    if model.approved_only:
        doc["approved_only"] = True
    doc["predicates"] = [_predicate_entry(p) for p in model.predicates]
    doc["rules"] = [_rule_entry(r) for r in model.rules]
    text: str = yaml.dump(
        doc,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
        default_flow_style=False,
    )
    return text
