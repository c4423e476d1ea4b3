"""Executor cost per run: sandboxed fork-per-run vs plain in-process `exec`.

Usage: .venv/bin/python benchmarks/bench_executor.py [--runs 300] [--bare]

By default chromadb (with a live in-memory collection) and langgraph are imported first,
as in the real guard process: a bigger address space makes fork slower, so that is the
number that matters. Prints one JSON object, then one summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from guardagent.sandbox.child import _protected_names  # noqa: E402
from guardagent.sandbox.policy import compile_program, prepare_program  # noqa: E402
from guardagent.sandbox.process import SandboxLimits, _reap_later, run_program  # noqa: E402
from guardagent.tools.registry import Toolbox  # noqa: E402

AGENT_INPUT = """Task: Book a one-way flight from Denver to Boston for 2 adults on May 3.
User information:
   age: 17,
   domestic: true,
   dr_license: false,
   vaccine: true,
   membership: false"""

AGENT_OUTPUT = """(Final Answer)
ELEMENT: B
ACTION: CLICK
VALUE: None
Choices:
A. <a> Deals </a>
B. <button> Search flights </button>
C. <input> Promo code </input>"""

RULES = [
    {
        "category": "flight",
        "attribute": "age",
        "op": ">=",
        "value": 18,
        "text": "User must be at least 18 to book a flight",
    },
    {
        "category": "car",
        "attribute": "dr_license",
        "op": "==",
        "value": True,
        "text": "User must have a driver's license to rent a car",
    },
    {
        "category": "movie",
        "attribute": "age",
        "op": ">=",
        "value": 15,
        "text": "User must be at least 15 to buy an R-rated movie ticket",
    },
]

GUARD_PROGRAM = """
info = parse_user_info(agent_input)
task = parse_task(agent_input)
action = final_action(agent_output)
category = "other"
for word, cat in [("flight", "flight"), ("car", "car"), ("movie", "movie")]:
    if word in task.lower():
        category = cat
        break
violated = []
for rule in rules_for(category):
    actual = info.get(rule["attribute"])
    if rule["op"] == ">=" and not (isinstance(actual, int) and actual >= rule["value"]):
        violated.append(rule["text"])
    elif rule["op"] == "==" and actual != rule["value"]:
        violated.append(rule["text"])
print("category:", category, "action:", action, "violated:", len(violated))
if violated:
    deny(violated, "the user does not meet the " + category + " requirements")
else:
    allow("no rule applies to this action")
"""


def make_toolbox() -> Toolbox:
    """A small toolbox of closures defined here, like user-registered functions."""
    tb = Toolbox()

    @tb.register
    def parse_user_info(agent_input: str) -> dict[str, Any]:
        """The `User information` block as a dict of typed values."""
        out: dict[str, Any] = {}
        for line in agent_input.split("User information:", 1)[-1].splitlines():
            key, sep, raw = line.strip().rstrip(",").partition(":")
            if not sep:
                continue
            raw = raw.strip()
            value: Any = raw == "true" if raw in ("true", "false") else raw
            out[key.strip()] = int(raw) if raw.isdigit() else value
        return out

    @tb.register
    def parse_task(agent_input: str) -> str:
        """The task line."""
        return agent_input.splitlines()[0].removeprefix("Task:").strip()

    @tb.register
    def final_action(agent_output: str) -> dict[str, str]:
        """ELEMENT/ACTION/VALUE of the final answer."""
        fields = {}
        for line in agent_output.splitlines():
            key, sep, value = line.partition(":")
            if sep and key in ("ELEMENT", "ACTION", "VALUE"):
                fields[key.lower()] = value.strip()
        return fields

    @tb.register
    def rules_for(category: str) -> list[dict[str, Any]]:
        """Rules of a category."""
        return [r for r in RULES if r["category"] == category]

    return tb


def load_heavy_imports() -> None:
    """chromadb with a live collection + langgraph, as in the guard process."""
    import chromadb
    import langgraph.graph  # noqa: F401

    client = chromadb.EphemeralClient()
    col = client.get_or_create_collection("bench-executor", embedding_function=None)
    col.add(ids=["a"], embeddings=[[0.1, 0.2, 0.3]], documents=["x"])
    globals()["_keep_alive"] = (client, col)


def cpu_seconds() -> float:
    """CPU of this process plus its reaped children: a cost that load does not inflate."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def percentiles(ms: list[float]) -> dict[str, float]:
    ms = sorted(ms)
    return {
        "p50": round(statistics.median(ms), 3),
        "p99": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 3),
        "mean": round(statistics.fmean(ms), 3),
    }


def bench_inprocess(tb: Toolbox, runs: int) -> list[float]:
    """The same compiled program run with plain `exec` in this process.

    Same fresh globals, copying wrappers and verdict recorder as the sandbox, so the
    difference is exactly the process isolation.
    """
    compiled = compile_program(GUARD_PROGRAM, _protected_names(tb))
    assert compiled.code is not None, compiled.messages()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        program = prepare_program(compiled.code, tb, AGENT_INPUT, AGENT_OUTPUT, 20_000)
        result = program.execute()
        times.append((time.perf_counter() - t0) * 1000)
        assert result["e"] is None and result["v"]["allowed"] is False, result
    return times


def bench_fork_floor(runs: int) -> list[float]:
    """An empty child (fork, one byte back, lazy reap): the floor no fork-per-run beats.

    Fork cost grows with the parent's address space and with machine load, so this is
    reported next to the sandbox numbers to separate executor overhead from the machine.
    """
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(write_fd, b"\n")
            os._exit(0)
        os.close(write_fd)
        os.read(read_fd, 1)
        os.close(read_fd)
        _reap_later(pid)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def bench_sandbox(tb: Toolbox, runs: int) -> list[float]:
    """Wall time of `run_program` per call (compile is cached after the first call)."""
    limits = SandboxLimits()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = run_program(GUARD_PROGRAM, tb, AGENT_INPUT, AGENT_OUTPUT, limits)
        times.append((time.perf_counter() - t0) * 1000)
        assert result["ok"] and result["verdict"] is not None, result
        assert result["verdict"]["allowed"] is False
    return times


def bench_builtin(runs: int) -> tuple[list[float], list[float]]:
    """The shipped mind2web-sc program with the built-in toolbox (served by the zygote),
    against in-process exec of the same compiled program with the same bindings."""
    from guardagent.profiles import load_profile
    from guardagent.sandbox.policy import prepare_program

    profile = load_profile("mind2web-sc")
    tools, demo = profile.tools(), profile.demonstrations[0]
    code = compile_program(demo.code, _protected_names(tools)).code
    inproc, sandboxed = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        prepare_program(code, tools, demo.agent_input, demo.agent_output, 20_000).execute()
        inproc.append((time.perf_counter() - t0) * 1000)
    for _ in range(runs):
        t0 = time.perf_counter()
        result = run_program(demo.code, tools, demo.agent_input, demo.agent_output)
        sandboxed.append((time.perf_counter() - t0) * 1000)
        assert result["ok"] and result["verdict"] and result["verdict"]["allowed"] is False
    return inproc, sandboxed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--bare", action="store_true", help="skip chromadb/langgraph imports")
    args = parser.parse_args()
    if not args.bare:
        load_heavy_imports()
    with open("/proc/self/statm") as f:
        vm_mb = int(f.read().split()[0]) * 4096 / 2**20
    tb = make_toolbox()
    bench_sandbox(tb, 10)  # warm-up: compile cache, page cache
    bench_inprocess(tb, 10)
    inproc = percentiles(bench_inprocess(tb, args.runs))
    floor = percentiles(bench_fork_floor(args.runs))
    cpu_before = cpu_seconds()
    sandbox = percentiles(bench_sandbox(tb, args.runs))
    time.sleep(0.2)
    run_program("allow()", tb, "", "")  # reaps the last children so their CPU is counted
    cpu_ms = (cpu_seconds() - cpu_before) * 1000 / (args.runs + 1)
    builtin_inproc, builtin_sandbox = (percentiles(x) for x in bench_builtin(args.runs))
    report = {
        "runs": args.runs,
        "builtin_toolbox_zygote": {
            "inprocess_exec_ms": builtin_inproc,
            "sandbox_run_ms": builtin_sandbox,
            "p50_ratio": round(builtin_sandbox["p50"] / builtin_inproc["p50"], 1),
        },
        "heavy_imports": not args.bare,
        "parent_vm_mb": round(vm_mb, 1),
        "load_avg_1m": os.getloadavg()[0],
        "cpus": os.cpu_count(),
        "inprocess_exec_ms": inproc,
        "sandbox_run_ms": sandbox,
        "empty_fork_ms": floor,
        "p50_overhead_above_empty_fork_ms": round(sandbox["p50"] - floor["p50"], 3),
        "sandbox_cpu_ms_per_run": round(cpu_ms, 3),
        "p50_ratio": round(sandbox["p50"] / inproc["p50"], 1),
        "p50_target_ms": 5.0,
    }
    print(json.dumps(report, indent=2))
    print(
        f"sandbox p50 {sandbox['p50']:.2f} ms / p99 {sandbox['p99']:.2f} ms vs in-process exec "
        f"p50 {inproc['p50']:.3f} ms: {report['p50_ratio']}x "
        f"({'meets' if sandbox['p50'] <= 5.0 else 'MISSES'} the 5 ms p50 target); "
        f"empty fork p50 {floor['p50']:.2f} ms; "
        f"CPU per run {report['sandbox_cpu_ms_per_run']} ms, load {report['load_avg_1m']:.2f} "
        f"on {report['cpus']} CPUs"
    )
    print(
        f"built-in toolbox via zygote: sandbox p50 {builtin_sandbox['p50']:.2f} ms / "
        f"p99 {builtin_sandbox['p99']:.2f} ms vs in-process p50 {builtin_inproc['p50']:.3f} ms"
        f" ({'meets' if builtin_sandbox['p50'] <= 5.0 else 'MISSES'} the 5 ms p50 target)"
    )


if __name__ == "__main__":
    main()
