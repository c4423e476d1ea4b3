"""Policy models at ShieldAgent's Shopping scale: `policy check` time and per-event verification.

ShieldAgent reports 240 rules for its Shopping environment; we build a synthetic policy of
that size with 461 predicates and an action tree of depth 3 (5 categories, 20 groups, 100
leaf actions; 336 conditions), in ShieldAgent's rule templates (`P1 IMPLIES NOT P2`,
`P1 AND NOT P2 IMPLIES NOT P3`, `P1 IMPLIES P2 OR P3`, ...), written to a YAML file and then:

- `policy check` on the file (load + every z3 check), target <= 10 s;
- verification of one event's circuits (a leaf action with its two ancestors and the rules
  attached to no action; conditions assigned compliant or with one flipped, ~5 % left open,
  ~20 % with probability 0.95),
  target p50 <= 5 ms. Reported three ways: verdicts only (z3 per rule), verdicts + safety
  probability (the decision), and the full call with remediation (z3's optimiser) on denials.

`--parity` also runs both shared benchmarks through the program path and the policy path
from the same reader output (agreement and the policy path's time per event).

Run: .venv/bin/python benchmarks/bench_policy.py [--events 500] [--seed 7] [--parity]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from guardagent.policy.check import check_policy
from guardagent.policy.event import event_values
from guardagent.policy.model import load_policy
from guardagent.policy.verify import verify_event

TEMPLATES_ACTION = [  # (template, conditions it uses)
    ("{c1} IMPLIES NOT {a}", 1),
    ("NOT {c1} IMPLIES NOT {a}", 1),
    ("{c1} AND NOT {c2} IMPLIES NOT {a}", 2),
    ("{a} IMPLIES {c1} OR NOT {c2}", 2),
    ("NOT ({c1} AND NOT {c2}) IMPLIES NOT {a}", 2),
    ("{a} AND {c1} IMPLIES {c2}", 2),
    ("{c1} OR NOT {c2} IMPLIES NOT {a}", 2),
    ("{a} IMPLIES {c1} AND NOT {c2} OR {c3}", 3),
]


def synthetic_policy(seed: int) -> str:
    """YAML of a 461-predicate, 240-rule, depth-3 policy (deterministic for a seed)."""
    rng = random.Random(seed)
    roots = [f"category_{i}" for i in range(5)]
    groups = [(f"group_{i}_{j}", roots[i]) for i in range(5) for j in range(4)]
    leaves = [(f"action_{g}_{k}", g) for g, _ in groups for k in range(5)]
    conditions = [f"cond_{i}" for i in range(461 - len(roots) - len(groups) - len(leaves))]
    lines = [
        "format: guardagent-policy/1",
        "name: synthetic-shopping",
        'version: "1"',
        "threshold: 0.5",
        "predicates:",
    ]
    for root in roots:
        lines += [f"  - name: {root}", "    kind: action"]
    for name, parent in [*groups, *leaves]:
        lines += [f"  - name: {name}", "    kind: action", f"    parent: {parent}"]
    for i, cond in enumerate(conditions):
        lines += [f"  - name: {cond}", "    kind: condition"]
        if i % 5 == 0:
            lines.append("    probability: 0.9")
    pool = list(conditions)
    rng.shuffle(pool)

    def take() -> str:  # every condition is used once before any repeats
        return pool.pop() if pool else rng.choice(conditions)

    owners = roots + [g for g, _ in groups] + [leaf for leaf, _ in leaves for _ in range(2)]
    lines.append("rules:")
    for n, action in enumerate(owners):
        template, uses = TEMPLATES_ACTION[n % len(TEMPLATES_ACTION)]
        conds = [take() for _ in range(uses)] + ["unused"] * (3 - uses)
        logic = template.format(a=action, c1=conds[0], c2=conds[1], c3=conds[2])
        lines += [
            f"  - id: rule_{n}",
            f'    logic: "{logic}"',
            f"    policy: Synthetic rule {n} over {action}.",
            f"    remediation: Fix rule {n}.",
        ]
    for n in range(240 - len(owners)):  # constraints between conditions (global rules)
        a, b = take(), take()
        lines += [
            f"  - id: global_{n}",
            f'    logic: "{a} IMPLIES {b}"',
            f"    policy: Synthetic constraint {n}.",
        ]
    return "\n".join(lines) + "\n"


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return round(s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))], 3)


def _events(model: Any, n: int, seed: int) -> list[dict[str, Any]]:
    """Events on random leaf actions: a random assignment z3 makes compliant, then (40 %)
    one condition flipped; 5 % of the conditions left open, 20 % with probability 0.95."""
    import z3

    from guardagent.policy.solver import compiled

    comp = compiled(model)
    rng = random.Random(seed)
    leaves = [a for a in model.actions if not model.tree.children.get(a)]
    events = []
    for _ in range(n):
        leaf = rng.choice(leaves)
        circuit = event_values(model, {leaf: True}).circuit
        names = sorted(
            {
                p
                for r in circuit
                for p in model.by_id[r].predicates
                if model.by_name[p].kind == "condition"
            }
        )
        solver = z3.Solver(ctx=comp.ctx)
        solver.add(*[comp.terms[r] for r in circuit], *comp.tree_terms, comp.bools[leaf])
        wanted = {name: rng.random() < 0.5 for name in names}
        while True:
            lits = [comp.lits.literal(k, v) for k, v in wanted.items()]
            if solver.check(*lits) == z3.sat:
                found = solver.model()
                values = {k: z3.is_true(found.eval(comp.bools[k], True)) for k in names}
                break
            for k in comp.lits.decode(solver.unsat_core()):
                wanted.pop(k, None)
        if rng.random() < 0.4:
            flip = rng.choice(names)
            values[flip] = not values[flip]
        assigned: dict[str, Any] = {leaf: True}
        for name in names:
            roll = rng.random()
            if roll < 0.05:
                continue  # left open
            assigned[name] = {"value": values[name], "probability": 0.95 if roll < 0.25 else 1.0}
        events.append(assigned)
    return events


def _timed(call: Any, events: list[dict[str, Any]]) -> tuple[list[float], list[Any]]:
    times, results = [], []
    for event in events:
        start = time.perf_counter()
        results.append(call(event))
        times.append((time.perf_counter() - start) * 1000)
    return times, results


def scale(events_n: int, seed: int) -> dict[str, Any]:
    """Check and verification numbers on the synthetic policy."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.yaml"
        path.write_text(synthetic_policy(seed), encoding="utf-8")
        start = time.perf_counter()
        report = check_policy(path)
        check_seconds = time.perf_counter() - start
        model = load_policy(path)
    events = _events(model, events_n, seed)
    verify_event(model, events[0])  # compile the policy and the per-rule solvers once
    for event in events:  # warm every rule's solvers, as a long-running guard would be
        verify_event(model, event, remediation=False, probability=False)
    verdicts, _ = _timed(
        lambda e: verify_event(model, e, remediation=False, probability=False), events
    )
    decisions, results = _timed(lambda e: verify_event(model, e, remediation=False), events)
    full, _ = _timed(lambda e: verify_event(model, e), events)
    denied = [i for i, r in enumerate(results) if not r.allowed]
    circuit_sizes = [len(r.applicable()) for r in results]
    return {
        "policy": {
            **report.stats,
            "errors": len(report.errors),
            "warnings": len(report.warnings),
            "finding_codes": sorted(set(report.codes())),
        },
        "policy_check_seconds": round(check_seconds, 3),
        "events": len(events),
        "rules_per_event": {
            "p50": _pct([float(s) for s in circuit_sizes], 50),
            "max": max(circuit_sizes),
        },
        "denied": len(denied),
        "verdicts_ms": {"p50": _pct(verdicts, 50), "p95": _pct(verdicts, 95)},
        "verdicts_and_probability_ms": {"p50": _pct(decisions, 50), "p95": _pct(decisions, 95)},
        "with_remediation_ms": {
            "p50": _pct(full, 50),
            "p95": _pct(full, 95),
            "p50_denied": _pct([full[i] for i in denied], 50) if denied else None,
        },
    }


def parity_numbers() -> dict[str, Any]:
    """Both shared benchmarks through the program and the policy path (same reader output)."""
    from guardagent.eval.benchmarks import load_benchmark
    from guardagent.policy.parity import parity

    out: dict[str, Any] = {}
    for profile in ("eicu-ac", "mind2web-sc"):
        cases = load_benchmark(profile)
        start = time.perf_counter()
        results = parity(profile, [(c.id, c.agent_input, c.agent_output) for c in cases])
        seconds = time.perf_counter() - start
        gold = {c.id: c.label for c in cases}
        out[profile] = {
            "events": len(results),
            "same_label": sum(r.program.label == r.policy.label for r in results),
            "same_label_and_violations": sum(r.same for r in results),
            "unreadable": sum(r.unreadable is not None for r in results),
            "policy_label_matches_gold": sum(r.policy.label == gold[r.id] for r in results),
            "seconds_both_paths": round(seconds, 2),
            "denials_with_remediation": sum(
                1
                for r in results
                if r.verdict is not None
                and not r.verdict.allowed
                and r.verdict.remediation is not None
                and r.verdict.remediation.remedies
            ),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--parity", action="store_true")
    args = parser.parse_args()
    result = {"scale": scale(args.events, args.seed)}
    if args.parity:
        result["parity"] = parity_numbers()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
