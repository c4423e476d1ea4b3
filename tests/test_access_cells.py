"""Issue 34, table oracle: every role x table x column cell of a permission table is probed.

A model-written program whose access list adds or drops one cell for one role decides every
later event of its request wrongly once trusted; the counterfactuals must catch each such
program, and verification must refuse to trust anything when a cell goes unprobed.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import guardagent.profiles as profiles_pkg
from guardagent.profiles import load_profile
from guardagent.readers.eicu_schema import EICU_COLUMNS

BUILTIN = Path(profiles_pkg.__file__).parent
EHR = load_profile("eicu-ac")
PROGRAM = EHR.demonstrations[0].code
TABLE: dict[str, dict[str, list[str]]] = EHR.policy("PERMISSIONS")
ROLES = sorted(TABLE)
CELLS = [(r, t, c) for r in ROLES for t in sorted(EICU_COLUMNS) for c in sorted(EICU_COLUMNS[t])]


def with_table(table: dict[str, dict[str, list[str]]]) -> str:
    """The shipped program with `table` as its PERMISSIONS literal (parsed, not patched)."""
    tree = ast.parse(PROGRAM)
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PERMISSIONS":
            node.value = ast.parse(repr(table), mode="eval").body
    return ast.unparse(tree)


def toggled(role: str, table: str, column: str) -> dict[str, dict[str, list[str]]]:
    """The permission table with one cell flipped: added when denied, dropped when allowed."""
    out = {r: {t: list(c) for t, c in cols.items()} for r, cols in TABLE.items()}
    cols = out[role].setdefault(table, [])
    if column in cols:
        cols.remove(column)
    else:
        cols.append(column)
    return out


def test_coverage_names_every_cell_of_the_table_and_the_schema_and_misses_none():
    from guardagent.counterfactuals.cells import UNLISTED_ROLE, table_coverage

    coverage = table_coverage(EHR)
    assert coverage is not None
    roles = {cell.role for cell in coverage.cells}
    assert roles == {*ROLES, UNLISTED_ROLE}
    # both directions, and columns the table does not name (primary keys, absent tables)
    assert coverage.cells[("nursing", "diagnosis", "diagnosisname")] is False
    assert coverage.cells[("physician", "lab", "labid")] is False
    assert coverage.cells[("physician", "lab", "labname")] is True
    assert len(coverage.cells) == (len(ROLES) + 1) * sum(len(c) for c in EICU_COLUMNS.values())
    assert coverage.missing == []
    assert set(coverage.probed) == set(coverage.cells)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cell=st.sampled_from(CELLS))
def test_a_program_whose_access_list_adds_or_drops_one_cell_does_not_verify(cell):
    from guardagent.profiles.verification import program_problems

    role, table, column = cell
    problems = program_problems(with_table(toggled(role, table, column)), EHR)
    assert problems, f"trusted with {cell} flipped"
    assert any(role in p for p in problems), problems


@pytest.mark.parametrize(
    "cell",
    [
        ("nursing", "diagnosis", "diagnosisname"),
        ("general administration", "lab", "labname"),
        ("physician", "lab", "labid"),
        ("physician", "cost", "cost"),
        ("nursing", "patient", "age"),
        ("general administration", "cost", "eventid"),
    ],
)
def test_named_cells_added_or_dropped_do_not_verify(cell):
    from guardagent.profiles.verification import program_problems

    assert program_problems(with_table(toggled(*cell)), EHR)


def _copy_with_table(tmp_path: Path, table: dict[str, dict[str, list[str]]]) -> Path:
    src = BUILTIN / "eicu-ac"
    root = tmp_path / "ehr-copy"
    root.mkdir()
    code = with_table(table)
    demos = [json.loads(line) for line in (src / "demonstrations.jsonl").read_text().splitlines()]
    for demo in demos:
        demo.pop("program", None)
        demo["code"] = code
    (root / "demonstrations.jsonl").write_text("".join(json.dumps(d) + "\n" for d in demos))
    text = (src / "profile.yaml").read_text().replace("name: eicu-ac", "name: ehr-copy")
    (root / "profile.yaml").write_text(text)
    return root


def test_a_cell_the_readers_cannot_probe_refuses_every_program_naming_it(tmp_path):
    """A column the schema lacks can never be read by a probe: coverage is incomplete."""
    from guardagent.counterfactuals.cells import table_coverage
    from guardagent.profiles.verification import program_problems

    table = toggled("physician", "lab", "labcomment")  # not an eICU column
    profile = load_profile(str(_copy_with_table(tmp_path, table)))
    coverage = table_coverage(profile)
    assert coverage is not None and ("physician", "lab", "labcomment") in coverage.missing
    problems = program_problems(profile.demonstrations[0].code, profile)
    assert any("physician: lab.labcomment" in p and "not covered" in p for p in problems)


def test_without_an_identity_line_no_cell_is_probed_and_nothing_is_trusted(tmp_path):
    from guardagent.counterfactuals.cells import table_coverage

    root = _copy_with_table(tmp_path, TABLE)
    lines = (root / "demonstrations.jsonl").read_text().splitlines()
    demos = [json.loads(line) for line in lines]
    for demo in demos:
        demo["agent_input"] = demo["agent_input"].replace("Identity:", "Role is")
    (root / "demonstrations.jsonl").write_text("".join(json.dumps(d) + "\n" for d in demos))
    coverage = table_coverage(load_profile(str(root)))
    assert coverage is None or coverage.missing


def test_the_shipped_program_still_verifies():
    """Its time is benchmarks/bench_verification.py's figure (~0.5 s idle), not a test's."""
    from guardagent.counterfactuals import request_suite
    from guardagent.profiles.verification import run_cases
    from guardagent.sandbox.process import run_program

    suite = request_suite(EHR)
    assert suite.problems == ()
    assert run_cases(PROGRAM, EHR.tools(), suite.cases, runner=run_program) == []


_SCHEMA_CELLS = [(t, c) for t in sorted(EICU_COLUMNS) for c in sorted(EICU_COLUMNS[t])]


@st.composite
def tables(draw: st.DrawFn) -> dict[str, dict[str, list[str]]]:
    """Permission tables over the eICU schema: any roles, any subset of cells each."""
    roles = draw(
        st.lists(
            st.sampled_from([*ROLES, "auditor", "pharmacy"]), min_size=1, max_size=4, unique=True
        )
    )
    out: dict[str, dict[str, list[str]]] = {}
    for role in roles:
        picked = draw(st.lists(st.sampled_from(_SCHEMA_CELLS), max_size=30, unique=True))
        cols: dict[str, list[str]] = {}
        for table, column in picked:
            cols.setdefault(table, []).append(column)
        out[role] = cols
    return out


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(table=tables())
def test_any_permission_table_over_the_schema_is_fully_probed(table, tmp_path_factory):
    from guardagent.counterfactuals.cells import access_cells, table_coverage

    root = _copy_with_table(tmp_path_factory.mktemp("table"), table)
    coverage = table_coverage(load_profile(str(root)))
    assert coverage is not None
    assert coverage.cells == access_cells(table)
    assert coverage.missing == []


@pytest.mark.parametrize(
    "label, details, probed",
    [
        (0, [], {("r", "lab", "labname"), ("r", "lab", "labid")}),  # allowed: every cell read
        (1, {"lab": ["labid"]}, {("r", "lab", "labid")}),  # denied: only the cells it lists
        (1, {"lab": ["labid", "labresult"]}, {("r", "lab", "labid")}),  # listed but not read
        (1, ["a rule"], set()),
    ],  # not an access decision: probes no cell
)
def test_a_case_probes_a_cell_only_in_its_own_direction(label, details, probed):
    from guardagent.counterfactuals.cells import probed_cells

    accessed = {"lab": ["labid", "labname"]}
    assert probed_cells("r", accessed, label, details) == probed


def test_profile_check_says_how_many_cells_the_suite_probes(tmp_path):
    from guardagent.profiles.check import check_profile, render_check

    shown = render_check(check_profile(EHR))
    total = (len(ROLES) + 1) * sum(len(c) for c in EICU_COLUMNS.values())
    assert f"permission table: {total} of {total} role x table x column cells probed" in shown
    table = toggled("physician", "lab", "labcomment")
    gap = render_check(check_profile(load_profile(str(_copy_with_table(tmp_path, table)))))
    assert f"{total} of {total + 4} role x table x column cells probed" in gap
    assert "physician: lab.labcomment" in gap.split("missing: ", 1)[1]


def test_in_process_verification_runs_its_cases_in_the_calling_thread(monkeypatch):
    """Regression (seen failing: runs in `guard-verify` threads): CPython 3.11 converts ASTs
    with interpreter-wide state (python/cpython#106905), so readers parsing code in several
    threads at once can fail with "AST constructor recursion depth mismatch", and the
    shipped program then failed to verify now and then. Threads buy nothing under the GIL."""
    import threading

    import guardagent.profiles.verification as verification
    from guardagent.counterfactuals import request_suite

    seen: set[str] = set()
    real = verification.run_shipped_program

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.add(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(verification, "run_shipped_program", recording)
    cases = request_suite(EHR).cases
    assert verification.run_cases(PROGRAM, EHR.tools(), cases, runner=recording) == []
    assert seen == {threading.current_thread().name}
