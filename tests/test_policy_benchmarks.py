"""The policy path decides the shared benchmarks as the program path does, through the graph.

`eicu-ac-policy` / `mind2web-sc-policy` guard the same agents as `eicu-ac` / `mind2web-sc`
with a policy model verified by z3 instead of a rule table in the program. Both run through
`GuardAgent(...).check` (retrieve -> execute [-> verify] -> decide, offline, programs from
memory); every denial of the policy path must name its violated rule(s) and carry a
remediation.

The test takes every 5th case (`GUARDAGENT_PARITY_STEP=1` for all of them). The full runs:

    guardagent eval --profile eicu-ac-policy --out /tmp/eicu-policy
    guardagent eval --profile mind2web-sc-policy --out /tmp/m2w-policy
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from guardagent import GuardAgent
from guardagent.cli import main
from guardagent.eval.benchmarks import load_benchmark
from guardagent.eval.metrics import compute_metrics
from guardagent.profiles.verification import same_details

STEP = int(os.environ.get("GUARDAGENT_PARITY_STEP", "5"))
DENYING = ("violated", "possibly_violated")


@pytest.mark.parametrize(
    "program, policy", [("eicu-ac", "eicu-ac-policy"), ("mind2web-sc", "mind2web-sc-policy")]
)
def test_the_policy_path_gives_the_program_paths_labels_and_violations(program, policy, tmp_path):
    everything = load_benchmark(policy)
    assert [c.id for c in everything] == [c.id for c in load_benchmark(program)]
    cases = everything[::STEP]
    by_program = GuardAgent(program, memory_dir=str(tmp_path / "program"))
    by_policy = GuardAgent(policy, memory_dir=str(tmp_path / "policy"))
    ours, theirs = [], []
    for case in cases:
        mine = by_policy.check(case.agent_input, case.agent_output)
        base = by_program.check(case.agent_input, case.agent_output)
        ours.append(mine)
        theirs.append(base)
        assert mine.program_source == "memory" and mine.llm_calls == 0, (case.id, mine.reason)
        assert mine.label == base.label, (case.id, mine.reason, base.reason)
        assert same_details(mine.violations, base.violations), (
            case.id,
            mine.violations,
            base.violations,
        )
        if mine.allowed:
            assert mine.remediation is None and mine.error is None
            assert all(r.status in ("holds", "not_applicable") for r in mine.rules)
            continue
        denying = [r for r in mine.rules if r.status in DENYING]
        assert denying, (case.id, mine.reason)
        assert all(r.id in mine.reason and r.remediation for r in denying), mine.reason
        assert mine.remediation is not None, case.id
        assert {r.remediation for r in denying} <= set(mine.remediation.texts)
        assert mine.remediation.remedies, case.id  # a computed change, not only the texts
    assert {d.label for d in ours} == {0, 1}
    mine_m, base_m = compute_metrics(cases, ours), compute_metrics(cases, theirs)
    for key in ("LPA", "LPP", "LPR", "CCA", "FRA"):
        assert mine_m[key] == base_m[key], key


def test_eval_runs_a_policy_profile_on_its_benchmark(tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--profile",
            "mind2web-sc-policy",
            "--limit",
            "4",
            "--out",
            str(out),
            "--no-plots",
            "--quiet",
            "--memory-dir",
            str(tmp_path / "mem"),
        ],
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n"] == 4 and metrics["profile"] == "mind2web-sc-policy"
    first = json.loads(Path(out / "predictions.jsonl").read_text().splitlines()[0])
    assert first["id"] == load_benchmark("mind2web-sc")[0].id
    assert first["decision"]["rules"], "the policy path's decision carries per-rule results"
