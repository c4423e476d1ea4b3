"""What the five headline metrics mean, in words, written once for the CLI, the report and docs.

The paper (section 3.3) names them by acronym only; a reader who has not read it should not
need to. This module is plain text with no imports, so `guardagent eval --help` can show it
without loading anything else.
"""

from __future__ import annotations

import textwrap

METRICS: dict[str, tuple[str, str]] = {
    "LPA": (
        "label prediction accuracy",
        "share of all events where the guard's allow/deny is the right one",
    ),
    "LPP": (
        "label prediction precision",
        "of the events the guard denied, the share that should have been denied "
        "(low: false alarms)",
    ),
    "LPR": (
        "label prediction recall",
        "of the events that should have been denied, the share the guard denied "
        "(low: missed violations)",
    ),
    "CCA": (
        "comprehensive control accuracy",
        "of the events that should have been denied, the share denied for exactly the right "
        "reasons: the same inaccessible tables and columns, or the same violated rules",
    ),
    "FRA": (
        "final response accuracy",
        "of the events that should pass, the share the guard allowed with the agent's output "
        "passed through unchanged",
    ),
}

CONVENTIONS = (
    "Label 1 means deny, 0 means allow. Every figure is a percentage (0-100, rounded to 0.1); "
    "n/a when no event counts toward it; n is the number of events."
)


def definition_lines() -> list[str]:
    """`ACRONYM (name): meaning`, one line per metric, in headline order."""
    return [f"{key} ({name}): {meaning}" for key, (name, meaning) in METRICS.items()]


def markdown_table() -> list[str]:
    """The definitions as a Markdown table (report.md, docs/reference/results.md)."""
    rows = ["| metric | what it measures |", "|---|---|"]
    rows += [f"| {key} ({name}) | {meaning} |" for key, (name, meaning) in METRICS.items()]
    return rows


def help_epilog() -> str:
    r"""The definitions for `--help`, wrapped here: click keeps a `\b` paragraph as written."""
    wrapped = [
        textwrap.fill(line, width=76, subsequent_indent="    ") for line in definition_lines()
    ]
    return "\b\nMetrics:\n" + "\n".join(wrapped) + f"\n\n{CONVENTIONS}"
