"""Verifying a shipped profile's program on its counterfactual events: wall time, median.

A model-written program decides only after it verifies (demonstrations and counterfactual
events, each run in the sandbox), so this time is paid once per new program. The tests check
that the shipped programs verify; how long it takes is this figure (it was a bound in seconds
in tests/test_program_trust.py and tests/test_access_cells.py, which a loaded machine failed).

Prints, per profile, the first `program_problems` of a process with an empty verification
cache (`$GUARDAGENT_CACHE_DIR` set to a fresh folder: a built-in program's result is kept on
disk afterwards, so later calls cost nothing), and the median over `--runs` of the suite's
run alone (`run_cases` in the sandbox's process runner), after one warm-up run.

Run: .venv/bin/python benchmarks/bench_verification.py [--runs 5] [--profiles NAME ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable

from guardagent.counterfactuals import request_suite
from guardagent.profiles import load_profile
from guardagent.profiles.verification import judging_policy, program_problems, run_cases
from guardagent.sandbox.process import run_program

PROFILES = ("eicu-ac", "mind2web-sc", "tool-calls", "eicu-ac-policy", "mind2web-sc-policy")
"""The shipped profiles measured by default (the policy-model twins judge with z3)."""


def median_seconds(work: Callable[[], object], runs: int) -> float:
    """Median wall time of `runs` calls of `work`, after one warm-up call."""
    work()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(name: str, runs: int) -> tuple[int, float, float]:
    """(cases, first verification in seconds, median suite run in seconds) of one profile."""
    profile = load_profile(name)
    code = profile.demonstrations[0].code
    assert code is not None
    cases = request_suite(profile).cases
    started = time.perf_counter()
    assert program_problems(code, profile) == [], name
    verify = time.perf_counter() - started
    tools = profile.tools()
    policy, own = judging_policy(profile)

    def suite_run() -> None:  # every case decided right: nothing stops the run early
        assert (
            run_cases(
                code,
                tools,
                cases,
                runner=run_program,
                policy=policy,
                threshold=profile.safety_threshold,
                own_verdicts=own,
            )
            == []
        ), name

    run = median_seconds(suite_run, runs)
    return len(cases), verify, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profiles", nargs="+", default=list(PROFILES), metavar="NAME")
    args = parser.parse_args()
    os.environ["GUARDAGENT_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-verification-")
    print(f"{'profile':<14} {'cases':>5} {'first verify (s)':>17} {'suite run (s)':>14}")
    for name in args.profiles:
        cases, verify, run = measure(name, args.runs)
        print(f"{name:<14} {cases:>5} {verify:>17.3f} {run:>14.3f}")


if __name__ == "__main__":
    main()
