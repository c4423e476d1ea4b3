"""Mutation self-test of verification (issue 34): no wrong program may be trusted.

Usage: .venv/bin/python benchmarks/bench_mutants.py [--profile eicu-ac] [--per-role 4]
       [--seed 0] [--events FILE.json[l]] [--benchmark] [--json]

Mutants of a profile's shipped program (its access list with one cell added or removed per
role, flipped comparisons, negated conditions, dropped branches, swapped verdicts, a renamed
role, a reader given the wrong part of the event, always-allow / always-deny, and a reworded
reason, which changes no decision) are each given to the guard as a scripted model's answer
(the model path, as a model-written program arrives) on a copy of the profile whose
demonstrations keep the policy table but no usable program. A mutant is *trusted* when it
verified and was stored, so that a later guard with no model reuses it from memory. It is
then compared with the shipped program on every event of a generated set (each identity,
an unlisted one and no identity, reading each column of the schema alone and each table
whole, plus the demonstrations; `--events` adds events of a file, e.g. a benchmark's):

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
import copy
import json
import logging
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from guardagent import GuardAgent  # noqa: E402
from guardagent.counterfactuals.cells import UNLISTED_ROLE, access_cells  # noqa: E402
from guardagent.counterfactuals.details import same_details  # noqa: E402
from guardagent.counterfactuals.events import ehr_reads_output  # noqa: E402
from guardagent.policy.runs import execution_verdict  # noqa: E402
from guardagent.profiles import load_profile  # noqa: E402
from guardagent.profiles.loader import BUILTIN_DIR, Profile  # noqa: E402
from guardagent.readers.eicu_schema import EICU_COLUMNS  # noqa: E402
from guardagent.sandbox.process import run_shipped_program  # noqa: E402
from tests.scripted import ScriptedChatModel  # noqa: E402

_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}  # fmt: skip


CONTROL = "control"
"""The shipped program itself: it must be trusted and equivalent, else kills mean nothing."""


class Mutant(NamedTuple):
    """One mutant: its operator, what it changed and its code."""

    operator: str
    what: str
    code: str


# --------------------------------------------------------------------------- operators


def _table_node(tree: ast.Module, name: str = "PERMISSIONS") -> ast.Assign | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node
    return None


def _with_table(code: str, table: dict[str, dict[str, list[str]]]) -> str:
    tree = ast.parse(code)
    node = _table_node(tree)
    assert node is not None, "the program holds no PERMISSIONS literal"
    node.value = ast.parse(repr(table), mode="eval").body
    return ast.unparse(tree)


def cell_mutants(code: str, per_role: int, rng: random.Random) -> Iterator[Mutant]:
    """The access list with one cell added (a denied one) or removed (an allowed one)."""
    tree = ast.parse(code)
    node = _table_node(tree)
    if node is None:
        return
    table: dict[str, dict[str, list[str]]] = ast.literal_eval(node.value)
    cells = access_cells(table)
    for role in sorted(table):
        for allowed, operator in ((False, "cell added"), (True, "cell removed")):
            pool = [c for c, ok in cells.items() if c.role == role and ok is allowed]
            for cell in rng.sample(pool, min(per_role, len(pool))):
                mutated = copy.deepcopy(table)
                cols = mutated[role].setdefault(cell.table, [])
                if allowed:
                    cols.remove(cell.column)
                else:
                    cols.append(cell.column)
                yield Mutant(operator, str(cell), _with_table(code, mutated))


def _each(code: str, pick: Callable[[ast.AST], bool],
          change: Callable[[ast.AST], ast.AST | None]) -> Iterator[tuple[int, str]]:  # fmt: skip
    """(index, code) with the index-th node `pick` accepts replaced by `change(node)`."""
    count = sum(1 for n in ast.walk(ast.parse(code)) if pick(n))
    for index in range(count):
        tree = ast.parse(code)
        target = [n for n in ast.walk(tree) if pick(n)][index]
        new = change(target)
        if new is None:
            continue
        for parent in ast.walk(tree):
            for field, value in ast.iter_fields(parent):
                if value is target:
                    setattr(parent, field, new)
                elif isinstance(value, list) and any(v is target for v in value):
                    at = next(i for i, v in enumerate(value) if v is target)
                    value[at : at + 1] = new if isinstance(new, list) else [new]
        yield index, ast.unparse(ast.fix_missing_locations(tree))


def _flip(node: ast.AST) -> ast.AST | None:
    assert isinstance(node, ast.Compare)
    if type(node.ops[0]) not in _FLIP:
        return None
    return ast.Compare(node.left, [_FLIP[type(node.ops[0])]()], node.comparators)


def _negate(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.If)
    return ast.If(ast.UnaryOp(ast.Not(), node.test), node.body, node.orelse)


def _verdict(node: ast.AST) -> ast.AST | None:
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    reason = node.args[-1] if node.args else ast.Constant("mutant")
    if node.func.id == "allow":
        accessed = ast.Name("accessed", ast.Load())
        return ast.Call(ast.Name("deny", ast.Load()), [accessed, reason], [])
    return ast.Call(ast.Name("allow", ast.Load()), [reason], [])


def _reworded(node: ast.AST) -> ast.AST:
    """The same verdict with another reason: an equivalent mutant (verification must trust
    it, or it refuses correct programs)."""
    assert isinstance(node, ast.Call)
    return ast.Call(node.func, [*node.args[:-1], ast.Constant("reworded")], node.keywords)


def _is_verdict(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
        node.func.id in ("allow", "deny"))  # fmt: skip


_PARTS = {"agent_input": "agent_output", "agent_output": "agent_input"}


def _is_event_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in _PARTS


def _other_part(node: ast.AST) -> ast.AST:
    """A reader given the other part of the event (the identity read from the output...)."""
    assert isinstance(node, ast.Name)
    return ast.Name(_PARTS[node.id], ast.Load())


def program_mutants(code: str) -> Iterator[Mutant]:
    """Flipped comparisons, negated conditions, dropped branches, swapped verdicts, a reader
    given the wrong part of the event, renamed roles, always-allow / always-deny."""
    for i, new in _each(code, lambda n: isinstance(n, ast.Compare), _flip):
        yield Mutant("flipped comparison", f"comparison {i}", new)
    for i, new in _each(code, lambda n: isinstance(n, ast.If), _negate):
        yield Mutant("negated condition", f"condition {i}", new)
    for keep in ("body", "orelse"):
        for i, new in _each(code, lambda n: isinstance(n, ast.If),
                            lambda n, k=keep: getattr(n, k) or [ast.Pass()]):  # type: ignore[misc]
            yield Mutant("dropped branch", f"if {i} keeps its {keep} only", new)
    for i, new in _each(code, _is_verdict, _verdict):
        yield Mutant("swapped verdict", f"verdict {i}", new)
    for i, new in _each(code, _is_verdict, _reworded):
        yield Mutant("reworded reason", f"verdict {i}", new)
    for i, new in _each(code, _is_event_text, _other_part):
        yield Mutant("wrong part of the event", f"event text {i}", new)
    roles = _table_node(ast.parse(code))
    count = len(roles.value.keys) if roles is not None and isinstance(roles.value, ast.Dict) else 0
    for index in range(count):
        tree = ast.parse(code)
        node = _table_node(tree)
        assert node is not None and isinstance(node.value, ast.Dict)
        key = node.value.keys[index]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            shown = repr(key.value)
            key.value += "s"
            yield Mutant("renamed role", shown, ast.unparse(tree))
    node = _table_node(ast.parse(code))
    table = ast.unparse(node) if node is not None else ""
    read = "accessed = ehr_accessed_columns(agent_output)\n"
    yield Mutant("always allow", "allow", f"{table}\n{read}allow('always')\n")
    yield Mutant("always deny", "deny", f"{table}\n{read}deny(accessed, 'always')\n")


def mutants(code: str, per_role: int = 4, seed: int = 0) -> list[Mutant]:
    """Every mutant of `code`, distinct from it and from each other."""
    found: dict[str, Mutant] = {}
    for mutant in [*cell_mutants(code, per_role, random.Random(seed)), *program_mutants(code)]:
        if mutant.code.strip() != code.strip() and mutant.code not in found:
            found[mutant.code] = mutant
    return list(found.values())


# --------------------------------------------------------------------------- events


def probe_events(profile: Profile) -> list[tuple[str, str]]:
    """Each identity (and an unlisted one, and none) reading each column alone, each table
    whole, plus the demonstrations: the events equivalence is judged on."""
    roles = [*sorted(profile.policy("PERMISSIONS")), UNLISTED_ROLE]
    events = [(d.agent_input, d.agent_output) for d in profile.demonstrations]
    question = "Question: how many patients stayed in the unit?"
    reads = [{t: [c]} for t in sorted(EICU_COLUMNS) for c in sorted(EICU_COLUMNS[t])]
    reads += [{t: sorted(cols)} for t, cols in sorted(EICU_COLUMNS.items())]
    for role in [*roles, None]:
        head = f"Identity: {role}\n" if role else ""
        events += [(head + question, ehr_reads_output(r)) for r in reads]
    return events


def decisions(code: str, profile: Profile, events: list[tuple[str, str]]) -> list[Any]:
    """(label, violations) of `code` on each event, run in this process (None: no verdict)."""
    tools = profile.tools()
    out: list[Any] = []
    for agent_input, agent_output in events:
        result = run_shipped_program(code, tools, agent_input, agent_output)
        verdict, _ = execution_verdict(result, None)
        out.append(None if verdict is None else (verdict["allowed"], verdict["violations"]))
    return out


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return bool(a[0] == b[0] and (a[0] or same_details(a[1], b[1])))


# --------------------------------------------------------------------------- model path


def profile_copy(builtin: str, root: Path) -> Path:
    """A copy of a built-in profile whose demonstrations keep the table, not the program."""
    src = BUILTIN_DIR / builtin
    shipped = load_profile(builtin)
    tree = ast.parse(shipped.demonstrations[0].code)
    node = _table_node(tree)
    code = (ast.unparse(node) if node is not None else "") + "\nallow('placeholder')\n"
    demos = [json.loads(line) for line in (src / "demonstrations.jsonl").read_text().splitlines()]
    for demo in demos:
        demo.pop("program", None)
        demo["code"] = code
    root.mkdir(parents=True, exist_ok=True)
    (root / "demonstrations.jsonl").write_text("".join(json.dumps(d) + "\n" for d in demos))
    text = (src / "profile.yaml").read_text().replace(f"name: {builtin}", f"name: {root.name}")
    (root / "profile.yaml").write_text(text)
    return root


def trusted(code: str, root: Path, event: tuple[str, str], memory: Path) -> tuple[bool, float]:
    """Whether the model path trusts `code` (verified, stored, reused), and how long it took."""
    model = ScriptedChatModel.of(["plan", f"```python\n{code}\n```"])
    started = time.perf_counter()
    first = GuardAgent(str(root), model=model, memory_dir=str(memory)).check(*event)
    took = time.perf_counter() - started
    if first.program_source != "generated" or first.error:
        return False, took
    later = GuardAgent(str(root), memory_dir=str(memory)).check(*event)
    return later.program_source == "memory" and later.llm_calls == 0, took


class Outcome(NamedTuple):
    """What became of one mutant."""

    mutant: Mutant
    trusted: bool
    equivalent: bool
    seconds: float


def run(profile_name: str = "eicu-ac", per_role: int = 4, seed: int = 0,
        extra: list[tuple[str, str]] | None = None,
        only: Callable[[list[Mutant]], list[Mutant]] | None = None) -> list[Outcome]:  # fmt: skip
    """Every mutant of the profile's shipped program through the model path, judged."""
    shipped = load_profile(profile_name)
    code = shipped.demonstrations[0].code
    events = probe_events(shipped) + list(extra or [])
    expected = decisions(code, shipped, events)
    chosen = mutants(code, per_role, seed)
    chosen = [Mutant(CONTROL, "the shipped program", code), *(only(chosen) if only else chosen)]
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = profile_copy(profile_name, Path(tmp) / f"{profile_name}-mutants")
        demo = shipped.demonstrations[0]
        for n, mutant in enumerate(chosen):
            ok, took = trusted(mutant.code, root, (demo.agent_input, demo.agent_output),
                               Path(tmp) / f"mem{n}")  # fmt: skip
            got = decisions(mutant.code, shipped, events)
            same = all(_same(a, b) for a, b in zip(expected, got, strict=True))
            outcomes.append(Outcome(mutant, ok, same, took))
    return outcomes


def verification_seconds(profile_name: str = "eicu-ac", repeats: int = 5) -> list[float]:
    """Seconds to verify the shipped program as a model-written one (sandboxed), each time new.

    A distinct trailing comment makes each a program this process has not verified yet, and
    not the package's own code (which runs in-process), as a model's answer would be.
    """
    from guardagent.verification import program_problems

    profile = load_profile(profile_name)
    code = profile.demonstrations[0].code
    program_problems(code + "\n# warm-up\n", profile)  # builds the suite once per process
    out = []
    for n in range(repeats):
        started = time.perf_counter()
        assert program_problems(f"{code}\n# request {n}\n", profile) == []
        out.append(time.perf_counter() - started)
    return out


def _load_events(path: Path) -> list[tuple[str, str]]:
    text = path.read_text()
    rows = [json.loads(line) for line in text.splitlines() if line.strip()] if (
        path.suffix == ".jsonl") else json.loads(text)  # fmt: skip
    return [(str(r["agent_input"]), str(r["agent_output"])) for r in rows]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="eicu-ac")
    parser.add_argument("--per-role", type=int, default=4, help="cells added and removed per role")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--events", type=Path, help="more events (JSON list or JSONL)")
    parser.add_argument("--json", action="store_true", help="print every outcome as JSON")
    parser.add_argument("--benchmark", action="store_true",
                        help="also judge on EICU-AC's 317 events (the shared data folder)")
    args = parser.parse_args()
    logging.getLogger("guardagent").setLevel(logging.ERROR)  # the copy's placeholder program
    extra = _load_events(args.events) if args.events else []
    if args.benchmark:
        from guardagent.eval.benchmarks import load_eicu_ac

        extra += [(c.agent_input, c.agent_output) for c in load_eicu_ac()]
    outcomes = run(args.profile, args.per_role, args.seed, extra)
    by_op: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        by_op.setdefault(outcome.mutant.operator, []).append(outcome)
    print(f"{'operator':<24} mutants killed equivalent survived refused-equivalent")
    for op, items in by_op.items():
        killed = sum(not o.trusted for o in items)
        equivalent = sum(o.trusted and o.equivalent for o in items)
        survived = [o for o in items if o.trusted and not o.equivalent]
        refused = sum(not o.trusted and o.equivalent for o in items)
        print(f"{op:<24} {len(items):>7} {killed:>6} {equivalent:>10} {len(survived):>8} "
              f"{refused:>18}")  # fmt: skip
        for o in survived:
            print(f"  SURVIVED: {o.mutant.what}")
    if args.json:
        print(json.dumps([{**o.mutant._asdict(), "trusted": o.trusted,
                           "equivalent": o.equivalent, "seconds": o.seconds}
                          for o in outcomes], indent=1))  # fmt: skip
    seconds = [o.seconds for o in outcomes]
    print(f"model path per request (plan, verification, decision): median "
          f"{statistics.median(seconds):.2f} s, max {max(seconds):.2f} s over {len(seconds)}")
    verify = verification_seconds(args.profile)
    print(f"verification alone per request (suite built): median {statistics.median(verify):.2f}"
          f" s, max {max(verify):.2f} s over {len(verify)}")
    control = by_op[CONTROL][0]
    if not (control.trusted and control.equivalent):
        print("CONTROL FAILED: the shipped program is not trusted through the model path")
        return 1
    return 1 if any(o.trusted and not o.equivalent for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
