"""How far any candidate stage is from recall@k >= 0.95 on the retrieval benchmark's data.

`bench_retrieval.py` measures the shipped pipeline. This asks what is possible at all, on the
same synthetic demonstrations and the same query mix (half fresh events, half near-duplicates),
without Chroma's approximate index in the way:

1. near ties: for each query, how many demonstrations lie within 10 % / 25 % of the true k-th
   smallest Levenshtein distance (an exact scan of every demonstration);
2. the shipped embedding as a perfect (brute-force) candidate stage: recall@k after the exact
   Levenshtein re-rank of its top C candidates, for C up to 4,096;
3. the best estimator we found, word-level Levenshtein on hashed-word sketches, used as a full
   scan (every demonstration), then the exact re-rank of its top m: its recall and its cost.

Run: .venv/bin/python benchmarks/retrieval_headroom.py [--size 100000] [--queries 24]
(about 3 minutes at 100k on 2 cores, most of it the exact scans).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import Levenshtein
import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein as RapidLevenshtein

sys.path.insert(0, str(Path(__file__).parent))
from synthetic import near_duplicates, synthetic_events

from guardagent.memory_store.embeddings import HashingEmbeddings
from guardagent.memory_store.sketch_index import word_sketch
from guardagent.memory_store.store import event_text

_TEXTS: list[str] = []


def _exact_row(query: str) -> np.ndarray:
    return np.array([Levenshtein.distance(query, t) for t in _TEXTS], dtype=np.int32)


def _recall(exact: np.ndarray, ranked: np.ndarray, depth: int, k: int) -> float:
    """recall@k when the exact re-rank sees the first `depth` of `ranked` (ties are not errors)."""
    kth = np.sort(exact)[k - 1]
    pool = ranked[:depth]
    got = pool[np.argsort(exact[pool], kind="stable")[:k]]
    return float((exact[got] <= kth).sum()) / k


def _halves(values: list[float], half: int) -> dict[str, float]:
    return {
        "all": round(statistics.mean(values), 3),
        "fresh": round(statistics.mean(values[:half]), 3),
        "near_duplicate": round(statistics.mean(values[half:]), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=24)
    parser.add_argument("--k", type=int, default=3)
    args = parser.parse_args()
    stored = synthetic_events(args.size, seed=1)
    _TEXTS[:] = [event_text(i, o) for i, o in stored]
    half = args.queries // 2
    events = synthetic_events(half, seed=2) + near_duplicates(stored, args.queries - half, seed=3)
    queries = [event_text(i, o) for i, o in events]

    started = time.perf_counter()
    with Pool(os.cpu_count() or 1) as pool:
        exact = pool.map(_exact_row, queries)
    exact_s = time.perf_counter() - started

    emb = HashingEmbeddings()
    vectors = np.array(emb.embed_documents(_TEXTS), dtype=np.float32)
    norms = (vectors * vectors).sum(1)
    sketches = [word_sketch(t) for t in _TEXTS]
    depths = [64, 256, 1024, 4096]
    by_embedding: dict[int, list[float]] = {c: [] for c in depths}
    by_sketch: dict[int, list[float]] = {m: [] for m in (64, 256)}
    within: dict[str, list[int]] = {"10%": [], "25%": []}
    scan_ms: list[float] = []
    for q, row in zip(queries, exact, strict=True):
        kth = float(np.sort(row)[args.k - 1])
        within["10%"].append(int((row <= 1.1 * kth).sum()))
        within["25%"].append(int((row <= 1.25 * kth).sum()))
        qv = np.array(emb.embed_query(q), dtype=np.float32)
        order = np.argsort(norms - 2 * vectors @ qv, kind="stable")
        for c in depths:
            by_embedding[c].append(_recall(row, order, c, args.k))
        t0 = time.perf_counter()
        word_d = process.cdist(
            [word_sketch(q)], sketches, scorer=RapidLevenshtein.distance, dtype=np.int32
        )[0]
        scan_ms.append((time.perf_counter() - t0) * 1000)
        word_order = np.argsort(word_d, kind="stable")
        for m in by_sketch:
            by_sketch[m].append(_recall(row, word_order, m, args.k))

    result = {
        "size": args.size,
        "k": args.k,
        "queries": args.queries,
        "exact_scan_s_per_query_per_core": round(exact_s * (os.cpu_count() or 1) / len(queries), 2),
        "items_within_10pct_of_kth_median": statistics.median(within["10%"]),
        "items_within_25pct_of_kth_median": statistics.median(within["25%"]),
        "embedding_candidates_recall": {c: _halves(v, half) for c, v in by_embedding.items()},
        "word_sketch_full_scan_recall": {m: _halves(v, half) for m, v in by_sketch.items()},
        "word_sketch_full_scan_ms_p50": round(statistics.median(scan_ms), 1),
    }
    print(json.dumps(result), flush=True)
    emb_line = ", ".join(f"C={c}: {_halves(v, half)['all']}" for c, v in by_embedding.items())
    print(
        f"headroom size={args.size} k={args.k}: near ties (median items within 10% / 25% of "
        f"the k-th distance) {statistics.median(within['10%'])} / "
        f"{statistics.median(within['25%'])}; shipped embedding, exact top-C then re-rank: "
        f"{emb_line}; word-sketch full scan then re-rank of 256: recall "
        f"{_halves(by_sketch[256], half)['all']} at {statistics.median(scan_ms):.0f} ms p50"
    )


if __name__ == "__main__":
    main()
