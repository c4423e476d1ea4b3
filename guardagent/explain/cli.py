"""`guardagent explain DECISION.json`: draw a decision as SVG or Mermaid.

The decision is the JSON `guardagent check` prints (or ``-`` for stdin). Drawing decides
nothing, so the status says only whether it was drawn: 0, or 2 with one line when the file
is missing, unreadable or not a decision (:mod:`guardagent.exit_status`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import BinaryIO

import click

from guardagent.exit_status import InputError, epilog

SHORT = "Draw a decision (check's JSON): provenance chain and rule circuit, SVG or Mermaid."


def _read(decision_file: str) -> bytes:
    """The file's bytes (stdin for ``-``), at most one byte past the size limit."""
    from guardagent.explain.reading import MAX_DECISION_BYTES

    if decision_file == "-":
        binary: BinaryIO | None = getattr(sys.stdin, "buffer", None)  # a replaced stdin may
        if binary is None:  # be text only
            return sys.stdin.read(MAX_DECISION_BYTES + 1).encode("utf-8", "surrogatepass")
        return binary.read(MAX_DECISION_BYTES + 1)
    path = Path(decision_file)
    if path.is_dir():
        raise InputError(f"{decision_file}: a directory, not a decision file")
    if not path.is_file():
        raise InputError(f"{decision_file}: no such file")
    try:
        with path.open("rb") as handle:
            return handle.read(MAX_DECISION_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{decision_file}: cannot read it ({exc.strerror or exc})") from None


@click.command(
    name="explain",
    help=SHORT,
    epilog=epilog(
        "explain:",
        "  0  drawn (whatever the decision was)",
        "  2  DECISION.json missing, unreadable or not a decision, or FILE not writable",
    ),
)
@click.argument("decision_file", metavar="DECISION.json|-")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["svg", "mermaid"]),
    default="svg",
    show_default=True,
    help="SVG (standalone) or Mermaid flowchart text.",
)
@click.option(
    "-o",
    "--output",
    "out",
    default=None,
    type=click.Path(dir_okay=True),
    help="Write here instead of stdout.",
)
def explain(decision_file: str, fmt: str, out: str | None) -> None:
    """Draw DECISION.json: the messages that decided each predicate, the rules, the verdict."""
    from guardagent.explain import draw, read_decision, to_mermaid, to_svg
    from guardagent.explain.reading import UnreadableDecision

    try:
        view = read_decision(_read(decision_file))
    except UnreadableDecision as exc:
        raise InputError(f"{decision_file}: {exc}") from None
    diagram = draw(view)
    text = to_svg(diagram) if fmt == "svg" else to_mermaid(diagram) + "\n"
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"-o {out}: cannot write it ({exc.strerror or exc})") from None
