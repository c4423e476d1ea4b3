"""Issue 34 item 3: a wider suite must not cost more runs than it probes.

Two savings that drop no coverage: a case that reads (every reader's result) and is expected
exactly as an earlier case or a demonstration is not run again (any program decides such
events alike, under the data-flow discipline), and a program is refused at the first batch
that holds a mismatch (the rest of the suite cannot make it verify). Counted in runs, not
seconds (no wall-clock assertions).
"""

from __future__ import annotations

import pytest

from guardagent.counterfactuals import Case, request_suite
from guardagent.counterfactuals.events import Event, Readers, canonical
from guardagent.profiles import load_profile
from guardagent.profiles.verification import PARALLEL_RUNS, run_cases
from guardagent.sandbox.process import ExecutionResult

SHIPPED = [
    "eicu-ac",
    "eicu-ac-policy",
    "mind2web-sc",
    "mind2web-sc-policy",
    "tool-calls",
    "tool-calls-policy",
]


@pytest.mark.parametrize("name", SHIPPED)
def test_no_two_cases_read_and_are_expected_alike(name):
    """Seen failing on main: eicu-ac-policy ran 71 cases for 58 readings, tool-calls 104 for 96."""
    profile = load_profile(name)
    readers = Readers(profile.tools())
    assert readers.complete
    keys = [
        (readers.reading(Event(c.agent_input, c.agent_output)), c.label, canonical(c.details))
        for c in request_suite(profile).cases
    ]
    demos = {
        (readers.reading(Event(d.agent_input, d.agent_output)), d.label, canonical(d.details))
        for d in profile.demonstrations
    }
    assert len(keys) == len(set(keys)), f"{len(keys) - len(set(keys))} repeated cases"
    assert not demos & set(keys)


@pytest.mark.parametrize("wrong_at", [0, 5, 17, 40, 99])
def test_a_program_is_refused_at_its_first_mismatching_batch(wrong_at):
    """Seen failing on main: one mismatch among 100 cases ran all 100 (it stopped only after
    12 mismatches)."""
    runs: list[str] = []

    def runner(code, toolbox, agent_input, agent_output, limits):  # a program allowing all
        runs.append(agent_input)
        return ExecutionResult(
            ok=True,
            verdict={"allowed": True, "violations": []},
            error=None,
            stdout="",
            duration_ms=0.0,
            unreadable=[],
            predicates={},
        )

    cases = [
        Case(f"c{i}", f"in {i}", "out", 1 if i == wrong_at else 0, ["r"] if i == wrong_at else [])
        for i in range(100)
    ]
    problems = run_cases("allow('x')", load_profile("eicu-ac").tools(), cases, runner=runner)
    assert problems and problems[0].startswith(f"c{wrong_at}: label 0, expected 1")
    batch = 4 * PARALLEL_RUNS
    assert len(runs) == min(100, (wrong_at // batch + 1) * batch)
    assert sorted(runs, key=lambda s: int(s.split()[1]))[0] == "in 0"


def test_a_right_program_still_runs_every_case():
    runs: list[str] = []

    def runner(code, toolbox, agent_input, agent_output, limits):
        runs.append(agent_input)
        return ExecutionResult(
            ok=True,
            verdict={"allowed": True, "violations": []},
            error=None,
            stdout="",
            duration_ms=0.0,
            unreadable=[],
            predicates={},
        )

    cases = [Case(f"c{i}", f"in {i}", "out", 0, []) for i in range(37)]
    assert run_cases("allow('x')", load_profile("eicu-ac").tools(), cases, runner=runner) == []
    assert len(runs) == 37
