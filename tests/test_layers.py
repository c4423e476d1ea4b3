"""The package's import layering (`[tool.importlinter]` in pyproject.toml) holds.

Run from the suite so the README's test command (and CI) checks it: the readers and the
trace's readers reach no graph, node, model or front end, and the packages import only
downwards, but for the imports the contract names one by one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


@pytest.mark.skipif(
    not LINT_IMPORTS.exists(), reason="import-linter (the dev extra) is not installed"
)
def test_the_import_contracts_are_kept() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(REPO / "pyproject.toml")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert "4 kept, 0 broken" in out.stdout
