"""Task-scoped policies: what one task adds to the deployment's policy, for one thread.

A browser or assistant deployment runs many tasks under one policy, and each task has its
own limits: the sites of this task, the tool it must finish with, the actions it must not
take. Rather than one profile per task, the host attaches a :class:`TaskPolicy` to the
thread's calls (``GuardAgent.check_trace(..., task=...)``):

- ``params``: values for the ``"$name"`` placeholders of the policy's trace expressions
  (:mod:`guardagent.trace.event.params`), e.g. ``{"sites": ["shop.example/orders/*"]}``;
- ``predicates`` and ``rules``: entries in the policy file's format, added to the base
  policy's;
- ``secrets`` and ``values``: the task's own declared secrets (literals only: an ``env:``
  secret would let whoever sends tasks probe the guard's environment) and records sections,
  in the policy file's format, added to the base policy's (a name the base declares is
  refused). Task predicates are trace predicates (the host computes them; no program, no
  model); rules may use the base policy's predicates. A task adds: it cannot replace or
  remove a base rule, rename a predicate, or relabel a tool.

Attaching merges the task into the base model and checks the result with z3 (the checks of
`policy check`): a task that does not load, names what neither declares, sets a parameter no
expression uses, or whose hard rules contradict the base's is refused with every problem
(:class:`TaskPolicyError`). The merged model, its compiled solvers and resolved expressions
are cached by the task's content fingerprint, so every call of the thread, and every thread
of the same task, reuses them.

Only trusted code attaches a task: the host's Python (`check_trace`'s caller). A served
graph's client cannot: neither the served input nor its context schema has such a field.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from guardagent.policy.model import FORMAT, PolicyError, PolicyModel, load_policy_text
from guardagent.trace.event.params import placeholders, resolve
from guardagent.trace.predicates.fact import Fact

if TYPE_CHECKING:
    from guardagent.trace.found.secrets import Secrets
    from guardagent.trace.sources.records import Records

MAX_CACHED = 256
"""Attached tasks kept per process (least recently used dropped first)."""

_KEYS = frozenset({"name", "params", "predicates", "rules", "secrets", "values"})


class TaskPolicyError(ValueError):
    """A task policy that cannot be attached; `problems` lists every problem found."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class TaskPolicy:
    """What one task adds to the deployment's policy.

    Attributes:
        name: Shown in the decision (task rules' `source` default to ``task <name>``).
        params: Values of the policy's ``"$name"`` placeholders (JSON values).
        predicates: Extra predicates, as in a policy file (each assigned by ``trace``).
        rules: Extra rules, as in a policy file.
        secrets: Extra declared secrets, as a policy file's ``secrets:`` (literals only).
        values: Extra sections of the user's records, as a policy file's ``values:``.
    """

    name: str = "task"
    params: Mapping[str, Any] = field(default_factory=dict)
    predicates: tuple[Mapping[str, Any], ...] = ()
    rules: tuple[Mapping[str, Any], ...] = ()
    secrets: Mapping[str, Any] | None = None
    values: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, spec: TaskPolicy | Mapping[str, Any] | None) -> TaskPolicy:
        """A task policy from itself, a mapping with its fields, or None (no task).

        Raises:
            TaskPolicyError: unknown keys, or fields of the wrong shape.
        """
        if spec is None:
            return cls()
        if isinstance(spec, TaskPolicy):
            return spec
        if not isinstance(spec, Mapping):
            raise TaskPolicyError([f"a task policy is a mapping, not {type(spec).__name__}"])
        problems = [
            f"unknown key {k!r} (a task sets {', '.join(sorted(_KEYS))})"
            for k in spec
            if k not in _KEYS
        ]
        params, name = spec.get("params") or {}, spec.get("name", "task")
        if not isinstance(params, Mapping) or not all(isinstance(k, str) for k in params):
            problems.append("params must be a mapping of names to values")
            params = {}
        if not isinstance(name, str) or not name.strip():
            problems.append("name must be a non-empty string")
        entries = {}
        for key in ("predicates", "rules"):
            raw = spec.get(key) or []
            if not isinstance(raw, list | tuple) or not all(isinstance(e, Mapping) for e in raw):
                problems.append(f"{key} must be a list of mappings")
                raw = []
            entries[key] = tuple(dict(e) for e in raw)
        sections: dict[str, dict[str, Any] | None] = {}
        for key in ("secrets", "values"):
            raw = spec.get(key)
            if raw is not None and not isinstance(raw, Mapping):
                problems.append(f"{key} must be a mapping (as in a policy file)")
            sections[key] = dict(raw) if isinstance(raw, Mapping) and raw else None
        problems += [
            f"secrets: {n!r}: a task's secret is a literal ({{value: ...}}), never env"
            for n, v in (sections["secrets"] or {}).items()
            if isinstance(v, Mapping) and "env" in v
        ]
        if problems:
            raise TaskPolicyError(problems)
        return cls(
            str(name),
            dict(params),
            entries["predicates"],
            entries["rules"],
            sections["secrets"],
            sections["values"],
        )

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the task's canonical JSON: equal tasks share one cache entry.

        Raises:
            TaskPolicyError: a parameter or entry that is not JSON (NaN, objects).
        """
        doc = {
            "name": self.name,
            "params": self.params,
            "predicates": self.predicates,
            "rules": self.rules,
            "secrets": self.secrets,
            "values": self.values,
        }
        try:
            text = json.dumps(doc, sort_keys=True, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise TaskPolicyError([f"a task policy holds only JSON values ({exc})"]) from None
        except RecursionError:
            raise TaskPolicyError(["a task policy nested too deep to read"]) from None
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class AttachedTask:
    """A task merged into a base policy and checked: what a guarded call needs.

    Attributes:
        task: The task policy.
        model: The base policy with the task's predicates and rules.
        bindings: Trace expressions of the predicates the trace can decide, parameters
            resolved.
        unset: Predicates left open because the task does not set their parameters
            (name -> the missing parameters).
        warnings: What `policy check` warns about the task's own rules and predicates.
        fingerprint: The task's fingerprint.
    """

    task: TaskPolicy
    model: PolicyModel
    bindings: dict[str, str]
    unset: dict[str, tuple[str, ...]]
    warnings: tuple[str, ...]
    fingerprint: str

    def open_facts(self) -> dict[str, Fact]:
        """The facts of the `unset` predicates: open (None), saying which parameter is missing."""
        return {
            name: Fact(
                self.model.trace_bindings[name],
                None,
                (),
                f"task parameter(s) {', '.join(missing)} not set: the host attaches them "
                "with check_trace(..., task={'params': {...}})",
            )
            for name, missing in self.unset.items()
        }


_cache: OrderedDict[tuple[int, str], tuple[PolicyModel, AttachedTask]] = OrderedDict()
_lock = threading.Lock()


def attach_task(base: PolicyModel, spec: TaskPolicy | Mapping[str, Any] | None) -> AttachedTask:
    """The base policy with the task merged in and checked (cached by content).

    Raises:
        TaskPolicyError: the task cannot be attached (every problem, in the user's terms).
    """
    task = TaskPolicy.of(spec)
    fingerprint = task.fingerprint
    key = (id(base), fingerprint)
    with _lock:
        found = _cache.get(key)
        if found is not None and found[0] is base:  # the id of a live model: never reused
            _cache.move_to_end(key)
            return found[1]
    attached = _attach(base, task, fingerprint)
    with _lock:
        _cache[key] = (base, attached)
        while len(_cache) > MAX_CACHED:
            _cache.popitem(last=False)
    return attached


def _task_entries(base: PolicyModel, task: TaskPolicy) -> tuple[PolicyModel, list[str]]:
    """The task's predicates and rules read by the policy reader, against the base's names.

    The base predicates a task entry names as a ``parent`` or in a rule's ``actions`` are
    there as stubs (name, kind), so the reader checks the action tree; rules may use any
    base predicate, and names the task declares again are refused.
    """
    problems = [
        f"predicate {p.get('name')!r}: a task predicate is assigned by `trace`"
        for p in task.predicates
        if not (isinstance(p.get("assign"), Mapping) and set(p["assign"]) == {"trace"})
    ]
    named = {p.get("parent") for p in task.predicates} | {
        a for r in task.rules for a in (r.get("actions") or []) if isinstance(a, str)
    }
    stubs = [{"name": p.name, "kind": p.kind} for p in base.predicates if p.name in named]
    rules = [{"source": f"task {task.name}", **r} for r in task.rules]
    doc: dict[str, Any] = {
        "format": FORMAT,
        "name": task.name,
        "version": "task",
        "predicates": [*stubs, *task.predicates],
        "rules": rules,
    }
    doc.update({k: v for k, v in (("secrets", task.secrets), ("values", task.values)) if v})
    try:  # JSON is YAML: the policy reader reads it, positions and all
        read = load_policy_text(
            json.dumps(doc, allow_nan=False), f"<task {task.name}>", strict=False
        )
    except PolicyError as exc:
        raise TaskPolicyError([*problems, *(i.message for i in exc.issues)]) from None
    declared = set(base.by_name)
    problems += [
        f"predicate {p.name!r} is a predicate of the base policy: a task adds "
        "predicates, it does not redefine them"
        for p in read.predicates[len(stubs) :]
        if p.name in declared
    ]
    taken = {r.id for r in base.rules}
    problems += [
        f"rule {r.id!r} is a rule of the base policy: a task adds rules, it does not replace them"
        for r in read.rules
        if r.id in taken
    ]
    problems += [
        f"rule {rule} uses undefined predicate {name!r}"
        for name, uses in read.undefined.items()
        if name not in declared
        for rule, _ in uses
    ]
    problems += [
        f"secret {n!r} is a secret of the base policy: a task adds secrets"
        for n in _secret_names(read.secrets) & _secret_names(base.secrets)
    ]
    problems += [
        f"values section {n!r} is a section of the base policy: a task adds sections"
        for n in _section_names(read.values) & _section_names(base.values)
    ]
    return dataclasses.replace(read, predicates=read.predicates[len(stubs) :]), problems


def _secret_names(secrets: Secrets | None) -> set[str]:
    return {s.name for s in secrets.specs} if secrets else set()


def _section_names(values: Records | None) -> set[str]:
    return set(values.names()) if values else set()


def _merged(base: PolicyModel, read: PolicyModel) -> PolicyModel:
    """The base with the task's predicates, rules, secrets and records sections added."""
    from guardagent.trace.found.secrets import Secrets
    from guardagent.trace.sources.records import Records

    secrets, values = base.secrets, base.values
    if read.secrets is not None:
        secrets = Secrets((*(secrets.specs if secrets else ()), *read.secrets.specs))
    if read.values is not None:
        values = Records((*(values.sections if values else ()), *read.values.sections))
    return dataclasses.replace(
        base,
        predicates=(*base.predicates, *read.predicates),
        rules=(*base.rules, *read.rules),
        secrets=secrets,
        values=values,
    )


def _attach(base: PolicyModel, task: TaskPolicy, fingerprint: str) -> AttachedTask:
    from guardagent.policy.check import check_model

    if not (task.predicates or task.rules or task.secrets or task.values):
        model = base
        problems: list[str] = []
    else:
        read, problems = _task_entries(base, task)
        model = _merged(base, read)
    used = {n for e in model.trace_bindings.values() for n in placeholders(e)}
    problems += [
        f"parameter {n!r} is used by no predicate of the policy or the task"
        for n in sorted(set(task.params) - used)
    ]
    bindings, unset = _resolve(model, task, problems)
    if problems:
        raise TaskPolicyError(problems)
    warnings: tuple[str, ...] = ()
    if model is not base:
        report = check_model(model)
        errors = [f.message for f in report.errors]
        if errors:
            raise TaskPolicyError(errors)
        own = {r.id for r in model.rules[len(base.rules) :]}
        names = {p.name for p in model.predicates[len(base.predicates) :]}
        warnings = tuple(
            f.message for f in report.warnings if own & set(f.rules) or names & set(f.predicates)
        )
    return AttachedTask(task, model, bindings, unset, warnings, fingerprint)


def _resolve(
    model: PolicyModel, task: TaskPolicy, problems: list[str]
) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """Each trace binding with its parameters filled in, or left open when one is unset."""
    from guardagent.trace.predicates import PredicateSpecError, compile_predicate

    bindings: dict[str, str] = {}
    unset: dict[str, tuple[str, ...]] = {}
    for name, expression in model.trace_bindings.items():
        needed = placeholders(expression)
        missing = tuple(sorted(needed - set(task.params)))
        if missing:
            unset[name] = missing
            continue
        try:
            bindings[name] = resolve(expression, task.params) if needed else expression
            compile_predicate(bindings[name])
        except PredicateSpecError as exc:
            problems.append(f"predicate {name!r} with the task's parameters: {exc}")
    return bindings, unset
