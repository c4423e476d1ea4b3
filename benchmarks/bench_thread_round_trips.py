"""Database round trips and latency of one thread decision, in-process, on one replica.

A throwaway PostgreSQL (the machine's binaries, fsync off), one replica's stores and decider
in this process, and 40 trace decisions on four threads, unkeyed then keyed. A "wait" is one
`psycopg.AsyncConnection.wait` (a statement, BEGIN or COMMIT; in pipeline mode several per
sync, so it over-counts pipelined round trips); a statement is one SQL statement sent (a row
of an executemany counts one). Neither depends on the machine's load; the latency does.

Run: .venv/bin/python benchmarks/bench_thread_round_trips.py [--decisions 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from guardagent.context import GuardContext
from guardagent.service.decider import Decider
from guardagent.service.requests import parse_request
from guardagent.service.settings import ServiceSettings
from guardagent.service.stores import open_stores
from tests.pg_server import running_postgres

TRACE = Path(__file__).resolve().parent.parent / "tests" / "traces" / "i02_exfil_langchain.json"
WAITS = [0]
STATEMENTS = [0]


def count_round_trips() -> None:
    """Count every wait of an async psycopg connection, and every statement sent."""
    real = psycopg.AsyncConnection.wait
    execute, many = psycopg.AsyncCursor.execute, psycopg.AsyncCursor.executemany

    async def counting(self: Any, *args: Any, **kw: Any) -> Any:
        WAITS[0] += 1
        return await real(self, *args, **kw)

    async def one(self: Any, *args: Any, **kw: Any) -> Any:
        STATEMENTS[0] += 1
        return await execute(self, *args, **kw)

    async def rows(self: Any, query: Any, params: Any, *args: Any, **kw: Any) -> Any:
        params = list(params)
        STATEMENTS[0] += len(params)
        return await many(self, query, params, *args, **kw)

    psycopg.AsyncConnection.wait = counting  # type: ignore[method-assign]
    psycopg.AsyncCursor.execute = one  # type: ignore[method-assign]
    psycopg.AsyncCursor.executemany = rows  # type: ignore[method-assign]


async def measure(url: str, decisions: int) -> None:
    messages = json.loads(TRACE.read_text())["messages"][:2]
    settings = ServiceSettings(
        guard=GuardContext(profile="assistant-trace", memory_dir=tempfile.mkdtemp()),
        database_url=url,
        pool_size=2,
    )
    async with open_stores(settings) as stores:
        decider = Decider(settings, stores.locks, stores.decisions, stores.threads)
        await decider.agent(decider.profile_ref(None))
        for keyed in (False, True):
            trips, sent, millis = [], [], []
            for i in range(decisions):
                body: dict[str, Any] = {"messages": messages, "thread_id": f"t-{keyed}-{i % 4}"}
                if keyed:
                    body["idempotency_key"] = f"k-{i}"
                request = parse_request("trace", body)
                WAITS[0], STATEMENTS[0], started = 0, 0, time.perf_counter()
                answer = await decider.decide(request)
                millis.append((time.perf_counter() - started) * 1000)
                trips.append(WAITS[0])
                sent.append(STATEMENTS[0])
                assert answer.status == 200, answer.body
            trips, sent, millis = trips[4:], sent[4:], millis[4:]  # first decisions aside
            print(
                json.dumps(
                    {
                        "keyed": keyed,
                        "waits_median": statistics.median(trips),
                        "waits_min": min(trips),
                        "waits_max": max(trips),
                        "statements_median": statistics.median(sent),
                        "p50_ms": round(statistics.median(millis), 1),
                    }
                )
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=40)
    args = parser.parse_args()
    print(f"# cores={os.cpu_count()} load={os.getloadavg()[0]:.2f}")
    count_round_trips()
    with running_postgres(Path(tempfile.mkdtemp(prefix="bench-trips-"))) as url:
        asyncio.run(measure(url, max(5, args.decisions)))


if __name__ == "__main__":
    main()
