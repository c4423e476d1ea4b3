"""Checkpoints that keep restoring: the project's types are on the serializer's allowlist.

LangGraph rebuilds a checkpointed object only when its type is allowed: by default it warns
("Deserializing unregistered type guardagent.decision.GuardDecision") and a future version
blocks it, as ``LANGGRAPH_STRICT_MSGPACK=true`` does now. Each check runs in a fresh
interpreter because LangGraph reads that variable when it is imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from guardagent.graph.serde import GUARD_TYPES

REPO = Path(__file__).resolve().parent.parent

RESTORE = """
import json, logging, sys
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
from langgraph.checkpoint.memory import InMemorySaver
from guardagent.decision import GuardDecision
from guardagent.graph.builder import build_graph
from guardagent.graph.serde import guard_serializer
from guardagent.policy.results import (Change, PolicyVerdict, Remediation, Remedy, RuleResult,
                                       SafetyProbability)

rule = RuleResult(id="r1", status="violated", deciding={"p": True}, explanation="why")
remedy = Remediation(feasible=True, remedies=[Remedy(changes=[Change(
    predicate="p", kind="condition", before=True, after=False, how="make p false")])])
decision = GuardDecision(allowed=False, label=1, reason="denied", rules=[rule],
                         remediation=remedy, safety_probability=0.25,
                         unreadable=[{"reason": "r", "detail": "d"}])
verdict = PolicyVerdict(policy="p@1", allowed=False, rules=[rule], remediation=remedy)
result = {}
for name in sys.argv[1:]:
    print("---", name, file=sys.stderr, flush=True)
    saver = InMemorySaver() if name == "default" else InMemorySaver(serde=guard_serializer())
    graph = build_graph().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.update_state(config, {"guard_decision": decision, "policy_verdict": verdict},
                       as_node="decide")
    values = graph.get_state(config).values
    restored, again = values["guard_decision"], values["policy_verdict"]
    result[name] = {
        "same": type(restored) is GuardDecision and restored == decision
                and type(again) is PolicyVerdict and again == verdict,
        "nested": type(restored.rules[0]) is RuleResult
                  and type(restored.remediation.remedies[0].changes[0]) is Change,
    }
print(json.dumps(result))
"""


def _restore(strict: bool, *serializers: str) -> tuple[dict[str, object], str]:
    env = {**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true" if strict else "false"}
    out = subprocess.run(
        [sys.executable, "-c", RESTORE, *serializers],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_guard_state_restores_under_strict_msgpack() -> None:
    result, log = _restore(True, "guard")
    assert result == {"guard": {"same": True, "nested": True}}
    assert "Blocked deserialization" not in log


def test_registered_types_restore_without_the_unregistered_warning() -> None:
    """The default serializer restores with LangGraph's warning (what registration fixes);
    the project's serializer restores the same state silently."""
    result, log = _restore(False, "guard", "default")
    assert result == {name: {"same": True, "nested": True} for name in ("guard", "default")}
    guard_log, _, default_log = log.partition("--- default")
    assert "unregistered type" not in guard_log
    assert "Deserializing unregistered type guardagent.decision.GuardDecision" in default_log


def test_the_list_reaches_every_model_the_decision_nests() -> None:
    names = {name for _, name in GUARD_TYPES}
    assert {
        "GuardDecision",
        "RuleResult",
        "Remediation",
        "Remedy",
        "Change",
        "PolicyVerdict",
        "SafetyProbability",
    } <= names


def test_langgraph_json_registers_the_same_types_for_the_server() -> None:
    config = json.loads((REPO / "langgraph.json").read_text())
    listed = config["checkpointer"]["serde"]["allowed_msgpack_modules"]
    assert sorted(tuple(item) for item in listed) == list(GUARD_TYPES)
