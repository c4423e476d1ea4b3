"""The suite keeps to its own folders whatever the shell that runs it has set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_tests_never_write_into_the_shells_memory_dir(tmp_path: Path) -> None:
    user_memory = tmp_path / "user-memory"
    env = {
        **os.environ,
        "GUARDAGENT_MEMORY_DIR": str(user_memory),
        "GUARDAGENT_PROFILE": "no-such-profile",
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_cli.py::test_eval_on_a_new_case_file",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not user_memory.exists()  # the test's guard opened a memory, but its own
