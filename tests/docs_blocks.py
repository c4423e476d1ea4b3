"""The code blocks of README.md and docs/: found, classified and run as a reader would.

Each fenced block is one of:

- ``python``: run, in page order, in one interpreter per page (a page reads like a notebook:
  later blocks use what earlier ones defined), in an empty folder;
- ``bash`` / ``console`` / ``sh`` marked ``<!-- run -->`` on the line before: run there with
  ``bash -euo pipefail`` (the `guardagent` command on PATH);
- ``yaml`` marked ``<!-- file: PATH -->``: written to PATH in that folder (the page's next
  blocks read it); any other ``yaml`` / ``json`` block must parse;
- marked ``<!-- not-run: REASON -->``: not run, and counted; the reason is required;
- ``mermaid`` marked ``<!-- drawn: PATH -->``: a picture, checked when its page runs to be
  exactly the file PATH that the page's earlier blocks wrote (``guardagent explain --format
  mermaid -o PATH``), so a drawing shown on a page cannot go stale.

Anything else (an unmarked shell block, a diagram, a text block) is an error: a block either
runs or says why it cannot. Pages are read after `docs/gen_reference.py` expands their
generated parts, so the generated reference's examples run too.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHELLS = frozenset({"bash", "console", "sh"})
FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[\w+-]*)[^\n]*$")
MARKER = re.compile(r"^\s*<!-- (?P<kind>run|not-run|file|drawn)(?::\s*(?P<arg>.*?))? -->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block, where it is, and what its marker says to do with it."""

    page: str
    line: int
    lang: str
    code: str
    marker: str | None = None
    arg: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def action(self) -> str:
        """`python`, `shell`, `file`, `diagram`, `parse`, `skip`, or `error: ...`."""
        if self.marker == "not-run":
            return "skip" if self.arg else "error: not-run needs a reason"
        if self.marker == "drawn":
            return "diagram" if self.arg and self.lang == "mermaid" else "error: bad drawn marker"
        if self.marker == "file":
            return (
                "file" if self.arg and self.lang in {"yaml", "json"} else "error: bad file marker"
            )
        if self.lang == "python":
            return "python" if self.marker is None else "error: python blocks run unmarked"
        if self.lang in SHELLS:
            return "shell" if self.marker == "run" else "error: mark it run or not-run"
        if self.lang in {"yaml", "json"}:
            return "parse" if self.marker is None else f"error: {self.marker} on {self.lang}"
        return f"error: a {self.lang or 'plain'} block must be marked not-run"


def expand(text: str) -> str:
    """The page as the site shows it: generated parts expanded by docs/gen_reference.py."""
    spec = importlib.util.spec_from_file_location(
        "gen_reference", ROOT / "docs" / "gen_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.expand(text))


def pages() -> list[Path]:
    """README.md and every page of the docs site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """Every fenced block of one page, in order (`page` named relative to `root`)."""
    lines = expand(path.read_text(encoding="utf-8")).split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        indent, start = len(opened["indent"]), i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        before = next((ln for ln in reversed(lines[:start]) if ln.strip()), "")
        mark = MARKER.match(before)
        found.append(
            Block(
                page=str(path.relative_to(root)),
                line=start + 1,
                lang=opened["lang"],
                code="\n".join(body) + "\n",
                marker=mark["kind"] if mark else None,
                arg=(mark["arg"] or "").strip() or None if mark else None,
            )
        )
        i += 1
    return found
