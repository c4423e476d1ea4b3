"""Verification of general guard programs: demonstrations, counterfactuals, data flow.

A program is trusted (to decide, and to be reused with no LLM call) only if it keeps the raw
event out of its own logic, reproduces the known decision and its details on every labelled
demonstration of the same guard request, and decides the request's counterfactual events as
the request's rules do (:mod:`guardagent.counterfactuals`).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from guardagent.counterfactuals import Case, program_cases, request_suite, suite_key
from guardagent.counterfactuals.details import same_details
from guardagent.memory_store.store import Demonstration
from guardagent.policy.model import PolicyModel
from guardagent.policy.runs import execution_verdict, profile_policy
from guardagent.profiles.loader import BUILTIN_DIR, Profile
from guardagent.profiles.verification_cache import cached_problems
from guardagent.sandbox.dataflow import check_dataflow
from guardagent.sandbox.policy import AST_LOCK
from guardagent.sandbox.process import (
    ExecutionResult,
    SandboxLimits,
    run_program,
    run_shipped_program,
)
from guardagent.tools.registry import Toolbox

__all__ = [
    "MAX_PROBLEMS",
    "PARALLEL_RUNS",
    "Runner",
    "extract_code",
    "judging_policy",
    "known_problems",
    "program_problems",
    "request_problems",
    "run_cases",
    "runner_for",
    "same_details",
    "summarize",
    "verify_program",
]

Runner = Callable[[str, Toolbox, str, str, SandboxLimits | None], ExecutionResult]
"""Runs one program on one event: :func:`run_program` or :func:`run_shipped_program`."""

_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


def extract_code(reply: str) -> str:
    """The program in an LLM reply: the last fenced block, else the whole reply."""
    blocks = _FENCE.findall(reply)
    return (blocks[-1] if blocks else reply).strip()


MAX_PROBLEMS = 12
"""Mismatches reported at most (verification stops after the first batch that holds one)."""
PARALLEL_RUNS = 4
"""Sandbox runs at once while verifying (one forked child each)."""


def verify_program(
    code: str,
    demos: Iterable[Demonstration],
    toolbox: Toolbox,
    limits: SandboxLimits | None = None,
    *,
    cases: Iterable[Case] = (),
    policy: PolicyModel | None = None,
    threshold: float | None = None,
    runner: Runner = run_program,
    own_verdicts: bool = False,
) -> list[str]:
    """Run `code` on each demonstration, then on `cases`; returns the mismatches ([] = verified).

    A program that handles the raw event text itself (see :mod:`guardagent.sandbox.dataflow`)
    is refused before it runs on anything.

    Args:
        code: The guard program.
        demos: The labelled demonstrations (named by their `id` in problems).
        toolbox: The functions the program is given.
        limits: Sandbox limits per run.
        cases: Further events with their expected decisions (counterfactuals).
        policy: The profile's policy model: runs are judged by the verdict it gives on the
            predicates the program assigns (with the program's own, if any).
        threshold: The profile's safety threshold, as the `verify` node applies it.
        runner: How each case runs: a sandbox child (default), or in this process for a
            program that ships with the package (:func:`runner_for`).
        own_verdicts: A run that assigns no predicate is judged by its own verdict (`policy`
            holds rules derived from the request, see :func:`judging_policy`).
    """
    refused = check_dataflow(code, toolbox)
    if refused:
        return refused
    demos = list(demos)
    if {d["label"] for d in demos} != {0, 1}:
        return ["verification needs labelled demonstrations of both an allowed and a denied event"]
    labelled = [
        Case(d["id"], d["agent_input"], d["agent_output"], d["label"], d["details"]) for d in demos
    ]
    return run_cases(
        code,
        toolbox,
        [*labelled, *cases],
        limits,
        policy=policy,
        threshold=threshold,
        runner=runner,
        own_verdicts=own_verdicts,
    )


def run_cases(
    code: str,
    toolbox: Toolbox,
    cases: Iterable[Case],
    limits: SandboxLimits | None = None,
    *,
    policy: PolicyModel | None = None,
    threshold: float | None = None,
    runner: Runner = run_program,
    own_verdicts: bool = False,
) -> list[str]:
    """Mismatches of `code` on `cases`: label, and the details of a denial.

    Cases run `PARALLEL_RUNS` at a time (each in its own sandbox child), in batches; a
    program is refused after the first batch that holds a mismatch (at most `MAX_PROBLEMS`
    of them reported): the rest of the suite cannot make it verify. With
    `own_verdicts`, a run that assigned no predicate is judged by its own verdict rather
    than by `policy` (rules derived from the request judge both styles of program).
    """
    problems: list[str] = []
    pending = list(cases)
    batch = 4 * PARALLEL_RUNS
    # In-process runs stay in this thread: under the GIL threads buy nothing, and CPython 3.11
    # converts ASTs with interpreter-wide state, so readers parsing code in several threads
    # at once can fail ("AST constructor recursion depth mismatch", python/cpython#106905).
    # Their readers' parses also hold AST_LOCK, against other threads of the guard process.
    in_process = runner is run_shipped_program
    with ThreadPoolExecutor(PARALLEL_RUNS, thread_name_prefix="guard-verify") as pool:
        for start in range(0, len(pending), batch):
            chunk = pending[start : start + batch]
            run = partial(
                _mismatch,
                code,
                toolbox,
                limits=limits,
                policy=policy,
                threshold=threshold,
                runner=runner,
                own_verdicts=own_verdicts,
            )
            if in_process:
                with AST_LOCK:
                    found = [run(case) for case in chunk]
            else:
                found = list(pool.map(run, chunk))
            problems += [p for p in found if p is not None]
            if len(problems) > MAX_PROBLEMS:
                problems = problems[:MAX_PROBLEMS]
            if problems:  # refused either way: the rest of the suite would only cost time
                if start + batch < len(pending):
                    problems.append(
                        f"(verification stopped at the first batch of {batch} "
                        "cases with a mismatch)"
                    )
                break
    return problems


def _mismatch(
    code: str,
    toolbox: Toolbox,
    case: Case,
    limits: SandboxLimits | None,
    policy: PolicyModel | None = None,
    threshold: float | None = None,
    runner: Runner = run_program,
    own_verdicts: bool = False,
) -> str | None:
    result = runner(code, toolbox, case.agent_input, case.agent_output, limits)
    if own_verdicts and result.get("ok") and not result.get("predicates"):
        policy = None  # derived rules judge a program that decides itself by its verdict
    verdict, error = execution_verdict(result, policy, threshold=threshold)
    if verdict is None:
        return f"{case.name}: {error}"
    label = 0 if verdict["allowed"] else 1
    if label != case.label:
        want = f" {case.details}" if case.label == 1 else ""
        return f"{case.name}: label {label}, expected {case.label}{want}"
    if label == 1 and not same_details(verdict["violations"], case.details):
        return f"{case.name}: violations {verdict['violations']}, expected {case.details}"
    return None


def summarize(problems: list[str], limit: int = 3) -> str:
    """The first `limit` problems on one line, with how many more there are."""
    shown = "; ".join(problems[:limit])
    more = len(problems) - limit
    return shown + (f" (and {more} more)" if more > 0 else "")


_PROBLEMS: dict[tuple[str, str], list[str]] = {}
_LOCK = threading.Lock()


def program_problems(code: str, profile: Profile) -> list[str]:
    """Why `code` is not trusted for `profile` ([] = verified).

    Verified means: it respects the data-flow discipline, reproduces every labelled
    demonstration, and decides every counterfactual of the request as the request's rules
    do (:mod:`guardagent.counterfactuals`); and the request is covered (each rule is probed).
    Whatever memory says about a program (it may come from an older profile, another
    process or a shared Chroma server), it is trusted only after this, here; the result is
    cached per process, so each program is verified once.
    """
    key = _problems_key(code, profile)
    if key in _PROBLEMS:
        return _PROBLEMS[key]
    with _LOCK:
        if key not in _PROBLEMS:
            if runner_for(code, profile) is run_shipped_program:  # package code: kept on disk
                _PROBLEMS[key] = cached_problems("\0".join(key), lambda: _verify(code, profile))
            else:
                _PROBLEMS[key] = _verify(code, profile)
    return _PROBLEMS[key]


def known_problems(code: str, profile: Profile) -> list[str] | None:
    """:func:`program_problems` when this process has decided it already, else None.

    Lets a node on an event loop tell a cached answer (microseconds) from a verification
    (sandbox runs on every demonstration and counterfactual), which it must wait for in a
    worker thread rather than hold the loop for.
    """
    return _PROBLEMS.get(_problems_key(code, profile))


def _problems_key(code: str, profile: Profile) -> tuple[str, str]:
    return (suite_key(profile), hashlib.sha256(code.encode("utf-8")).hexdigest())


_BEYOND: dict[tuple[str, str], list[str]] = {}


def request_problems(code: str, profile: Profile) -> list[str]:
    """The problems of `code` beyond the labelled demonstrations (cached per process).

    Data-flow refusals, counterfactual mismatches and the request's coverage gaps: what a
    report that runs the demonstrations itself (`guardagent profile check`) adds to them.
    """
    key = (suite_key(profile), hashlib.sha256(code.encode("utf-8")).hexdigest())
    if key not in _BEYOND:
        tools = profile.tools()
        refused = check_dataflow(code, tools)
        suite = request_suite(profile)
        policy, own = judging_policy(profile)
        found = refused or run_cases(
            code,
            tools,
            [*suite.cases, *program_cases(profile, code)],
            policy=policy,
            threshold=profile.safety_threshold,
            runner=runner_for(code, profile),
            own_verdicts=own,
        )
        _BEYOND[key] = found + [f"the request is not covered: {p}" for p in suite.problems]
    return _BEYOND[key]


def _verify(code: str, profile: Profile) -> list[str]:
    tools = profile.tools()
    refused = check_dataflow(code, tools)
    if refused:
        return refused
    suite = request_suite(profile)
    named = [
        Demonstration(**{**demo, "id": spec.id})
        for demo, spec in zip(profile.demos(verified=False), profile.demonstrations, strict=True)
    ]
    policy, own = judging_policy(profile)
    problems = verify_program(
        code,
        named,
        tools,
        cases=[*suite.cases, *program_cases(profile, code)],
        policy=policy,
        threshold=profile.safety_threshold,
        runner=runner_for(code, profile),
        own_verdicts=own,
    )
    return problems + [f"the request is not covered: {p}" for p in suite.problems]


def judging_policy(profile: Profile) -> tuple[PolicyModel | None, bool]:
    """The policy model that judges a program's runs, and whether runs may decide themselves.

    The profile's own policy model judges every run (its programs must assign predicates);
    rules derived from the request (:mod:`guardagent.counterfactuals.derived`) judge the
    runs that assign predicates, and the others by their own verdicts.
    """
    named = profile_policy(profile)
    if named is not None:
        return named, False
    from guardagent.counterfactuals.derived import derived_policy

    derived = derived_policy(profile)
    return derived, derived is not None


def runner_for(code: str, profile: Profile) -> Runner:
    """How to run `code` while verifying it: in this process, or in a sandbox child.

    In this process only for a built-in profile's own program (package code, as trusted as
    the readers): verifying it would otherwise fork ~20-130 children at start-up, a few
    hundred ms of every `guardagent check`. A program from memory or a model always runs in
    a child.
    """
    builtin = profile.root.resolve().parent == BUILTIN_DIR.resolve()
    shipped = code in {spec.code for spec in profile.demonstrations}
    return run_shipped_program if builtin and shipped else run_program
