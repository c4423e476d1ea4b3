"""Retrieval latency and recall at 1k / 10k / 100k demonstrations.

Compares GuardAgent's retrieval (candidates from the word-sketch scan up to the store's
`scan_limit`, from Chroma by the offline n-gram embedding above it; then the exact Levenshtein
re-rank) with the reference approach (exact Levenshtein over every demonstration,
as the paper's code does), in the same run. recall@k counts a returned demonstration as right
when its distance is within the true k-th smallest distance (ties are not errors).

Run: .venv/bin/python benchmarks/bench_retrieval.py [--sizes 1000 10000 100000] [--scan-limit N]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import Levenshtein

sys.path.insert(0, str(Path(__file__).parent))
from synthetic import near_duplicates, synthetic_events  # noqa: E402

from guardagent.memory_store.store import (  # noqa: E402
    Demonstration,
    MemoryStore,
    demonstration_id,
    event_text,
)


def _demos(events: list[tuple[str, str]]) -> list[Demonstration]:
    out = []
    for i, (inp, outp) in enumerate(events):
        d = Demonstration(
            id="",
            agent_input=inp,
            agent_output=outp,
            plan="p",
            code=f"# {i}",
            label=i % 2,
            details=[],
            request_fingerprint="bench",
            verified=True,
        )
        d["id"] = demonstration_id(d)
        out.append(d)
    return out


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return round(s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))], 3)


def build(
    path: str, size: int, candidates: int, scan_limit: int
) -> tuple[MemoryStore, list[tuple[str, str]], float]:
    store = MemoryStore(f"bench-{size}", path=path, candidates=candidates, scan_limit=scan_limit)
    events = synthetic_events(size, seed=1)
    demos = _demos(events)
    started = time.perf_counter()
    for i in range(0, size, 2000):
        store.add(demos[i : i + 2000])
    return store, events, time.perf_counter() - started


def measure(
    size: int, k: int, candidates: int, scan_limit: int, queries: int, exact_queries: int, path: str
) -> dict[str, object]:
    store, stored, build_s = build(path, size, candidates, scan_limit)
    texts = [event_text(i, o) for i, o in stored]
    half = queries // 2
    events = synthetic_events(half, seed=2) + near_duplicates(stored, queries - half, seed=3)
    ours: list[float] = []
    exact_ms: list[float] = []
    recalls: dict[str, list[float]] = {"fresh": [], "near_duplicate": []}
    for n, (inp, outp) in enumerate(events):
        kind = "fresh" if n < half else "near_duplicate"
        t0 = time.perf_counter()
        got = store.search(inp, outp, k)
        ours.append((time.perf_counter() - t0) * 1000)
        if n % half >= exact_queries // 2:
            continue
        q = event_text(inp, outp)
        t0 = time.perf_counter()
        dists = sorted(Levenshtein.distance(q, t) for t in texts)
        exact_ms.append((time.perf_counter() - t0) * 1000)
        kth = dists[k - 1]
        hits = sum(
            Levenshtein.distance(q, event_text(d["agent_input"], d["agent_output"])) <= kth
            for d in got
        )
        recalls[kind].append(hits / k)
    return {
        "size": size,
        "k": k,
        "candidates": store.candidates,
        "candidate_stage": "word-sketch scan" if size <= scan_limit else "chroma",
        "build_s": round(build_s, 1),
        "ours_ms_p50": _pct(ours, 50),
        "ours_ms_p95": _pct(ours, 95),
        "exact_ms_p50": _pct(exact_ms, 50),
        "speedup_p50": round(statistics.median(exact_ms) / statistics.median(ours), 1),
        "recall_at_k": round(statistics.mean(recalls["fresh"] + recalls["near_duplicate"]), 3),
        "recall_at_k_fresh": round(statistics.mean(recalls["fresh"]), 3),
        "recall_at_k_near_duplicate": round(statistics.mean(recalls["near_duplicate"]), 3),
        "queries": queries,
        "exact_queries": len(exact_ms),
    }


def fresh_process(path: str, size: int, k: int, candidates: int, scan_limit: int) -> list[float]:
    """Peak RSS (MB) of a fresh guard process that opens the store and serves 50 queries, and
    its first query's latency (ms: with the scan, this loads the index from Chroma)."""
    code = (
        "import resource, sys, time\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from synthetic import synthetic_events\n"
        "from guardagent.memory_store.store import MemoryStore\n"
        f"s = MemoryStore('bench-{size}', path={path!r}, candidates={candidates}, "
        f"scan_limit={scan_limit})\n"
        "events = synthetic_events(50, seed=3)\n"
        f"t0 = time.perf_counter(); s.search(*events[0], {k}); first = time.perf_counter() - t0\n"
        f"for i, o in events[1:]: s.search(i, o, {k})\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, first * 1000)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    rss_kb, first_ms = out.stdout.split()[-2:]
    return [round(int(rss_kb) / 1024, 1), round(float(first_ms), 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--candidates", type=int, default=MemoryStore.DEFAULT_CANDIDATES)
    parser.add_argument("--scan-limit", type=int, default=MemoryStore.DEFAULT_SCAN_LIMIT)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--exact-queries", type=int, default=20)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            row = measure(
                size,
                args.k,
                args.candidates,
                args.scan_limit,
                args.queries,
                args.exact_queries,
                tmp,
            )
            rss, first = fresh_process(tmp, size, args.k, args.candidates, args.scan_limit)
            row["guard_process_peak_rss_mb"], row["fresh_process_first_query_ms"] = rss, first
            results.append(row)
            print(json.dumps(row), flush=True)
    for r in results:
        print(
            f"retrieval size={r['size']} ({r['candidate_stage']}): p50 {r['ours_ms_p50']} ms, "
            f"p95 {r['ours_ms_p95']} ms, "
            f"exact scan p50 {r['exact_ms_p50']} ms ({r['speedup_p50']}x), "
            f"recall@{r['k']} {r['recall_at_k']} (fresh {r['recall_at_k_fresh']}, "
            f"near-duplicate {r['recall_at_k_near_duplicate']}), "
            f"peak RSS {r['guard_process_peak_rss_mb']} MB, first query in a fresh process "
            f"{r['fresh_process_first_query_ms']} ms"
        )
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"benchmark process peak RSS {own} MB")


if __name__ == "__main__":
    main()
