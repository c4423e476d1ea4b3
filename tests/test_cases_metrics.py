import json

import pytest

from guardagent.decision import GuardDecision
from guardagent.eval.cases import Case, CaseFileError, read_cases
from guardagent.eval.metrics import compute_metrics


def _case(i: int, label: int, **kw) -> Case:
    return Case(id=f"c{i}", agent_input="in", agent_output=f"out {i}", label=label, **kw)


def _allow(case: Case, output: str | None = None) -> GuardDecision:
    return GuardDecision(allowed=True, label=0, guardrailed_output=output or case.agent_output)


def _deny(violations) -> GuardDecision:
    return GuardDecision(allowed=False, label=1, violations=violations)


def test_metrics_by_hand():
    cases = [
        _case(1, 1, violations=["rule A"]),  # tp, right rule
        _case(2, 1, violations=["rule B"]),  # tp, wrong rule
        _case(3, 1, violations=["rule A"]),  # fn
        _case(4, 0, answer="out"),  # tn, passed unchanged
        _case(5, 0),  # tn, output altered
        _case(6, 0),  # fp
    ]
    decisions = [
        _deny(["rule A"]),
        _deny(["rule A"]),
        _allow(cases[2]),
        _allow(cases[3]),
        _allow(cases[4], output="changed"),
        _deny(["rule C"]),
    ]
    m = compute_metrics(cases, decisions)
    assert m["n"] == 6
    assert m["confusion"] == {"tp": 2, "fp": 1, "tn": 2, "fn": 1}
    assert m["LPA"] == round(100 * 4 / 6, 1) == 66.7
    assert m["LPP"] == round(100 * 2 / 3, 1)
    assert m["LPR"] == round(100 * 2 / 3, 1)
    assert m["CCA"] == round(100 * 1 / 3, 1)
    assert m["FRA"] == round(100 * 1 / 3, 1)


def test_cca_compares_tables_and_columns_as_sets():
    case = _case(1, 1, inaccessible={"lab": ["labresult", "labname"]})
    good = _deny({"lab": ["labname", "labresult"]})
    extra = _deny({"lab": ["labname", "labresult"], "cost": ["cost"]})
    assert compute_metrics([case], [good])["CCA"] == 100.0
    assert compute_metrics([case], [extra])["CCA"] == 0.0


def test_metrics_without_label_1_cases():
    cases = [_case(1, 0), _case(2, 0)]
    m = compute_metrics(cases, [_allow(cases[0]), _deny(["x"])])
    assert m["LPA"] == 50.0
    assert m["LPR"] is None and m["CCA"] is None
    assert m["LPP"] == 0.0
    assert m["FRA"] == 50.0


def test_metrics_without_label_0_cases():
    cases = [_case(1, 1, violations=["r"]), _case(2, 1, violations=["r"])]
    m = compute_metrics(cases, [_deny(["r"]), _allow(cases[1])])
    assert m["FRA"] is None
    assert m["LPP"] == 100.0 and m["LPR"] == 50.0 and m["CCA"] == 50.0


def test_metrics_with_nothing_predicted_positive():
    cases = [_case(1, 0)]
    m = compute_metrics(cases, [_allow(cases[0])])
    assert m["LPP"] is None and m["LPA"] == 100.0


def test_breakdown_by_meta_key():
    cases = [_case(1, 1, violations=["r"], meta={"rule": "r"}), _case(2, 0, meta={"rule": "none"})]
    m = compute_metrics(cases, [_deny(["r"]), _deny(["r"])])
    assert m["breakdown"]["rule"]["r"] == {"n": 1, "LPA": 100.0, "denied": 1}
    assert m["breakdown"]["rule"]["none"] == {"n": 1, "LPA": 0.0, "denied": 1}


def test_read_cases_reports_line_numbers(tmp_path):
    good = {"id": "a", "agent_input": "i", "agent_output": "o", "label": 0}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({**good, "id": "b", "label": 2}),
        "",
        json.dumps({**good, "id": "c", "label": 0, "violations": ["x"]}),
        json.dumps(good),
    ]
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CaseFileError) as err:
        read_cases(path)
    numbers = [n for n, _ in err.value.problems]
    assert numbers == [2, 3, 5, 6]
    assert "duplicate id" in err.value.problems[-1][1]
    cases, skipped = read_cases(path, skip_invalid=True)
    assert [c.id for c in cases] == ["a"]
    assert [n for n, _ in skipped] == [2, 3, 5, 6]


def _ran(errors, **kw) -> GuardDecision:
    return GuardDecision(allowed=True, label=0, attempt_errors=errors, attempts=len(errors), **kw)


def test_executable_rate_before_and_after_debugging_by_hand():
    decisions = [
        _ran([None]),  # first run fine
        _ran(["KeyError: 'years'", None]),  # fixed by the debugger
        _ran(["NameError", "NameError", "NameError"]),  # never executable
        _ran([]),  # no program ran (offline, nothing verified)
    ]
    cases = [_case(i, 0) for i in range(4)]
    ex = compute_metrics(cases, decisions)["executable"]
    assert ex == {
        "before_debug": 33.3,  # 1 of the 3 that ran
        "after_debug": 66.7,  # 2 of 3
        "ran_program": 3,
        "debugged": 2,
        "no_program_run": 1,
    }


def test_cost_per_decision_percentiles_by_hand():
    decisions = [
        GuardDecision(allowed=True, label=0, llm_calls=c, tokens=t, attempts=a, latency_ms=ms)
        for c, t, a, ms in [
            (0, 0, 1, 10.0),
            (4, 900, 2, 20.0),
            (6, 1500, 3, 30.0),
            (1, 100, 1, 40.0),
        ]
    ]
    cost = compute_metrics([_case(i, 0) for i in range(4)], decisions)["cost"]
    calls = cost["per_decision"]["llm_calls"]
    # sorted calls 0, 1, 4, 6: p50 at rank 1.5 -> 1 + 0.5 * 3; p95 at rank 2.85 -> 4 + 0.85 * 2
    assert calls == {"mean": 2.75, "p50": 2.5, "p95": 5.7, "max": 6.0, "total": 11.0}
    assert cost["per_decision"]["tokens"]["total"] == 2500.0
    assert cost["per_decision"]["attempts"]["mean"] == 1.75
    # latencies 10..40: p50 = 25, p95 = 30 + 0.85 * 10
    assert cost["latency_ms_p50"] == 25.0 and cost["latency_ms_p95"] == 38.5
    assert cost["llm_calls_per_decision"] == 2.75 and cost["tokens_per_decision"] == 625.0


def test_percentile_matches_the_statistics_module():
    import statistics

    from guardagent.eval.metrics import percentile

    values = [3.0, 1.0, 7.5, 2.25, 9.0, 4.0, 6.0]
    assert percentile(values, 50) == statistics.median(values)
    q = statistics.quantiles(values, n=20, method="inclusive")  # q[18] is the 95th
    assert percentile(values, 95) == round(q[18], 2)
    assert percentile([], 50) is None and percentile([5.0], 95) == 5.0


def test_fail_closed_counts_and_reasons():
    cases = [_case(i, 1, violations=["r"]) for i in range(3)]
    decisions = [
        GuardDecision(allowed=False, label=1, error="planner model failed: HTTP 500"),
        GuardDecision(allowed=False, label=1, error="planner model failed: timeout"),
        GuardDecision(allowed=False, label=1, error="program failed after 3 attempt(s): boom"),
    ]
    fail = compute_metrics(cases, decisions)["fail_closed"]
    assert fail == {
        "count": 3,
        "reasons": {"planner model failed": 2, "program failed after 3 attempt(s)": 1},
        "could_not_decide": 3,
        "first_error": "planner model failed: HTTP 500",
    }


def test_cca_leaves_out_denials_that_state_no_details():
    # A bring-your-own file may label a denial without saying why: CCA cannot judge it.
    cases = [_case(1, 1, violations=["r"]), _case(2, 1), _case(3, 1, violations=[])]
    m = compute_metrics(cases, [_deny(["r"]), _deny(["x"]), _deny([])])
    assert m["counts"] == {"label_1": 3, "label_0": 0, "cca_judged": 1}
    assert m["CCA"] == 100.0 and m["LPR"] == 100.0
    only_unjudged = compute_metrics(cases[1:], [_deny(["x"]), _deny([])])
    assert only_unjudged["CCA"] is None


def test_wrong_decisions_are_wrong_labels_or_wrong_details():
    from guardagent.eval.metrics import is_wrong

    denial = _case(1, 1, violations=["r"])
    assert not is_wrong(denial, _deny(["r"]))
    assert is_wrong(denial, _deny(["other"]))
    assert is_wrong(denial, _allow(denial))
    assert not is_wrong(_case(2, 1), _deny(["anything"]))  # no details stated
