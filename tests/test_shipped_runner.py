"""Verification runs a built-in profile's own program in-process; anything else in a child."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from guardagent.eval.benchmarks import load_eicu_ac, load_mind2web_sc
from guardagent.profiles.loader import BUILTIN_DIR, load_profile
from guardagent.profiles.verification import runner_for
from guardagent.sandbox.process import run_program, run_shipped_program

EVIL = "allow('x') if 'token' in agent_output else deny(['r'], 'no')"


@pytest.mark.parametrize("name", ["eicu-ac", "mind2web-sc", "tool-calls"])
def test_only_the_shipped_program_of_a_builtin_profile_runs_in_process(
    name: str, tmp_path: Path
) -> None:
    profile = load_profile(name)
    shipped = profile.demonstrations[0].code
    assert runner_for(shipped, profile) is run_shipped_program
    assert runner_for(shipped + "\n# edited", profile) is run_program  # not the shipped text
    assert runner_for(EVIL, profile) is run_program
    copy = tmp_path / name
    shutil.copytree(Path(BUILTIN_DIR) / name, copy)
    assert runner_for(shipped, load_profile(str(copy))) is run_program  # not a built-in


def test_in_process_and_child_runs_agree() -> None:
    cases = [("eicu-ac", c) for c in load_eicu_ac()[::20]]
    cases += [("mind2web-sc", c) for c in load_mind2web_sc()[::20]]
    for name, case in cases:
        profile = load_profile(name)
        code, tools = profile.demonstrations[0].code, profile.tools()
        child = run_program(code, tools, case.agent_input, case.agent_output)
        here = run_shipped_program(code, tools, case.agent_input, case.agent_output)
        for key in ("ok", "verdict", "error", "unreadable", "predicates"):
            assert here[key] == child[key], (case.id, key)


def test_unreadable_evidence_and_rejections_read_the_same() -> None:
    tools = load_profile("eicu-ac").tools()
    code = load_profile("eicu-ac").demonstrations[0].code
    here = run_shipped_program(code, tools, "Identity: nursing\nQuestion: q", "")
    assert here["ok"] is False and here["unreadable"][0]["reason"] == "no_code"
    rejected = run_shipped_program("import os\nallow('x')", tools, "a", "b")
    assert rejected["ok"] is False and "import" in (rejected["error"] or "").lower()
