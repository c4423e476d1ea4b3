"""Task-scoped policies: one profile serves every task (issue 20, item 7).

A web deployment's policy says "stay on the task's sites" and "finish with the task's last
step" once, with ``"$sites"`` and ``"$required"`` placeholders; each task attaches its values
(and, if it needs them, extra predicates and rules) to its calls. Attaching merges the task
into the base policy, checks it with z3 and caches it by content. Only the host attaches a
task: the served graph has no field a client could set one with.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.agent import GuardAgent
from guardagent.policy import task as task_module
from guardagent.policy.task import TaskPolicy, TaskPolicyError
from guardagent.trace.event.params import placeholders, resolve
from tests.guards import MakeGuard

POLICY = """\
format: guardagent-policy/1
name: web-tasks
version: "1"
labels:
  tools:
    goto: {results: untrusted, effect: navigate, args: [url]}
    fill: {results: untrusted, effect: write, args: [bid, value]}
    delete_item: {results: untrusted, effect: irreversible, args: [bid]}
    answer: {results: untrusted, effect: write, args: [text]}
predicates:
  - {name: navigates, kind: action, assign: {trace: 'effect_is("navigate")'}}
  - {name: fills, kind: action, assign: {trace: 'tool_is("fill")'}}
  - {name: deletes, kind: action, assign: {trace: 'tool_is("delete_item")'}}
  - {name: answers, kind: action, assign: {trace: 'tool_is("answer")'}}
  - {name: in_task_sites, kind: condition, assign: {trace: 'navigation_in_scope("$sites")'}}
  - {name: required_done, kind: condition, assign: {trace: 'called_before("$required", status="ok")'}}
rules:
  - {id: task-sites, logic: navigates IMPLIES in_task_sites, policy: Pages stay on the task's sites}
  - {id: finish-last, logic: answers IMPLIES required_done, policy: The task's last step comes before the answer}
  - {id: edits, logic: (fills OR deletes) IMPLIES TRUE}
"""

PROFILE = """\
name: web-tasks
guard_request: Guard a web agent; each task brings its sites and its last step.
agent_specification: A web agent; its events are traces.
toolbox: []
demonstrations: []
policy_model: policy.yaml
"""

DEEP: list[Any] = []
_at = DEEP
for _ in range(5000):
    _at.append([])
    _at = _at[0]

SHOP = {"name": "restock", "params": {"sites": ["shop.example/catalog/*"], "required": "fill"}}
DOCS = {"name": "read-docs", "params": {"sites": ["docs.example"], "required": "goto"}}
NO_DELETES = {
    **SHOP,
    "name": "restock-no-deletes",
    "predicates": [
        {"name": "deletes_here", "kind": "condition", "assign": {"trace": 'tool_is("delete_*")'}}
    ],
    "rules": [
        {
            "id": "no-deleting-in-this-task",
            "logic": "NOT deletes_here",
            "policy": "This task deletes nothing",
        }
    ],
}


def trace(call: dict[str, Any], *earlier: dict[str, Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Restock SKU-7 to 25."}]
    for n, step in enumerate(earlier):
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"e{n}",
                        "type": "function",
                        "function": {"name": step["name"], "arguments": json.dumps(step["args"])},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"e{n}", "content": "ok"},
        ]
    return {"messages": messages, "proposed_call": call}


GOTO_SHOP = {"name": "goto", "args": {"url": "https://shop.example/catalog/sku-7"}}
GOTO_EVIL = {"name": "goto", "args": {"url": "https://shop-example.login.example/"}}
FILL = {"name": "fill", "args": {"bid": "q1", "value": "25"}}
ANSWER = {"name": "answer", "args": {"text": "Done."}}
DELETE = {"name": "delete_item", "args": {"bid": "d3"}}


@pytest.fixture(scope="module")
def guard(make_guard: MakeGuard) -> GuardAgent:
    return make_guard(files={"policy.yaml": POLICY, "profile.yaml": PROFILE})


def violated(decision: Any) -> list[str]:
    return [r.id for r in decision.rules if r.status in ("violated", "possibly_violated")]


def test_placeholders_are_read_and_resolved_as_literals() -> None:
    expression = 'navigation_in_scope("$sites", arg="$arg")'
    assert placeholders(expression) == {"sites", "arg"}
    assert resolve(expression, {"sites": ["a.example", "b.example/x/*"], "arg": "url"}) == (
        "navigation_in_scope('a.example', 'b.example/x/*', arg='url')"
    )
    nested = 'called_before({"tool": "fill", "args": {"value": "$amount"}})'
    assert (
        resolve(nested, {"amount": 25}) == "called_before({'tool': 'fill', 'args': {'value': 25}})"
    )
    assert placeholders('tool_is("$$x", "a$b", "$1")') == frozenset()


def test_without_a_task_a_rule_that_needs_a_parameter_denies_naming_it(guard: GuardAgent) -> None:
    decision = guard.check_trace(trace(GOTO_SHOP))
    assert not decision.allowed and violated(decision) == ["task-sites"]
    assert "sites not set" in decision.reason
    assert (decision.trace_facts or {})["in_task_sites"]["value"] is None


def test_one_profile_serves_every_task(guard: GuardAgent) -> None:
    assert guard.check_trace(trace(GOTO_SHOP), task=SHOP).allowed
    denied = guard.check_trace(trace(GOTO_EVIL), task=SHOP)
    assert not denied.allowed and violated(denied) == ["task-sites"]
    other = guard.check_trace(trace(GOTO_SHOP), task=DOCS)
    assert not other.allowed and "outside docs.example" in other.reason
    assert guard.check_trace(
        trace({"name": "goto", "args": {"url": "https://docs.example/a"}}), task=DOCS
    ).allowed


def test_an_end_of_run_step_comes_from_the_task(guard: GuardAgent) -> None:
    early = guard.check_trace(trace(ANSWER, GOTO_SHOP), task=SHOP)
    assert not early.allowed and violated(early) == ["finish-last"]
    assert guard.check_trace(trace(ANSWER, GOTO_SHOP, FILL), task=SHOP).allowed


def test_task_rules_are_added_and_named_in_the_decision(guard: GuardAgent) -> None:
    assert guard.check_trace(trace(DELETE), task=SHOP).allowed  # the base allows deleting
    decision = guard.check_trace(trace(DELETE), task=NO_DELETES)
    assert not decision.allowed and violated(decision) == ["no-deleting-in-this-task"]
    [rule] = [r for r in decision.rules if r.id == "no-deleting-in-this-task"]
    assert rule.source == "task restock-no-deletes"
    assert guard.check_trace(trace(GOTO_SHOP), task=NO_DELETES).allowed


def test_attaching_checks_with_z3_once_and_caches_by_content(
    guard: GuardAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    from guardagent.policy import check

    calls: list[int] = []
    real = check.check_model
    monkeypatch.setattr(check, "check_model", lambda m: calls.append(1) or real(m))
    spec = {**NO_DELETES, "name": "cache-probe"}
    first = guard.attach_task(spec)
    assert calls == [1] and first.model.by_id["no-deleting-in-this-task"]
    again = guard.attach_task({**spec, "params": dict(spec["params"])})  # equal content
    assert again is first and calls == [1]
    for _ in range(3):
        guard.check_trace(trace(DELETE), task=spec)
    assert calls == [1]
    assert guard.check_trace(trace(DELETE), task=first).allowed is False


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"params": {"site": ["shop.example"]}}, "parameter 'site' is used by no predicate"),
        ({"rules": [{"id": "task-sites", "logic": "TRUE"}]}, "is a rule of the base policy"),
        (
            {"rules": [{"id": "x", "logic": "navigates IMPLIES nowhere"}]},
            "undefined predicate 'nowhere'",
        ),
        (
            {"predicates": [{"name": "asked", "kind": "condition", "assign": {"query": "Asked?"}}]},
            "a task predicate is assigned by `trace`",
        ),
        (
            {"rules": [{"id": "x", "logic": "navigates AND NOT in_task_sites"}]},
            "the hard rules cannot all hold at once",
        ),
        ({"params": {"sites": []}}, "give at least one scope"),
        ({"params": {"sites": float("nan")}}, "only JSON values"),
        ({"labels": {"tools": {}}}, "unknown key 'labels'"),
        ({"params": {"sites": DEEP}}, "nested too deep"),
    ],
)
def test_a_task_that_cannot_be_attached_is_refused_naming_why(
    guard: GuardAgent, spec: dict[str, Any], problem: str
) -> None:
    with pytest.raises(TaskPolicyError, match=problem.replace("(", r"\(")):
        guard.attach_task(spec)
    decision = guard.check_trace(trace(GOTO_SHOP), task=spec)
    assert not decision.allowed and "task policy cannot be attached" in decision.reason
    assert problem in decision.reason


def test_a_task_forbidding_an_action_outright_is_attached_with_a_warning(
    guard: GuardAgent,
) -> None:
    attached = guard.attach_task({"rules": [{"id": "read-only", "logic": "NOT fills"}]})
    assert any("forbids 'fills' outright" in w for w in attached.warnings)


def test_the_async_path_takes_the_task_too(guard: GuardAgent) -> None:
    decision = asyncio.run(guard.acheck_trace(trace(GOTO_EVIL), task=TaskPolicy.of(SHOP)))
    assert not decision.allowed and violated(decision) == ["task-sites"]


def test_a_served_graphs_client_cannot_attach_a_task() -> None:
    """Neither the served input nor the run context has a field for a task policy."""
    from guardagent.context import RUN_KEYS
    from guardagent.integrations.server import served_graph

    graph = served_graph()
    inputs = set(graph.get_input_jsonschema()["properties"])
    context = set(graph.get_context_jsonschema()["properties"])
    assert inputs == {"agent_input", "agent_output"}
    assert context == set(RUN_KEYS) == {"profile", "user_facts"}
    assert not {"task", "params", "rules", "predicates", "trace_assignments"} & (inputs | context)


def test_the_cache_keeps_the_most_recent_tasks(
    guard: GuardAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(task_module, "MAX_CACHED", 2)
    first = guard.attach_task({**SHOP, "name": "lru-1"})
    guard.attach_task({**SHOP, "name": "lru-2"})
    guard.attach_task({**SHOP, "name": "lru-3"})
    assert len(task_module._cache) == 2
    assert guard.attach_task({**SHOP, "name": "lru-1"}) is not first  # dropped, attached again


def test_a_task_cannot_redefine_a_base_predicate(guard: GuardAgent) -> None:
    spec = {
        "predicates": [
            {
                "name": "in_task_sites",
                "kind": "condition",
                "assign": {"trace": 'navigation_in_scope("*")'},
            }
        ]
    }
    with pytest.raises(TaskPolicyError, match="is a predicate of the base policy"):
        guard.attach_task(spec)


def test_a_task_action_may_hang_under_a_base_action(guard: GuardAgent) -> None:
    spec = {
        "predicates": [
            {
                "name": "deletes_drafts",
                "kind": "action",
                "parent": "deletes",
                "assign": {"trace": 'tool_is("delete_item")'},
            }
        ],
        "rules": [{"id": "no-draft-deletes", "logic": "NOT deletes_drafts"}],
    }
    attached = guard.attach_task(spec)
    assert attached.model.by_name["deletes_drafts"].parent == "deletes"
    decision = guard.check_trace(trace(DELETE), task=spec)
    assert not decision.allowed and "no-draft-deletes" in violated(decision)
    with pytest.raises(TaskPolicyError, match="parent 'nothing' is not declared"):
        guard.attach_task({"predicates": [{**spec["predicates"][0], "parent": "nothing"}]})


def test_parameters_may_stand_for_values_a_predicate_checks(tmp_path: Path) -> None:
    """`arg_in("value", "$values")` loads (checked once a task sets it): the values a task may type."""
    root = tmp_path / "typed"
    root.mkdir()
    policy = POLICY.replace(
        "  - {name: in_task_sites,",
        '  - {name: value_allowed, kind: condition, assign: {trace: \'arg_in("value", "$values")\'}}\n'
        "  - {name: in_task_sites,",
    ).replace(
        "  - {id: edits, logic: (fills OR deletes) IMPLIES TRUE}",
        "  - {id: typed-values, logic: fills IMPLIES value_allowed}\n"
        "  - {id: edits, logic: deletes IMPLIES TRUE}",
    )
    (root / "policy.yaml").write_text(policy, encoding="utf-8")
    (root / "profile.yaml").write_text(PROFILE, encoding="utf-8")
    guard = GuardAgent(profile=str(root))
    task = {"params": {**SHOP["params"], "values": ["25", "30"]}}
    assert guard.check_trace(trace(FILL), task=task).allowed
    other = {"name": "fill", "args": {"bid": "q1", "value": "2500"}}
    assert violated(guard.check_trace(trace(other), task=task)) == ["typed-values"]
    with pytest.raises(TaskPolicyError, match="values must be a list"):
        guard.attach_task({"params": {**SHOP["params"], "values": "25"}})


@given(
    st.lists(st.text(min_size=1), max_size=5),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
        ),
        max_leaves=8,
    ),
)
@settings(max_examples=150, deadline=None)
def test_resolving_gives_back_exactly_the_values_set(spread: list[str], value: Any) -> None:
    """Whatever JSON values a task sets, the resolved expression reads back as those values."""
    import ast

    text = resolve('navigation_in_scope("$s", arg="$v")', {"s": spread, "v": value})
    call = ast.parse(text, mode="eval").body
    assert isinstance(call, ast.Call)
    assert [ast.literal_eval(a) for a in call.args] == spread
    assert ast.literal_eval(call.keywords[0].value) == value
    nested = resolve(
        'called_before({"tool": "$s", "args": {"x": "$v"}})', {"s": spread, "v": value}
    )
    assert ast.literal_eval(ast.parse(nested, mode="eval").body.args[0]) == {  # type: ignore[attr-defined]
        "tool": spread,
        "args": {"x": value},
    }


SECRET_TASK = {
    **SHOP,
    "name": "checkout",
    "secrets": {"card_pin": {"value": "8841-2290"}},
    "values": {"task_sites": ["https://shop.example/catalog/sku-7"]},
    "predicates": [
        {"name": "leaks_pin", "kind": "condition", "assign": {"trace": "secret_in_args()"}},
        {
            "name": "from_task_values",
            "kind": "condition",
            "assign": {"trace": 'arg_from_records("url", section="task_sites")'},
        },
    ],
    "rules": [
        {"id": "no-pin-anywhere", "logic": "NOT leaks_pin", "policy": "The PIN is typed nowhere"},
        {
            "id": "task-pages",
            "logic": "navigates IMPLIES from_task_values",
            "policy": "Only the task's own pages",
        },
    ],
}


def test_a_task_carries_its_own_secrets_and_values(guard: GuardAgent) -> None:
    """ST-Web style: one profile, each task with its secrets and records (issue 33, item 8)."""
    assert guard.check_trace(trace(GOTO_SHOP), task=SECRET_TASK).allowed
    typed = {"name": "fill", "args": {"bid": "q1", "value": "my pin is 8841 2290"}}
    decision = guard.check_trace(trace(typed), task=SECRET_TASK)
    assert not decision.allowed and violated(decision) == ["no-pin-anywhere"]
    assert "8841" not in decision.model_dump_json()  # the name, never the value
    other_page = {"name": "goto", "args": {"url": "https://shop.example/catalog/sku-8"}}
    assert violated(guard.check_trace(trace(other_page), task=SECRET_TASK)) == ["task-pages"]
    assert guard.check_trace(trace(typed), task=SHOP).allowed  # another task: no such secret


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"secrets": {"pin": {"env": "HOME"}}}, "a task's secret is a literal"),
        ({"secrets": {"pin": {"value": "1"}}}, "at least 6"),
        ({"secrets": "x"}, "secrets"),
        ({"values": {"bad name!": ["x"]}}, "section name"),
        ({"values": ["x"]}, "values must be a mapping"),
    ],
)
def test_task_secrets_and_values_are_read_as_a_policy_reads_them(
    guard: GuardAgent, extra: dict[str, Any], problem: str
) -> None:
    """An `env:` secret is refused: a client could probe the server's environment with it."""
    with pytest.raises(TaskPolicyError, match=problem):
        guard.attach_task({**SHOP, **extra})
