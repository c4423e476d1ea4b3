"""The runner: case order under concurrency, incremental predictions, resume, report, plots."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from guardagent import GuardAgent
from guardagent.cli import main
from guardagent.eval.benchmarks import load_benchmark
from guardagent.eval.cases import write_cases
from guardagent.eval.predictions import PARTIAL, ResumeMismatchError
from guardagent.eval.runner import EvalInterruptedError, run_eval


class Interrupting:
    """Wraps a guard and raises KeyboardInterrupt (what Ctrl-C raises) on the n-th check."""

    def __init__(self, guard, after):
        self.guard, self.after, self.calls = guard, after, 0
        self.context = guard.context

    def warm_up(self):
        self.guard.warm_up()

    def _tick(self):
        self.calls += 1
        if self.after is not None and self.calls > self.after:
            raise KeyboardInterrupt

    def check(self, agent_input, agent_output):
        self._tick()
        return self.guard.check(agent_input, agent_output)

    async def acheck(self, agent_input, agent_output):
        try:
            self._tick()
        except KeyboardInterrupt:
            # As Ctrl-C does under asyncio.run: its SIGINT handler cancels the main task.
            signal.raise_signal(signal.SIGINT)
        return await self.guard.acheck(agent_input, agent_output)


@pytest.fixture
def ctrl_c_interrupts():
    """Ctrl-C raises KeyboardInterrupt here, as in a terminal, whatever the test command's own
    SIGINT disposition (a suite started with SIGINT ignored must not fail these tests)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _default_sigint():
    """In the child before exec: SIGINT back to its default, so Python turns it into Ctrl-C
    (an ignored SIGINT is inherited across exec, and Python then installs no handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _lines(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def _without_latency(records):
    for r in records:
        r["decision"].pop("latency_ms")
    return records


@pytest.fixture(scope="module")
def m2w_cases():
    return load_benchmark("mind2web-sc")[:24]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_interrupt_keeps_decisions_and_resume_finishes_in_case_order(
    tmp_path, m2w_cases, concurrency, ctrl_c_interrupts
):
    guard = GuardAgent("mind2web-sc")
    reference = tmp_path / "reference"
    run_eval(guard, m2w_cases, reference, progress=False, plots=False)

    out = tmp_path / "run"
    first = Interrupting(guard, after=7)
    with pytest.raises(EvalInterruptedError) as stopped:
        run_eval(first, m2w_cases, out, concurrency=concurrency, progress=False, plots=False)
    kept = _lines(out / PARTIAL)
    assert stopped.value.done == len(kept)
    if concurrency == 1:
        assert len(kept) == 7
    else:  # cases in flight when Ctrl-C came are dropped, finished ones kept
        assert 1 <= len(kept) <= 7
    assert "--resume" in str(stopped.value)
    assert not (out / "predictions.jsonl").exists() and not (out / "metrics.json").exists()

    second = Interrupting(guard, after=None)
    metrics = run_eval(
        second, m2w_cases, out, concurrency=concurrency, progress=False, plots=False, resume=True
    )
    assert second.calls == len(m2w_cases) - len(kept)  # done ids are skipped
    assert metrics["resumed_decisions"] == len(kept)
    assert not (out / PARTIAL).exists()
    final = _without_latency(_lines(out / "predictions.jsonl"))
    assert [r["id"] for r in final] == [c.id for c in m2w_cases]
    assert final == _without_latency(_lines(reference / "predictions.jsonl"))


def test_resume_tolerates_a_cut_line_and_reruns_edited_cases(tmp_path, m2w_cases):
    guard = GuardAgent("mind2web-sc")
    cases = m2w_cases[:6]
    out = tmp_path / "run"
    with pytest.raises(EvalInterruptedError):
        run_eval(Interrupting(guard, after=4), cases, out, progress=False, plots=False)
    with open(out / PARTIAL, "a") as fh:
        fh.write('{"id": "' + cases[4].id + '", "case_ke')  # killed mid-write
    edited = [cases[0].model_copy(update={"agent_output": cases[0].agent_output + " "}), *cases[1:]]
    counting = Interrupting(guard, after=None)
    run_eval(counting, edited, out, progress=False, plots=False, resume=True)
    assert counting.calls == 3  # the edited case 0, and cases 4 and 5
    assert [r["id"] for r in _lines(out / "predictions.jsonl")] == [c.id for c in cases]


def test_resume_refuses_a_directory_of_other_settings(tmp_path, m2w_cases):
    out = tmp_path / "run"
    run_eval(GuardAgent("mind2web-sc"), m2w_cases[:2], out, progress=False, plots=False)
    with pytest.raises(ResumeMismatchError, match="k"):
        run_eval(
            GuardAgent("mind2web-sc", k=1),
            m2w_cases[:2],
            out,
            progress=False,
            plots=False,
            resume=True,
        )


def test_cli_limit_then_resume_runs_only_the_rest(tmp_path, m2w_cases):
    cases = tmp_path / "cases.jsonl"
    write_cases(cases, m2w_cases[:8])
    out = tmp_path / "run"
    base = [
        "eval",
        "--profile",
        "mind2web-sc",
        "--cases",
        str(cases),
        "--out",
        str(out),
        "--quiet",
        "--no-plots",
    ]
    assert CliRunner().invoke(main, [*base, "--limit", "3"]).exit_code == 0
    result = CliRunner().invoke(main, [*base, "--resume"])
    assert result.exit_code == 0, result.output
    assert "resumed 3 decisions" in result.output
    assert len(_lines(out / "predictions.jsonl")) == 8
    assert json.loads(result.output.splitlines()[0])["n"] == 8


def test_report_links_plots_and_shows_the_deciding_program(tmp_path, m2w_cases):
    # Flip one gold label so the report must list a wrong decision with its program.
    cases = [
        m2w_cases[0].model_copy(update={"label": 1 - m2w_cases[0].label, "violations": None}),
        *m2w_cases[1:6],
    ]
    if cases[0].label == 1:
        cases[0] = cases[0].model_copy(update={"violations": ["some rule"]})
    out = tmp_path / "run"
    run_eval(GuardAgent("mind2web-sc"), cases, out, progress=False)
    report = (out / "report.md").read_text()
    for stem in ("confusion", "accuracy_by_rule", "accuracy_by_domain", "latency"):
        png = out / "plots" / f"{stem}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"(plots/{stem}.png)" in report
    assert f"### {cases[0].id}" in report
    program = (Path("guardagent/profiles/mind2web-sc/safety_rules.py")).read_text()
    section = report.split(f"### {cases[0].id}")[1].split("\n### ")[0]
    assert "- program that decided: [program 1](#program-1) (memory, " in section
    programs = report.split('<a id="program-1"></a>')[1]
    assert program.strip() in programs  # in full, once
    assert report.count(program.strip().splitlines()[0]) == 1
    assert "executable rate" in report and "| latency_ms |" in report


@pytest.mark.parametrize("profile", ["eicu-ac", "mind2web-sc"])
def test_concurrency_gives_the_sequential_predictions(tmp_path, profile):
    cases = load_benchmark(profile)
    guard = GuardAgent(profile)
    for c in (1, 8):
        run_eval(guard, cases, tmp_path / f"c{c}", concurrency=c, progress=False, plots=False)
    one = _without_latency(_lines(tmp_path / "c1" / "predictions.jsonl"))
    eight = _without_latency(_lines(tmp_path / "c8" / "predictions.jsonl"))
    assert len(one) == len(cases)
    assert [r["id"] for r in eight] == [c.id for c in cases]
    differ = [
        (a["id"], a["decision"]["error"], b["decision"]["error"])
        for a, b in zip(one, eight, strict=True)
        if a != b
    ]
    assert not differ, differ  # (id, error at concurrency 1, error at 8): a load-induced kill?


@pytest.mark.parametrize("concurrency", ["1", "4"])
def test_sigint_keeps_partial_predictions_and_resume_completes(tmp_path, concurrency):
    cases = tmp_path / "cases.jsonl"
    all_cases = load_benchmark("mind2web-sc")[:40]
    write_cases(cases, all_cases)
    out = tmp_path / "run"
    cmd = [
        str(Path(sys.executable).parent / "guardagent"),
        "eval",
        "--profile",
        "mind2web-sc",
        "--cases",
        str(cases),
        "--out",
        str(out),
        "--quiet",
        "--no-plots",
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
        preexec_fn=_default_sigint,
    )
    partial = out / PARTIAL
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if partial.is_file() and partial.read_text().count("\n") >= 3:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the eval finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr
    kept = _lines(partial)
    assert 3 <= len(kept) < len(all_cases)
    assert {r["id"] for r in kept} <= {c.id for c in all_cases}
    assert not (out / "predictions.jsonl").exists()

    result = CliRunner().invoke(main, [*cmd[1:], "--resume"])
    assert result.exit_code == 0, result.output
    assert f"resumed {len(kept)} decisions" in result.output
    final = _lines(out / "predictions.jsonl")
    assert [r["id"] for r in final] == [c.id for c in all_cases]
    by_id = {r["id"]: r for r in final}
    assert all(by_id[r["id"]]["decision"] == r["decision"] for r in kept)


def test_a_ctrl_c_a_library_wraps_still_stops_the_run_as_an_interrupt(
    tmp_path, m2w_cases, ctrl_c_interrupts, monkeypatch
):
    """A Ctrl-C that lands inside pydantic's serializer comes out wrapped in its own error
    (PydanticSerializationError: "KeyboardInterrupt"): the run still stops as interrupted
    (exit 130 from the CLI), keeping the decisions logged before it, not as a crash."""
    import guardagent.eval.predictions as predictions

    real = predictions.prediction_record
    calls = {"n": 0}

    def wrapped_ctrl_c(case, decision):
        calls["n"] += 1
        if calls["n"] == 3:
            try:
                signal.raise_signal(signal.SIGINT)
            except KeyboardInterrupt as exc:  # what a library that catches and wraps does
                raise ValueError("Error calling function: KeyboardInterrupt") from exc
        return real(case, decision)

    monkeypatch.setattr(predictions, "prediction_record", wrapped_ctrl_c)
    out = tmp_path / "run"
    with pytest.raises(EvalInterruptedError) as stopped:
        run_eval(GuardAgent("mind2web-sc"), m2w_cases[:6], out, progress=False, plots=False)
    assert stopped.value.done == 2 == len(_lines(out / PARTIAL))
