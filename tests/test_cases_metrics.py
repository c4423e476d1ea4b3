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
