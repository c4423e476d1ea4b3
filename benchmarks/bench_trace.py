"""Trace engine cost per guarded call: provenance and predicates against trace length.

Usage: .venv/bin/python benchmarks/bench_trace.py [--runs 40] [--lengths 10 100 1000] [--no-big]
       [--cpu]
       .venv/bin/python benchmarks/bench_trace.py --adversarial [--runs 3]

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

`--adversarial` (issue 19): a four-message thread whose tool result is text made of
near-matches of one value type (what its locator starts on and its parser refuses, or
accepts again and again), at 10 kB, 100 kB and 1 MB, decided in full without a time
budget, with the index and again as a call with no thread state does (`(lookup)`,
:mod:`guardagent.trace.sources.lookup`; the call's body is the text's first 2,000 characters, so the
result is read); prints the CPU cost per MB at each size (flat when reading is linear) and whether
the default budget (`GUARDAGENT_TRACE_BUDGET_MS`, 2000 ms) would deny the 1 MB event.
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
from guardagent.trace.found.reading import clear_caches  # noqa: E402
from tests.traces.synthetic import proposed, thread  # noqa: E402

TRACES = Path(__file__).resolve().parents[1] / "tests" / "traces"
LABELS = Labels.load(TRACES / "assistant_labels.yaml")
POLICY = load_policy(TRACES / "assistant_policy.yaml")
BINDINGS = {p.name: p.assigned_by.text for p in POLICY.predicates if p.assigned_by is not None}
STEP = 4


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


CLOCK: list[Callable[[], float]] = [time.perf_counter]
"""The clock of `timed`: wall time, or CPU time of the process with --cpu (a shared machine)."""


def timed(fn: Callable[[], Any], runs: int) -> tuple[list[float], Any]:
    clock = CLOCK[0]
    out = []
    last = None
    for _ in range(runs):
        start = clock()
        last = fn()
        out.append((clock() - start) * 1000)
    return out, last


def scenario(
    label: str, messages: list[dict[str, Any]], runs: int, full_runs: int
) -> dict[str, Any]:
    call = proposed(messages)
    compile_bindings(BINDINGS)

    def full() -> dict[str, bool | None]:
        clear_caches()  # read every message: the process keeps message readings by content
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
        "full_p50": pct(full_ms, 0.5),
        "full_p99": pct(full_ms, 0.99),
        "inc_p50": pct(inc_ms, 0.5),
        "inc_p99": pct(inc_ms, 0.99),
        "inc_io_p50": pct(io_ms, 0.5),
        "inc_io_p99": pct(io_ms, 0.99),
        "verify_p50": pct(verify_ms, 0.5),
        "inc_messages_read": work["read"],
        "bytes_hashed": work["hashed"],
        "state_bytes": len(json.dumps(final, separators=(",", ":"))),
        "allowed": verdict.allowed,
        "runs": runs,
        "full_runs": full_runs,
    }


NEAR: dict[str, Callable[[int], str]] = {
    "prose (baseline)": lambda n: "plain words and more words. " * (n // 28),
    "e-mail trap a...a@": lambda n: "a" * (n - 1) + "@",
    "e-mail near x.y@z-w": lambda n: "ab.cd@ef-gh " * (n // 12),
    "url http://a...": lambda n: "http://a" * (n // 8),
    "url bare www.a-b.c1": lambda n: "www.a-b.c1 " * (n // 11),
    "iban bad checksum": lambda n: "DE89 3704 0044 0532 0130 01 " * (n // 28),
    "phone +41 44 668 18 0x": lambda n: "+41 44 668 18 0x " * (n // 17),
    "amount 1,23,4": lambda n: "1,23,4 " * (n // 7),
    "date 2024-13-45": lambda n: "2024-13-45 " * (n // 11),
    "date 14 may 20245": lambda n: "14 may 20245 " * (n // 13),
    "escapes \\u00": lambda n: "\\u00" * (n // 4),
}
SIZES = (10_000, 100_000, 1_000_000)


def adversarial(runs: int) -> None:
    """Cost per MB of deciding a thread whose tool result is near-matches of one type."""
    from guardagent.trace.text.budget import DEFAULT_BUDGET_MS

    rows = []
    for (name, make), lazy in [(item, lazy) for lazy in (False, True) for item in NEAR.items()]:
        name = f"{name}{' (lookup)' if lazy else ''}"
        per_mb = []
        for size in SIZES:
            text = make(size)
            read = {
                "id": "c1",
                "type": "function",
                "function": {"name": "read_inbox", "arguments": "{}"},
            }
            messages = [
                {"role": "user", "content": "Tidy up my inbox and pay the rent to my landlord."},
                {"role": "assistant", "content": None, "tool_calls": [read]},
                {"role": "tool", "tool_call_id": "c1", "content": text},
            ]
            call = {"name": "send_email", "args": {"to": "bob@example.com", "body": text[:2000]}}
            best = float("inf")
            for _ in range(runs if size < 1_000_000 else 1):
                clear_caches()  # every run reads the text cold (the process keeps readings)
                started = time.process_time()
                analyze(parse_trace(messages, call), LABELS, lazy=lazy).assignments(BINDINGS)
                best = min(best, time.process_time() - started)
            per_mb.append(best / (len(text) / 1e6))
        flat = max(per_mb) / min(per_mb)
        denied = per_mb[-1] * 1000 > DEFAULT_BUDGET_MS
        rows.append(
            {
                "input": name,
                "s_per_mb": per_mb,
                "max_over_min": flat,
                "1MB_over_default_budget": denied,
            }
        )
        print(
            f"{name:>33} | "
            + " ".join(f"{c:>7.3f}" for c in per_mb)
            + f" | {flat:>5.2f}x | {'denied' if denied else 'within'}"
        )
    print(json.dumps({"adversarial": rows}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--lengths", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--no-big", action="store_true", help="skip the 1 MB tool output")
    parser.add_argument(
        "--adversarial",
        action="store_true",
        help="near-matches of each value type: CPU s/MB at 10 kB, 100 kB, 1 MB",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time with the process's CPU clock (steadier on a busy machine)",
    )
    args = parser.parse_args()
    if args.cpu:
        CLOCK[0] = time.process_time
    if args.adversarial:
        print(
            f"{'input':>33} | {'s/MB at 10 kB':>7} {'100 kB':>7} {'1 MB':>7} | max/min | 1 MB in "
            "the default budget"
        )
        adversarial(args.runs if args.runs != 40 else 3)
        return
    rows = []
    for n in args.lengths:
        full_runs = args.runs if n <= 100 else max(5, args.runs // 4)
        rows.append(scenario(str(n), thread(n, seed=n), args.runs, full_runs))
    if not args.no_big:
        big = thread(100, seed=7, big_result=1_000_000)
        rows.append(scenario("1MB", big, max(5, args.runs // 2), max(3, args.runs // 8)))
    head = (
        f"{'trace':>6} {'msgs':>5} {'chars':>9} | {'full p50':>9} {'p99':>8} | {'incr p50':>9} "
        f"{'p99':>7} | {'+state io':>9} {'p99':>7} | {'verify':>7} | {'read':>4} "
        f"{'hashed':>9} | {'state B':>8}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['trace']:>6} {r['messages']:>5} {r['chars']:>9} | {r['full_p50']:>7.2f}ms "
            f"{r['full_p99']:>6.2f}ms | {r['inc_p50']:>7.2f}ms {r['inc_p99']:>5.2f}ms | "
            f"{r['inc_io_p50']:>7.2f}ms {r['inc_io_p99']:>5.2f}ms | {r['verify_p50']:>5.2f}ms | "
            f"{r['inc_messages_read']:>4} {r['bytes_hashed']:>9} | "
            f"{r['state_bytes']:>8}"
        )
    print(json.dumps({"rows": rows}))
    hundred = next((r for r in rows if r["trace"] == "100"), None)
    if hundred is not None:
        flat = [r["inc_messages_read"] for r in rows]
        print(
            f"targets: p50 at 100 messages {hundred['inc_p50']:.2f} ms incremental / "
            f"{hundred['full_p50']:.2f} ms full (<= 5 ms); incremental work "
            f"{'flat' if len(set(flat)) == 1 else 'NOT flat'} ({flat} messages read); "
            f"state at the largest length {max(r['state_bytes'] for r in rows)} B (<= 1 MB)"
        )


if __name__ == "__main__":
    main()
