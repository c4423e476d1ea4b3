"""A report a person reads: headline next to the paper, breakdowns, every wrong decision."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from guardagent.decision import GuardDecision
from guardagent.eval.cases import Case

PAPER_TABLE_2 = {
    "eicu-ac": {"LPA": 98.7, "LPP": 100.0, "LPR": 97.5, "CCA": 97.5, "FRA": 100.0},
    "mind2web-sc": {"LPA": 90.0, "LPP": 100.0, "LPR": 80.0, "CCA": 80.0, "FRA": 100.0},
}
HEADLINE = ("LPA", "LPP", "LPR", "CCA", "FRA")


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value}"


def _clip(text: str, limit: int = 600) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + " ..."


def render_report(
    profile: str,
    metrics: dict[str, Any],
    cases: Sequence[Case],
    decisions: Sequence[GuardDecision],
    *,
    model: str = "offline",
    skipped: Sequence[tuple[int, str]] = (),
) -> str:
    """Markdown report of one eval run."""
    lines = [f"# GuardAgent eval: {profile}", "", f"Model: `{model}`; cases: {metrics['n']}.", ""]
    lines += ["| | " + " | ".join(HEADLINE) + " |", "|---|" + "---|" * len(HEADLINE)]
    lines.append("| this run | " + " | ".join(_fmt(metrics[k]) for k in HEADLINE) + " |")
    paper = PAPER_TABLE_2.get(profile)
    if paper:
        lines.append(
            "| paper, GPT-4 GuardAgent (Table 2) | "
            + " | ".join(_fmt(paper[k]) for k in HEADLINE)
            + " |"
        )
    c = metrics["confusion"]
    lines += ["", "## Confusion matrix (1 = denied)", "", "| | predicted 1 | predicted 0 |",
              "|---|---|---|", f"| label 1 | {c['tp']} | {c['fn']} |",
              f"| label 0 | {c['fp']} | {c['tn']} |", ""]
    for key, groups in metrics.get("breakdown", {}).items():
        lines += [f"## By {key}", "", f"| {key} | n | LPA | denied |", "|---|---|---|---|"]
        lines += [f"| {name} | {g['n']} | {_fmt(g['LPA'])} | {g['denied']} |"
                  for name, g in groups.items()]
        lines.append("")
    cost = metrics["cost"]
    lines += ["## Cost", "", *(f"- {k}: {_fmt(v)}" for k, v in cost.items()),
              f"- program source: {metrics['program_source']}",
              f"- fail-closed decisions: {metrics['fail_closed']['count']} "
              f"{metrics['fail_closed']['reasons']}", ""]
    if skipped:
        lines += ["## Skipped case-file lines", ""]
        lines += [f"- line {n}: {msg}" for n, msg in skipped]
        lines.append("")
    lines += _wrong_decisions(cases, decisions)
    return "\n".join(lines) + "\n"


def _wrong_decisions(cases: Sequence[Case], decisions: Sequence[GuardDecision]) -> list[str]:
    from guardagent.eval.metrics import details_correct

    wrong = [
        (c, d) for c, d in zip(cases, decisions, strict=True)
        if c.label != d.label or (c.label == 1 and not details_correct(c, d))
    ]
    lines = [f"## Wrong decisions ({len(wrong)})", ""]
    for case, d in wrong:
        expected = case.inaccessible if case.inaccessible is not None else case.violations
        lines += [
            f"### {case.id}",
            f"- expected: label {case.label}, details {expected}",
            f"- decided: label {d.label}, details {d.violations}, source {d.program_source}",
            f"- reason: {d.reason}",
            "", "Input:", "```", _clip(case.agent_input), "```",
            "Output (clipped):", "```", _clip(case.agent_output), "```", "",
        ]
    return lines
