"""A one-shot `guardagent check` loads neither z3 nor numpy (issue 22: its cold start).

Its program assigns no predicates, so nothing verifies rules with z3; the derivation
machinery the graph's nodes name must bring them only on first use.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.bench_cold_start import COMMANDS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", ["check eicu-ac", "check mind2web-sc"])
def test_check_imports_no_solver(tmp_path: Path, command: str) -> None:
    env = {**os.environ, "GUARDAGENT_MEMORY_DIR": str(tmp_path)}
    cmd = [sys.executable, "-X", "importtime", "-m", "guardagent.cli", *COMMANDS[command]]
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    loaded = {
        line.split("|")[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "langgraph" in loaded  # the measurement saw the guard's imports
    assert not {"z3", "numpy"} & loaded
