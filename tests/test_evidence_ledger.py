"""A reader's `unreadable` denies the run even when the program catches it or ignores it."""

from __future__ import annotations

import pytest

from guardagent.readers.evidence import UnreadableEvidence, describe, unreadable
from guardagent.sandbox import run_program
from guardagent.tools.registry import Toolbox


def _blind(text: str) -> str:
    """A reader that can never read its evidence."""
    unreadable("no_code", "no code found in " + text[:10])


TOOLS = Toolbox()
TOOLS.register(_blind, name="blind")


def test_outside_a_run_the_reader_only_raises() -> None:
    with pytest.raises(UnreadableEvidence) as info:
        _blind("abc")
    assert info.value.reason == "no_code"


@pytest.mark.parametrize(
    "program",
    [
        "try:\n    blind(agent_output)\nexcept Exception:\n    pass\nallow('caught it')",
        "x = 0\ntry:\n    x = blind(agent_output)\nfinally:\n    allow('finally')",
        "blind(agent_output)\nallow('never reached')",
    ],
)
def test_caught_or_not_the_run_reports_unreadable_and_no_verdict(program: str) -> None:
    result = run_program(program, TOOLS, "in", "out text")
    assert result["ok"] is False
    assert result["verdict"] is None
    assert result["unreadable"] == [{"reason": "no_code", "detail": "no code found in out text"}]
    assert result["error"] is not None and result["error"].startswith("Unreadable: no_code")


def test_a_clean_run_reports_nothing_unreadable() -> None:
    result = run_program("allow('fine')", TOOLS, "in", "out")
    assert result["ok"] and result["unreadable"] == []


def test_describe_dedupes_in_order() -> None:
    entries = [
        {"reason": "a", "detail": "x"},
        {"reason": "b", "detail": "y"},
        {"reason": "a", "detail": "x"},
    ]
    assert describe(entries) == "a: x; b: y"  # type: ignore[arg-type]


def test_details_are_capped() -> None:
    with pytest.raises(UnreadableEvidence) as info:
        unreadable("unknown_column", "z" * 5000)
    assert len(info.value.detail) < 400
