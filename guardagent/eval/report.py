"""A report a person reads: headline next to the paper, plots, breakdowns, every wrong decision.

Each wrong decision shows the event, what was expected, what was decided and why, and links
to the program that decided (each distinct program is shown once, in full): a reader can
tell a guard bug from a label quirk without opening predictions.jsonl.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from guardagent.decision import GuardDecision
from guardagent.eval.cases import Case
from guardagent.eval.definitions import CONVENTIONS, markdown_table
from guardagent.eval.metrics import HEADLINE, expected_details, is_wrong

PAPER_TABLE_2 = {
    "eicu-ac": {"LPA": 98.7, "LPP": 100.0, "LPR": 97.5, "CCA": 97.5, "FRA": 100.0},
    "mind2web-sc": {"LPA": 90.0, "LPP": 100.0, "LPR": 80.0, "CCA": 80.0, "FRA": 100.0},
}
# The paper's "model guarding agent" baseline with GPT-4; it reports only these figures.
PAPER_BASELINE = {
    "eicu-ac": {"LPA": 97.5, "CCA": 67.9},
    "mind2web-sc": {"LPA": 82.5},
}


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value}"


def clip(text: str | None, limit: int = 600) -> str:
    """The start of a long text, marked as clipped, so the report stays readable."""
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more chars)"


def _row(name: str, values: dict[str, Any]) -> str:
    return f"| {name} | " + " | ".join(_fmt(values.get(k)) for k in HEADLINE) + " |"


def _headline(profile: str, method: str, metrics: dict[str, Any]) -> list[str]:
    lines = ["| | " + " | ".join(HEADLINE) + " |", "|---|" + "---|" * len(HEADLINE)]
    lines.append(_row(f"this run ({method})", metrics))
    if profile in PAPER_TABLE_2:
        lines.append(_row("paper, GPT-4 GuardAgent (Table 2)", PAPER_TABLE_2[profile]))
        lines.append(_row("paper, GPT-4 model-guarding-agent baseline", PAPER_BASELINE[profile]))
    return lines + [""]


def _cost(metrics: dict[str, Any]) -> list[str]:
    lines = [
        "## Cost per decision",
        "",
        "| | mean | p50 | p95 | max | total |",
        "|---|---|---|---|---|---|",
    ]
    for field, s in metrics["cost"]["per_decision"].items():
        lines.append(
            f"| {field} | "
            + " | ".join(_fmt(s[k]) for k in ("mean", "p50", "p95", "max", "total"))
            + " |"
        )
    ex = metrics["executable"]
    fail = metrics["fail_closed"]
    lines += [
        "",
        f"- executable rate (paper Table 4), over {ex['ran_program']} decisions that ran a "
        f"program: before debugging {_fmt(ex['before_debug'])}%, after debugging "
        f"{_fmt(ex['after_debug'])}% ({ex['debugged']} debugged; "
        f"{ex['no_program_run']} ran no program)",
        f"- program source: {metrics['program_source']}",
        f"- fail-closed decisions: {fail['count']} {fail['reasons']}",
        "",
    ]
    return lines


def render_report(
    profile: str,
    metrics: dict[str, Any],
    cases: Sequence[Case],
    decisions: Sequence[GuardDecision],
    *,
    model: str = "offline",
    method: str = "guardagent",
    skipped: Sequence[tuple[int, str]] = (),
    plots: Sequence[tuple[str, str]] = (),
) -> str:
    """Markdown report of one eval run; `plots` are (title, relative path) of saved PNGs."""
    lines = [
        f"# GuardAgent eval: {profile}",
        "",
        f"Method: `{method}`; model: `{model}`; cases: {metrics['n']}.",
        "",
    ]
    lines += _headline(profile, method, metrics)
    lines += ["What the metrics mean:", "", *markdown_table(), "", CONVENTIONS, ""]
    lines += unreadable_section(cases, decisions)
    if plots:
        lines += ["## Plots", "", *(f"![{title}]({path})" for title, path in plots), ""]
    c = metrics["confusion"]
    lines += [
        "## Confusion matrix (1 = denied)",
        "",
        "| | predicted 1 | predicted 0 |",
        "|---|---|---|",
        f"| label 1 | {c['tp']} | {c['fn']} |",
        f"| label 0 | {c['fp']} | {c['tn']} |",
        "",
    ]
    for key, groups in metrics.get("breakdown", {}).items():
        lines += [f"## By {key}", "", f"| {key} | n | LPA | denied |", "|---|---|---|---|"]
        lines += [
            f"| {name} | {g['n']} | {_fmt(g['LPA'])} | {g['denied']} |"
            for name, g in groups.items()
        ]
        lines.append("")
    lines += _cost(metrics)
    if skipped:
        lines += ["## Skipped case-file lines", ""]
        lines += [f"- line {n}: {msg}" for n, msg in skipped]
        lines.append("")
    lines += wrong_decisions(cases, decisions)
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Text safe inside one Markdown table cell (no line breaks, no column separators)."""
    return " ".join(text.split()).replace("|", "\\|")


def unreadable_section(cases: Sequence[Case], decisions: Sequence[GuardDecision]) -> list[str]:
    """Every event denied because a reader could not read it, with the reason and detail.

    Such a denial says nothing about the event, only that the guard was blind to it; listing
    them apart lets a reader tell a blind guard from a strict one (label-0 rows cost FRA).
    """
    blind = [(c, d) for c, d in zip(cases, decisions, strict=True) if d.unreadable]
    if not blind:
        return []
    label0 = sum(c.label == 0 for c, _ in blind)
    lines = [
        f"## Events the guard could not read ({len(blind)})",
        "",
        "These events were denied because a reader could not read them: the guard was blind "
        f"here, not strict. {label0} of them should have passed (label 0) and count against "
        f"FRA; {len(blind) - label0} should have been denied (label 1).",
        "",
        "| id | label | reason | detail |",
        "|---|---|---|---|",
    ]
    for case, d in blind:
        for entry in {(e["reason"], e["detail"]): e for e in d.unreadable}.values():
            lines.append(
                f"| {_cell(case.id)} | {case.label} | {_cell(entry['reason'])} | "
                f"{_cell(entry['detail'])} |"
            )
    return lines + [""]


def wrong_decisions(cases: Sequence[Case], decisions: Sequence[GuardDecision]) -> list[str]:
    """Every wrong label or wrong denial detail, with the event, reason and deciding program.

    One program usually decides every event of a profile, so each distinct program is shown
    once, at the end, and every wrong decision links to it.
    """
    wrong = [(c, d) for c, d in zip(cases, decisions, strict=True) if is_wrong(c, d)]
    programs: dict[str, int] = {}
    lines = [f"## Wrong decisions ({len(wrong)})", ""]
    for case, d in wrong:
        lines += [
            f"### {case.id}",
            f"- expected: label {case.label}, details {expected_details(case)}",
            f"- decided: label {d.label}, details {d.violations}, source {d.program_source}, "
            f"attempts {d.attempts}, LLM calls {d.llm_calls}",
            f"- reason: {d.reason}",
        ]
        if d.error:
            lines.append(f"- error (failed closed): {d.error}")
        lines += circuit_block(d)
        if any(d.attempt_errors):
            shown = [clip(e, 200) if e else None for e in d.attempt_errors]
            lines.append(f"- attempt errors: {shown}")
        if d.program:
            number = programs.setdefault(d.program, len(programs) + 1)
            lines.append(
                f"- program that decided: [program {number}](#program-{number}) "
                f"({d.program_source}, {len(d.program)} chars)"
            )
        else:
            lines.append("- program that decided: none (no program ran)")
        lines += [
            "",
            "Input:",
            "```",
            clip(case.agent_input),
            "```",
            "Output (clipped):",
            "```",
            clip(case.agent_output),
            "```",
            "",
        ]
    return lines + programs_section(programs)


def circuit_block(decision: GuardDecision) -> list[str]:
    """The decision's rule circuit as a Mermaid block (none when no policy rule decided).

    Rendered where the report is read (GitHub, GitLab, MkDocs Material): the rules, their
    deciding predicate values and the verdict at one glance (:mod:`guardagent.explain`).
    """
    if not decision.rules:
        return []
    from guardagent.explain import draw, to_mermaid
    from guardagent.explain.reading import view_of

    return ["", "```mermaid", to_mermaid(draw(view_of(decision))), "```", ""]


def programs_section(programs: dict[str, int]) -> list[str]:
    """Each program that decided a wrong decision, once, under the anchor the entries link."""
    if not programs:
        return []
    lines = ["## Programs that decided them", ""]
    for program, number in programs.items():
        lines += [
            f'<a id="program-{number}"></a>',
            "",
            f"### Program {number}",
            "",
            f"<details><summary>{len(program)} chars</summary>",
            "",
            "```python",
            program.strip(),
            "```",
            "",
            "</details>",
            "",
        ]
    return lines
