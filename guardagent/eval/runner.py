"""Run a guard over a case list and write metrics, predictions, plots and a report.

Decisions are logged as they finish (`predictions.partial.jsonl`), so Ctrl-C keeps them and
`resume=True` runs only the rest; the final files are always in case order, so a run with
`concurrency=8` writes the same predictions as a sequential one (latency aside).
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from tqdm import tqdm

from guardagent.context import GuardContext
from guardagent.decision import GuardDecision
from guardagent.eval.cases import Case
from guardagent.eval.metrics import compute_metrics
from guardagent.eval.predictions import (
    PARTIAL,
    PartialLog,
    check_signature,
    load_done,
    prediction_record,
    refuse_to_drop,
    start_fresh,
    write_predictions,
    write_signature,
)
from guardagent.eval.report import render_report
from guardagent.guard.runs import model_name

__all__ = ["EvalInterruptedError", "Guard", "prediction_record", "run_eval", "run_signature"]


class Guard(Protocol):
    """What the runner needs from a guard: GuardAgent and the baseline both provide it."""

    context: GuardContext

    def warm_up(self) -> None:
        """Prepare shared state (memory) before the first case."""

    def check(self, agent_input: str, agent_output: str) -> GuardDecision:
        """Decide one event."""
        ...

    async def acheck(self, agent_input: str, agent_output: str) -> GuardDecision:
        """Decide one event without blocking the event loop."""
        ...


class EvalInterruptedError(Exception):
    """The run was interrupted; the decisions made so far are in the partial log."""

    def __init__(self, done: int, total: int, partial: Path) -> None:
        self.done, self.total, self.partial = done, total, partial
        super().__init__(
            f"interrupted after {done}/{total} cases; the decisions so far are in {partial}; "
            "run the same command with --resume to continue"
        )


def method_of(guard: Guard) -> str:
    """`guardagent` for the guard graph, `baseline` for the model-guarding-agent baseline."""
    return str(getattr(guard, "method", "guardagent"))


def run_signature(guard: Guard) -> dict[str, Any]:
    """The settings a resumed run must share with the run it continues."""
    ctx = guard.context
    return {
        "profile": ctx.profile,
        "method": method_of(guard),
        "model": model_name(ctx.model),
        "base_url": ctx.base_url,
        "k": ctx.k,
        "max_attempts": ctx.max_attempts,
        "reuse_programs": ctx.reuse_programs,
    }


async def _decide_all(
    guard: Guard,
    cases: Sequence[Case],
    todo: Sequence[int],
    concurrency: int,
    on_done: Callable[[int, GuardDecision], None],
) -> None:
    gate = asyncio.Semaphore(max(1, concurrency))
    # The graph's sync nodes run on the loop's default executor (min(32, cpus + 4) threads,
    # 6 on a 2-core machine); this loop is ours, so size it for the events in flight.
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(concurrency + 4))

    async def one(i: int) -> None:
        async with gate:
            decision = await guard.acheck(cases[i].agent_input, cases[i].agent_output)
        on_done(i, decision)  # on the loop's thread: log writes never interleave

    await asyncio.gather(*(one(i) for i in todo))


def _decide(
    guard: Guard,
    cases: Sequence[Case],
    out: Path,
    done: dict[str, GuardDecision],
    concurrency: int,
    progress: bool,
) -> None:
    """Decide every case not in `done`, logging each decision as it finishes."""
    todo = [i for i, case in enumerate(cases) if case.id not in done]
    labels = {case.id: case.label for case in cases}
    right = sum(labels[i] == d.label for i, d in done.items())
    bar = tqdm(
        total=len(cases),
        initial=len(done),
        desc=guard.context.profile,
        disable=not progress,
        unit="case",
    )
    with PartialLog(out) as log:

        def finished(i: int, decision: GuardDecision) -> None:
            nonlocal right
            log.append(cases[i], decision)
            done[cases[i].id] = decision
            right += decision.label == cases[i].label
            bar.update(1)
            bar.set_postfix(LPA=f"{100 * right / len(done):.1f}", refresh=False)

        try:
            if todo:
                guard.warm_up()
            if concurrency <= 1:
                with _StopOnSigint() as stop:
                    for i in todo:
                        try:
                            finished(i, guard.check(cases[i].agent_input, cases[i].agent_output))
                        except Exception:
                            # a library caught the Ctrl-C and raised its own error (pydantic's
                            # serializer does): still an interruption, the case not logged
                            if stop.requested:
                                raise KeyboardInterrupt from None
                            raise
                        if stop.requested:
                            raise KeyboardInterrupt
            elif todo:
                # asyncio.run's own SIGINT handler cancels the tasks and raises KeyboardInterrupt
                asyncio.run(_decide_all(guard, cases, todo, concurrency, finished))
        except KeyboardInterrupt:
            raise EvalInterruptedError(len(done), len(cases), log.path) from None
        finally:
            bar.close()


class _StopOnSigint:
    """Make Ctrl-C stop a sequential run even when its KeyboardInterrupt gets swallowed.

    The sandbox forks per program, and Python ignores (only prints) an exception raised in
    an at-fork hook such as logging's lock release; a Ctrl-C landing there would be lost and
    the run would go on. This handler records the request and raises as usual, and the loop
    stops after the current case if the raise went nowhere. Installed only over the default
    handler, in the main thread, so a host with its own SIGINT handling keeps it.
    """

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True
        raise KeyboardInterrupt

    def __enter__(self) -> _StopOnSigint:
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ):
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def run_eval(
    guard: Guard,
    cases: Sequence[Case],
    out_dir: str | Path,
    *,
    concurrency: int = 1,
    progress: bool = True,
    skipped: Sequence[tuple[int, str]] = (),
    resume: bool = False,
    plots: bool = True,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Guard every case, then write metrics.json, predictions.jsonl, plots/ and report.md.

    Args:
        guard: A :class:`GuardAgent` or a baseline with the same `check`/`acheck` interface.
        cases: The labelled events, in the order the outputs keep.
        out_dir: Output directory (created).
        concurrency: Events in flight at once (asyncio); 1 runs them one by one.
        progress: Show a progress bar with the running accuracy.
        skipped: Malformed case-file lines, listed in the report.
        resume: Reuse the decisions already in `out_dir` (same settings, same events).
        plots: Write PNG plots and link them from the report.
        overwrite: Without `resume`, drop an interrupted run's decisions in `out_dir`
            rather than refuse to start.

    Raises:
        EvalInterruptedError: on Ctrl-C; the decisions so far stay in the partial log.
        ResumeMismatchError: when resuming a directory that holds a run with other settings.
        UnfinishedRunError: when `out_dir` holds an interrupted run and neither `resume` nor
            `overwrite` says what to do with its decisions.
    """
    out = Path(out_dir)
    if not resume and not overwrite:
        refuse_to_drop(out)
    out.mkdir(parents=True, exist_ok=True)
    signature = run_signature(guard)
    done: dict[str, GuardDecision] = {}
    if resume and check_signature(out, signature):
        done = load_done(out, cases)
    else:
        start_fresh(out, signature)
    write_signature(out, signature)
    reused = len(done)
    _decide(guard, cases, out, done, concurrency, progress)
    decisions = [done[case.id] for case in cases]
    metrics = compute_metrics(cases, decisions)
    metrics.update(
        profile=guard.context.profile,
        method=method_of(guard),
        model=signature["model"],
        resumed_decisions=reused,
    )
    write_predictions(out / "predictions.jsonl", cases, decisions)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    links: list[tuple[str, str]] = []
    if plots:
        from guardagent.eval.plots import save_plots  # matplotlib loads only when drawing

        links = save_plots(metrics, decisions, out)
    report = render_report(
        guard.context.profile,
        metrics,
        cases,
        decisions,
        model=signature["model"],
        method=method_of(guard),
        skipped=skipped,
        plots=links,
    )
    # a lone surrogate in a decision (a program echoing odd text) must not lose the report
    (out / "report.md").write_text(report, encoding="utf-8", errors="backslashreplace")
    (out / PARTIAL).unlink(missing_ok=True)
    return metrics
