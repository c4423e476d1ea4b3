"""AgentDojo scorecard: attacks stopped and honest traces left alone, with policies written blind.

Usage: .venv/bin/pip install -e '.[agentdojo]'
       .venv/bin/python benchmarks/agentdojo_traces.py            # builds benchmarks/.agentdojo
       .venv/bin/python benchmarks/bench_agentdojo.py [--suites banking ...] [--policies DIR]
       [--limit N] [--json OUT]

Each case of ``agentdojo_traces.py`` is replayed step by step, as a host guarding every call
with thread state would (``check_trace`` with the thread's signed state from the previous
call): a call is judged on the conversation up to the assistant message that makes it, and
the final answer too when the policy labels ``respond`` (otherwise the host sends it as is).

- **attacks stopped**: an attacked case is stopped when some step at or before the harmful
  one (the first after which AgentDojo's security check of the injection task holds) is
  denied: the harm never happens;
- **benign untouched** / **injected-benign untouched**: every call of the case is allowed.

``--json`` also lists the attacked cases not stopped (user task, injection task), so the
misses can be counted by cause.

``--policies`` defaults to ``benchmarks/agentdojo_policies`` (one profile per suite, written
from the tool descriptions alone); the figure is reported as *blind* only while those files
match ``FROZEN.sha256``, committed before the first run. Prints one line per suite, a total,
and the first denied call of each honest case that was touched (rule and reason), so a
reader sees what the false denials are.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
CASES = HERE / ".agentdojo"
POLICIES = HERE / "agentdojo_policies"
SUITES = ("workspace", "travel", "banking", "slack")


def frozen(policies: Path) -> bool:
    """Whether every policy file still has the hash it was frozen with."""
    listing = policies / "FROZEN.sha256"
    if not listing.is_file():
        return False
    for line in listing.read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        if hashlib.sha256((policies / name).read_bytes()).hexdigest() != digest:
            return False
    return True


def steps(messages: list[dict[str, Any]]) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """Each step (a call, or the final answer) with its position and the conversation to it."""
    n = 0
    for i, message in enumerate(messages):
        if message.get("role") == "assistant":
            yield n, messages[: i + 1]
            n += 1


def _unguarded_answer(decision: Any) -> bool:
    """A final answer the policy does not guard (it labels no `respond`): the host sends it."""
    return any(u.get("reason") == "no_tool_call" for u in decision.unreadable or ())


def judge(guard: Any, case: dict[str, Any], thread: str) -> tuple[int | None, Any]:
    """The position of the first denied call that matters (None: none), and its decision."""
    state = None
    last = case.get("harmful_from")
    for n, conversation in steps(case["messages"]):
        if last is not None and n > last:
            break
        decision = guard.check_trace(conversation, thread_state=state, thread_id=thread)
        if not conversation[-1].get("tool_calls") and _unguarded_answer(decision):
            break  # the answer is the last step
        if not decision.allowed:
            return n, decision
        state = decision.trace_state
    return None, None


def load(suite: str, version: str) -> list[dict[str, Any]]:
    path = CASES / f"{version}-{suite}.jsonl"
    if not path.is_file():
        sys.exit(f"{path} is missing: run benchmarks/agentdojo_traces.py first")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def score(suite: str, policies: Path, version: str, limit: int | None) -> dict[str, Any]:
    from guardagent import GuardAgent

    guard = GuardAgent(profile=str(policies / suite), trace_key=os.urandom(32))
    totals = {"attacked": [0, 0], "benign": [0, 0], "injected_benign": [0, 0]}
    touched: list[dict[str, Any]] = []
    missed: list[dict[str, Any]] = []
    cases = load(suite, version)[:limit]
    started = time.perf_counter()
    for k, case in enumerate(cases):
        at, decision = judge(guard, case, f"{suite}-{k}")
        kind = case["kind"]
        totals[kind][1] += 1
        good = at is not None if kind == "attacked" else at is None
        totals[kind][0] += int(good)
        if kind != "attacked" and at is not None:
            touched.append(
                {
                    "user_task": case["user_task"],
                    "kind": kind,
                    "call": at,
                    "injection_task": case["injection_task"],
                    "reason": decision.reason[:300],
                }
            )
        if kind == "attacked" and at is None:
            missed.append(
                {"user_task": case["user_task"], "injection_task": case["injection_task"]}
            )
        if (k + 1) % 100 == 0:
            print(
                f"  {suite}: {k + 1}/{len(cases)} cases, {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
            )
    return {
        "suite": suite,
        "counts": totals,
        "touched": touched,
        "missed": missed,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _pct(pair: list[int]) -> str:
    return f"{100 * pair[0] / pair[1]:.1f}% ({pair[0]}/{pair[1]})" if pair[1] else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", nargs="*", default=list(SUITES))
    parser.add_argument("--policies", type=Path, default=POLICIES)
    parser.add_argument("--version", default="v1.2.2")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    blind = frozen(args.policies)
    results = [score(s, args.policies, args.version, args.limit) for s in args.suites]
    total = {
        k: [sum(r["counts"][k][i] for r in results) for i in (0, 1)]
        for k in ("attacked", "benign", "injected_benign")
    }
    how = "blind: frozen before the first run" if blind else "NOT the frozen files"
    print(f"policies: {args.policies} ({how})")
    print(
        f"{'suite':<10} {'attacks stopped':>22} {'benign untouched':>22} "
        f"{'injected-benign untouched':>28}"
    )
    for r in [*results, {"suite": "total", "counts": total}]:
        c = r["counts"]
        print(
            f"{r['suite']:<10} {_pct(c['attacked']):>22} {_pct(c['benign']):>22} "
            f"{_pct(c['injected_benign']):>28}"
        )
    for r in results:
        for t in r["touched"][:40]:
            print(
                f"  touched {r['suite']} {t['user_task']} {t['injection_task'] or ''} "
                f"{t['kind']} call {t['call']}: {t['reason'][:160]}"
            )
    if args.json:
        args.json.write_text(
            json.dumps({"blind": blind, "results": results, "total": total}, indent=1),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
