"""The oracle of a profile that has neither a rule table nor a policy model: derived rules.

With a model configured, the guard derives a policy model from the guard request alone (the
deployer's text and the agent specification, never an event: :mod:`guardagent.authoring.derive`)
and registers it here, per request fingerprint. Each of its predicates says how it follows
from an event: an ``expression`` over the profile's toolbox readers (evaluated by
:mod:`.expressions`), or a reader whose result lists targets (``assign: {tool:
ehr_accessed_columns}`` with ``target: lab.labname``). The oracle evaluates those on every
counterfactual event and decides with z3, like the shipped policy oracles, and probes the
request with the table oracle its comparisons fit (web action categories, identities, tool
calls; :mod:`.probes`).

Nothing here calls a model: the registry holds what the derivation produced, and
:func:`derived_policy` gives the part that guards (under ``approved_only``, the rules a
human approved).
"""

from __future__ import annotations

import ast
import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from typing_extensions import override

from guardagent.counterfactuals.cells import cell_edits
from guardagent.counterfactuals.events import Event, with_column_read, with_line
from guardagent.counterfactuals.expressions import Evaluator, parse_expression
from guardagent.counterfactuals.oracles import (
    UNLISTED_ROLE,
    AccessOracle,
    CategoryRulesOracle,
    Edit,
    Oracle,
    ToolRulesOracle,
)
from guardagent.counterfactuals.policy_oracle import PolicyOracle, Predicates
from guardagent.counterfactuals.probes import (
    TOOL_READERS,
    access_table,
    category_table,
    predicate_comparisons,
    tool_table,
)
from guardagent.policy.model import PolicyModel, dump_policy, guarding_model
from guardagent.profiles.loader import Profile
from guardagent.readers.evidence import unreadable

_LOCK = threading.Lock()
_DERIVED: dict[str, tuple[PolicyModel, str]] = {}  # request fingerprint -> (model, where)
_GUARDING: dict[tuple[str, bool], tuple[PolicyModel, str, PolicyModel]] = {}
_STAMPS: dict[str, tuple[int, int]] = {}  # where -> the file's (size, mtime) when registered


def register_derived(profile: Profile, model: PolicyModel, where: str = "") -> None:
    """Record the policy model derived from `profile`'s request (`where`: its file, if any)."""
    with _LOCK:
        _DERIVED[profile.fingerprint] = (model, where)
        _GUARDING.clear()
        if where:
            _STAMPS[where] = _stamp(where)


def _stamp(where: str) -> tuple[int, int]:
    try:
        stat = Path(where).stat()
    except OSError:
        return (-1, -1)
    return (stat.st_size, stat.st_mtime_ns)


def changed_on_disk(profile: Profile) -> bool:
    """Whether the file of a registered derivation was edited since (a reviewer's decisions)."""
    with _LOCK:
        entry = _DERIVED.get(profile.fingerprint)
        return bool(entry and entry[1] and _STAMPS.get(entry[1]) != _stamp(entry[1]))


def forget_derived(profile: Profile) -> None:
    """Drop a registered derivation (tests; a deployer's re-derivation)."""
    with _LOCK:
        _DERIVED.pop(profile.fingerprint, None)
        _GUARDING.clear()


def clear_derived() -> None:
    """Forget every registered derivation (tests: a fresh process)."""
    with _LOCK:
        _DERIVED.clear()
        _GUARDING.clear()


def derived_entry(profile: Profile) -> tuple[PolicyModel, str] | None:
    """The registered derivation, whole (every rule, whatever its review), and its file."""
    if profile.policy_model:
        return None
    with _LOCK:
        return _DERIVED.get(profile.fingerprint)


def derived_policy(profile: Profile) -> PolicyModel | None:
    """The derived rules that guard `profile` (None: no derivation registered).

    Under the profile's ``approved_only`` only the rules a human approved or edited guard.
    """
    found = _guarding(profile)
    return None if found is None else found[0]


def derived_digest(profile: Profile) -> str:
    """A digest of the guarding derived rules ("" without), for verification's cache keys."""
    found = _guarding(profile)
    return "" if found is None else found[1]


def _guarding(profile: Profile) -> tuple[PolicyModel, str] | None:
    """The guarding part of the registered derivation and its digest (made once each)."""
    entry = derived_entry(profile)
    if entry is None:
        return None
    key = (profile.fingerprint, profile.approved_only)
    with _LOCK:
        found = _GUARDING.get(key)
    if found is None or found[2] is not entry[0]:
        model = guarding_model(entry[0], approved_only=profile.approved_only)
        digest = hashlib.sha256(dump_policy(model).encode("utf-8")).hexdigest()[:24]
        found = (model, digest, entry[0])
        with _LOCK:
            _GUARDING[key] = found
    return found[0], found[1]


def prober_for(model: PolicyModel, profile: Profile) -> Oracle | None:
    """The table oracle whose edits probe the derived rules, by what their expressions read."""
    readers = {c.reader for c in predicate_comparisons(model, [p.name for p in model.predicates])}
    tools = set(profile.toolbox)
    if "web_action_category" in readers and {"parse_user_info", "parse_task"} <= tools:
        return CategoryRulesOracle(category_table(model), profile)
    if "parse_identity" in readers:
        return AccessOracle(access_table(model), profile)
    if readers & set(TOOL_READERS) and "parse_user_info" in tools:
        return ToolRulesOracle(tool_table(model), profile)
    return None


class DerivedOracle(PolicyOracle):
    """Expected decisions from the derived policy model over its own assignment expressions.

    Attributes:
        model: The derived rules that guard (see :func:`derived_policy`).
        probe: The table oracle whose edits probe the request, or None (then only the
            demonstrations and the irrelevant-text cases are run, and the coverage check
            names every rule no demonstration violates).
    """

    kind = "derived policy model"
    predicate_function = ""

    def __init__(self, model: PolicyModel, profile: Profile) -> None:  # noqa: D107
        probe = prober_for(model, profile)
        Oracle.__init__(self, probe.table if probe else [], profile)
        self.model = model
        self.threshold = profile.safety_threshold
        self.probe: Oracle | None = probe  # type: ignore[assignment]
        functions = self.functions
        self._expressions: dict[str, ast.expr] = {}
        self._targets: dict[tuple[str, str, str], str] = {}  # (tool, group, item) -> name
        self._labels: dict[tuple[str, str], set[tuple[int, tuple[str, ...]]]] = {}
        self._probed: set[str] = set()  # identities whose cells are probed (.cells)
        for pred in model.predicates:
            how = pred.assigned_by
            if how is None:
                continue
            if how.expression is not None:
                self._expressions[pred.name] = parse_expression(how.expression, functions)
            elif how.tool is not None and pred.target and "." in pred.target:
                group, item = pred.target.split(".", 1)
                self._targets[(how.tool, group, item)] = pred.name

    @classmethod
    @override
    def probe_table(cls, model: PolicyModel) -> Any:
        return []

    @property
    @override
    def source(self) -> str:
        return "policy model derived from the guard request"

    @override
    def predicates(self, event: Event) -> Predicates:
        """Each predicate's value on `event` (reader errors propagate: unreadable)."""
        run = Evaluator(self.functions, *event)
        values: Predicates = {}
        actions = set(self.model.actions)
        for name, node in self._expressions.items():
            value = run.truth(node)
            if name not in actions or value is not False:  # an action not taken is omitted
                values[name] = value
        for tool in dict.fromkeys(t for t, _, _ in self._targets):
            read = self.readers.read(tool, event)
            for group, items in read.items() if isinstance(read, dict) else []:
                for item in items:
                    target = self._targets.get((tool, str(group), str(item)))
                    if target is None:
                        unreadable(
                            "target_outside_policy",
                            f"the derived rules have no predicate for {group}.{item}",
                        )
                    values[target] = True
        return values

    @override
    def edits(self, event: Event) -> Iterator[Edit]:
        if self.probe is not None:
            yield from self.probe.edits(event)
        yield from self._target_edits(event)
        # access rules: each identity reads its allowed, denied and all columns (.cells)
        yield from (Edit(what, new) for what, new in cell_edits(self, event, self._probed))

    def _target_edits(self, event: Event) -> Iterator[Edit]:
        """Each target read in addition (by each identity, for access rules).

        Per target, one event per outcome (label and rules violated) is kept across the
        demonstrations: the boundaries of its rules, not every identity times every
        demonstration.
        """
        roles: list[str | None] = [None]
        if isinstance(self.probe, AccessOracle) and "parse_identity" in self.readers:
            roles = [*sorted(self.probe.table), UNLISTED_ROLE]
        for tool, group, item in self._targets:
            if tool not in self.readers:
                continue
            accessed = self._read(tool, event)
            if not isinstance(accessed, dict) or item in accessed.get(group, []):
                continue
            read = {**accessed, group: sorted({*accessed.get(group, []), item})}
            output = with_column_read(event.agent_output, group, item)
            seen = self._labels.setdefault((group, item), set())
            for role in roles:
                changed: dict[str, object] = {tool: read}
                agent_input: str | None = event.agent_input
                if role is not None:
                    agent_input = with_line(
                        event.agent_input, "Identity", f"Identity: {role}", last=False
                    )
                    changed["parse_identity"] = role
                if agent_input is None:
                    continue
                new = Event(agent_input, output)
                if "ehr_code" in self.readers:  # the code text itself: it holds the new cell
                    changed["ehr_code"] = self._read("ehr_code", new)
                if not self.readers.exact(event, new, changed):
                    continue
                got = self.decide(new)
                if (got.label, got.rules) not in seen:
                    seen.add((got.label, got.rules))
                    who = f" by identity {role}" if role is not None else ""
                    yield Edit(f"reads {group}.{item}{who}", new)

    @override
    def slots(self, event: Event, text: str) -> Iterator[Edit]:
        if self.probe is not None:
            yield from self.probe.slots(event, text)
