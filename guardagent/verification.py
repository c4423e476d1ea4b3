"""Verification of general guard programs against labelled demonstrations.

A program is trusted for reuse (no LLM call) only if it reproduces the known decision and its
details on every labelled demonstration of the same guard request.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from guardagent.memory_store.store import Demonstration
from guardagent.profiles.loader import Profile
from guardagent.sandbox.dataflow import check_dataflow
from guardagent.sandbox.process import SandboxLimits, run_program
from guardagent.tools.registry import Toolbox
from guardagent.tools.verdict import Violations

_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


def extract_code(reply: str) -> str:
    """The program in an LLM reply: the last fenced block, else the whole reply."""
    blocks = _FENCE.findall(reply)
    return (blocks[-1] if blocks else reply).strip()


def same_details(a: Violations, b: Violations) -> bool:
    """Violations compared as sets (order of tables, columns and rules is not meaningful)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return {t: set(c) for t, c in a.items() if c} == {t: set(c) for t, c in b.items() if c}
    if isinstance(a, list) and isinstance(b, list):
        return set(a) == set(b)
    return not a and not b


def verify_program(
    code: str,
    demos: Iterable[Demonstration],
    toolbox: Toolbox,
    limits: SandboxLimits | None = None,
) -> list[str]:
    """Run `code` on each demonstration; returns the mismatches ([] means verified).

    A program that handles the raw event text itself (see :mod:`guardagent.sandbox.dataflow`)
    is refused before it runs on anything.
    """
    refused = check_dataflow(code, toolbox)
    if refused:
        return refused
    demos = list(demos)
    if {d["label"] for d in demos} != {0, 1}:
        return ["verification needs labelled demonstrations of both an allowed and a denied event"]
    problems = []
    count = 0
    for demo in demos:
        count += 1
        result = run_program(code, toolbox, demo["agent_input"], demo["agent_output"], limits)
        verdict = result["verdict"]
        if not result["ok"] or verdict is None:
            problems.append(f"{demo['id']}: {result['error']}")
            continue
        label = 0 if verdict["allowed"] else 1
        if label != demo["label"]:
            problems.append(f"{demo['id']}: label {label}, expected {demo['label']}")
        elif label == 1 and not same_details(verdict["violations"], demo["details"]):
            problems.append(
                f"{demo['id']}: violations {verdict['violations']}, expected {demo['details']}"
            )
    if count == 0:
        problems.append("no labelled demonstrations to verify against")
    return problems


def summarize(problems: list[str], limit: int = 3) -> str:
    """The first `limit` problems on one line, with how many more there are."""
    shown = "; ".join(problems[:limit])
    more = len(problems) - limit
    return shown + (f" (and {more} more)" if more > 0 else "")


_PROBLEMS: dict[tuple[str, str], list[str]] = {}


def program_problems(code: str, profile: Profile) -> list[str]:
    """Why `code` is not trusted for `profile` ([] = verified on its demonstrations).

    Whatever memory says about a program (it may come from an older profile, another
    process or a shared Chroma server), it is trusted only after it reproduces this
    profile's demonstrations here; the result is cached per process.
    """
    key = (profile.fingerprint, hashlib.sha256(code.encode("utf-8")).hexdigest())
    if key not in _PROBLEMS:
        _PROBLEMS[key] = verify_program(code, profile.demos(verified=False), profile.tools())
    return _PROBLEMS[key]
