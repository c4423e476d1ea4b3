"""The conditions of a web agent's category rules, the edits that probe each alone, and coverage.

A category rule (`{category, field, op, value, violation}`, or the same read off a policy
model by :mod:`.probes`) turns on two parts of the event: the action's category, which the
trusted `web_action_category` reads from the task and, when the task names none, from the
chosen action's value or element; and one user fact. A verified program is reused with no
model call, so a program that reads one part alone must fail verification: the edits of the
table oracle held the action and varied the task, never the reverse, and a program that
reads the category from the task alone (ignoring the action) verified and made wrong allows.

So each rule's conditions are probed one at a time, each in an event where it alone decides:

- its category read from the task (the action held);
- read from the task while the action names another category (the task wins);
- read from the action's value alone, and from its element alone, under a task that names
  no category (the task held: the demonstration's own when it names none, else a neutral
  one);
- its user fact at each side of the rule's edge, and missing, under its category, with no
  other rule violated (so the fact alone decides the label).

The texts that make an action name a category come from the rule (its category, its
violation text) and then from the category reader's own lexicon (:mod:`guardagent.readers
.web_categories`), never from evaluation data. Coverage is computed from the suite's cases
and their expected decisions, read back with the trusted readers (:func:`category_probed`);
a condition no case probes makes the request uncovered, and verification trusts no program,
naming the conditions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from guardagent.counterfactuals.events import Event, canonical, with_line, with_task
from guardagent.readers.web_categories import LEXICON

if TYPE_CHECKING:
    from guardagent.counterfactuals.oracles import CategoryRulesOracle, Expected, Oracle
    from guardagent.profiles.loader import Profile

NEUTRAL_TASK = "Do the next step on this page"
"""A task that names no category: under it the action alone decides the category."""
PARTS = {"value": "the action's value", "element_text": "the action's element"}
"""The parts of a final action the category reader weighs when the task names none."""
PHRASES_PER_CATEGORY = 3
"""Lexicon phrases tried (strongest first) when the rule's own texts name no category."""
SHOWN = 24
"""Missing conditions named in a coverage problem (the rest are counted)."""
OTHER = "other"
_MISSING = object()


class Condition(NamedTuple):
    """One condition of one rule, probed alone."""

    rule: str
    what: str

    def __str__(self) -> str:
        return f"{self.rule!r}: {self.what}"


class RuleCoverage(NamedTuple):
    """Which conditions of a rule table the suite probes.

    Attributes:
        conditions: Every condition, in the table's order.
        probed: The conditions some case probes alone.
        missing: The conditions no case probes, in the table's order.
    """

    conditions: list[Condition]
    probed: set[Condition]
    missing: list[Condition]


def _show(value: Any) -> str:
    if value is _MISSING:
        return "missing"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return repr(value)


def _fact_values(row: Mapping[str, Any]) -> list[Any]:
    from guardagent.counterfactuals.oracles import boundary  # oracles imports this module

    return [*boundary(str(row["op"]), row["value"]), _MISSING]


def _task_what(category: str) -> str:
    return f"{category!r} read from the task"


def _against_what(category: str) -> str:
    return f"{category!r} read from the task, the action naming another category"


def _part_what(category: str, part: str) -> str:
    return f"{category!r} read from {PARTS[part]} alone, under a task that names none"


def _fact_what(row: Mapping[str, Any], value: Any) -> str:
    return f"{row['field']} {_show(value)} under {row['category']!r}"


def category_conditions(table: Iterable[Mapping[str, Any]]) -> list[Condition]:
    """Every condition of every row of a category table (see the module docstring)."""
    rows = list(table)
    categories = {str(r["category"]) for r in rows}
    found: list[Condition] = []
    for row in rows:
        rule, category = str(row["violation"]), str(row["category"])
        whats = [_task_what(category), *(_part_what(category, p) for p in PARTS)]
        whats += [_against_what(category)] if len(categories) > 1 else []
        whats += [_fact_what(row, v) for v in _fact_values(row)]
        found += [Condition(rule, w) for w in whats]
    return list(dict.fromkeys(found))


def _same(read: Any, value: Any) -> bool:
    if value is _MISSING:
        return read is _MISSING
    return read is not _MISSING and canonical(read) == canonical(value)


def category_probed(
    oracle: Oracle, table: Iterable[Mapping[str, Any]], event: Event, rules: Iterable[str]
) -> set[Condition]:
    """The conditions one case probes alone, given the rules its expected decision violates.

    The case is read back with the trusted readers (a case they refuse probes nothing).
    """
    try:
        task = oracle.readers.read("parse_task", event)
        action = oracle.readers.read("seeact_final_action", event)
        facts = oracle.readers.read("parse_user_info", event)
    except Exception:  # noqa: BLE001 - a case the readers refuse probes no condition
        return set()
    category = oracle.functions["web_action_category"]
    read, own = category(task, action), category(task, {})
    violated = set(rules)
    found: set[Condition] = set()
    for row in table:
        rule = str(row["violation"])
        if row["category"] != read:
            continue
        if rule in violated and own == read:
            found.add(Condition(rule, _task_what(read)))
            if category("", action) not in (read, OTHER):
                found.add(Condition(rule, _against_what(read)))
        elif rule in violated:
            alone = {p: category(task, {p: action.get(p, "")}) for p in PARTS}
            only = [
                p
                for p, got in alone.items()
                if got == read and all(alone[q] != read for q in PARTS if q != p)
            ]
            found |= {Condition(rule, _part_what(read, p)) for p in only}
        if violated <= {rule}:
            fact = facts.get(str(row["field"]), _MISSING) if isinstance(facts, dict) else None
            found |= {
                Condition(rule, _fact_what(row, v)) for v in _fact_values(row) if _same(fact, v)
            }
    return found


def category_coverage(
    oracle: Oracle, table: list[Mapping[str, Any]], cases: Iterable[tuple[Event, Expected]]
) -> RuleCoverage:
    """The coverage of a category table by cases (events with their expected decisions)."""
    conditions = category_conditions(table)
    probed: set[Condition] = set()
    for event, expected in cases:
        probed |= category_probed(oracle, table, event, expected.rules)
    probed &= set(conditions)
    return RuleCoverage(conditions, probed, [c for c in conditions if c not in probed])


def coverage_problem(found: RuleCoverage) -> str | None:
    """The coverage problem verification reports, naming the unprobed conditions."""
    if not found.missing:
        return None
    shown = "; ".join(str(c) for c in found.missing[:SHOWN])
    more = len(found.missing) - SHOWN
    return (
        f"{len(found.missing)} of the {len(found.conditions)} rule conditions are probed by no "
        f"counterfactual: {shown}{f' and {more} more' if more > 0 else ''}; give the "
        "demonstrations a `Task:` line, a `User information:` block and a final answer with "
        "an ELEMENT line in the choices and a VALUE line"
    )


# --------------------------------------------------------------------------- edits


def category_phrases(row: Mapping[str, Any]) -> list[str]:
    """Texts that may name the row's category: its own, then the reader's strongest phrases."""
    lexicon = sorted(LEXICON.get(str(row["category"]), {}).items(), key=lambda kv: (-kv[1], kv[0]))
    own = [str(row["category"]), str(row["violation"])]
    return list(dict.fromkeys([*own, *(p for p, _ in lexicon[:PHRASES_PER_CATEGORY])]))


def _with_part(
    event: Event, action: dict[str, str], part: str, text: str
) -> tuple[str, dict[str, str]] | None:
    """The output whose final action's `part` holds `text`, and the action as read then."""
    if part == "value":
        out = with_line(event.agent_output, "VALUE", f"VALUE: {text}", last=True)
        return None if out is None else (out, {**action, "value": text})
    line = action.get("element_text") or ""
    lines = event.agent_output.split("\n")
    at = [i for i, raw in enumerate(lines) if raw.strip() == line]
    if not line or not at:
        return None
    lines[at[-1]] = f"{lines[at[-1]]} {text}"
    return "\n".join(lines), {**action, "element_text": f"{line} {text}"}


def _row_facts(facts: Mapping[str, Any], row: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    field = str(row["field"])
    for value in _fact_values(row):
        changed = {k: v for k, v in facts.items() if k != field}
        if value is not _MISSING:
            changed[field] = value
        yield f"{field} {_show(value)}", changed


def action_edits(
    oracle: CategoryRulesOracle, event: Event, done: set[tuple[int, str]]
) -> Iterator[tuple[str, Event]]:
    """(what, event) probes of each rule's category through each part alone, on `event`.

    Per row: the action's value, then its element, naming the category under a task that
    names none; the task naming it while the action names another category; each with the
    user fact at each side of the rule's edge and missing. A probe kind is done (added to
    `done`) once it reads exactly on one demonstration.
    """
    readers, category = oracle.readers, oracle.functions["web_action_category"]
    try:
        task = readers.read("parse_task", event)
        action = readers.read("seeact_final_action", event)
        facts = readers.read("parse_user_info", event)
    except Exception:  # noqa: BLE001 - an event the readers refuse: no probes on it
        return
    if not action.get("action") or not isinstance(facts, dict):
        return
    rows = list(oracle.table)
    held = [t for t in (task, NEUTRAL_TASK) if category(t, {}) == OTHER]
    for index, row in enumerate(rows):
        target = str(row["category"])
        others = [r for r in rows if r["category"] != target]
        kinds: list[tuple[str, list[str], list[Mapping[str, Any]], str]] = [
            (part, held, [row], part) for part in PARTS
        ]  # (kind, tasks, rows whose texts the action gets, part)
        task_texts = [t for t in category_phrases(row) if category(t, {}) == target]
        kinds += [("against", task_texts[:1], others[:1], "value")] if others else []
        for kind, tasks, sources, part in kinds:
            if (index, kind) in done:
                continue
            probes = list(_probes(oracle, event, action, facts, row, tasks, sources, part, kind))
            if probes:
                done.add((index, kind))
            yield from probes


def _probes(
    oracle: CategoryRulesOracle,
    event: Event,
    action: dict[str, str],
    facts: Mapping[str, Any],
    row: Mapping[str, Any],
    tasks: list[str],
    sources: list[Mapping[str, Any]],
    part: str,
    kind: str,
) -> Iterator[tuple[str, Event]]:
    """The events of one probe kind: the first task and action text that read as meant."""
    category = oracle.functions["web_action_category"]
    target = str(row["category"]) if kind != "against" else str(sources[0]["category"])
    for task in tasks:
        for text in [p for s in sources for p in category_phrases(s)]:
            edited = _with_part(event, action, part, text)
            if edited is None:
                return
            output, read = edited
            alone = category("" if kind == "against" else task, {part: read[part]})
            if alone != target:
                continue
            found = []
            for what, changed in _row_facts(facts, row):
                new = Event(with_task(task, changed), output)
                if oracle.readers.exact(
                    event,
                    new,
                    {"parse_task": task, "parse_user_info": changed, "seeact_final_action": read},
                ):
                    found.append((f"task {task!r}, {PARTS[part]} {text!r}, {what}", new))
            if found:
                yield from found
                return


def category_table_of(oracle: Oracle) -> list[Mapping[str, Any]] | None:
    """The category table an oracle's edits probe (its own, or its prober's); None if none.

    A rule table, a policy model's and derived rules' probe table alike: the conditions
    are those of the rules whose expected decisions the oracle gives.
    """
    from guardagent.counterfactuals.oracles import CategoryRulesOracle

    for candidate in (oracle, getattr(oracle, "probe", None)):
        if isinstance(candidate, CategoryRulesOracle):
            return list(candidate.table)
    return None


def rule_coverage(profile: Profile) -> RuleCoverage | None:
    """The coverage of a profile's category rules by its request's suite (None: none)."""
    from guardagent.counterfactuals.suite import request_suite

    return request_suite(profile).conditions


def rule_coverage_note(profile: Profile) -> str | None:
    """One line for `guardagent profile check`: which rule conditions the suite probes."""
    found = rule_coverage(profile)
    return None if found is None else conditions_note(found)


def conditions_note(found: RuleCoverage) -> str:
    """One line: how many rule conditions the cases probe alone, and which they miss."""
    rules = list(dict.fromkeys(c.rule for c in found.conditions))
    note = (
        f"rule conditions: {len(found.probed)} of {len(found.conditions)} probed alone by "
        f"counterfactuals over {len(rules)} rules (category from the task, from the "
        "action's value, from its element; each user fact at each side and missing)"
    )
    if found.missing:
        more = len(found.missing) - SHOWN
        note += "; missing: " + "; ".join(str(c) for c in found.missing[:SHOWN])
        note += f" and {more} more" if more > 0 else ""
    return note
