"""The code is as `ruff format` writes it (`[tool.ruff.format]` in pyproject.toml).

Run from the suite so the README's test command (and CI) checks it, beside `ruff check`:
one layout for every module, with no format exceptions (`fmt: skip` markers) to keep.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).parent / "ruff"


def _format_check(*paths: str | Path, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RUFF), "format", "--check", *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        check=False,
    )


def test_every_module_is_formatted() -> None:
    out = _format_check(".")
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]


def test_the_check_sees_a_module_that_is_not(tmp_path: Path) -> None:
    """The control: the same command fails on a module laid out by hand."""
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text("utf-8"), "utf-8")
    (tmp_path / "hand.py").write_text("x = {'a':1,\n  'b':2}\n", encoding="utf-8")
    out = _format_check("hand.py", cwd=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "hand.py" in out.stdout + out.stderr


def test_no_module_keeps_a_format_exception() -> None:
    marker = "# fmt: " + "skip"
    kept = [
        str(p.relative_to(REPO))
        for folder in ("guardagent", "tests", "benchmarks", "docs")
        for p in (REPO / folder).rglob("*.py")
        if marker in p.read_text(encoding="utf-8")
    ]
    assert kept == []
