"""Node-by-node traces from the graph's stream, and the comparison of two runs."""

import json

from guardagent import GuardAgent, GuardContext
from guardagent.decision import GuardDecision
from guardagent.eval.baseline import BaselineGuard
from guardagent.eval.cases import Case
from guardagent.eval.compare import disagreements, load_run, metrics_table
from guardagent.eval.runner import run_eval
from guardagent.eval.trace import describe_step, stream_steps, trace_markdown
from tests.scripted import ScriptedChatModel
from tests.test_graph_llm import BROKEN_PROGRAM, GOOD_PROGRAM, HOTEL_INPUT, HOTEL_OUTPUT

RULE = "User aged under 18 cannot book a hotel"


def test_offline_trace_is_retrieve_execute_decide():
    steps = stream_steps(HOTEL_INPUT, HOTEL_OUTPUT, GuardContext(profile="mind2web-sc"))
    assert [node for node, _ in steps] == ["admit", "retrieve", "execute", "decide"]
    assert describe_step(*steps[0]).startswith("admitted the event")
    assert "verified program" in describe_step(*steps[1])
    assert describe_step(*steps[2]).startswith("attempt 1: ran")
    assert describe_step(*steps[3]).startswith("DENY (label 1)")
    assert RULE in describe_step(*steps[3])


def test_scripted_trace_shows_every_node_in_order():
    model = ScriptedChatModel.of(["the plan", BROKEN_PROGRAM, "use 'age'", GOOD_PROGRAM])
    context = GuardContext(profile="mind2web-sc", model=model, reuse_programs=False)
    steps = stream_steps(HOTEL_INPUT, HOTEL_OUTPUT, context)
    nodes = [node for node, _ in steps]
    assert nodes == [
        "admit",
        "retrieve",
        "plan",
        "code",
        "execute",
        "debug",
        "code",
        "execute",
        "remember",
        "decide",
    ]
    text = trace_markdown(steps)
    assert "**2. retrieve**" in text and "**10. decide**" in text
    assert "**9. remember**\n\n```\nverified the generated program" in text
    assert "attempt 1: failed" in text and "diagnosis:\nuse 'age'" in text
    assert "retrieved 3 demonstration(s)" in describe_step(*steps[1])


def _cases():
    adult = HOTEL_INPUT.replace("age: 16", "age: 40")
    return [
        Case(
            id="minor",
            agent_input=HOTEL_INPUT,
            agent_output=HOTEL_OUTPUT,
            label=1,
            violations=[RULE],
        ),
        Case(id="adult", agent_input=adult, agent_output=HOTEL_OUTPUT, label=0),
    ]


def test_compare_two_runs(tmp_path):
    cases = _cases()
    run_eval(GuardAgent("mind2web-sc"), cases, tmp_path / "a", progress=False, plots=False)
    allow_all = ScriptedChatModel.of(['{"label": 0, "violations": []}'] * 2)
    run_eval(
        BaselineGuard("mind2web-sc", model=allow_all),
        cases,
        tmp_path / "b",
        progress=False,
        plots=False,
    )
    a, b = load_run(tmp_path / "a", "graph"), load_run(tmp_path / "b", "allow-all")
    assert disagreements(a, b) == [
        {"id": "minor", "gold": 1, "graph": (1, [RULE]), "allow-all": (0, [])}
    ]
    table = metrics_table(a, b)
    assert "| LPA | 100.0 | 50.0 | -50.0 |" in table
    assert "| LPR | 100.0 | 0.0 | -100.0 |" in table
    assert "| LPP | 100.0 | n/a | n/a |" in table  # b predicts no denial: no precision
    assert "| LLM calls / decision | 0.0 | 1.0 | 1.0 |" in table


def test_disagreements_ignore_cases_only_one_run_has(tmp_path):
    for name, labels in (("a", [1, 0]), ("b", [1])):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "metrics.json").write_text("{}")
        rows = [
            {
                "id": f"c{i}",
                "label": 1,
                "decision": GuardDecision(allowed=not lab, label=lab).model_dump(mode="json"),
            }
            for i, lab in enumerate(labels)
        ]
        (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert disagreements(load_run(tmp_path / "a"), load_run(tmp_path / "b")) == []
