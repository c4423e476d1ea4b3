"""Metamorphic: every shared EICU-AC event, re-presented in each layout EHRAgent's output takes,
gets the same reads, decision and details as the raw run log.

Layouts: the raw log (JSON cells), `Solution:` sections with plain code between separators,
the paper's Figure 9 layout (`Knowledge:` / `Generated code:` / `Answer:`), fenced markdown
blocks, a mixture, and harmless rewrites (CRLF line ends, trailing spaces, blank lines). The
cells are taken from the log here with `json` (independently of the reader under test).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from guardagent import GuardAgent
from guardagent.eval.benchmarks import ehragent_answer, load_eicu_ac
from guardagent.eval.cases import Case
from guardagent.profiles import load_profile
from guardagent.readers.ehragent import ehr_accessed_columns, parse_identity
from guardagent.tools.rules import check_access

SEP = "-" * 58
PERMISSIONS: dict[str, dict[str, list[str]]] = load_profile("eicu-ac").policy("PERMISSIONS")


def _split(case: Case) -> tuple[str, list[str], str] | None:
    """(knowledge, cells, answer) of a raw log, or None when a cell is not strict JSON."""
    out = case.agent_output
    decoder = json.JSONDecoder(strict=False)
    cells, pos = [], 0
    while (key := out.find('"cell"', pos)) >= 0:
        brace = out.rfind("{", 0, key)
        try:
            obj, pos = decoder.raw_decode(out, brace)
        except ValueError:
            return None
        cells.append(obj["cell"])
    head = out.split("Solution:")[0] if "Solution:" in out else ""
    return (head.strip(), cells, ehragent_answer(out) or "") if cells else None


def raw(k: str, cells: list[str], a: str) -> str:
    blocks = [f'{SEP}\n{{\n"cell": {json.dumps(c)}\n}}\n{SEP}\nError: retry.' for c in cells]
    return f"{k}\nSolution: \n" + "\n".join(blocks) + f"\n{a}\n{SEP}\nTERMINATE"


def solution(k: str, cells: list[str], a: str) -> str:
    parts = [f"Solution: \n{SEP}\n{c}\n{SEP}\nError: retry." for c in cells]
    return f"{k}\n" + "\n".join(parts) + f"\n{a}\n{SEP}\nTERMINATE"


def paper(k: str, cells: list[str], a: str) -> str:
    parts = [f"Generated code:\n{c}" for c in cells]
    return f"{k}\n" + "\n".join(parts) + f"\nAnswer: {a}"


def fenced(k: str, cells: list[str], a: str) -> str:
    parts = [f"```python\n{c}\n```" for c in cells]
    return f"{k}\n\n" + "\n\n".join(parts) + f"\n\nThe answer is {a}."


def mixed(k: str, cells: list[str], a: str) -> str:
    makers = [
        lambda c: f"```\n{c}\n```",
        lambda c: f'{{\n"cell": {json.dumps(c)}\n}}',
        lambda c: f"Generated code:\n{c}\n{SEP}",
    ]
    parts = [makers[i % 3](c) for i, c in enumerate(cells)]
    return f"{k}\n" + "\n".join(parts) + f"\nAnswer: {a}"


def crlf(k: str, cells: list[str], a: str) -> str:
    text = paper(k, cells, a)
    return "\r\n".join(line + "  " for line in text.split("\n")) + "\r\n\r\n"


LAYOUTS: dict[str, Callable[[str, list[str], str], str]] = {
    "raw": raw,
    "solution": solution,
    "paper": paper,
    "fenced": fenced,
    "mixed": mixed,
    "crlf": crlf,
}
CASES = [(c, parts) for c in load_eicu_ac() if (parts := _split(c)) is not None]


def _decision(agent_input: str, agent_output: str) -> tuple[int, dict[str, list[str]]]:
    """The shipped program's decision, computed in-process from the same readers."""
    accessed = ehr_accessed_columns(agent_output)
    blocked = check_access(accessed, PERMISSIONS[parse_identity(agent_input)])
    return (1 if blocked else 0), blocked


def test_the_suite_covers_the_benchmark() -> None:
    assert len(CASES) >= 300  # all but the few logs whose cells are not strict JSON


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_layout_reads_and_decides_like_the_raw_log(layout: str) -> None:
    differences: list[Any] = []
    for case, (knowledge, cells, answer) in CASES:
        expected = _decision(case.agent_input, case.agent_output)
        got = _decision(case.agent_input, LAYOUTS[layout](knowledge, cells, answer))
        if got != expected:
            differences.append((case.id, expected, got))
    assert differences == []


def test_reads_match_the_raw_log_exactly() -> None:
    for case, (knowledge, cells, answer) in CASES[::7]:
        expected = ehr_accessed_columns(case.agent_output)
        for layout in LAYOUTS.values():
            assert ehr_accessed_columns(layout(knowledge, cells, answer)) == expected, case.id


@pytest.mark.parametrize("layout", ["paper", "fenced", "mixed"])
def test_end_to_end_through_the_sandbox(layout: str, tmp_path: Any) -> None:
    guard = GuardAgent(profile="eicu-ac", memory_dir=str(tmp_path))
    for case, (knowledge, cells, answer) in CASES[::40]:
        decision = guard.check(case.agent_input, LAYOUTS[layout](knowledge, cells, answer))
        label, blocked = _decision(case.agent_input, case.agent_output)
        assert decision.label == label, case.id
        assert decision.program_source == "memory" and decision.error is None
        if label:
            assert decision.violations == blocked
