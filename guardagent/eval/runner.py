"""Run the guard over a case list and write metrics, predictions and a report."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from guardagent.agent import GuardAgent
from guardagent.decision import GuardDecision
from guardagent.eval.cases import Case
from guardagent.eval.metrics import compute_metrics, details_correct
from guardagent.eval.report import render_report


def prediction_record(case: Case, decision: GuardDecision) -> dict[str, Any]:
    """One line of predictions.jsonl: the case's id and label next to the full decision."""
    return {
        "id": case.id,
        "label": case.label,
        "predicted": decision.label,
        "correct": case.label == decision.label,
        "details_correct": details_correct(case, decision) if case.label == 1 else None,
        "decision": decision.model_dump(mode="json"),
    }


async def _decide_all(
    guard: GuardAgent,
    cases: Sequence[Case],
    concurrency: int,
    on_done: Callable[[int, GuardDecision], None],
) -> list[GuardDecision]:
    gate = asyncio.Semaphore(max(1, concurrency))
    results: list[GuardDecision | None] = [None] * len(cases)

    async def one(i: int) -> None:
        async with gate:
            decision = await guard.acheck(cases[i].agent_input, cases[i].agent_output)
        results[i] = decision
        on_done(i, decision)

    await asyncio.gather(*(one(i) for i in range(len(cases))))
    return [r for r in results if r is not None]


def run_eval(
    guard: GuardAgent,
    cases: Sequence[Case],
    out_dir: str | Path,
    *,
    concurrency: int = 1,
    progress: bool = True,
    skipped: Sequence[tuple[int, str]] = (),
) -> dict[str, Any]:
    """Guard every case, then write `metrics.json`, `predictions.jsonl` and `report.md`.

    Results are in case order whatever the concurrency. The progress bar shows running LPA.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    guard.warm_up()
    bar = tqdm(total=len(cases), desc=guard.context.profile, disable=not progress, unit="case")
    right = finished = 0
    decisions: list[GuardDecision] = []

    def done(i: int, decision: GuardDecision) -> None:
        nonlocal right, finished
        finished += 1
        right += decision.label == cases[i].label
        bar.update(1)
        bar.set_postfix(LPA=f"{100 * right / finished:.1f}", refresh=False)

    if concurrency <= 1:
        for i, case in enumerate(cases):
            decisions.append(guard.check(case.agent_input, case.agent_output))
            done(i, decisions[-1])
    else:
        decisions = asyncio.run(_decide_all(guard, cases, concurrency, done))
    bar.close()
    metrics = compute_metrics(cases, decisions)
    metrics["profile"] = guard.context.profile
    metrics["model"] = str(guard.context.model)
    with open(out / "predictions.jsonl", "w", encoding="utf-8") as fh:
        for case, decision in zip(cases, decisions, strict=True):
            fh.write(json.dumps(prediction_record(case, decision)) + "\n")
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    report = render_report(
        guard.context.profile, metrics, cases, decisions,
        model=str(guard.context.model), skipped=skipped,
    )
    (out / "report.md").write_text(report, encoding="utf-8")
    return metrics
