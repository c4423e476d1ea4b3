"""Cost of task-scoped policies: one profile per task versus one profile and attached tasks.

Usage: .venv/bin/python benchmarks/bench_task_policy.py [--tasks 20] [--calls 50]

A web deployment whose tasks differ by their sites and last step, and some by an extra rule
("this task deletes nothing"). Three ways to guard task N's first call:

- per-task profile: a profile directory whose policy has task N's values written in
  (today's way), loaded by a new `GuardAgent` and its first `check_trace` (cold: each
  directory is a new policy file to read, parse and compile);
- attach, cold: one `GuardAgent` for every task; task N attached for the first time
  (`attach_task`: merge, z3 check when it adds rules, parameters resolved and compiled);
- attach, cached: the same task attached again (a new but equal dict, as a host rebuilding
  it per call would pass): a content fingerprint and a dictionary look-up.

Also the decision latency of one allowed call: under a per-task profile (no task), and
under the shared profile with the task attached (cached): the overhead a task adds per
call. Prints a table and one JSON object (milliseconds, medians).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from guardagent.agent import GuardAgent  # noqa: E402

LABELS = """\
labels:
  tools:
    goto: {results: untrusted, effect: navigate, args: [url]}
    fill: {results: untrusted, effect: write, args: [bid, value]}
    delete_item: {results: untrusted, effect: irreversible, args: [bid]}
    answer: {results: untrusted, effect: write, args: [text]}
"""
BODY = """\
predicates:
  - {name: navigates, kind: action, assign: {trace: 'effect_is("navigate")'}}
  - {name: fills, kind: action, assign: {trace: 'tool_is("fill")'}}
  - {name: deletes, kind: action, assign: {trace: 'tool_is("delete_item")'}}
  - {name: answers, kind: action, assign: {trace: 'tool_is("answer")'}}
  - {name: in_task_sites, kind: condition, assign: {trace: 'navigation_in_scope(SITES)'}}
  - {name: required_done, kind: condition, assign: {trace: 'called_before(REQUIRED)'}}
rules:
  - {id: task-sites, logic: navigates IMPLIES in_task_sites}
  - {id: finish-last, logic: answers IMPLIES required_done}
  - {id: edits, logic: (fills OR deletes) IMPLIES TRUE}
"""
HEAD = 'format: guardagent-policy/1\nname: web-tasks\nversion: "1"\n'
PROFILE = (
    "name: web-tasks\nguard_request: Guard a web agent.\nagent_specification: A web "
    "agent.\ntoolbox: []\ndemonstrations: []\npolicy_model: policy.yaml\n"
)
EXTRA = {
    "predicates": [
        {"name": "deletes_here", "kind": "condition", "assign": {"trace": 'tool_is("delete_*")'}}
    ],
    "rules": [{"id": "no-deleting-in-this-task", "logic": "NOT deletes_here"}],
}
TRACE = {
    "messages": [{"role": "user", "content": "Restock SKU-7 to 25."}],
    "proposed_call": {"name": "goto", "args": {"url": "https://shop0.example/catalog"}},
}


def task(n: int, with_rule: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": f"task-{n}",
        "params": {"sites": [f"shop{n}.example/catalog/*", f"shop{n}.example"], "required": "fill"},
    }
    return {**spec, **EXTRA} if with_rule else spec


def profile_dir(root: Path, n: int, with_rule: bool) -> str:
    """Today's way: the task's values written into a policy of its own."""
    folder = root / f"task-{n}-{with_rule}"
    folder.mkdir()
    sites = ", ".join(json.dumps(s) for s in task(n, False)["params"]["sites"])
    body = BODY.replace("SITES", sites).replace("REQUIRED", '"fill"')
    if with_rule:
        body = body.replace(
            "rules:\n",
            "  - {name: deletes_here, kind: condition, assign: "
            "{trace: 'tool_is(\"delete_*\")'}}\nrules:\n  - {id: "
            "no-deleting-in-this-task, logic: NOT deletes_here}\n",
        )
    (folder / "policy.yaml").write_text(HEAD + LABELS + body, encoding="utf-8")
    (folder / "profile.yaml").write_text(PROFILE, encoding="utf-8")
    return str(folder)


def ms(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = root / "base"
        base.mkdir()
        body = BODY.replace("SITES", '"$sites"').replace("REQUIRED", '"$required"')
        (base / "policy.yaml").write_text(HEAD + LABELS + body, encoding="utf-8")
        (base / "profile.yaml").write_text(PROFILE, encoding="utf-8")
        guard = GuardAgent(profile=str(base))
        guard.check_trace(TRACE, task=task(0, False))  # warm the engine's imports once
        for with_rule in (False, True):
            kind = "params+rule" if with_rule else "params"
            dirs = [profile_dir(root, n, with_rule) for n in range(1, args.tasks + 1)]
            per_dir = [ms(lambda d=d: GuardAgent(profile=d).check_trace(TRACE)) for d in dirs]
            cold = [
                ms(lambda n=n, r=with_rule: guard.attach_task(task(n, r)))
                for n in range(1, args.tasks + 1)
            ]
            cached = [
                ms(lambda n=n, r=with_rule: guard.attach_task(task(n, r)))
                for n in range(1, args.tasks + 1)
            ]
            results[f"per-task profile ({kind})"] = statistics.median(per_dir)
            results[f"attach cold ({kind})"] = statistics.median(cold)
            results[f"attach cached ({kind})"] = statistics.median(cached)
        untasked = GuardAgent(profile=dirs[0].replace("task-1-True", "task-1-False"))
        trace = {
            **TRACE,
            "proposed_call": {"name": "goto", "args": {"url": "https://shop1.example/catalog"}},
        }
        for name, run in (
            ("check_trace, no task (per-task profile)", lambda: untasked.check_trace(trace)),
            (
                "check_trace, cached task: params",
                lambda: guard.check_trace(trace, task=task(1, False)),
            ),
            (
                "check_trace, cached task: params+rule",
                lambda: guard.check_trace(trace, task=task(1, True)),
            ),
        ):
            run()
            results[name] = statistics.median(ms(run) for _ in range(args.calls))
    width = max(map(len, results))
    for name, value in results.items():
        print(f"{name.ljust(width)}  {value:8.2f} ms")
    print(json.dumps({k: round(v, 3) for k, v in results.items()}))


if __name__ == "__main__":
    main()
