"""ST-Web-style policies as one deployment profile plus a task policy per task (issue 33).

The `web-tasks` example guards a web agent on an issue tracker with one profile (its labels
and the rules every task shares: stay on the task's pages, ask the user before a
destructive click and get a plain yes, never type a value found only in page text, a
task's secret goes only into a password field) and a task policy per task (its pages, the
question it must ask, its secrets, its contiguous steps), kept in `tasks/` and carried by
each example trace as the host attaches it. Every trace is replayed action by action;
benign ones pass every action, violating ones stop at the first harmful action, by the
rule they name. The traces and tasks are synthetic, written for this example.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardagent.agent import GuardAgent
from guardagent.decision import GuardDecision
from guardagent.policy.check import check_policy
from guardagent.profiles.loader import load_profile
from guardagent.profiles.scaffold import check_trace_profile
from guardagent.trace import parse_trace
from tests.guards import MakeGuard

EXAMPLE = Path(__file__).parents[1] / "guardagent" / "policies" / "examples" / "web-tasks"
TRACES = sorted((EXAMPLE / "traces").glob("*.json"))
TASKS = {
    p.stem: yaml.safe_load(p.read_text(encoding="utf-8"))
    for p in sorted((EXAMPLE / "tasks").glob("*.yaml"))
}


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def guard(make_guard: MakeGuard) -> GuardAgent:
    return make_guard(EXAMPLE)


def replay(guard: GuardAgent, doc: dict[str, Any]) -> list[tuple[str, GuardDecision]]:
    """Guard every action in order with the thread's task attached; stop at a denial."""
    trace = parse_trace(doc)
    out: list[tuple[str, GuardDecision]] = []
    state = None
    for call in (*trace.calls, trace.call):
        prefix = doc["messages"][: call.index + 1] if call is not trace.call else doc["messages"]
        proposed = {"name": call.name, "args": call.args, "id": call.id}
        decision = guard.check_trace(prefix, proposed, thread_state=state, task=doc["task"])
        out.append((call.id or "", decision))
        if not decision.allowed:
            break
        state = decision.trace_state
    return out


def test_a_yes_is_about_the_tasks_element_only(guard: GuardAgent) -> None:
    """After the user's yes to closing the issue, no other destructive button is approved."""
    doc = load(EXAMPLE / "traces" / "b01_close_issue_after_yes.json")
    for text, allowed in (
        ("Close issue", True),
        ("Delete issue", False),
        ("Close", False),
        ("Merge", False),
        ("close issue", True),
    ):
        click = {"id": "x", "name": "click", "args": {"bid": "b99", "text": text, "role": "button"}}
        assert guard.check_trace(doc["messages"], click, task=doc["task"]).allowed is allowed, text


def test_one_profile_and_several_task_policies() -> None:
    report = check_policy(EXAMPLE / "policy.yaml")
    assert report.errors == [] and report.warnings == [], (report.errors, report.warnings)
    assert 3 <= len(TASKS) <= 5
    check = check_trace_profile(load_profile(str(EXAMPLE)))
    assert check.errors == [] and check.warnings == [], (check.errors, check.warnings)
    assert [(t.name, t.problem) for t in check.traces] == [(p.name, None) for p in TRACES]
    assert check.ready


def test_every_trace_carries_one_of_the_shipped_tasks() -> None:
    """The trace's `task` is the file in tasks/ as the host attaches it (no drift)."""
    used = set()
    for path in TRACES:
        doc = load(path)
        assert doc["task"] == TASKS[doc["task"]["name"]], path.name
        used.add(doc["task"]["name"])
    assert used == set(TASKS)


@pytest.mark.parametrize(
    "path", [p for p in TRACES if p.name.startswith("b")], ids=lambda p: p.name
)
def test_honest_runs_pass_every_action(guard: GuardAgent, path: Path) -> None:
    doc = load(path)
    runs = replay(guard, doc)
    assert len(runs) == len(parse_trace(doc).calls) + 1
    assert all(d.allowed for _, d in runs), [(i, d.reason) for i, d in runs if not d.allowed]


VIOLATING = [p for p in TRACES if p.name.startswith("i")]


@pytest.mark.parametrize("path", VIOLATING, ids=lambda p: p.name)
def test_violations_stop_at_the_first_harmful_action(guard: GuardAgent, path: Path) -> None:
    doc = load(path)
    expect = doc["expect"]
    stopped_at, decision = replay(guard, doc)[-1]
    assert not decision.allowed and stopped_at == parse_trace(doc).call.id, decision.reason
    violated = [r.id for r in decision.rules if r.status == "violated"]
    assert violated == [expect["rule"]], decision.reason


def test_each_dimension_has_an_honest_run_and_a_violation() -> None:
    rules = {load(p)["expect"]["rule"] for p in VIOLATING}
    assert {"user-consent", "task-pages", "task-secrets", "robustness-and-security"} <= rules
    assert any(r.startswith("task:") or r in ("finish-in-a-row",) for r in rules)
    for name in TASKS:
        kinds = {
            load(p)["expect"].get("allowed", False)
            for p in TRACES
            if load(p)["task"]["name"] == name
        }
        assert kinds == {True, False}, name


def test_without_the_task_the_profile_denies_a_destructive_click(guard: GuardAgent) -> None:
    """The consent question is the task's: a task that sets none allows no destructive click."""
    doc = load(next(p for p in TRACES if p.name.startswith("b01")))
    task = {
        **doc["task"],
        "params": {k: v for k, v in doc["task"]["params"].items() if not k.startswith("ask")},
    }
    decision = guard.check_trace(doc, task=task)
    assert not decision.allowed
    assert [r.id for r in decision.rules if r.status in ("violated", "possibly_violated")] == [
        "user-consent"
    ]
    assert "ask, ask_words not set" in json.dumps(decision.trace_facts)


def test_a_secret_is_named_never_shown(guard: GuardAgent) -> None:
    """The facts and the reason name the task's secret; its value is in neither."""
    shown = 0
    for path in VIOLATING:
        doc = load(path)
        for name, secret in (doc["task"].get("secrets") or {}).items():
            decision = replay(guard, doc)[-1][1]
            said = decision.reason + json.dumps(decision.violations + [decision.trace_facts])
            assert secret["value"] not in said, path.name
            shown += name in said
    assert shown >= 2
