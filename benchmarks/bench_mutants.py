"""Mutation self-test of verification (issue 34): no wrong program may be trusted.

Usage: .venv/bin/python benchmarks/bench_mutants.py [--profile eicu-ac|mind2web-sc]
       [--oracle table|policy|derived] [--per-role 4] [--seed 0] [--events FILE.json[l]]
       [--benchmark] [--json]

Mutants of a profile's shipped program (:mod:`mutant_operators`: its access list with one
cell added or removed per role, its rule table with one condition of one rule changed or a
rule dropped, flipped comparisons, negated conditions, dropped branches, swapped verdicts, a
renamed role, a reader given the wrong part of the event, a reader's result or one part of
the web action ignored, a predicate assigned its negation, always-allow / always-deny, and a
reworded reason, which changes no decision) are each given to the guard as a scripted
model's answer (the model path, as a model-written program arrives) on a copy of the profile
whose demonstrations hold no usable program. The oracle situation says what the copy keeps:

- `table`: the program's policy table (`PERMISSIONS` / `RULES`) stays in the demonstrations;
- `policy`: the profile's policy-model twin (`eicu-ac-policy`, `mind2web-sc-policy`), whose
  shipped program assigns predicates, is mutated instead;
- `derived`: no table at all; the scripted model first derives the rules from the request
  (answering with the shipped policy model, as a model that read the request would).

A mutant is *trusted* when it verified and was stored, so that a later guard with no model
reuses it from memory. It is then compared with the shipped program on every event of a
generated set built from the profile's rules, never from evaluation data (each identity, an
unlisted one and none reading each column alone and each table whole; or each rule's
category named by the task and by each part of the action under a task that names none,
with the facts all met, all unmet, missing, and each rule's fact at each side of its edge),
plus the demonstrations; `--events` adds events of a file, `--benchmark` the benchmark's:

- killed: not trusted;
- equivalent: trusted, and the same decision (label and violations) on every event;
- survived: trusted and some decision differs: the verifier trusted a wrong program.

The shipped program itself runs first as the control: it must be trusted and equivalent.
Prints one line per operator (mutants, killed, equivalent, survived, and killed mutants that
were equivalent: correct programs refused), the median verification time per request, and
exits 1 when any mutant survived.
"""

from __future__ import annotations

import argparse
import ast
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.mutant_operators import CONTROL, Mutant, mutants, table_node  # noqa: E402
from guardagent import GuardAgent  # noqa: E402
from guardagent.counterfactuals.cells import UNLISTED_ROLE  # noqa: E402
from guardagent.counterfactuals.derived import clear_derived  # noqa: E402
from guardagent.counterfactuals.details import same_details  # noqa: E402
from guardagent.counterfactuals.events import ehr_reads_output, render_facts  # noqa: E402
from guardagent.counterfactuals.oracles import boundary  # noqa: E402
from guardagent.counterfactuals.rule_conditions import NEUTRAL_TASK, category_phrases  # noqa: E402
from guardagent.policy.runs import execution_verdict, profile_policy  # noqa: E402
from guardagent.profiles import load_profile  # noqa: E402
from guardagent.profiles.loader import BUILTIN_DIR, Profile  # noqa: E402
from guardagent.readers.eicu_schema import EICU_COLUMNS  # noqa: E402
from guardagent.sandbox.process import run_shipped_program  # noqa: E402
from tests.derived_answers import answer_text  # noqa: E402
from tests.scripted import ScriptedChatModel  # noqa: E402

__all__ = ["CONTROL", "Mutant", "mutants", "run"]

ORACLES = ("table", "policy", "derived")
POLICY_TWINS = {"eicu-ac": "eicu-ac-policy", "mind2web-sc": "mind2web-sc-policy"}
"""The policy-model profile of each table profile (same request, a policy model instead)."""

# --------------------------------------------------------------------------- events


def probe_events(profile: Profile) -> list[tuple[str, str]]:
    """The events equivalence is judged on, built from the profile's rules (see the module)."""
    events = [(d.agent_input, d.agent_output) for d in profile.demonstrations]
    if "ehr_accessed_columns" in profile.toolbox:
        return events + _access_events(profile)
    return events + _category_events(profile)


def _access_events(profile: Profile) -> list[tuple[str, str]]:
    """Each identity (and an unlisted one, and none) reading each column alone, each table whole."""
    table = load_profile("eicu-ac").policy("PERMISSIONS")
    roles = [*sorted(table), UNLISTED_ROLE]
    question = "Question: how many patients stayed in the unit?"
    reads = [{t: [c]} for t in sorted(EICU_COLUMNS) for c in sorted(EICU_COLUMNS[t])]
    reads += [{t: sorted(cols)} for t, cols in sorted(EICU_COLUMNS.items())]
    events = []
    for role in [*roles, None]:
        head = f"Identity: {role}\n" if role else ""
        events += [(head + question, ehr_reads_output(r)) for r in reads]
    return events


FACTS_MET = {"age": 40, "domestic": True, "dr_license": True, "vaccine": True, "membership": True}
FACTS_UNMET = {
    "age": 10,
    "domestic": False,
    "dr_license": False,
    "vaccine": False,
    "membership": False,
}


def _category_events(profile: Profile) -> list[tuple[str, str]]:
    """Each rule's category named by the task, by the action's value, by its element (under
    a neutral task), each against another category; facts met, unmet, missing, at each edge."""
    rows = load_profile("mind2web-sc").policy("RULES")
    phrases = [p for r in rows for p in category_phrases(r)]
    tasks = [
        NEUTRAL_TASK,
        *phrases,
        *(d.agent_input.split("\n")[0][len("Task: ") :] for d in profile.demonstrations),
    ]
    page = (
        "(Analysis)\nThe page is open.\n\n(Choices)\nA. <button id=0> {element} </button>\n"
        "B. <a id=1> Home </a>\n\n(Final Answer)\nELEMENT: A\n\nACTION: {action}\n\n"
        "VALUE: {value}"
    )
    outputs = [page.format(element="Next", action="CLICK", value="None")]
    for text in phrases:
        outputs.append(page.format(element=text, action="CLICK", value="None"))
        outputs.append(page.format(element="Search", action="TYPE", value=text))
    facts = [FACTS_MET, FACTS_UNMET, {}]
    for row in rows:
        field = str(row["field"])
        facts += [{**FACTS_MET, field: v} for v in boundary(str(row["op"]), row["value"])]
        facts.append({k: v for k, v in FACTS_MET.items() if k != field})
    events = []
    for task in tasks:
        for output in outputs:
            for known in facts[:3]:
                events.append((f"Task: {task}\n{render_facts(known)}", output))
    for task in [NEUTRAL_TASK, *phrases]:
        for known in facts[3:]:
            events += [(f"Task: {task}\n{render_facts(known)}", o) for o in outputs[:1]]
            events += [(f"Task: {NEUTRAL_TASK}\n{render_facts(known)}", o) for o in outputs[1:]]
    return list(dict.fromkeys(events))


def decisions(code: str, profile: Profile, events: list[tuple[str, str]]) -> list[Any]:
    """(label, violations) of `code` on each event, run in this process (None: no verdict).

    A program that assigns predicates is judged by the profile's policy model, as `verify`
    judges it.
    """
    tools = profile.tools()
    policy = profile_policy(profile)
    out: list[Any] = []
    for agent_input, agent_output in events:
        result = run_shipped_program(code, tools, agent_input, agent_output)
        verdict, _ = execution_verdict(result, policy, threshold=profile.safety_threshold)
        out.append(None if verdict is None else (verdict["allowed"], verdict["violations"]))
    return out


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return bool(a[0] == b[0] and (a[0] or same_details(a[1], b[1])))


# --------------------------------------------------------------------------- model path


def profile_copy(builtin: str, root: Path, *, keep_table: bool = True) -> Path:
    """A copy of a built-in profile whose demonstrations hold no usable program.

    With `keep_table`, they keep the program's policy table (the table oracle); without,
    nothing (the rules come from a policy model or a derivation).
    """
    src = BUILTIN_DIR / builtin
    shipped = load_profile(builtin)
    tree = ast.parse(shipped.demonstrations[0].code)
    nodes = [table_node(tree, name) for name in ("PERMISSIONS", "RULES")] if keep_table else []
    code = "".join(ast.unparse(n) + "\n" for n in nodes if n is not None)
    code += "allow('placeholder')\n"
    demos = [json.loads(line) for line in (src / "demonstrations.jsonl").read_text().splitlines()]
    for demo in demos:
        demo.pop("program", None)
        demo["code"] = code
    root.mkdir(parents=True, exist_ok=True)
    (root / "demonstrations.jsonl").write_text("".join(json.dumps(d) + "\n" for d in demos))
    text = (src / "profile.yaml").read_text().replace(f"name: {builtin}", f"name: {root.name}")
    (root / "profile.yaml").write_text(text)
    return root


def trusted(
    code: str, root: Path, event: tuple[str, str], memory: Path, derive: str | None = None
) -> tuple[bool, float]:
    """Whether the model path trusts `code` (verified, stored, reused), and how long it took.

    `derive`: the policy model the scripted model answers a derivation with (derived rules).
    """
    answers = ["plan", f"```python\n{code}\n```"]
    if derive is not None:
        clear_derived()  # a fresh process: the derivation is asked for, not remembered
        answers = [answer_text(derive), *answers]
    model = ScriptedChatModel.of(answers)
    started = time.perf_counter()
    first = GuardAgent(str(root), model=model, memory_dir=str(memory)).check(*event)
    took = time.perf_counter() - started
    if first.program_source != "generated" or first.error:
        return False, took
    if derive is not None:
        clear_derived()  # the later guard reads the derivation back from memory
    later = GuardAgent(str(root), memory_dir=str(memory)).check(*event)
    return later.program_source == "memory" and later.llm_calls == 0, took


class Outcome(NamedTuple):
    """What became of one mutant.

    Attributes:
        equivalent: The same decision as the shipped program on every event judged
            (generated and benchmark).
        wrong_allows: Benchmark events it allows and the shipped program denies.
        wrong_denials: Benchmark events it denies (or gives no verdict) and the shipped
            program allows, or denies with other violations.
    """

    mutant: Mutant
    trusted: bool
    equivalent: bool
    seconds: float
    wrong_allows: int = 0
    wrong_denials: int = 0

    @property
    def changes_benchmark(self) -> bool:
        """Whether it decides some benchmark event otherwise than the shipped program."""
        return bool(self.wrong_allows or self.wrong_denials)


def _permissions(profile_name: str) -> dict[str, dict[str, list[str]]] | None:
    """The request's access table (role -> table -> columns), for a profile with identities."""
    try:
        table = load_profile(profile_name).policy("PERMISSIONS")
    except (KeyError, ValueError):
        return None
    return table if isinstance(table, dict) else None


def situation(profile_name: str, oracle: str) -> tuple[str, bool, str | None]:
    """(the profile whose program is mutated, keep its table, the policy a derivation gives)."""
    if oracle == "policy":
        return POLICY_TWINS[profile_name], False, None
    if oracle == "derived":
        return profile_name, False, profile_name
    return profile_name, True, None


def _changes(expected: list[Any], got: list[Any]) -> tuple[int, int]:
    """(wrong allows, wrong denials) of `got` against `expected`, event by event."""
    allows = sum(
        1
        for a, b in zip(expected, got, strict=True)
        if not _same(a, b) and b is not None and b[0] and not (a and a[0])
    )
    changed = sum(1 for a, b in zip(expected, got, strict=True) if not _same(a, b))
    return allows, changed - allows


def run(
    profile_name: str = "eicu-ac",
    per_role: int = 4,
    seed: int = 0,
    extra: list[tuple[str, str]] | None = None,
    only: Callable[[list[Mutant]], list[Mutant]] | None = None,
    oracle: str = "table",
    benchmark: list[tuple[str, str]] | None = None,
) -> list[Outcome]:
    """Every mutant of the profile's shipped program through the model path, judged.

    `benchmark`: events judged too, and counted apart (wrong allows and denials); they only
    count, nothing is built from them.
    """
    name, keep_table, derive = situation(profile_name, oracle)
    shipped = load_profile(name)
    code = shipped.demonstrations[0].code
    events = probe_events(shipped) + list(extra or [])
    bench = list(benchmark or [])
    expected = decisions(code, shipped, events)
    bench_expected = decisions(code, shipped, bench)
    chosen = mutants(code, per_role, seed, profile_policy(shipped), _permissions(profile_name))
    chosen = [Mutant(CONTROL, "the shipped program", code), *(only(chosen) if only else chosen)]
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = profile_copy(name, Path(tmp) / f"{name}-{oracle}-mutants", keep_table=keep_table)
        demo = shipped.demonstrations[0]
        for n, mutant in enumerate(chosen):
            ok, took = trusted(
                mutant.code,
                root,
                (demo.agent_input, demo.agent_output),
                Path(tmp) / f"mem{n}",
                derive,
            )
            got = decisions(mutant.code, shipped, events)
            same = all(_same(a, b) for a, b in zip(expected, got, strict=True))
            allows, denials = _changes(bench_expected, decisions(mutant.code, shipped, bench))
            outcomes.append(
                Outcome(mutant, ok, same and not (allows or denials), took, allows, denials)
            )
        clear_derived()
    return outcomes


def verification_seconds(profile_name: str = "eicu-ac", repeats: int = 5) -> list[float]:
    """Seconds to verify the shipped program as a model-written one (sandboxed), each time new.

    A distinct trailing comment makes each a program this process has not verified yet, and
    not the package's own code (which runs in-process), as a model's answer would be.
    """
    from guardagent.profiles.verification import program_problems

    profile = load_profile(profile_name)
    code = profile.demonstrations[0].code
    program_problems(code + "\n# warm-up\n", profile)  # builds the suite once per process
    out = []
    for n in range(repeats):
        started = time.perf_counter()
        assert program_problems(f"{code}\n# request {n}\n", profile) == []
        out.append(time.perf_counter() - started)
    return out


def summary_row(profile_name: str, oracle: str, outcomes: list[Outcome], *, benchmark: bool) -> str:
    """One row of BENCHMARKS.md's mutation table (the control left out).

    profile | oracle | mutants | killed | equivalent | trusted | trusted and changing a
    benchmark decision (with their wrong allows / denials; "not run" without `--benchmark`).
    """
    mutated = [o for o in outcomes if o.mutant.operator != CONTROL]
    trusted = [o for o in mutated if o.trusted]
    changing = [o for o in trusted if o.changes_benchmark]
    shown = (
        (
            f"{len(changing)} ({sum(o.wrong_allows for o in changing)} wrong allows, "
            f"{sum(o.wrong_denials for o in changing)} wrong denials)"
        )
        if benchmark
        else "not run"
    )
    return (
        f"| {profile_name} | {oracle} | {len(mutated)} | {len(mutated) - len(trusted)} | "
        f"{sum(o.equivalent for o in trusted)} | {len(trusted)} | {shown} |"
    )


def _load_events(path: Path) -> list[tuple[str, str]]:
    text = path.read_text()
    rows = (
        [json.loads(line) for line in text.splitlines() if line.strip()]
        if (path.suffix == ".jsonl")
        else json.loads(text)
    )
    return [(str(r["agent_input"]), str(r["agent_output"])) for r in rows]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="eicu-ac", choices=sorted(POLICY_TWINS))
    parser.add_argument("--oracle", default="table", choices=ORACLES)
    parser.add_argument("--per-role", type=int, default=4, help="cells added and removed per role")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--events", type=Path, help="more events (JSON list or JSONL)")
    parser.add_argument("--json", action="store_true", help="print every outcome as JSON")
    parser.add_argument(
        "--benchmark",
        action="store_true",
        help="also judge on the benchmark's events (the shared data folder)",
    )
    args = parser.parse_args()
    logging.getLogger("guardagent").setLevel(logging.ERROR)  # the copy's placeholder program
    extra = _load_events(args.events) if args.events else []
    bench: list[tuple[str, str]] = []
    if args.benchmark:
        from guardagent.eval.benchmarks import load_benchmark

        bench = [(c.agent_input, c.agent_output) for c in load_benchmark(args.profile)]
    outcomes = run(
        args.profile, args.per_role, args.seed, extra, oracle=args.oracle, benchmark=bench
    )
    by_op: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        by_op.setdefault(outcome.mutant.operator, []).append(outcome)
    print(f"{'operator':<24} mutants killed equivalent survived refused-equivalent")
    for op, items in by_op.items():
        killed = sum(not o.trusted for o in items)
        equivalent = sum(o.trusted and o.equivalent for o in items)
        survived = [o for o in items if o.trusted and not o.equivalent]
        refused = sum(not o.trusted and o.equivalent for o in items)
        print(
            f"{op:<24} {len(items):>7} {killed:>6} {equivalent:>10} {len(survived):>8} "
            f"{refused:>18}"
        )
        for o in survived:
            bench_note = (
                f" (benchmark: {o.wrong_allows} wrong allows, {o.wrong_denials} wrong denials)"
                if o.changes_benchmark
                else ""
            )
            print(f"  SURVIVED: {o.mutant.what}{bench_note}")
    if args.json:
        print(
            json.dumps(
                [
                    {
                        **o.mutant._asdict(),
                        "trusted": o.trusted,
                        "equivalent": o.equivalent,
                        "seconds": o.seconds,
                        "wrong_allows": o.wrong_allows,
                        "wrong_denials": o.wrong_denials,
                    }
                    for o in outcomes
                ],
                indent=1,
            )
        )
    print(summary_row(args.profile, args.oracle, outcomes, benchmark=bool(bench)))
    seconds = [o.seconds for o in outcomes]
    print(
        f"model path per request (plan, verification, decision): median "
        f"{statistics.median(seconds):.2f} s, max {max(seconds):.2f} s over {len(seconds)}"
    )
    verify = verification_seconds(situation(args.profile, args.oracle)[0])
    print(
        f"verification alone per request (suite built): median {statistics.median(verify):.2f}"
        f" s, max {max(verify):.2f} s over {len(verify)}"
    )
    control = by_op[CONTROL][0]
    if not (control.trusted and control.equivalent):
        print("CONTROL FAILED: the shipped program is not trusted through the model path")
        return 1
    return 1 if any(o.trusted and not o.equivalent for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
