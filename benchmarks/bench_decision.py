"""Decision latency with a verified program from memory (no LLM), end to end.

Runs the offline guard over the shipped benchmark events (latency only; accuracy is the eval's
job) and reports p50/p99 per decision plus the share of time spent in each node, measured from
the graph's own update stream.

`--sql` (eicu-ac) makes every event SQL-heavy: the agent's code is the record's gold SQL query
run through `SQLInterpreter`, so the SQL reader (sqlglot, scopes) is on every decision.

Run: .venv/bin/python benchmarks/bench_decision.py [--profile eicu-ac] [--n 300] [--sql]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import defaultdict

from guardagent import GuardAgent, GuardContext
from guardagent.eval.benchmarks import data_root, load_benchmark
from guardagent.eval.cases import Case


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return round(s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))], 2)


def _as_sql(case: Case, queries: dict[str, str]) -> str:
    """The event's output with its code replaced by the record's gold SQL in one cell."""
    code = f"answer = SQLInterpreter({json.dumps(queries[case.meta['record_id']])})"
    return f'Knowledge:\n- k\nSolution:\n{{\n"cell": {json.dumps(code)}\n}}\n42\nTERMINATE'


def _gold_queries() -> dict[str, str]:
    """Record id -> its gold SQL query (read once)."""
    path = data_root() / "eicu_ac" / "eicu_ac.json"
    return {r["id"]: r["query"] for r in json.loads(path.read_text(encoding="utf-8"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="eicu-ac")
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--sql", action="store_true", help="SQL-heavy eicu-ac events")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as mem:
        guard = GuardAgent(args.profile, memory_dir=mem)
        guard.warm_up()
        cases = load_benchmark(args.profile)
        queries = _gold_queries() if args.sql else {}
        events = [
            (c.agent_input, _as_sql(c, queries) if args.sql else c.agent_output) for c in cases
        ]
        events = (events * (args.n // len(events) + 1))[: args.n]
        guard.check(*events[0])  # first call pays imports and caches
        end_to_end = [guard.check(i, o).latency_ms for i, o in events]
        per_node: dict[str, float] = defaultdict(float)
        ctx = GuardContext(profile=args.profile, memory_dir=mem)
        for agent_input, agent_output in events:
            last = time.perf_counter()
            for update in guard.graph.stream(
                {"agent_input": agent_input, "agent_output": agent_output},
                context=ctx,
                stream_mode="updates",
            ):
                now = time.perf_counter()
                for node in update:
                    per_node[node] += (now - last) * 1000
                last = now
    total = sum(per_node.values())
    result = {
        "profile": args.profile,
        "decisions": len(end_to_end),
        "p50_ms": _pct(end_to_end, 50),
        "p99_ms": _pct(end_to_end, 99),
        "mean_ms": round(statistics.mean(end_to_end), 2),
        "share": {node: round(ms / total, 3) for node, ms in per_node.items()},
    }
    print(json.dumps(result))
    if args.sql:
        result["events"] = "sql-heavy"
    print(
        f"decision latency ({args.profile}{', SQL-heavy' if args.sql else ''}, "
        "verified program, no LLM): "
        f"p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms; share {result['share']}"
    )


if __name__ == "__main__":
    main()
