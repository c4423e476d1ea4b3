"""Every code block of README.md and docs/ runs, parses, or says why it cannot (issue 37).

A page's runnable blocks run in order in one fresh interpreter, in an empty folder that can
see the repository's `guardagent/` and `tests/` (so shipped examples are found by the paths
the page gives) and nothing else, with a throwaway memory, cache and deployment key: a reader
who copies the blocks into a shell gets what the test got, and the clone gets no files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.docs_blocks import ROOT, Block, blocks, pages

ALL = [b for page in pages() for b in blocks(page)]
RUNNABLE = {"python", "shell", "file", "diagram"}
NOT_RUN_CEILING = 19
"""Blocks that cannot run offline (a real model, a database, minutes of work). Raising this
is a decision: say why in the block's marker."""

DRIVER = textwrap.dedent("""\
    import json, subprocess, sys, traceback
    from pathlib import Path
    steps = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    scope = {"__name__": "__main__"}
    for step in steps:
        print(f"--- {step['where']} ({step['action']})", flush=True)
        if step["action"] == "python":
            exec(compile(step["code"], step["where"], "exec"), scope)
        elif step["action"] == "file":
            Path(step["arg"]).parent.mkdir(parents=True, exist_ok=True)
            Path(step["arg"]).write_text(step["code"], encoding="utf-8")
        elif step["action"] == "diagram":
            drawn = Path(step["arg"]).read_text(encoding="utf-8").rstrip("\\n")
            if drawn != step["code"].rstrip("\\n"):
                sys.exit(f"{step['where']}: the picture is stale; {step['arg']} now reads:\\n{drawn}")
        else:
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", step["code"]])
            if done.returncode:
                sys.exit(f"{step['where']}: exit {done.returncode}")
    """)


def test_every_block_runs_parses_or_says_why() -> None:
    errors = [
        f"{b.where} ({b.lang or 'plain'}): {b.action}" for b in ALL if b.action.startswith("error")
    ]
    assert not errors, "\n".join(errors)
    skipped = [b for b in ALL if b.action == "skip"]
    ran = [b for b in ALL if b.action in RUNNABLE]
    print(
        f"{len(ran)} blocks run, {len(skipped)} not run:",
        *(f"  {b.where}: {b.arg}" for b in skipped),
        sep="\n",
    )
    assert len(ran) > len(skipped)
    assert len(skipped) <= NOT_RUN_CEILING, [b.where for b in skipped]


@pytest.mark.parametrize("block", [b for b in ALL if b.action == "parse"], ids=lambda b: b.where)
def test_data_blocks_parse(block: Block) -> None:
    if block.lang == "json":
        json.loads(block.code)
    else:
        yaml.safe_load(block.code)


@pytest.mark.parametrize("page", sorted({b.page for b in ALL if b.action in RUNNABLE}))
def test_page_runs(page: str, tmp_path: Path) -> None:
    steps = [
        {"where": b.where, "action": b.action, "code": b.code, "arg": b.arg}
        for b in ALL
        if b.page == page and b.action in RUNNABLE
    ]
    work = tmp_path / "work"
    work.mkdir()
    for name in ("guardagent", "tests", "benchmarks"):
        (work / name).symlink_to(ROOT / name)
    (tmp_path / "steps.json").write_text(json.dumps(steps), encoding="utf-8")
    (tmp_path / "driver.py").write_text(DRIVER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARDAGENT_")}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(ROOT),
        GUARDAGENT_MEMORY_DIR=str(tmp_path / "memory"),
        GUARDAGENT_CACHE_DIR=str(tmp_path / "cache"),
        GUARDAGENT_TRACE_KEY="docs-example-key-0123456789abcdef",
    )
    done = subprocess.run(
        [sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "steps.json")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{page}\n{done.stdout[-4000:]}\n{done.stderr[-6000:]}"


@pytest.mark.parametrize(
    ("lang", "marker", "arg", "action"),
    [
        ("python", None, None, "python"),
        ("python", "not-run", "needs a real model", "skip"),
        ("python", "not-run", None, "error: not-run needs a reason"),
        ("python", "run", None, "error: python blocks run unmarked"),
        ("bash", "run", None, "shell"),
        ("console", "run", None, "shell"),
        ("bash", None, None, "error: mark it run or not-run"),
        ("bash", "not-run", "starts a server", "skip"),
        ("yaml", None, None, "parse"),
        ("json", None, None, "parse"),
        ("yaml", "file", "profiles/x/policy.yaml", "file"),
        ("yaml", "file", None, "error: bad file marker"),
        ("python", "file", "x.py", "error: bad file marker"),
        ("yaml", "run", None, "error: run on yaml"),
        ("mermaid", None, None, "error: a mermaid block must be marked not-run"),
        ("", None, None, "error: a plain block must be marked not-run"),
        ("mermaid", "not-run", "drawn by LangGraph", "skip"),
        ("mermaid", "drawn", "d.mmd", "diagram"),
        ("mermaid", "drawn", None, "error: bad drawn marker"),
        ("python", "drawn", "d.mmd", "error: bad drawn marker"),
    ],
)
def test_what_each_block_is_for(
    lang: str, marker: str | None, arg: str | None, action: str
) -> None:
    assert Block("p.md", 1, lang, "x\n", marker, arg).action == action


def test_blocks_are_found_with_their_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# T\n\n<!-- not-run: needs a model -->\n```python\nx = 1\n```\n\ntext\n\n"
        "1. a step\n\n   <!-- run -->\n   ```bash\n   echo hi\n   ```\n\n```yaml\na: 1\n```\n",
        encoding="utf-8",
    )
    from tests import docs_blocks

    found = [(b.lang, b.marker, b.arg, b.code) for b in docs_blocks.blocks(page, root=tmp_path)]
    assert found == [
        ("python", "not-run", "needs a model", "x = 1\n"),
        ("bash", "run", None, "echo hi\n"),
        ("yaml", None, None, "a: 1\n"),
    ]


def test_a_stale_picture_fails_its_page(tmp_path: Path) -> None:
    steps = [
        {
            "where": "p.md:1",
            "action": "file",
            "code": "flowchart LR\n    a --> b\n",
            "arg": "d.mmd",
        },
        {
            "where": "p.md:5",
            "action": "diagram",
            "code": "flowchart LR\n    a --> c\n",
            "arg": "d.mmd",
        },
    ]
    (tmp_path / "steps.json").write_text(json.dumps(steps), encoding="utf-8")
    (tmp_path / "driver.py").write_text(DRIVER, encoding="utf-8")
    run = [sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "steps.json")]
    stale = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert stale.returncode != 0 and "p.md:5: the picture is stale" in stale.stderr
    steps[1]["code"] = "flowchart LR\n    a --> b\n"
    (tmp_path / "steps.json").write_text(json.dumps(steps), encoding="utf-8")
    assert subprocess.run(run, cwd=tmp_path, timeout=60).returncode == 0
