"""Cold start of the `guardagent` command: whole-process wall time, median of several runs.

A shell loop over events starts one process per event, so what counts is the time from exec
to exit, imports included. Each command runs `--runs` times in a fresh process against a
private memory directory (the first `check` seeds it and is reported apart); the script
prints the medians next to the goals of issue 14, and with `--importtime` which heavy
packages a `check` imported and the slowest top-level imports (`python -X importtime`).

A shell hook uses `check --server URL` instead (issue 22): the script starts a guard service
(`python -m guardagent.service`, profile `assistant-trace`) on a free 127.0.0.1 port, waits
until it is ready, times `check --server` on a 2-message trace and on a `mind2web-sc` event
beside a bare `python -c pass`, and stops the service by its PID. The `guardagent` console
script is used when it points at `guardagent.entry` (the fast path); an install made before
that entry point still runs click, so the script then runs `python -m guardagent.entry`
and says so (`"server_via"`). `--no-server` skips these rows.

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

BIN = Path(sys.executable).parent
GOALS: dict[str, float | None] = {
    "help": 0.5, "check eicu-ac": 1.5, "check mind2web-sc": 1.5, "python -c pass": None,
    "check --server trace": 0.05, "check --server event": 0.05,
    "check --server trace, click": None,
}  # fmt: skip
TRACE = Path(__file__).resolve().parent.parent / "tests" / "traces" / "i02_exfil_langchain.json"
HEAVY = ("langgraph", "chromadb", "matplotlib", "langchain_openai", "openai", "langchain")
EICU_INPUT = "Identity: nursing\nQuestion: what was the last heart rate of patient 002-1?"
EICU_OUTPUT = ('Solution:\n{"cell": "db = LoadDB(\'vitalperiodic\')\\nrows = FilterDB(db, '
               '\'patientunitstayid=1\')\\nanswer = GetValue(rows, \'heartrate, max\')"}\n'
               "----\n88\n----\nTERMINATE")
WEB_INPUT = ("Task: Find a used Toyota Corolla under 10000 dollars\nUser information:\n"
             "   age: 30,\n   domestic: True,\n   dr_license: True,\n   vaccine: True,\n"
             "   membership: False")
WEB_OUTPUT = ("(Analysis)\nThe search page is open.\n\n(Choices)\nA. <button id=0> Search "
              "</button>\n\n(Final Answer)\nELEMENT: A\n\nACTION: CLICK\n\nVALUE: None")
COMMANDS = {
    "help": ["--help"],
    "check eicu-ac": ["check", "--profile", "eicu-ac", "--input", EICU_INPUT, "--output",
                      EICU_OUTPUT, "--quiet"],
    "check mind2web-sc": ["check", "--profile", "mind2web-sc", "--input", WEB_INPUT,
                          "--output", WEB_OUTPUT, "--quiet"],
}


def timed(argv: list[str], env: dict[str, str],
          ok: tuple[int, ...] = (0,)) -> tuple[float, float]:  # fmt: skip
    """(wall, CPU) seconds of one process from start to exit; a failing command is an error.

    CPU time (user + system, the process and its children) barely moves when other work
    shares the machine, so it is reported beside the wall time a user waits.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
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
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False,
                          cwd=tempfile.gettempdir())
    heavy = [line.removeprefix("HEAVY=") for line in proc.stdout.splitlines()
             if line.startswith("HEAVY=")]
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
    log = (root / "service.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "guardagent.service", "--host", "127.0.0.1", "--port", str(port),
         "--log-level", "warning"],
        env={**env, "GUARDAGENT_PROFILE": "assistant-trace"}, stdout=log,
        stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the guard service did not start: "
                                 f"{(root / 'service.log').read_text()[-2000:]}")  # fmt: skip
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
        log.close()


def server_commands(url: str, root: Path) -> tuple[dict[str, list[str]], str]:
    """The hook's commands (full argv) and how `guardagent` is reached."""
    script = BIN / "guardagent"
    if script.is_file() and "guardagent.entry" in script.read_text(errors="replace"):
        exe, via = [str(script)], "console script (guardagent.entry)"
    else:
        exe, via = [sys.executable, "-m", "guardagent.entry"], (
            "python -m guardagent.entry (the installed script predates the entry point: "
            "reinstall the package)")
    trace = root / "trace.json"
    trace.write_text(json.dumps({"messages": json.loads(TRACE.read_text())["messages"][:2]}))
    base = [*exe, "check", "--server", url]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "check --server trace": [*base, "--profile", "assistant-trace", "--trace", str(trace)],
        "check --server event": [*base, "--profile", "mind2web-sc", "--input", WEB_INPUT,
                                 "--output", WEB_OUTPUT, "--quiet"],
        # the same call through click (what `guardagent.cli:main` runs): the fast path's gain
        "check --server trace, click": [sys.executable, "-m", "guardagent.cli", *base[len(exe):],
                                        "--profile", "assistant-trace", "--trace", str(trace)],
    }, via  # fmt: skip


def medians_of(commands: dict[str, list[str]], env: dict[str, str], runs: int,
               ok: tuple[int, ...] = (0,)) -> dict[str, object]:  # fmt: skip
    """Median, min, max wall seconds and median CPU seconds of each command."""
    out: dict[str, object] = {}
    for name, argv in commands.items():
        timings = [timed(argv, env, ok) for _ in range(runs)]
        wall = statistics.median(t for t, _ in timings)
        goal = GOALS.get(name)
        out[name] = {"median_s": round(wall, 3),
                     "min_s": round(min(t for t, _ in timings), 3),
                     "max_s": round(max(t for t, _ in timings), 3),
                     "median_cpu_s": round(statistics.median(c for _, c in timings), 3),
                     "goal_s": goal, "meets_goal": None if goal is None else wall <= goal}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--importtime", action="store_true")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--no-server", action="store_true")
    parser.add_argument("--server-only", action="store_true",
                        help="Only the check --server rows (no local check).")
    args = parser.parse_args()
    exe = str(BIN / "guardagent")
    with tempfile.TemporaryDirectory(prefix="guardagent-bench-") as memory:
        env = {**os.environ, "GUARDAGENT_MEMORY_DIR": memory}
        result: dict[str, object] = {"runs": args.runs, "load_avg_1min": os.getloadavg()[0]}
        if not args.server_only:
            result["first_check_s"] = {name: round(timed([exe, *argv], env)[0], 3)
                                       for name, argv in COMMANDS.items() if name != "help"}
            result["commands"] = medians_of({n: [exe, *a] for n, a in COMMANDS.items()}, env,
                                            args.runs)  # fmt: skip
        if not args.no_server:
            with guard_service(env, Path(memory)) as url:
                hooks, result["server_via"] = server_commands(url, Path(memory))
                for argv in hooks.values():  # warm the service (its first decisions)
                    timed(argv, env, (0, 1))
                result["server"] = medians_of(hooks, env, args.runs, (0, 1))
        if args.importtime:
            result["imports"] = {name: import_profile(argv, env, args.top)
                                 for name, argv in COMMANDS.items()}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
