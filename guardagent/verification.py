"""Verification of general guard programs against labelled demonstrations.

A program is trusted for reuse (no LLM call) only if it reproduces the known decision and its
details on every labelled demonstration of the same guard request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from guardagent.memory_store.store import Demonstration
from guardagent.tools.registry import Toolbox
from guardagent.tools.sandbox import SandboxLimits, run_program
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
    """Run `code` on each demonstration; returns the mismatches ([] means verified)."""
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
