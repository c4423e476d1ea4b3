"""Compare two eval runs (two output directories): metrics side by side and where they differ.

Reads only the files a run writes (metrics.json, predictions.jsonl), so runs made by the CLI,
by a notebook or on another machine compare the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from guardagent.eval.metrics import HEADLINE
from guardagent.eval.plots import new_figure


@dataclass
class Run:
    """One finished eval run as written to its directory."""

    name: str
    metrics: dict[str, Any]
    predictions: list[dict[str, Any]]


def load_run(out_dir: str | Path, name: str | None = None) -> Run:
    """Read a run's metrics.json and predictions.jsonl."""
    folder = Path(out_dir)
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    lines = (folder / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    return Run(name or folder.name, metrics, [json.loads(line) for line in lines if line])


def _rows(run: Run) -> dict[str, Any]:
    m = run.metrics
    per = m["cost"]["per_decision"]
    return {
        **{k: m[k] for k in (*HEADLINE, "n")},
        "executable before debug": m["executable"]["before_debug"],
        "executable after debug": m["executable"]["after_debug"],
        "LLM calls / decision": per["llm_calls"]["mean"],
        "tokens / decision": per["tokens"]["mean"],
        "attempts / decision": per["attempts"]["mean"],
        "latency p50 (ms)": per["latency_ms"]["p50"],
        "latency p95 (ms)": per["latency_ms"]["p95"],
        "fail-closed": m["fail_closed"]["count"],
    }


def _fmt(value: Any) -> str:
    return "n/a" if value is None else str(value)


def metrics_table(a: Run, b: Run) -> str:
    """Markdown table: each metric for both runs and the difference b - a."""
    ra, rb = _rows(a), _rows(b)
    lines = [f"| metric | {a.name} | {b.name} | {b.name} - {a.name} |", "|---|---|---|---|"]
    for key in ra:
        va, vb = ra[key], rb[key]
        diff = (
            round(vb - va, 3)
            if isinstance(va, int | float) and isinstance(vb, int | float)
            else "n/a"
        )
        lines.append(f"| {key} | {_fmt(va)} | {_fmt(vb)} | {diff} |")
    return "\n".join(lines)


def disagreements(a: Run, b: Run) -> list[dict[str, Any]]:
    """Cases both runs decided, where their labels or denial details differ."""
    by_id = {p["id"]: p for p in b.predictions}
    out = []
    for pa in a.predictions:
        pb = by_id.get(pa["id"])
        if pb is None:
            continue
        da, db = pa["decision"], pb["decision"]
        if da["label"] != db["label"] or da["violations"] != db["violations"]:
            out.append(
                {
                    "id": pa["id"],
                    "gold": pa["label"],
                    a.name: (da["label"], da["violations"]),
                    b.name: (db["label"], db["violations"]),
                }
            )
    return out


def headline_figure(runs: Sequence[Run]) -> Figure:
    """Grouped bars of the paper's five metrics for each run."""
    fig = new_figure(7.0, 3.6)
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(runs))
    for i, run in enumerate(runs):
        values = [run.metrics[k] or 0.0 for k in HEADLINE]
        xs = [x + i * width for x in range(len(HEADLINE))]
        ax.bar(xs, values, width=width, label=run.name)
    ax.set_xticks([x + width * (len(runs) - 1) / 2 for x in range(len(HEADLINE))], HEADLINE)
    ax.set_ylim(0, 105)
    ax.set_ylabel("%")
    ax.set_title("Headline metrics")
    ax.legend(loc="lower right")
    return fig


def latency_comparison_figure(runs: Sequence[Run]) -> Figure:
    """Overlaid latency histograms (log-spaced bins: runs can differ by orders of magnitude)."""
    import math

    fig = new_figure(7.0, 3.4)
    ax = fig.add_subplot()
    series = [[max(p["decision"]["latency_ms"], 1e-3) for p in r.predictions] for r in runs]
    flat = [v for s in series for v in s]
    if flat:
        lo, hi = math.log10(min(flat)), math.log10(max(flat)) + 1e-9
        bins = [10 ** (lo + (hi - lo) * i / 30) for i in range(31)]
        for run, values in zip(runs, series, strict=True):
            ax.hist(values, bins=bins, alpha=0.55, label=run.name)
        ax.set_xscale("log")
        ax.legend()
    ax.set_xlabel("latency per decision (ms, log scale)")
    ax.set_ylabel("decisions")
    ax.set_title("Latency")
    return fig
