"""Drawing a decision (`guardagent explain`): time per picture, and that it grows linearly.

A picture is made once per denial a human looks at, so speed matters little; what matters
is that a decision file an attacker shaped (thousands of rules, facts, chains) cannot make
drawing superlinear. Times :func:`guardagent.explain.draw` + both writers on a real decision
(the pay-invoice example's injected-IBAN denial) and on synthetic decisions of growing size
(n rules, n facts of 3 chained values each), median of several runs.

Run: .venv/bin/python benchmarks/bench_explain.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from guardagent.explain import draw, read_decision, to_mermaid, to_svg

EXAMPLE = Path(__file__).parents[1] / "guardagent" / "policies" / "examples" / "pay-invoice"


def synthetic(n: int) -> dict[str, Any]:
    """A decision with n rules over n predicates, each fact with 3 values of 2-step chains."""
    link = [
        {"index": 1, "source": "user", "kind": "user", "note": "asked: 'x'"},
        {"index": 3, "source": "tool:read_file", "kind": "untrusted_tool", "note": "r"},
    ]
    facts = {
        f"p{i}": {
            "name": f"arg_from_trusted('a{i}')",
            "value": i % 2 == 0,
            "detail": "d" * 80,
            "sources": link[:1],
            "values": [{"path": f"a{i}", "value": "v" * 30, "origin": "untrusted", "chain": link}]
            * 3,
        }
        for i in range(n)
    }
    rules = [
        {
            "id": f"r{i}",
            "status": "violated" if i == 0 else "holds",
            "logic": f"p{i} IMPLIES p{(i + 1) % n}",
            "deciding": {f"p{i}": True},
        }
        for i in range(n)
    ]
    return {"allowed": False, "rules": rules, "trace_facts": facts}


def timed(data: bytes, runs: int) -> float:
    """Median ms to read, draw and write both formats."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        diagram = draw(read_decision(data))
        to_svg(diagram)
        to_mermaid(diagram)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from guardagent.agent import GuardAgent

    guard = GuardAgent(profile=str(EXAMPLE))
    raw = (EXAMPLE / "traces" / "i01_injected_iban_in_inbox.json").read_bytes()
    real = json.dumps(guard.check_trace(raw).model_dump(mode="json")).encode()
    timed(real, 1)  # warm: the logic parser
    print(f"pay-invoice i01 denial ({len(real)} bytes): {timed(real, args.runs):.1f} ms")
    previous = None
    for n in (50, 500, 5000):
        data = json.dumps(synthetic(n)).encode()
        ms = timed(data, args.runs)
        ratio = f" ({ms / previous:.1f}x the previous, 10x the size)" if previous else ""
        print(f"synthetic n={n} ({len(data)} bytes): {ms:.1f} ms{ratio}")
        previous = ms


if __name__ == "__main__":
    main()
