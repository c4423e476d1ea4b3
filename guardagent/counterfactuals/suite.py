"""The events a program must decide right before it is trusted: demonstrations and beyond.

Three demonstrations say little about a six-rule request: a program that knows two rules,
or allows whenever some token shows up, reproduces them all. So a program is also run on
counterfactual events built from the demonstrations, with expected decisions that follow
from the request's rules:

- **with an oracle** (the profile's program holds its `RULES` / `PERMISSIONS` table and
  the kind is known, :mod:`.oracles`; or the profile names a policy model and its toolbox a
  known predicate function, :mod:`.policy_oracle`): each user fact or identity flipped
  across each rule's boundary, each rule's trigger made to hold and not hold (the action
  category of a web task, a tool call's name and each argument condition, with the
  spellings a model may choose: other case, NaN, a number as text), and every string
  literal of the program put into each field a reader returns (task, typed value, chosen
  element, tool arguments, question). Expected decisions come from the table and the
  trusted readers and checks (or from z3 on the policy model, over the predicate function's
  values of the trusted readers' output), and every rule must be violated by at least one
  demonstration or counterfactual;
- **without one**: the rules are the violation texts the guard request quotes, and each must
  have a labelled denial among the demonstrations (the problems name those that lack one);
- **always**: irrelevant text (padding, the program's literals, text naming the rules)
  appended to or inserted into the agent output, kept only where no reader's result changes,
  so the expected decision is the demonstration's own.

Under a `PERMISSIONS` table, each identity also reads every cell of the table and schema in
probes whose code the guard writes (:mod:`.cells`), and a cell no case probes makes the
request uncovered.

Limits: edits reach only what can be regenerated exactly; a trigger keyed to a value the
program computes rather than spells as a literal (`chr(88) + ...`) is only caught when a
probe happens to produce it; the probes are boundary values, not every value. The data-flow
discipline (:mod:`guardagent.sandbox.dataflow`) keeps the raw event out of programs, so what
is probed here, reader results, is everything a program can decide on.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from guardagent.counterfactuals.cells import coverage, coverage_problem, oracle_cells
from guardagent.counterfactuals.details import same_details
from guardagent.counterfactuals.events import (
    Event,
    Readers,
    after_first_line,
    appended,
    canonical,
)
from guardagent.counterfactuals.oracles import (
    POLICY_NAMES,
    Expected,
    Oracle,
    oracle_for,
)
from guardagent.counterfactuals.rule_conditions import (
    RuleCoverage,
    category_coverage,
    category_table_of,
)
from guardagent.counterfactuals.rule_conditions import (
    coverage_problem as rule_coverage_problem,
)
from guardagent.profiles.loader import DemoSpec, Profile
from guardagent.sandbox.policy import AST_LOCK
from guardagent.tools.verdict import VERDICT_NAMES, Violations

MAX_TOKENS = 24
"""String literals of a program probed per field (the ones it compares come first)."""
MAX_TOKEN_CHARS = 120
PADDING = "Note: " + " ".join(["the page also lists unrelated offers and links"] * 40)
_QUOTES = (('"', '"'), ("\u201c", "\u201d"))
_MIN_RULE_WORDS = 3
DERIVE_HINT = (
    "or configure a model (model='openai:gpt-4o' or a local base_url): the guard then derives "
    "the rules from the guard request and verifies programs against them"
)


class Case(NamedTuple):
    """One event with the decision a trusted program must give it."""

    name: str
    agent_input: str
    agent_output: str
    label: int
    details: Violations


class Suite(NamedTuple):
    """The request's counterfactual cases and why the request is not covered, if it is not.

    Attributes:
        kind: The oracle's kind, or "demonstrations" when the profile has none.
        cases: Counterfactual cases (the demonstrations themselves are not repeated here).
        problems: Coverage problems; any of them means no program can verify.
        conditions: Which conditions of a category rule table the cases probe (None: the
            oracle has no such table; :mod:`.rule_conditions`).
    """

    kind: str
    cases: tuple[Case, ...]
    problems: tuple[str, ...]
    conditions: RuleCoverage | None = None


def demo_cases(profile: Profile) -> list[Case]:
    """The labelled demonstrations as cases, named by their ids."""
    return [
        Case(d.id, d.agent_input, d.agent_output, d.label, d.details)
        for d in profile.demonstrations
    ]


def quoted_rules(guard_request: str) -> list[str]:
    """The violation texts a guard request quotes ("...", at least three words each)."""
    found: list[str] = []
    for open_q, close_q in _QUOTES:
        rest = guard_request
        while open_q in rest:
            _, _, after = rest.partition(open_q)
            inside, closed, rest = after.partition(close_q)
            if not closed:
                break
            text = " ".join(inside.split())
            if len(text.split()) >= _MIN_RULE_WORDS and text not in found:
                found.append(text)
    return found


def _event(demo: DemoSpec) -> Event:
    return Event(demo.agent_input, demo.agent_output)


def _irrelevant(
    readers: Readers, demo: DemoSpec, texts: Iterable[tuple[str, str]]
) -> Iterator[Case]:
    """Texts added to the output where no reader's result changes: the decision stands.

    Each text is `"appended"` or `"inserted"` after the output's first line.
    """
    event = _event(demo)
    for where, text in texts:
        place = appended if where == "appended" else after_first_line
        new = Event(demo.agent_input, place(demo.agent_output, text))
        if readers.exact(event, new):
            short = text if len(text) <= 40 else text[:37] + "..."
            yield Case(f"{demo.id}: {where} {short!r}", *new, demo.label, demo.details)


def oracle_cases(
    oracle: Oracle, profile: Profile
) -> tuple[list[Case], list[str], RuleCoverage | None]:
    """Cases from every demonstration's edits, the oracle's disagreements and gaps.

    Also the coverage of its category rule table's conditions (None: it has none).
    """
    cases: list[Case] = []
    problems: list[str] = []
    covered: set[str] = set()
    decided: list[tuple[Event, Expected]] = []
    for demo in profile.demonstrations:
        try:
            expected = oracle.decide(_event(demo))
        except Exception as exc:  # noqa: BLE001 - the table or a reader cannot take it
            problems.append(
                f"the profile's {oracle.source} cannot decide demonstration "
                f"{demo.id}: {type(exc).__name__}: {exc}"
            )
            continue
        if expected.label != demo.label or (
            demo.label == 1 and not same_details(expected.details, demo.details)
        ):
            problems.append(
                f"the profile's {oracle.source} gives demonstration {demo.id} label "
                f"{expected.label} {expected.details}, its label is {demo.label} {demo.details}"
            )
        covered.update(expected.rules)
        decided.append((_event(demo), expected))
        try:
            for edit in oracle.edits(_event(demo)):
                try:
                    got = oracle.decide(edit.event)
                except Exception:  # noqa: BLE001 - an edit the readers refuse: no case
                    continue
                cases.append(Case(f"{demo.id}: {edit.what}", *edit.event, got.label, got.details))
                covered.update(got.rules)
                decided.append((edit.event, got))
        except (ValueError, TypeError, KeyError) as exc:
            problems.append(f"the profile's {oracle.source} is malformed: {exc}")
    missing = [r for r in oracle.rules() if r not in covered]
    if missing:
        problems.append(
            "no demonstration or counterfactual violates "
            + "; ".join(repr(r) for r in missing)
            + ": add a labelled denial for each"
        )
    cells = oracle_cells(oracle)  # every identity x table x column cell (.cells)
    if cells is not None:
        probes = [(_event(d), d.label, d.details) for d in profile.demonstrations]
        probes += [(Event(c.agent_input, c.agent_output), c.label, c.details) for c in cases]
        gap = coverage_problem(coverage(cells, oracle.readers, probes))
        problems += [gap] if gap else []
    table = category_table_of(oracle)
    conditions = None if table is None else category_coverage(oracle, table, decided)
    if conditions is not None and (unprobed := rule_coverage_problem(conditions)):
        problems.append(unprobed)
    return cases, problems, conditions


def suite_key(profile: Profile) -> str:
    """What a profile's verification depends on, as one key.

    Its fingerprint (request, toolbox, labelled demonstrations), its policy tables and the
    rules derived from its request (:mod:`.derived`), which the fingerprint does not cover.
    """
    from guardagent.counterfactuals.derived import derived_digest

    programs = (
        profile.fingerprint,
        derived_digest(profile),
        *dict.fromkeys(d.code for d in profile.demonstrations),
    )
    if programs not in _KEYS:
        _KEYS[programs] = _suite_key(profile)
    return _KEYS[programs]


_KEYS: dict[tuple[str, ...], str] = {}


def _suite_key(profile: Profile) -> str:
    tables = []
    for name in POLICY_NAMES:
        try:
            tables.append(canonical(profile.policy(name)))
        except (KeyError, ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            tables.append("")
    from guardagent.counterfactuals.derived import derived_digest

    key = "\x00".join([profile.fingerprint, *tables, derived_digest(profile)])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


_SUITES: dict[str, Suite] = {}


def quoted_problems(profile: Profile) -> tuple[list[str], list[str]]:
    """Without an oracle: the rules the request quotes, and what the demonstrations lack.

    Each quoted rule needs a labelled denial among the demonstrations; the problems say
    which rules lack one and what else would do (a table, a policy model, a model).
    """
    rules = quoted_rules(profile.guard_request)
    denied = {
        str(v)
        for d in profile.demonstrations
        if d.label == 1 and isinstance(d.details, list)
        for v in d.details
    }
    problems: list[str] = []
    if not rules:
        problems.append(
            "the guard request's rules cannot be identified: give the profile's program a "
            "RULES or PERMISSIONS table, or the profile a policy model (policy_model:), or "
            "quote each rule's violation text in the request; " + DERIVE_HINT
        )
    lacking = [r for r in rules if r not in denied]
    if lacking:
        problems.append(
            "rules without a labelled denial among the demonstrations: "
            + "; ".join(repr(r) for r in lacking)
            + ": add a demonstration with label 1 whose details name each of them, or "
            "give the profile's program a RULES or PERMISSIONS table, or the profile a "
            "policy model (policy_model:); " + DERIVE_HINT
        )
    return rules, problems


def request_suite(profile: Profile) -> Suite:
    """The counterfactual cases of a profile's request (built once per process and profile)."""
    key = suite_key(profile)
    if key in _SUITES:
        return _SUITES[key]
    with AST_LOCK:  # the readers parse code here, in this process (see AST_LOCK)
        _SUITES[key] = _build_suite(profile)
    return _SUITES[key]


def _build_suite(profile: Profile) -> Suite:
    readers = Readers(profile.tools())
    oracle = oracle_for(profile)
    cases: list[Case] = []
    problems: list[str] = []
    conditions = None
    if oracle is not None:
        cases, problems, conditions = oracle_cases(oracle, profile)
        rules = oracle.rules()
    else:
        rules, problems = quoted_problems(profile)
    if oracle is not None and not rules:  # derived rules, none of them signed off
        problems.append(
            "the profile requires sign-off (approved_only) and no rule derived from the guard "
            "request is approved yet: `guardagent profile check` names the file of derived "
            "rules; approve them with `guardagent policy review FILE --approve RULE_ID`"
        )
    texts = [("appended", PADDING), *([("inserted", " ".join(rules))] if rules else [])]
    for demo in profile.demonstrations:
        cases += _irrelevant(readers, demo, texts)
    kind = oracle.kind if oracle else "demonstrations"
    return Suite(kind, tuple(_distinct(readers, cases, profile)), tuple(problems), conditions)


def _distinct(readers: Readers, cases: list[Case], profile: Profile) -> list[Case]:
    """The cases less those that read, and are expected, as an earlier one or a demonstration.

    Any program decides events with the same reading alike (:meth:`Readers.reading`), so a
    repeat costs a sandbox run and probes nothing more; coverage, computed before, is the
    same. A toolbox with readers of another shape keeps every case.
    """
    if not readers.complete:
        return cases
    seen: set[tuple[str, int, str]] = set()
    for demo in profile.demonstrations:
        seen.add((readers.reading(_event(demo)), demo.label, canonical(demo.details)))
    kept: list[Case] = []
    for case in cases:
        key = (
            readers.reading(Event(case.agent_input, case.agent_output)),
            case.label,
            canonical(case.details),
        )
        if key not in seen:
            seen.add(key)
            kept.append(case)
    return kept


def program_cases(profile: Profile, code: str) -> list[Case]:
    """Cases that put the program's own string literals (its possible triggers) into the event.

    All of them together go into every field a reader returns (with an oracle) and after the
    output (as irrelevant text); each literal the profile's policy table does not hold (a
    table value is probed by the rule flips already) also goes alone into every field, so a
    trigger compared for equality or as a prefix meets it. Probed on the first denied and the
    first allowed demonstration.
    """
    with AST_LOCK:  # the readers parse code here, in this process (see AST_LOCK)
        return _program_cases(profile, code)


def _program_cases(profile: Profile, code: str) -> list[Case]:
    tokens = literals(code)
    if not tokens:
        return []
    readers = Readers(profile.tools())
    joined = " ".join(tokens)
    cases = [
        c for d in profile.demonstrations for c in _irrelevant(readers, d, [("appended", joined)])
    ]
    oracle = oracle_for(profile)
    if oracle is None:
        return cases
    known = _table_strings(oracle.table)
    texts = [joined, *(t for t in tokens if t not in known)]
    firsts = [next((d for d in profile.demonstrations if d.label == x), None) for x in (1, 0)]
    for demo in [d for d in firsts if d is not None]:
        for text in texts:
            for edit in oracle.slots(_event(demo), text):
                try:
                    got = oracle.decide(edit.event)
                except Exception:  # noqa: BLE001 - an edit the readers refuse: no case
                    continue
                cases.append(Case(f"{demo.id}: {edit.what}", *edit.event, got.label, got.details))
    return cases


def _table_strings(table: object) -> set[str]:
    """Every string in a policy table, keys and values, at any depth."""
    found: set[str] = set()
    stack = [table]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.add(item)
        elif isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list | tuple | set | frozenset):
            stack += list(item)
    return found


def literals(code: str) -> list[str]:
    """The program's string literals that could be triggers, compared ones first.

    Dict keys, subscripts (`x["name"]`), bare string statements and whatever is only
    passed to `allow` / `deny` are left out; adjacent literals joined with `+` count as their join.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    skip: set[int] = set()
    compared: list[str] = []
    others: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            skip.update(id(k) for k in node.keys if k is not None)
        elif isinstance(node, ast.Expr):
            skip.add(id(node.value))
        elif isinstance(node, ast.Subscript):
            skip.add(id(node.slice))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and (node.func.id in VERDICT_NAMES)
        ):
            skip.update(id(n) for arg in node.args for n in ast.walk(arg))
            skip.update(id(n) for kw in node.keywords for n in ast.walk(kw.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            compared += [s for n in (node.left, *node.comparators) for s in _strings(n, skip)]
        elif isinstance(node, ast.Constant | ast.BinOp):
            others += _strings(node, skip)
    picked = [
        t
        for t in dict.fromkeys([*compared, *others])
        if t.strip() and "\n" not in t and len(t) <= MAX_TOKEN_CHARS
    ]
    return picked[:MAX_TOKENS]


def _strings(node: ast.AST, skip: set[int]) -> list[str]:
    if id(node) in skip:
        return []
    folded = _fold(node)
    return [folded] if folded is not None else []


def _fold(node: ast.AST) -> str | None:
    """A string constant, or a `+` of string constants, as its value."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _fold(node.left), _fold(node.right)
        if left is not None and right is not None:
            return left + right
    return None
