"""Figures of an eval run, drawn with matplotlib's object API (no pyplot, no GUI backend).

Figures are built on `matplotlib.figure.Figure` with the Agg canvas, so writing PNGs never
touches a display or the global pyplot state of a notebook that imports this module.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from guardagent.decision import GuardDecision

PLOTS_DIR = "plots"


def new_figure(width: float, height: float) -> Figure:
    """A figure on the Agg canvas, independent of pyplot and of any notebook backend."""
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig: Figure) -> bytes:
    """PNG bytes of a figure, for `IPython.display.Image(data=...)` in notebooks."""
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def confusion_figure(metrics: dict[str, Any], title: str = "") -> Figure:
    """2x2 confusion matrix, rows = gold label, columns = predicted label (1 = denied)."""
    c = metrics["confusion"]
    cells = [[c["tp"], c["fn"]], [c["fp"], c["tn"]]]
    fig = new_figure(4.2, 3.6)
    ax = fig.add_subplot()
    image = ax.imshow(cells, cmap="Blues")
    peak = max(max(row) for row in cells) or 1
    for r, row in enumerate(cells):
        for col, value in enumerate(row):
            ax.text(
                col,
                r,
                str(value),
                ha="center",
                va="center",
                fontsize=14,
                color="white" if value > peak / 2 else "black",
            )
    ax.set_xticks([0, 1], ["predicted 1 (deny)", "predicted 0 (allow)"])
    ax.set_yticks([0, 1], ["label 1", "label 0"])
    ax.set_title(title or f"Confusion matrix (n={metrics['n']})")
    fig.colorbar(image, ax=ax, shrink=0.8)
    return fig


def breakdown_figure(metrics: dict[str, Any], key: str) -> Figure:
    """Accuracy (LPA) per group of a breakdown key (role, rule, domain), with group sizes."""
    groups = metrics["breakdown"][key]
    names = list(groups)
    values = [groups[n]["LPA"] or 0.0 for n in names]
    labels = [wrap_label(n) for n in names]
    lines = sum(label.count("\n") + 1 for label in labels)
    fig = new_figure(8.0, 0.25 * lines + 0.2 * len(names) + 1.2)
    ax = fig.add_subplot()
    bars = ax.barh(range(len(names)), values, color="tab:blue")
    ax.set_yticks(range(len(names)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 130)
    ax.set_xticks([0, 20, 40, 60, 80, 100])
    ax.set_xlabel("LPA (%)")
    ax.set_title(f"Accuracy by {key}")
    for bar, name in zip(bars, names, strict=True):
        ax.text(
            bar.get_width() + 1,
            bar.get_y() + bar.get_height() / 2,
            f"{groups[name]['LPA']} (n={groups[name]['n']})",
            va="center",
            fontsize=8,
        )
    return fig


def latency_figure(decisions: Sequence[GuardDecision]) -> Figure:
    """Histogram of per-decision latency; the p50 and p95 lines show the tail at a glance."""
    from guardagent.eval.metrics import percentile

    values = [d.latency_ms for d in decisions]
    fig = new_figure(6.0, 3.4)
    ax = fig.add_subplot()
    ax.hist(values, bins=min(40, max(5, len(values) // 5)), color="tab:gray")
    for q, style in ((50, "-"), (95, "--")):
        mark = percentile(values, q)
        if mark is not None:
            ax.axvline(mark, color="tab:red", linestyle=style, label=f"p{q} = {mark:.1f} ms")
    ax.set_xlabel("latency per decision (ms)")
    ax.set_ylabel("decisions")
    ax.set_title("Decision latency")
    if values:
        ax.legend()
    return fig


def wrap_label(name: str, width: int = 44) -> str:
    """A group name on as many lines as it needs: a rule's full text, never cut short."""
    return textwrap.fill(name, width=width, break_long_words=True) or name


def run_figures(
    metrics: dict[str, Any], decisions: Sequence[GuardDecision]
) -> list[tuple[str, str, Figure]]:
    """(title, file stem, figure) of every plot of a run: confusion, breakdowns, latency."""
    figures = [("Confusion matrix", "confusion", confusion_figure(metrics))]
    for key in metrics.get("breakdown", {}):
        figures.append((f"Accuracy by {key}", f"accuracy_by_{key}", breakdown_figure(metrics, key)))
    figures.append(("Latency per decision", "latency", latency_figure(decisions)))
    return figures


def save_plots(
    metrics: dict[str, Any], decisions: Sequence[GuardDecision], out_dir: str | Path
) -> list[tuple[str, str]]:
    """Write the run's figures as PNGs under `out_dir/plots/`.

    Returns:
        (title, path relative to `out_dir`) pairs, for the report's links.
    """
    folder = Path(out_dir) / PLOTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for title, stem, fig in run_figures(metrics, decisions):
        fig.savefig(folder / f"{stem}.png")
        written.append((title, f"{PLOTS_DIR}/{stem}.png"))
    return written
