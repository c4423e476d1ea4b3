"""Cold start of the `guardagent` command: whole-process wall time, median of several runs.

A shell loop over events starts one process per event, so what counts is the time from exec
to exit, imports included. Each command runs `--runs` times in a fresh process against a
private memory directory (the first `check` seeds it and is reported apart); the script
prints the medians next to the goals of issue 14, and with `--importtime` which heavy
packages a `check` imported and the slowest top-level imports (`python -X importtime`).

Issue 22's goal is relative, so it holds on a busy machine too: a local `check` within 1.6x the
time of a process that only imports LangGraph (`python -c "import langgraph.graph"`), measured
in the same run, interleaved. Commands run this checkout's code (`PYTHONPATH` = its root), not
whatever `guardagent` the environment installed.

A shell hook uses `check --server URL` instead (issue 22: a cold start near the
interpreter's). The script starts a guard service (`python -m guardagent.service`, profile
`assistant-trace`) on a free 127.0.0.1 port, waits until it is ready, times `check --server`
as the `guardagent` console script runs it (`guardagent.entry:main`, the fast path) on a
2-message trace and on a `mind2web-sc` event, the same trace call through click
(`guardagent.cli:main`), and a bare `python -c pass`, interleaved, then stops the service by
its PID. `--no-server` skips these rows, `--server-only` runs only them.

Run: .venv/bin/python benchmarks/bench_cold_start.py [--runs 7] [--importtime]
     [--no-server | --server-only]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from guardagent.cli import main; main()"]
LANGGRAPH = [sys.executable, "-c", "import langgraph.graph"]
ENTRY = [
    sys.executable,
    "-c",
    "import sys; from guardagent.entry import main; sys.argv[0] = 'guardagent'; main()",
]  # what the console script runs
TRACE = ROOT / "tests" / "traces" / "i02_exfil_langchain.json"
GOALS = {"help": 0.5, "check eicu-ac": 1.5, "check mind2web-sc": 1.5}
RATIO_GOAL = 1.6  # issue 22: check <= 1.6x importing LangGraph alone
HEAVY = ("langgraph", "chromadb", "matplotlib", "langchain_openai", "openai", "langchain")
EICU_INPUT = "Identity: nursing\nQuestion: what was the last heart rate of patient 002-1?"
EICU_OUTPUT = (
    'Solution:\n{"cell": "db = LoadDB(\'vitalperiodic\')\\nrows = FilterDB(db, '
    "'patientunitstayid=1')\\nanswer = GetValue(rows, 'heartrate, max')\"}\n"
    "----\n88\n----\nTERMINATE"
)
WEB_INPUT = (
    "Task: Find a used Toyota Corolla under 10000 dollars\nUser information:\n"
    "   age: 30,\n   domestic: True,\n   dr_license: True,\n   vaccine: True,\n"
    "   membership: False"
)
WEB_OUTPUT = (
    "(Analysis)\nThe search page is open.\n\n(Choices)\nA. <button id=0> Search "
    "</button>\n\n(Final Answer)\nELEMENT: A\n\nACTION: CLICK\n\nVALUE: None"
)
COMMANDS = {
    "help": ["--help"],
    "check eicu-ac": [
        "check",
        "--profile",
        "eicu-ac",
        "--input",
        EICU_INPUT,
        "--output",
        EICU_OUTPUT,
        "--quiet",
    ],
    "check mind2web-sc": [
        "check",
        "--profile",
        "mind2web-sc",
        "--input",
        WEB_INPUT,
        "--output",
        WEB_OUTPUT,
        "--quiet",
    ],
}


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one process from start to exit; a failing command is an error.

    CPU time (user + system, the process and its children) barely moves when other work
    shares the machine, so it is reported beside the wall time a user waits.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        argv, env=env, capture_output=True, check=False, cwd=tempfile.gettempdir()
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):  # check: 0 allowed, 1 denied
        raise SystemExit(f"{' '.join(argv[:3])} failed:\n{proc.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


PROBE = f"""import json, sys
from guardagent.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("\\nHEAVY=" + json.dumps(sorted(p for p in {HEAVY!r} if p in sys.modules)))
"""


def import_profile(args: list[str], env: dict[str, str], top: int) -> dict[str, object]:
    """Which heavy packages one command imports, and its slowest imports (cumulative).

    The heavy list is read from the process's own `sys.modules`; the timings come from
    `-X importtime`, whose lines are the roots of the import tree of that process.
    """
    argv = [sys.executable, "-X", "importtime", "-c", PROBE, *args]
    # run outside the checkout: `-c` puts the working directory first on sys.path
    proc = subprocess.run(
        argv, env=env, capture_output=True, text=True, check=False, cwd=tempfile.gettempdir()
    )
    heavy = [
        line.removeprefix("HEAVY=")
        for line in proc.stdout.splitlines()
        if line.startswith("HEAVY=")
    ]
    rows = []  # (cumulative us, depth, module)
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if not line.startswith("import time:") or len(parts) != 3:
            continue
        cumulative, name = parts[1].strip(), parts[2][1:]
        if cumulative.isdigit():
            rows.append((int(cumulative), len(name) - len(name.lstrip()), name.strip()))
    roots = sorted(((us, name) for us, depth, name in rows if depth == 0), reverse=True)
    return {
        "heavy_imported": json.loads(heavy[0]) if heavy else None,
        "slowest_imports_ms": {name: round(us / 1000, 1) for us, name in roots[:top]},
    }


@contextmanager
def guard_service(env: dict[str, str], root: Path) -> Iterator[str]:
    """A guard service on a free loopback port until the block ends (stopped by its PID)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log_path = root / "service.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "guardagent.service",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            env={**env, "GUARDAGENT_PROFILE": "assistant-trace"},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the guard service did not start: {log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(url + "/readyz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
        yield url
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def hook_cold_start(env: dict[str, str], root: Path, runs: int) -> dict[str, object]:
    """`check --server` (fast path and click) beside `python -c pass`, medians in ms."""
    trace = root / "trace.json"
    trace.write_text(json.dumps({"messages": json.loads(TRACE.read_text())["messages"][:2]}))
    with guard_service(env, root) as url:
        on_trace = ["check", "--server", url, "--profile", "assistant-trace", "--trace", str(trace)]
        on_event = [
            "check",
            "--server",
            url,
            "--profile",
            "mind2web-sc",
            "--input",
            WEB_INPUT,
            "--output",
            WEB_OUTPUT,
            "--quiet",
        ]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "check --server trace": [*ENTRY, *on_trace],
            "check --server event": [*ENTRY, *on_event],
            "check --server trace, through click": [*CLI, *on_trace],
        }
        for argv in commands.values():  # the service's first decision of each kind
            timed(argv, env)
        samples: dict[str, list[tuple[float, float]]] = {n: [] for n in commands}
        for _ in range(runs):  # interleaved, as above
            for name, argv in commands.items():
                samples[name].append(timed(argv, env))
    base = statistics.median(t for t, _ in samples["python -c pass"])
    return {
        name: {
            "median_ms": round(statistics.median(t for t, _ in got) * 1000, 1),
            "min_ms": round(min(t for t, _ in got) * 1000, 1),
            "median_cpu_ms": round(statistics.median(c for _, c in got) * 1000, 1),
            "x_python": round(statistics.median(t for t, _ in got) / base, 2),
        }
        for name, got in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--importtime", action="store_true")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--no-server", action="store_true")
    parser.add_argument("--server-only", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="guardagent-bench-") as memory:
        env = {**os.environ, "GUARDAGENT_MEMORY_DIR": memory, "PYTHONPATH": str(ROOT)}
        if args.server_only:
            print(
                json.dumps(
                    {
                        "load_avg_1min": os.getloadavg()[0],
                        "hook": hook_cold_start(env, Path(memory), args.runs),
                    },
                    indent=2,
                )
            )
            return
        first = {
            name: round(timed([*CLI, *argv], env)[0], 3)
            for name, argv in COMMANDS.items()
            if name != "help"
        }
        result: dict[str, object] = {
            "runs": args.runs,
            "load_avg_1min": os.getloadavg()[0],
            "first_check_s": first,
        }
        samples: dict[str, list[tuple[float, float]]] = {n: [] for n in [*COMMANDS, "langgraph"]}
        for _ in range(args.runs):  # interleaved: load changes hit every command alike
            samples["langgraph"].append(timed(LANGGRAPH, env))
            for name, argv in COMMANDS.items():
                samples[name].append(timed([*CLI, *argv], env))
        medians = {}
        base = statistics.median(t for t, _ in samples["langgraph"])
        base_cpu = statistics.median(c for _, c in samples["langgraph"])
        for name, runs in samples.items():
            wall = statistics.median(t for t, _ in runs)
            medians[name] = {
                "median_s": round(wall, 3),
                "min_s": round(min(t for t, _ in runs), 3),
                "max_s": round(max(t for t, _ in runs), 3),
                "median_cpu_s": round(statistics.median(c for _, c in runs), 3),
                "x_langgraph_import": round(wall / base, 2),
                "cpu_x_langgraph_import": round(
                    statistics.median(c for _, c in runs) / base_cpu, 2
                ),
            }
            if name in GOALS:
                medians[name].update(goal_s=GOALS[name], meets_goal=wall <= GOALS[name])
            if name.startswith("check"):
                medians[name].update(
                    ratio_goal=RATIO_GOAL, meets_ratio_goal=wall / base <= RATIO_GOAL
                )
        result["commands"] = medians
        if args.importtime:
            result["imports"] = {
                name: import_profile(argv, env, args.top) for name, argv in COMMANDS.items()
            }
        if not args.no_server:
            result["hook"] = hook_cold_start(env, Path(memory), args.runs)
    print(json.dumps(result, indent=2))
    print(
        f"cold start, median of {args.runs}: importing LangGraph alone {base:.3f} s; "
        + "; ".join(
            f"{n} {m['median_s']:.3f} s ({m['x_langgraph_import']:.2f}x; CPU "
            f"{m['cpu_x_langgraph_import']:.2f}x)"
            for n, m in medians.items()
            if n != "langgraph"
        )
        + f"; goal for check <= {RATIO_GOAL}x"
    )


if __name__ == "__main__":
    main()
