"""Trace engine cost per guarded call: provenance and predicates against trace length.

Usage: .venv/bin/python benchmarks/bench_trace.py [--runs 40] [--lengths 10 100 1000] [--no-big]

For each length, a synthetic assistant thread (tests/traces/synthetic.py: mail, contacts,
calendar, transactions, pages; e-mail addresses, IBANs, phone numbers, amounts, dates) and
the example labels and policy of tests/traces/. The proposed call is a send_email whose body
carries an IBAN. Two ways to decide the last call of the thread:

- full: parse the trace, build the index from nothing, evaluate every predicate of the
  example policy (provenance, secret flow, consent...);
- incremental: the thread's state from the previous call (4 messages earlier) is restored
  from JSON, updated with the new messages, the predicates evaluated, the state dumped
  again (as a checkpointer would): `decide` excludes the JSON round trip, `with state I/O`
  includes it.

Also: z3 verification of the policy on top (`verify`), messages read by the incremental
update (must stay 4 whatever the length), bytes hashed (the rewrite check reads every
message), and the state's size as compact JSON. "1MB" is a 100-message thread whose first
tool result is a 1 MB page of ordinary words. Prints a table and one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from guardagent.policy import load_policy, verify_event  # noqa: E402
from guardagent.trace import Labels, TraceIndex, analyze, compile_bindings, parse_trace  # noqa: E402
from tests.traces.synthetic import proposed, thread  # noqa: E402

TRACES = Path(__file__).resolve().parents[1] / "tests" / "traces"
LABELS = Labels.load(TRACES / "assistant_labels.yaml")
POLICY = load_policy(TRACES / "assistant_policy.yaml")
BINDINGS = {p.name: p.assigned_by.text for p in POLICY.predicates if p.assigned_by is not None}
STEP = 4


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def timed(fn: Callable[[], Any], runs: int) -> tuple[list[float], Any]:
    out = []
    last = None
    for _ in range(runs):
        start = time.perf_counter()
        last = fn()
        out.append((time.perf_counter() - start) * 1000)
    return out, last


def scenario(
    label: str, messages: list[dict[str, Any]], runs: int, full_runs: int
) -> dict[str, Any]:
    call = proposed(messages)
    compile_bindings(BINDINGS)

    def full() -> dict[str, bool | None]:
        facts = analyze(parse_trace(messages, call), LABELS)
        return facts.assignments(BINDINGS)

    before = messages[:-STEP]
    previous = analyze(parse_trace(before, proposed(before)), LABELS).index.to_json()
    saved = json.dumps(previous, separators=(",", ":"))
    work: dict[str, int] = {}

    def incremental(io: bool) -> dict[str, bool | None]:
        data = json.loads(saved) if io else previous
        index = TraceIndex.from_json(data, region=LABELS.phone_region)
        facts = analyze(parse_trace(messages, call), LABELS, index=index)
        values = facts.assignments(BINDINGS)
        if io:
            json.dumps(index.to_json(), separators=(",", ":"))
        work.update(read=index.work.messages_read, hashed=index.work.bytes_hashed)
        return values

    full(), incremental(False)  # warm caches and imports
    full_ms, values = timed(full, full_runs)
    inc_ms, inc_values = timed(lambda: incremental(False), runs)
    io_ms, _ = timed(lambda: incremental(True), runs)
    assert values == inc_values, "incremental and full decide alike"
    verify_ms, verdict = timed(lambda: verify_event(POLICY, values), runs)
    final = analyze(parse_trace(messages, call), LABELS).index.to_json()
    return {
        "trace": label,
        "messages": len(messages),
        "chars": sum(len(m.get("content") or "") for m in messages),
        "full_p50": pct(full_ms, 0.5), "full_p99": pct(full_ms, 0.99),
        "inc_p50": pct(inc_ms, 0.5), "inc_p99": pct(inc_ms, 0.99),
        "inc_io_p50": pct(io_ms, 0.5), "inc_io_p99": pct(io_ms, 0.99),
        "verify_p50": pct(verify_ms, 0.5),
        "inc_messages_read": work["read"], "bytes_hashed": work["hashed"],
        "state_bytes": len(json.dumps(final, separators=(",", ":"))),
        "allowed": verdict.allowed,
        "runs": runs, "full_runs": full_runs,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--lengths", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--no-big", action="store_true", help="skip the 1 MB tool output")
    args = parser.parse_args()
    rows = []
    for n in args.lengths:
        full_runs = args.runs if n <= 100 else max(5, args.runs // 4)
        rows.append(scenario(str(n), thread(n, seed=n), args.runs, full_runs))
    if not args.no_big:
        big = thread(100, seed=7, big_result=1_000_000)
        rows.append(scenario("1MB", big, max(5, args.runs // 2), max(3, args.runs // 8)))
    head = (f"{'trace':>6} {'msgs':>5} {'chars':>9} | {'full p50':>9} {'p99':>8} | {'incr p50':>9} "
            f"{'p99':>7} | {'+state io':>9} {'p99':>7} | {'verify':>7} | {'read':>4} "
            f"{'hashed':>9} | {'state B':>8}")  # fmt: skip
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['trace']:>6} {r['messages']:>5} {r['chars']:>9} | {r['full_p50']:>7.2f}ms "
              f"{r['full_p99']:>6.2f}ms | {r['inc_p50']:>7.2f}ms {r['inc_p99']:>5.2f}ms | "
              f"{r['inc_io_p50']:>7.2f}ms {r['inc_io_p99']:>5.2f}ms | {r['verify_p50']:>5.2f}ms | "
              f"{r['inc_messages_read']:>4} {r['bytes_hashed']:>9} | "
              f"{r['state_bytes']:>8}")  # fmt: skip
    print(json.dumps({"rows": rows}))
    hundred = next((r for r in rows if r["trace"] == "100"), None)
    if hundred is not None:
        flat = [r["inc_messages_read"] for r in rows]
        print(f"targets: p50 at 100 messages {hundred['inc_p50']:.2f} ms incremental / "
              f"{hundred['full_p50']:.2f} ms full (<= 5 ms); incremental work "
              f"{'flat' if len(set(flat)) == 1 else 'NOT flat'} ({flat} messages read); "
              f"state at the largest length {max(r['state_bytes'] for r in rows)} B (<= 1 MB)")


if __name__ == "__main__":
    main()
