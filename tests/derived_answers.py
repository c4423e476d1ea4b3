"""Answers a scripted model gives when asked to derive a shipped profile's rules.

They are the shipped policy models (`guardagent/policies/*.yaml`) in the JSON the derivation
asks for, with each expression written over `agent_input` / `agent_output`, as a model
that read the guard request and the toolbox would write them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

import guardagent

POLICIES = Path(guardagent.__file__).parent / "policies"
WEB_CATEGORY = "web_action_category(parse_task(agent_input), seeact_final_action(agent_output))"
_REWRITES = {"web_action_category(task, action)": WEB_CATEGORY}


def policy_answer(name: str, edit: dict[str, Any] | None = None) -> dict[str, Any]:
    """The shipped policy `name` as a derivation answer (`edit`: rule id -> field changes)."""
    doc = yaml.safe_load((POLICIES / f"{name}.yaml").read_text())
    predicates = []
    for pred in doc["predicates"]:
        pred = dict(pred)
        how = pred.get("assign")
        if isinstance(how, dict) and "expression" in how:
            text = how["expression"]
            for old, new in _REWRITES.items():
                text = text.replace(old, new)
            pred["assign"] = {"expression": text}
        predicates.append(pred)
    rules = []
    for rule in doc["rules"]:
        rule = {
            k: v
            for k, v in rule.items()
            if k in ("id", "logic", "policy", "remediation", "actions", "hard")
        }
        rule.update((edit or {}).get(rule["id"], {}))
        rules.append(rule)
    return {"predicates": predicates, "rules": rules, "violations": doc.get("violations", "rules")}


def answer_text(name: str, edit: dict[str, Any] | None = None) -> str:
    """The answer as a model's reply text (a fenced JSON block)."""
    return "```json\n" + json.dumps(policy_answer(name, edit)) + "\n```"
