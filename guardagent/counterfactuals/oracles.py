"""Oracles: what the guard request decides on any event, from the profile's policy.

A profile kind whose program holds its policy as a literal (`PERMISSIONS` for access
control, `RULES` for rules over user facts) has an oracle here: the table plus the toolbox's
trusted readers and checks give the expected decision of *any* event, not only of the
labelled demonstrations. Each oracle also knows which inputs its rules turn on, and edits a
demonstration's event to flip each of them (who the user is, each fact a rule reads, each
rule's trigger) and to put text into the fields its readers return.

The table is taken from the profile (:meth:`guardagent.profiles.loader.Profile.policy`),
never from the program under test. Kinds are recognised by the table's shape and the
readers and checks the profile's toolbox holds; a profile that matches none has no oracle,
and verification falls back to labelled demonstrations per rule. A profile that names a
logic policy model (:mod:`guardagent.policy`) has no table: its oracle decides with the
model and z3 (:mod:`.policy_oracle`), and :func:`oracle_for` picks it first.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, NamedTuple

from typing_extensions import override

from guardagent.counterfactuals.cells import UNLISTED_ROLE as UNLISTED_ROLE  # re-exported
from guardagent.counterfactuals.cells import Cell, cell_edits
from guardagent.counterfactuals.events import (
    Event,
    Readers,
    canonical,
    with_facts,
    with_line,
    with_task,
    with_tool_call,
)
from guardagent.counterfactuals.rule_conditions import action_edits, category_phrases
from guardagent.profiles.loader import Profile
from guardagent.tools.compare import compare
from guardagent.tools.verdict import Violations

_MISSING = object()


class Expected(NamedTuple):
    """The decision the guard request gives an event."""

    label: int
    details: Violations
    rules: tuple[str, ...]  # the request's rules this decision reports violated


class Edit(NamedTuple):
    """A counterfactual event and what was changed to make it."""

    what: str
    event: Event


class Oracle(ABC):
    """The policy table of one profile kind: expected decisions and the edits that probe them."""

    kind: ClassVar[str]
    needs: ClassVar[frozenset[str]]  # toolbox functions the oracle reads and checks with

    def __init__(self, table: Any, profile: Profile) -> None:
        self.table = table
        self.readers = Readers(profile.tools())
        self.functions: dict[str, Callable[..., Any]] = profile.tools().functions()
        self.decided_cells: dict[Cell, bool] | None = None  # an access oracle's (.cells)

    @classmethod
    def fits(cls, profile: Profile) -> bool:
        """Whether the profile's toolbox holds what this kind reads and checks with."""
        return cls.needs <= set(profile.toolbox)

    @property
    def source(self) -> str:
        """Where the expected decisions come from, as problems name it."""
        return f"{self.kind} table"

    @abstractmethod
    def rules(self) -> list[str]:
        """The request's rules, as decisions name them."""

    @abstractmethod
    def decide(self, event: Event) -> Expected:
        """The decision the table gives `event` (reader exceptions propagate)."""

    @abstractmethod
    def edits(self, event: Event) -> Iterator[Edit]:
        """Events that differ from `event` in one input a rule turns on."""

    @abstractmethod
    def slots(self, event: Event, text: str) -> Iterator[Edit]:
        """Events where `text` reaches a field a reader returns (task, typed value, ...)."""

    def _read(self, name: str, event: Event) -> Any:
        return self.readers.read(name, event)

    def _exact(self, old: Event, new: Event | None, what: str, **changed: Any) -> Iterator[Edit]:
        if new is not None and new != old and self.readers.exact(old, new, changed):
            yield Edit(what, new)


# --------------------------------------------------------------------------- value probes


_ABOVE = {">": 1, "<=": 1, "==": 1, "!=": 1, ">=": -1, "<": -1}


def boundary(op: str, value: Any) -> list[Any]:
    """Values on both sides of `x <op> value`: the literal and its neighbour across the edge."""
    if isinstance(value, bool):
        return [value, not value]
    if isinstance(value, int | float):
        return [value, value + _ABOVE.get(op, 1)]
    if isinstance(value, str):
        return [value, f"not {value}"]
    if isinstance(value, list | tuple | set | frozenset) and value:
        first = sorted(value, key=repr)[0]
        return [first, f"not {first}"]
    return [value]


def hostile(value: Any) -> list[Any]:
    """Spellings a model-chosen argument may take for the literal.

    Other case and spacing, a number as text, NaN: the toolbox's checks judge them (fail
    closed), and a program must agree.
    """
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float("nan"), str(value + 1)]
    if isinstance(value, str):
        return [value.upper(), f" {value} "]
    if isinstance(value, list | tuple | set | frozenset) and value:
        first = sorted(value, key=repr)[0]
        return hostile(first)
    return []


def _show(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return "missing" if value is _MISSING else repr(value)


class _FactRules(Oracle):
    """Rules that require a user fact (`field <op> value`); facts come from the input."""

    def rules(self) -> list[str]:
        return list(dict.fromkeys(str(r["violation"]) for r in self.table))

    def _fact_values(self) -> dict[str, list[Any]]:
        values: dict[str, list[Any]] = {}
        for rule in self.table:
            seen = values.setdefault(str(rule["field"]), [])
            seen += [v for v in boundary(rule["op"], rule["value"]) if v not in seen]
        return values

    def _flip_facts(self, event: Event) -> Iterator[Edit]:
        facts = self._read("parse_user_info", event)
        for field, values in self._fact_values().items():
            for value in [*values, _MISSING]:
                flipped = {k: v for k, v in facts.items() if k != field}
                if value is not _MISSING:
                    flipped[field] = value
                if canonical(flipped) == canonical(facts):
                    continue
                new = Event(with_facts(event.agent_input, flipped), event.agent_output)
                yield from self._exact(
                    event, new, f"{field} {_show(value)}", parse_user_info=flipped
                )

    def _facts_for(self, event: Event, rule: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        facts = self._read("parse_user_info", event)
        for value in boundary(rule["op"], rule["value"]):
            yield f"{rule['field']} {_show(value)}", {**facts, str(rule["field"]): value}


class CategoryRulesOracle(_FactRules):
    """Rules per action category of a web agent (`check_rules`, SeeAct's layout)."""

    kind = "category rules"
    needs = frozenset(
        {
            "parse_user_info",
            "parse_task",
            "seeact_final_action",
            "web_action_category",
            "check_rules",
        }
    )

    def __init__(self, table: Any, profile: Profile) -> None:
        super().__init__(table, profile)
        self._probed: set[tuple[int, str]] = set()  # (row, probe kind) done (.rule_conditions)

    def _category(self, task: str, action: dict[str, str]) -> str:
        return str(self.functions["web_action_category"](task, action))

    @override
    def decide(self, event: Event) -> Expected:
        user = self._read("parse_user_info", event)
        category = self._category(
            self._read("parse_task", event), self._read("seeact_final_action", event)
        )
        violated = self.functions["check_rules"](user, category, self.table)
        return Expected(1 if violated else 0, list(violated), tuple(violated))

    @override
    def edits(self, event: Event) -> Iterator[Edit]:
        yield from self._flip_facts(event)
        action = self._read("seeact_final_action", event)
        for rule in self.table:
            texts = category_phrases(rule)  # the rule's own texts, then the reader's phrases
            task = next((t for t in texts if self._category(t, action) == rule["category"]), None)
            if task is None:
                continue  # no task of ours reads as this category here: coverage says so
            for what, facts in self._facts_for(event, rule):
                new = Event(with_task(task, facts), event.agent_output)
                yield from self._exact(
                    event, new, f"task {task!r}, {what}", parse_task=task, parse_user_info=facts
                )
        # the action varied with the task held, each part alone (.rule_conditions)
        yield from (Edit(what, new) for what, new in action_edits(self, event, self._probed))

    @override
    def slots(self, event: Event, text: str) -> Iterator[Edit]:
        facts = self._read("parse_user_info", event)
        task = f"{self._read('parse_task', event)} {text}"
        new = Event(with_task(task, facts), event.agent_output)
        yield from self._exact(event, new, f"task + {text!r}", parse_task=task)
        action = self._read("seeact_final_action", event)
        if not action.get("action"):
            return
        out = with_line(event.agent_output, "VALUE", f"VALUE: {text}", last=True)
        if out is not None:
            yield from self._exact(
                event,
                Event(event.agent_input, out),
                f"VALUE {text!r}",
                seeact_final_action={**action, "value": text},
            )
        line = action.get("element_text") or ""
        lines = event.agent_output.split("\n")
        at = [i for i, raw in enumerate(lines) if raw.strip() == line]
        if line and at:
            lines[at[-1]] = f"{lines[at[-1]]} {text}"
            new = Event(event.agent_input, "\n".join(lines))
            read = {**action, "element_text": f"{line} {text}"}
            yield from self._exact(event, new, f"element + {text!r}", seeact_final_action=read)


class ToolRulesOracle(_FactRules):
    """Rules over a tool-using agent's pending calls (`check_tool_rules`, middleware layout).

    Reads the calls with `parse_tool_calls` (every call) when the toolbox has it, else with
    the single-call `parse_tool_call`; an output with no call (a final answer) is allowed.
    """

    kind = "tool-call rules"
    needs = frozenset({"parse_user_info", "check_tool_rules"})
    _READERS = ("parse_tool_calls", "parse_tool_call")

    @classmethod
    @override
    def fits(cls, profile: Profile) -> bool:
        return super().fits(profile) and any(r in profile.toolbox for r in cls._READERS)

    def __init__(self, table: Any, profile: Profile) -> None:
        super().__init__(table, profile)
        self.reader = next(r for r in self._READERS if r in profile.toolbox)

    def _pending(self, event: Event) -> list[dict[str, Any]]:
        read = self._read(self.reader, event)
        if self.reader == "parse_tool_call":
            return [read] if read["name"] else []
        return list(read)

    def _as_read(self, name: str, args: dict[str, Any]) -> Any:
        """What the reader returns for an output whose only call is `name(args)`."""
        call = {"name": name, "args": args}
        return call if self.reader == "parse_tool_call" else [call]

    @override
    def decide(self, event: Event) -> Expected:
        user = self._read("parse_user_info", event)
        calls = self._pending(event)
        if not calls:
            return Expected(0, [], ())  # a final answer: the rules govern tool calls only
        violated: list[str] = []
        for call in calls:
            found = self.functions["check_tool_rules"](call, user, self.table)
            violated += [v for v in found if v not in violated]
        return Expected(1 if violated else 0, violated, tuple(violated))

    def _calls(self, call: dict[str, Any], rule: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        """(what, args) for calls of the rule's tool with each condition at its boundary."""
        name = str(rule["tool"])
        base = dict(call["args"]) if call.get("name") == name else {}
        conditions = [c for c in rule.get("when") or [] if isinstance(c, dict)]
        meeting = {
            str(c["arg"]): next(
                (v for v in boundary(c["op"], c["value"]) if compare(v, c["op"], c["value"])),
                c["value"],
            )
            for c in conditions
        }
        if not conditions:
            yield "", base
        for cond in conditions:
            arg = str(cond["arg"])
            for value in [*boundary(cond["op"], cond["value"]), *hostile(cond["value"])]:
                yield f"{arg}={_show(value)}", {**base, **meeting, arg: value}

    @override
    def edits(self, event: Event) -> Iterator[Edit]:
        yield from self._flip_facts(event)
        calls = self._pending(event)
        call = calls[-1] if calls else {"name": "", "args": {}}
        for rule in self.table:
            name = str(call["name"] or "any_tool") if rule["tool"] == "*" else str(rule["tool"])
            for what_call, args in self._calls(call, {**rule, "tool": name}):
                for what_fact, facts in self._facts_for(event, rule):
                    new = Event(
                        with_facts(event.agent_input, facts),
                        with_tool_call(event.agent_output, name, args),
                    )
                    changed = {self.reader: self._as_read(name, args), "parse_user_info": facts}
                    yield from self._exact(
                        event, new, f"{name}({what_call}), {what_fact}", **changed
                    )

    @override
    def slots(self, event: Event, text: str) -> Iterator[Edit]:
        calls = self._pending(event)
        if len(calls) != 1:
            return
        name, args = calls[0]["name"], dict(calls[0]["args"])
        variants = [("note", {**args, "note": text})]
        variants += [(k, {**args, k: text}) for k, v in args.items() if isinstance(v, str)]
        for arg, changed in variants:
            new = Event(event.agent_input, with_tool_call(event.agent_output, name, changed))
            yield from self._exact(
                event, new, f"{name} {arg}={text!r}", **{self.reader: self._as_read(name, changed)}
            )


class AccessOracle(Oracle):
    """Table and column permissions per identity (`check_access`, EHRAgent's layout)."""

    kind = "access control"
    needs = frozenset({"parse_identity", "ehr_accessed_columns", "check_access"})

    @override
    def rules(self) -> list[str]:
        return sorted(self.table)

    @override
    def decide(self, event: Event) -> Expected:
        role = self._read("parse_identity", event)
        accessed = self._read("ehr_accessed_columns", event)
        if role not in self.table:
            return Expected(1, accessed, (role,))
        blocked = self.functions["check_access"](accessed, self.table[role])
        return Expected(1 if blocked else 0, blocked, (role,) if blocked else ())

    @override
    def edits(self, event: Event) -> Iterator[Edit]:
        accessed = self._read("ehr_accessed_columns", event)
        roles = [*sorted(self.table), *([UNLISTED_ROLE] if any(accessed.values()) else [])]
        for role in roles:
            new = with_line(event.agent_input, "Identity", f"Identity: {role}", last=False)
            if new is not None:
                yield from self._exact(
                    event, Event(new, event.agent_output), f"identity {role}", parse_identity=role
                )

    @override
    def slots(self, event: Event, text: str) -> Iterator[Edit]:
        if "parse_question" not in self.readers:
            return
        question = f"{self._read('parse_question', event)} {text}"
        new = with_line(event.agent_input, "Question", f"Question: {question}", last=False)
        if new is not None:
            yield from self._exact(
                event,
                Event(new, event.agent_output),
                f"question + {text!r}",
                parse_question=question,
            )


class PermissionsOracle(AccessOracle):
    """The access oracle of a profile's own `PERMISSIONS` table: it also probes every cell.

    Each identity (and an unlisted one) reads its allowed, its denied and all columns
    (:mod:`.cells`), once per suite; the prober of a policy model keeps to identity flips.
    """

    def __init__(self, table: Any, profile: Profile) -> None:
        super().__init__(table, profile)
        self._probed: set[str] = set()

    @override
    def edits(self, event: Event) -> Iterator[Edit]:
        yield from super().edits(event)
        yield from (Edit(what, new) for what, new in cell_edits(self, event, self._probed))


POLICY_NAMES = ("PERMISSIONS", "RULES")
"""The literals a profile's program may hold its policy table in."""

_KINDS: dict[str, tuple[type[Oracle], ...]] = {
    "PERMISSIONS": (PermissionsOracle,),
    "RULES": (CategoryRulesOracle, ToolRulesOracle),
}


def _table_fits(kind: type[Oracle], table: Any) -> bool:
    if issubclass(kind, AccessOracle):
        return isinstance(table, dict) and all(
            isinstance(cols, dict) and all(isinstance(c, list) for c in cols.values())
            for cols in table.values()
        )
    scope = "category" if kind is CategoryRulesOracle else "tool"
    needed = {scope, "field", "op", "value", "violation"}
    return (
        isinstance(table, list)
        and bool(table)
        and all(isinstance(r, dict) and needed <= set(r) for r in table)
    )


def oracle_for(profile: Profile) -> Oracle | None:
    """The oracle of a profile's policy, or None when its kind is not recognised.

    A profile that names a policy model gets the policy-model oracle of the predicate
    function its toolbox holds (none if the model does not load: verification then fails
    on loading it); otherwise the oracle of the table its program holds; otherwise that of
    the rules a model derived from the guard request (:mod:`.derived`), once derived.
    """
    if profile.policy_model:
        from guardagent.counterfactuals.policy_oracle import POLICY_KINDS  # imports this module
        from guardagent.policy.model import PolicyError
        from guardagent.policy.runs import profile_policy

        try:
            model = profile_policy(profile)
        except PolicyError:
            return None
        if model is None:
            return None
        return next((kind(model, profile) for kind in POLICY_KINDS if kind.fits(profile)), None)
    found = table_oracle(profile)
    if found is not None:
        return found
    from guardagent.counterfactuals.derived import DerivedOracle, derived_policy

    derived = derived_policy(profile)  # rules a model derived from the request, if any
    return None if derived is None else DerivedOracle(derived, profile)


def table_oracle(profile: Profile) -> Oracle | None:
    """The oracle of the rule or permission table a profile's program holds, if any."""
    for name, kinds in _KINDS.items():
        try:
            table = profile.policy(name)
        except (KeyError, ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        for kind in kinds:
            if kind.fits(profile) and _table_fits(kind, table):
                return kind(table, profile)
    return None
