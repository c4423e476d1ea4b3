"""The docs site builds strictly, and its generated reference covers the code (issue 37).

`mkdocs build --strict` fails on a broken link, a page missing from the nav, or a marker the
generator does not know, so the site cannot drift silently. The dev extra installs MkDocs:
this test never skips.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.docs_blocks import ROOT, blocks, expand


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-6000:]
    built = tmp_path / "site"
    assert (built / "reference" / "predicates" / "index.html").is_file()
    page = (built / "reference" / "settings" / "index.html").read_text(encoding="utf-8")
    assert "GUARDAGENT_TRACE_BUDGET_MS" in page and "<!-- generated" not in page


def test_every_trace_predicate_has_a_section_and_a_runnable_example() -> None:
    from guardagent.trace import PREDICATES

    path = ROOT / "docs" / "reference" / "predicates.md"
    page = expand(path.read_text(encoding="utf-8"))
    examples = [b.code for b in blocks(path) if b.action == "python"]
    for name in PREDICATES:
        assert f"### `{name}(" in page, name
        assert any(f"'{name}(" in code or f'"{name}(' in code for code in examples), name


def test_a_marker_naming_no_generator_fails() -> None:
    import pytest

    with pytest.raises(KeyError):
        expand("<!-- generated: no-such-table -->\n")


def test_ci_runs_exactly_the_readme_test_command() -> None:
    """`.ci/run` is the README's test command, byte for byte (and so covers the docs build)."""
    readme = [b.code.strip() for b in blocks(ROOT / "README.md") if b.lang == "bash"]
    command = next(c for c in readme if ".[dev]" in c)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == command
    assert "pytest -q" in command


def test_the_readme_is_a_front_page() -> None:
    """At most 300 lines, and the two set-up commands are the first two shell blocks."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    shells = [b.code.strip() for b in blocks(ROOT / "README.md") if b.lang == "bash"]
    assert shells[0].startswith("python3 -m venv .venv && .venv/bin/pip install -e . && ")
    assert "guardagent eval --profile eicu-ac" in shells[0]
    assert shells[1].startswith("python3 -m venv .venv && .venv/bin/pip install -q -e '.[dev]'")
