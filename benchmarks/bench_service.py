"""Guard service throughput: decisions/s with 1 and 2 replicas, stateless and on threads.

Starts a throwaway PostgreSQL (the machine's binaries; fsync on unless --no-fsync) and replicas of
`python -m guardagent.service` on loopback ports, then drives each configuration with a pool
of client threads (`GuardClient`, one HTTP request per decision) for a fixed time:

- stateless: no thread id (no lock, no checkpoint);
- threads: every request on one of `--threads` threads (lock, read the thread's index,
  decide, append a checkpoint), spread over the replicas round-robin;
- hot, hot keyed: every request on ONE thread (`--hot-concurrency` clients at once, one
  replica), without and with an idempotency key per request: the thread's own rate, one
  decision at a time, and what a key adds to it (issue 35 item 9).

Then the ratios: thread / stateless decisions per replica (issue 38 item 4: target >= 0.5) and
the keyed / unkeyed single-thread rate.

CPU is read from /proc: the replicas with their sandbox workers, PostgreSQL (postmaster and
backends) and this process (the load generator), as cores used over the run's wall time. The
host's load average is printed because the machine's other work slows every figure.

Run: .venv/bin/python benchmarks/bench_service.py [--seconds 10] [--concurrency 8]
     [--kind trace|event] [--hot-concurrency 32] [--no-cold-start]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from guardagent.service.client import GuardClient, ServiceError
from tests.pg_server import free_port, running_postgres, start_replica, stop, wait_ready

TRACE = Path(__file__).resolve().parent.parent / "tests" / "traces" / "i02_exfil_langchain.json"
EVENT_INPUT = (
    "Task: Book a double room at a hotel in Lisbon for two nights\nUser information:\n"
    "   age: 40,\n   domestic: True,\n   dr_license: False,\n   vaccine: True,\n"
    "   membership: True"
)
EVENT_OUTPUT = (
    "(Analysis)\nThe hotel booking page is open.\n\n(Choices)\nA. <button id=0> "
    "Reserve </button>\n\n(Final Answer)\nELEMENT: A\n\nACTION: CLICK\n\nVALUE: None"
)
TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def tree(pids: list[int]) -> list[int]:
    """`pids` and their live descendants (a replica's sandbox workers)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))):
            parents[int(entry.name)] = int(stat[1])
    found, frontier = set(pids), set(pids)
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return sorted(found)


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of `pids` and of their reaped children (utime, stime, cutime, cstime)."""
    total = 0
    for pid in pids:
        stat = _stat(pid)
        if stat:
            total += sum(int(v) for v in stat[11:15])
    return total / TICKS


def cold_start(url: str, kind: str, profile: str, root: Path, n: int = 7) -> dict[str, float]:
    """Median wall and CPU time (ms) of a bare interpreter and of one `check --server` call.

    CPU time (user + system of the child) moves less than wall time on a busy machine.
    """
    import subprocess

    messages = json.loads(TRACE.read_text())["messages"]
    trace = root / "trace.json"
    trace.write_text(json.dumps({"messages": messages[:2]}))
    args = (
        ["--trace", str(trace)]
        if kind == "trace"
        else ["--input", EVENT_INPUT, "--output", EVENT_OUTPUT]
    )
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "check --server": [
            sys.executable,
            "-m",
            "guardagent.cli",
            "check",
            "--server",
            url,
            "--profile",
            profile,
            *args,
        ],
    }
    import resource

    result = {}
    for name, command in commands.items():
        times, cpu = [], []
        for _ in range(n):
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(command, capture_output=True, check=False)
            times.append((time.perf_counter() - started) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append((after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime) * 1000)
        result[f"{name} wall"] = round(statistics.median(times), 1)
        result[f"{name} cpu"] = round(statistics.median(cpu), 1)
    return result


def run(
    clients: list[GuardClient],
    kind: str,
    threads: int | None,
    concurrency: int,
    seconds: float,
    replica_pids: list[int],
    pg_pids: Any,
    hot: str | None = None,
    keyed: bool = False,
    tag: str = "",
) -> dict[str, Any]:
    """Drive `clients` for `seconds`; `hot` names the one thread every request uses.

    Returns the raw run (latencies, failures, wall time, CPU seconds): see :func:`summary`.
    """
    messages = json.loads(TRACE.read_text())["messages"][:2]
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def worker(n: int) -> None:
        i = 0
        while time.monotonic() < stop_at:
            client = clients[(n + i) % len(clients)]
            thread_id = hot or (f"bench-{n}-{i % threads}" if threads else None)
            key = f"{hot}-{tag}-{n}-{i}" if keyed else None
            i += 1
            started = time.perf_counter()
            try:
                if kind == "trace":
                    decision = client.check_trace_raw(
                        messages, thread_id=thread_id, idempotency_key=key
                    )
                else:
                    decision = client.check_raw(
                        EVENT_INPUT, EVENT_OUTPUT, thread_id=thread_id, idempotency_key=key
                    )
                ok = decision.get("allowed") is True
            except ServiceError:
                ok = False
            with lock:
                if ok:
                    latencies.append(time.perf_counter() - started)
                else:
                    errors[0] += 1

    pg, replicas = pg_pids(), tree(replica_pids)
    before = (cpu_seconds(replicas), cpu_seconds(pg), sum(os.times()[:2]))
    wall = time.monotonic()
    workers = [threading.Thread(target=worker, args=(n,)) for n in range(concurrency)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall = time.monotonic() - wall
    pg, replicas = pg_pids(), tree(replica_pids)
    after = (cpu_seconds(replicas), cpu_seconds(pg), sum(os.times()[:2]))
    cpu = [a - b for a, b in zip(after, before, strict=True)]
    return {"latencies": latencies, "failed": errors[0], "wall": wall, "cpu": cpu}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Runs of one configuration taken as one: rate, latency, and CPU (cores, ms a decision).

    CPU per decision (replicas and Postgres) is the figure the machine's other load moves
    least: a replica's capacity is its cores over it.
    """
    latencies = sorted(x for r in runs for x in r["latencies"])
    wall = sum(r["wall"] for r in runs)
    cpu = [sum(r["cpu"][i] for r in runs) for i in range(3)]
    served = max(len(latencies), 1)
    return {
        "decisions_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 1) if latencies else None,
        "failed": sum(r["failed"] for r in runs),
        "cpu_cores_replicas": round(cpu[0] / wall, 2),
        "cpu_cores_postgres": round(cpu[1] / wall, 2),
        "cpu_cores_client": round(cpu[2] / wall, 2),
        "cpu_ms_per_decision": round((cpu[0] + cpu[1]) * 1000 / served, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--threads", type=int, default=4, help="threads per client worker")
    parser.add_argument("--kind", choices=["trace", "event"], default="trace")
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="turns each mode takes, interleaved (--seconds is split over them)",
    )
    parser.add_argument(
        "--hot-concurrency", type=int, default=32, help="clients at once on the one hot thread"
    )
    parser.add_argument(
        "--no-cold-start",
        action="store_true",
        help="skip the cold-start timing of `check --server`",
    )
    parser.add_argument(
        "--no-fsync", action="store_true", help="PostgreSQL with fsync and synchronous_commit off"
    )
    args = parser.parse_args()
    profile = "assistant-trace" if args.kind == "trace" else "mind2web-sc"
    root = Path(tempfile.mkdtemp(prefix="bench-service-"))
    print(
        f"# kind={args.kind} profile={profile} concurrency={args.concurrency} "
        f"seconds={args.seconds} fsync={'off' if args.no_fsync else 'on'} "
        f"cores={os.cpu_count()} load={os.getloadavg()[0]:.2f}"
    )
    with running_postgres(root, durable=not args.no_fsync) as url:
        ports = [free_port(), free_port()]
        env = {
            "GUARDAGENT_DATABASE_URL": url,
            "GUARDAGENT_PROFILE": profile,
            "GUARDAGENT_POOL_SIZE": str(args.concurrency + 2),
        }
        db_port = url.rpartition(":")[2].partition("/")[0]
        procs = [
            start_replica(
                p, {**env, "GUARDAGENT_MEMORY_DIR": str(root / f"m{p}")}, root / f"r{p}.log"
            )
            for p in ports
        ]
        try:
            for proc, port in zip(procs, ports, strict=True):
                wait_ready(proc, port, root / f"r{port}.log")
            postmaster = _postmaster(db_port)
            clients = [GuardClient(f"http://127.0.0.1:{p}", retries=0) for p in ports]
            if not args.no_cold_start:
                print(
                    "# cold start, median ms:",
                    json.dumps(
                        cold_start(f"http://127.0.0.1:{ports[0]}", args.kind, profile, root)
                    ),
                    flush=True,
                )
            for client in clients:  # warm each replica: first decision, threads, the saver
                run(
                    [client],
                    args.kind,
                    args.threads,
                    args.concurrency,
                    2.0,
                    [],
                    lambda: [],
                    tag="warm",
                )
            rows = []
            pg = (lambda: tree([postmaster])) if postmaster else (lambda: [])
            share = args.seconds / args.rounds
            for replicas in (1, 2):  # the modes take turns, so the machine's load hits both
                runs: dict[str, list[dict[str, Any]]] = {"stateless": [], "threads": []}
                for _ in range(args.rounds):
                    for mode, threads in (("stateless", None), ("threads", args.threads)):
                        runs[mode].append(
                            run(
                                clients[:replicas],
                                args.kind,
                                threads,
                                args.concurrency,
                                share,
                                [p.pid for p in procs[:replicas]],
                                pg,
                            )
                        )
                for mode, taken in runs.items():
                    rows.append({"replicas": replicas, "mode": mode, **summary(taken)})
                    print(json.dumps(rows[-1]), flush=True)
            hot: dict[str, list[dict[str, Any]]] = {"hot": [], "hot keyed": []}
            for r in range(args.rounds):
                for mode in hot:
                    hot[mode].append(
                        run(
                            clients[:1],
                            args.kind,
                            None,
                            args.hot_concurrency,
                            share,
                            [procs[0].pid],
                            pg,
                            hot=f"hot-{r}",
                            keyed=mode == "hot keyed",
                            tag=f"r{r}",
                        )
                    )
            for mode, taken in hot.items():
                rows.append(
                    {"replicas": 1, "mode": f"{mode} c={args.hot_concurrency}", **summary(taken)}
                )
                print(json.dumps(rows[-1]), flush=True)
        finally:
            for proc in procs:
                stop(proc)
    print()
    print(
        "| replicas | mode | decisions/s | p50 ms | p99 ms | CPU replicas | CPU Postgres "
        "| CPU client | CPU ms / decision |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['replicas']} | {r['mode']} | {r['decisions_per_s']} | {r['p50_ms']} | "
            f"{r['p99_ms']} | {r['cpu_cores_replicas']} | {r['cpu_cores_postgres']} | "
            f"{r['cpu_cores_client']} | {r['cpu_ms_per_decision']} |"
        )
    rate = {(r["replicas"], r["mode"].partition(" c=")[0]): r["decisions_per_s"] for r in rows}
    cost = {(r["replicas"], r["mode"]): r["cpu_ms_per_decision"] for r in rows}
    print()
    for replicas in (1, 2):
        by_rate = rate[replicas, "threads"] / max(rate[replicas, "stateless"], 1e-9)
        by_cpu = cost[replicas, "stateless"] / max(cost[replicas, "threads"], 1e-9)
        print(
            f"threads / stateless, {replicas} replica(s): {by_rate:.2f} (decisions/s); "
            f"{by_cpu:.2f} (CPU per decision, stateless / threads: the capacity ratio)"
        )
    print(
        f"hot keyed / hot unkeyed (one thread, c={args.hot_concurrency}): "
        f"{rate[1, 'hot keyed'] / max(rate[1, 'hot'], 1e-9):.2f} "
        f"({rate[1, 'hot keyed']} / {rate[1, 'hot']} decisions/s)"
    )


def _postmaster(port: str) -> int:
    """The PID of the benchmark's own PostgreSQL (other servers may run on the machine)."""
    for pid_file in Path(tempfile.gettempdir()).glob("guardagent-pg-*/pgdata/postmaster.pid"):
        try:
            lines = pid_file.read_text().split("\n")
        except OSError:
            continue
        if len(lines) > 3 and lines[3].strip() == port:
            return int(lines[0])
    return 0


if __name__ == "__main__":
    main()
