"""Agreement of the SQL reader (`sql_reads`) with EICU-AC's gold `access_gt`.

Measurement only: for every EICU-AC record, the gold SQL `query` is read with
`guardagent.readers.ehr_sql.sql_reads` and its (table, column) pairs are compared with the
record's `access_gt` (tables whose gold column list is empty are ignored on both sides, since
`access_gt` lists only tables with named columns). The gold labels were made by substring
matching over EHRAgent's own code (not over this gold query), so a disagreement is not
necessarily the reader's error; each one is printed so a person can judge it. Also counted:
records where the reader's pairs include all the gold pairs, and records with the same
tables. Also prints the per-query time of `sql_reads`.

Run: .venv/bin/python benchmarks/ehr_sql_agreement.py
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter

from guardagent.eval.benchmarks import _literal, data_root
from guardagent.readers.ehr_sql import sql_reads
from guardagent.readers.evidence import UnreadableEvidence

Pairs = set[tuple[str, str]]


def _pairs(cols: dict[str, list[str]] | dict[str, set[str]] | None) -> Pairs:
    return {(t.lower(), c.lower()) for t, cs in (cols or {}).items() for c in cs}


def main() -> None:
    records = json.loads((data_root() / "eicu_ac" / "eicu_ac.json").read_text("utf-8"))
    agree = covers = same_tables = 0
    unreadable: Counter[str] = Counter()
    shown: set[str] = set()
    timings: list[float] = []
    disagreements: list[tuple[str, str, Pairs, Pairs]] = []
    for rec in records:
        query = rec["query"]
        gold = _pairs(_literal(rec.get("access_gt")))
        start = time.perf_counter()
        try:
            mine = _pairs(sql_reads(query))
        except UnreadableEvidence as error:
            timings.append(time.perf_counter() - start)
            unreadable[error.reason] += 1
            if query not in shown:
                shown.add(query)
                print(f"UNREADABLE {rec['id']}: {error.reason}: {error.detail}\n  {query}")
            continue
        timings.append(time.perf_counter() - start)
        covers += gold <= mine
        same_tables += {t for t, _ in gold} == {t for t, _ in mine}
        if mine == gold:
            agree += 1
        elif query not in shown:
            shown.add(query)
            disagreements.append((rec["id"], query, mine - gold, gold - mine))
    for rid, query, extra, missing in disagreements:
        print(
            f"DIFF {rid}:\n  {query}\n  only reader: {sorted(extra)}\n"
            f"  only gold:   {sorted(missing)}"
        )
    total = len(records)
    print(
        f"\nrecords: {total}  agree: {agree} ({100 * agree / total:.1f}%)  "
        f"unreadable: {sum(unreadable.values())} {dict(unreadable)}  "
        f"distinct disagreeing queries: {len(disagreements)}"
    )
    print(f"reader covers gold: {covers}  same tables: {same_tables}")
    ms = sorted(t * 1000 for t in timings)
    print(
        f"sql_reads per query: p50 {statistics.median(ms):.3f} ms, "
        f"p95 {ms[int(0.95 * (len(ms) - 1))]:.3f} ms, max {ms[-1]:.3f} ms"
    )


if __name__ == "__main__":
    main()
