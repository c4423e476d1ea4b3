"""Reading a policy model from YAML: every problem with its file, line and column.

The loader walks PyYAML's node tree so each value keeps its position, validates every entry
(keys, kinds, the action tree, rule logic parsed with :mod:`.grammar`), and reports all the
problems it finds at once (:class:`~guardagent.policy.schema.PolicyError`). Also: shipped
policies by name, a profile's policy file, a file's digest.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from guardagent.policy.formula import Formula
from guardagent.policy.formula import template as derive_template
from guardagent.policy.grammar import LogicSyntaxError, parse_logic
from guardagent.policy.schema import (
    FORMAT,
    REVIEW_STATES,
    SHIPPED_DIR,
    AssignedBy,
    Location,
    PolicyError,
    PolicyIssue,
    PolicyModel,
    Predicate,
    ReviewState,
    Rule,
    logic_position,
)
from guardagent.policy.screen import screen_yaml
from guardagent.trace.document.labels import Labels

if TYPE_CHECKING:
    from guardagent.trace.found.secrets import Secrets
    from guardagent.trace.sources.records import Records

_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class _Reader:
    """Walks the YAML node tree so every value keeps its position."""

    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        self.issues: list[PolicyIssue] = []

    def at(self, node: yaml.Node) -> Location:
        return Location(self.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def problem(self, node: yaml.Node | None, message: str) -> None:
        self.issues.append(PolicyIssue(message, self.at(node) if node is not None else None))

    def block_indent(self, node: yaml.Node) -> int:
        """Column (1-based, minus one) where a block scalar's content lines start."""
        lines = self.text.splitlines()
        first = node.start_mark.line + 1
        if first < len(lines):
            content = lines[first]
            return len(content) - len(content.lstrip(" "))
        return 0

    @staticmethod
    def value(node: yaml.Node) -> Any:
        """The plain Python value of a node (safe constructors only)."""
        loader = yaml.SafeLoader("")
        try:
            return loader.construct_object(node, deep=True)
        finally:
            loader.dispose()

    def mapping(self, node: yaml.Node, what: str, allowed: tuple[str, ...]) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            self.problem(node, f"{what} must be a mapping")
            return {}
        out: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str):
                self.problem(key_node, f"{what}: keys must be strings")
            elif key not in allowed:
                self.problem(key_node, f"{what}: unknown key {key!r} (known: {', '.join(allowed)})")
            elif key in out:
                self.problem(key_node, f"{what}: duplicate key {key!r}")
            else:
                out[key] = value_node
        return out

    def string(
        self, fields: dict[str, yaml.Node], key: str, what: str, *, required: bool = False
    ) -> str | None:
        node = fields.get(key)
        if node is None:
            if required:
                self.problem(None, f"{what}: missing required key {key!r}")
            return None
        value = self.value(node)
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.problem(node, f"{what}: {key} must be a string")
            return None
        return str(value)

    def boolean(self, fields: dict[str, yaml.Node], key: str, what: str, default: bool) -> bool:
        node = fields.get(key)
        if node is None:
            return default
        value = self.value(node)
        if type(value) is not bool:
            self.problem(node, f"{what}: {key} must be true or false")
            return default
        return value

    def number(
        self, fields: dict[str, yaml.Node], key: str, what: str, *, low: float, high: float
    ) -> float | None:
        node = fields.get(key)
        if node is None:
            return None
        value = self.value(node)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (math.isfinite(value) and low <= value <= high)
        ):
            self.problem(node, f"{what}: {key} must be a number in [{low}, {high}]")
            return None
        return float(value)

    def strings(self, fields: dict[str, yaml.Node], key: str, what: str) -> tuple[str, ...]:
        node = fields.get(key)
        if node is None:
            return ()
        value = self.value(node)
        if isinstance(value, str):
            return (value,)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(node, f"{what}: {key} must be a string or a list of strings")
            return ()
        return tuple(value)


_TOP_KEYS = (
    "format",
    "name",
    "version",
    "description",
    "threshold",
    "violations",
    "labels",
    "values",
    "secrets",
    "approved_only",
    "predicates",
    "rules",
)
_PREDICATE_KEYS = (
    "name",
    "kind",
    "description",
    "assign",
    "probability",
    "changeable",
    "parent",
    "target",
    "permitted",
)
_RULE_KEYS = (
    "id",
    "logic",
    "template",
    "risk_types",
    "source",
    "policy",
    "explanation",
    "remediation",
    "weight",
    "hard",
    "actions",
    "span",
    "review",
)


def _is_identifier(name: str) -> bool:
    return bool(name) and not name[0].isdigit() and set(name) <= _IDENT_CHARS


def _predicate(reader: _Reader, node: yaml.Node, index: int) -> Predicate | None:
    what = f"predicates[{index}]"
    fields = reader.mapping(node, what, _PREDICATE_KEYS)
    name = reader.string(fields, "name", what, required=True)
    if name is None:
        return None
    what = f"predicate {name!r}"
    if not _is_identifier(name):
        reader.problem(fields["name"], f"{what}: use letters, digits and _ (no leading digit)")
    kind = reader.string(fields, "kind", what, required=True)
    if kind not in ("action", "condition"):
        if kind is not None:
            reader.problem(fields["kind"], f"{what}: kind must be 'action' or 'condition'")
        kind = "condition"
    assigned = None
    if "assign" in fields:
        how = reader.mapping(
            fields["assign"], f"{what}: assign", ("tool", "expression", "query", "trace")
        )
        if len(how) != 1:
            reader.problem(
                fields["assign"],
                f"{what}: assign needs exactly one of tool, expression, query, trace",
            )
        else:
            key, _ = next(iter(how.items()))
            text = reader.string(how, key, f"{what}: assign")
            if text is not None and key == "trace":
                from guardagent.trace.event.params import check_template
                from guardagent.trace.predicates import PredicateSpecError

                try:  # with task parameters ("$name"), values are checked when a task sets them
                    check_template(text)
                except PredicateSpecError as exc:
                    reader.problem(how[key], f"{what}: {exc}")
            if text is not None:
                assigned = AssignedBy(**{key: text})
    parent = reader.string(fields, "parent", what)
    target = reader.string(fields, "target", what)
    if kind == "condition":
        for key in ("parent", "target", "permitted"):
            if key in fields:
                reader.problem(fields[key], f"{what}: {key} is for action predicates only")
    elif "changeable" in fields:
        reader.problem(
            fields["changeable"],
            f"{what}: changeable is for conditions only (an action can always be dropped)",
        )
    if target is not None and (target.count(".") != 1 or target.startswith(".")):
        reader.problem(fields["target"], f"{what}: target must look like group.item")
    return Predicate(
        name=name,
        kind="action" if kind == "action" else "condition",
        description=reader.string(fields, "description", what) or "",
        assigned_by=assigned,
        probability=reader.number(fields, "probability", what, low=0.0, high=1.0),
        changeable=reader.boolean(fields, "changeable", what, True),
        parent=parent,
        target=target,
        permitted=reader.boolean(fields, "permitted", what, True),
        location=reader.at(node),
    )


def _rule(reader: _Reader, node: yaml.Node, index: int) -> Rule | None:
    what = f"rules[{index}]"
    fields = reader.mapping(node, what, _RULE_KEYS)
    rule_id = reader.string(fields, "id", what, required=True)
    if rule_id is None:
        return None
    what = f"rule {rule_id!r}"
    logic = reader.string(fields, "logic", what, required=True)
    if logic is None:
        return None
    logic_node = fields["logic"]
    style = getattr(logic_node, "style", None)
    indent = reader.block_indent(logic_node) if style in ("|", ">") else 0
    try:
        formula = parse_logic(logic)
    except LogicSyntaxError as exc:
        probe = Rule(
            rule_id,
            logic,
            _PLACEHOLDER,
            "",
            logic_location=reader.at(logic_node),
            logic_style=style,
            logic_indent=indent,
        )
        where = logic_position(probe, exc.line, exc.column)
        reader.issues.append(
            PolicyIssue(
                f"{what} logic: {exc.message} (logic line {exc.line}, column {exc.column})", where
            )
        )
        return None
    derived = derive_template(formula)
    given = reader.string(fields, "template", what)
    if given is not None and " ".join(given.split()) != derived:
        reader.problem(
            fields["template"],
            f"{what}: template {given!r} does not match the "
            f"logic (its template is {derived!r}); drop it, it is derived",
        )
    weight = reader.number(fields, "weight", what, low=0.0, high=1e9)
    review = reader.string(fields, "review", what)
    if review is not None and review not in REVIEW_STATES:
        reader.problem(
            fields["review"], f"{what}: review must be one of {', '.join(REVIEW_STATES)}"
        )
        review = "proposed"
    return Rule(
        id=rule_id,
        logic=logic,
        formula=formula,
        template=derived,
        risk_types=reader.strings(fields, "risk_types", what),
        source=reader.string(fields, "source", what) or "",
        policy=reader.string(fields, "policy", what) or "",
        explanation=reader.string(fields, "explanation", what) or "",
        remediation=reader.string(fields, "remediation", what) or "",
        weight=1.0 if weight is None else weight,
        hard=reader.boolean(fields, "hard", what, True),
        actions=reader.strings(fields, "actions", what),
        span=reader.string(fields, "span", what) or "",
        review=_review_state(review),
        location=reader.at(node),
        logic_location=reader.at(logic_node),
        logic_style=style,
        logic_indent=indent,
    )


_PLACEHOLDER: Formula = parse_logic("TRUE")


def _review_state(text: str | None) -> ReviewState | None:
    if text == "approved":
        return "approved"
    if text == "edited":
        return "edited"
    if text == "rejected":
        return "rejected"
    return None if text is None else "proposed"


def _sequence(reader: _Reader, fields: dict[str, yaml.Node], key: str) -> list[yaml.Node]:
    node = fields.get(key)
    if node is None:
        return []
    if not isinstance(node, yaml.SequenceNode):
        reader.problem(node, f"{key} must be a list")
        return []
    return list(node.value)


def _structure(reader: _Reader, predicates: list[Predicate], rules: list[Rule]) -> None:
    """Cross-entry checks: duplicates, the action tree, rules' explicit actions."""
    seen: dict[str, Predicate] = {}
    for pred in predicates:
        if pred.name in seen:
            reader.issues.append(PolicyIssue(f"duplicate predicate {pred.name!r}", pred.location))
        seen[pred.name] = pred
    for pred in predicates:
        if pred.parent is None:
            continue
        parent = seen.get(pred.parent)
        if parent is None:
            reader.issues.append(
                PolicyIssue(
                    f"predicate {pred.name!r}: parent {pred.parent!r} is not declared",
                    pred.location,
                )
            )
        elif parent.kind != "action":
            reader.issues.append(
                PolicyIssue(
                    f"predicate {pred.name!r}: parent {pred.parent!r} is not an action",
                    pred.location,
                )
            )
    parents = {p.name: p.parent for p in predicates if p.kind == "action"}
    cycles: set[frozenset[str]] = set()
    for name in parents:
        chain, node = [name], parents.get(name)
        while node is not None and node in parents:
            if node in chain:
                loop = chain[chain.index(node) :]
                if frozenset(loop) not in cycles:
                    cycles.add(frozenset(loop))
                    reader.issues.append(
                        PolicyIssue(
                            f"action tree has a cycle: {' -> '.join([*loop, node])}",
                            seen[loop[0]].location,
                        )
                    )
                break
            chain.append(node)
            node = parents.get(node)
    ids: set[str] = set()
    for rule in rules:
        if rule.id in ids:
            reader.issues.append(PolicyIssue(f"duplicate rule id {rule.id!r}", rule.location))
        ids.add(rule.id)
        for action in rule.actions:
            declared = seen.get(action)
            if declared is None or declared.kind != "action":
                reader.issues.append(
                    PolicyIssue(
                        f"rule {rule.id!r}: actions names {action!r}, which is not a declared "
                        "action predicate",
                        rule.location,
                    )
                )


def load_policy_text(text: str, file: str = "<policy>", *, strict: bool = True) -> PolicyModel:
    """Parse a policy model from YAML text.

    Args:
        text: The YAML.
        file: Name used in error positions.
        strict: Also refuse rules that use undeclared predicates (the checker passes False to
            report them among its other findings).

    Raises:
        PolicyError: every problem found, each with its position.
    """
    reader = _Reader(text, file)
    screened = screen_yaml(text)
    if screened is not None:
        raise PolicyError([PolicyIssue(screened[0], Location(file, screened[1], screened[2]))])
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)  # C: 5-10x faster
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = Location(file, mark.line + 1, mark.column + 1) if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise PolicyError([PolicyIssue(f"not valid YAML: {problem}", where)]) from None
    if root is None:
        raise PolicyError([PolicyIssue("the policy file is empty", Location(file, 1, 1))])
    top = reader.mapping(root, "policy", _TOP_KEYS)
    fmt = reader.string(top, "format", "policy", required=True)
    if fmt is not None and fmt != FORMAT:
        reader.problem(top["format"], f"unknown format {fmt!r}; this version reads {FORMAT!r}")
    name = reader.string(top, "name", "policy", required=True) or ""
    version = reader.string(top, "version", "policy", required=True) or ""
    violations = reader.string(top, "violations", "policy") or "rules"
    if violations not in ("rules", "targets"):
        reader.problem(top["violations"], "violations must be 'rules' or 'targets'")
        violations = "rules"
    threshold = reader.number(top, "threshold", "policy", low=0.0, high=1.0)
    predicates = [
        p
        for i, n in enumerate(_sequence(reader, top, "predicates"))
        if (p := _predicate(reader, n, i)) is not None
    ]
    rules = [
        r
        for i, n in enumerate(_sequence(reader, top, "rules"))
        if (r := _rule(reader, n, i)) is not None
    ]
    _structure(reader, predicates, rules)
    labels = None
    if "labels" in top:
        from guardagent.trace.document.labels import LabelError

        raw = reader.value(top["labels"])
        try:
            labels = Labels.from_mapping(raw if isinstance(raw, dict) else {"tools": raw})
        except LabelError as exc:
            for problem in exc.problems:
                reader.problem(top["labels"], f"labels: {problem}")
    values, secrets = _records(reader, top, predicates)
    model = PolicyModel(
        name=name,
        version=version,
        description=reader.string(top, "description", "policy") or "",
        threshold=0.5 if threshold is None else threshold,
        violations="targets" if violations == "targets" else "rules",
        predicates=tuple(predicates),
        rules=tuple(rules),
        path=file,
        labels=labels,
        approved_only=reader.boolean(top, "approved_only", "policy", False),
        values=values,
        secrets=secrets,
    )
    if strict:
        for pred_name, uses in model.undefined.items():
            for rule_id, where in uses:
                reader.issues.append(
                    PolicyIssue(f"rule {rule_id!r} uses undefined predicate {pred_name!r}", where)
                )
    if reader.issues:
        raise PolicyError(sorted(reader.issues, key=_issue_order))
    return model


def _records(
    reader: _Reader, top: dict[str, yaml.Node], predicates: list[Predicate]
) -> tuple[Records | None, Secrets | None]:
    """The ``values:`` and ``secrets:`` sections (parsed by their own modules)."""
    from guardagent.trace.found.secrets import Secrets, SecretsError
    from guardagent.trace.sources.records import Records, RecordsError

    found: list[Any] = [None, None]
    for i, (key, parse) in enumerate(
        (("values", Records.from_mapping), ("secrets", Secrets.from_mapping))
    ):
        if key in top:
            try:
                found[i] = parse(reader.value(top[key]))
            except (RecordsError, SecretsError) as exc:
                for problem in exc.problems:
                    reader.problem(top[key], problem)
    for pred in predicates:  # a secret check with nothing to look for is a mistake
        if (
            found[1] is None
            and "secrets" not in top
            and pred.assigned_by is not None
            and pred.assigned_by.kind == "trace"
            and pred.assigned_by.text.lstrip().startswith("secret_in_args")
        ):
            reader.issues.append(
                PolicyIssue(
                    f"predicate {pred.name!r}: secret_in_args needs a secrets: section",
                    pred.location,
                )
            )
    return found[0], found[1]


def _issue_order(issue: PolicyIssue) -> tuple[int, int]:
    loc = issue.location
    return (loc.line, loc.column) if loc else (0, 0)


def shipped_policies() -> list[str]:
    """Names of the policy models shipped with the package."""
    return sorted(p.stem for p in SHIPPED_DIR.glob("*.yaml"))


def policy_path(name_or_path: str | Path) -> Path:
    """A shipped policy's file by name (``tool-calls``), or the path as given."""
    text = str(name_or_path)
    shipped = SHIPPED_DIR / f"{text}.yaml"
    if "/" not in text and not text.endswith((".yaml", ".yml")) and shipped.is_file():
        return shipped
    return Path(name_or_path)


def resolve_policy(root: Path | None, name_or_path: str) -> Path:
    """A profile's `policy_model` entry as a file: relative to the profile, else shipped."""
    if root is not None and not Path(name_or_path).is_absolute():
        local = root / name_or_path
        if local.is_file():
            return local
    return policy_path(name_or_path)


def policy_digest(path: Path) -> str:
    """SHA-256 of a policy file's bytes (``unreadable:<path>`` when it cannot be read)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return f"unreadable:{path}"


def load_policy(path: str | Path, *, strict: bool = True) -> PolicyModel:
    """Load a policy model file, or a shipped one by name (see :func:`load_policy_text`).

    Raises:
        PolicyError: unreadable file or invalid content, with positions.
    """
    from guardagent.readers.textio import read_text_file

    file = policy_path(path)
    try:
        text = read_text_file(file)
    except (OSError, ValueError) as exc:
        raise PolicyError([PolicyIssue(f"cannot read {file}: {exc}")]) from None
    return load_policy_text(text, str(file), strict=strict)
