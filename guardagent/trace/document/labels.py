"""The deployer's tool labels: whose data a tool returns, and what calling it does.

A guard cannot tell from a tool's output whether to believe it; the deployer can. Each tool
gets two labels (and two optional facts):

- ``results``: ``trusted`` (the user's own records: their account, contacts, own calendar)
  or ``untrusted`` (anything others can write: mail, messages from others, web pages,
  shared files). ``sensitive: true`` marks results that must not leave (balances,
  credentials, private files).
- ``effect``: ``read``, ``write``, ``send`` (data leaves the user's hands),
  ``irreversible`` (money moves, things are deleted) or ``navigate`` (a browser opens a
  page: where it goes is judged by navigation scopes).
- ``recipients``: for a ``send`` tool, the arguments that say where the data goes (``to``,
  ``cc``, ``iban``); without them, every e-mail address, phone number, URL and IBAN in the
  call's arguments counts as a recipient.
- ``args``: the argument names from the tool's schema, a closed list: a proposed call with
  an argument not in it (compared exactly) is denied, and so is a call with any argument of
  a tool whose label has no ``args`` (``undeclared_argument``, see
  :mod:`guardagent.trace.document.declared`), unless the label sets ``other_args: allow``. A rule
  that names an argument no tool declares is a configuration error, not a silent no-op.
- ``untrusted_fields``: for a ``trusted`` tool whose records carry text others write (a
  transaction's subject, an invite's title, a contact's note): field paths (``$[*].subject``)
  of its structured results, read as untrusted; with ``result_format`` (``json``, ``yaml``
  or ``listing``) and, for a listing, ``columns``. See :mod:`guardagent.trace.text.fields`.

A tool with no label is ``untrusted`` and ``irreversible`` (fail closed). User messages are
trusted, the system prompt is the deployer's (trusted), model text is not a source at all.

File format (YAML or JSON, the ``tools`` section of a profile or policy)::

    tools:
      get_balance: {results: trusted, effect: read, sensitive: true}
      send_money: {results: trusted, effect: irreversible, recipients: [iban]}
      "read_*": {results: untrusted, effect: read}      # fnmatch patterns, in order
    phone_region: CH                                    # default region for phone numbers

An exact name wins over patterns; among patterns the first that matches wins. Names are
compared as they are, never normalised (``Send_Money`` and ``send_money `` are other tools),
and a name with a space or an invisible character (``send\u200b_money``) matches no pattern.
The trace path denies a proposed call of a tool with no label (``unlabelled_tool``), whatever
the policy's rules say; earlier calls of one are read as untrusted sources.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from guardagent.trace.text.fields import (
    RESULT_FORMATS,
    FieldPath,
    PathError,
    ResultFormat,
    parse_path,
)

Trust = Literal["trusted", "untrusted"]
Effect = Literal["read", "write", "send", "irreversible", "navigate"]
SourceKind = Literal["user", "system", "model", "trusted_tool", "untrusted_tool"]

EFFECTS: tuple[Effect, ...] = ("read", "write", "send", "irreversible", "navigate")
_KEYS = frozenset(
    {
        "results",
        "effect",
        "sensitive",
        "recipients",
        "args",
        "description",
        "untrusted_fields",
        "result_format",
        "columns",
        "other_args",
    }
)


class LabelError(ValueError):
    """A label file that cannot be used; `problems` lists every problem found."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class ToolLabel:
    """The labels of one tool.

    Attributes:
        results: Whether its results are the user's own data (``trusted``).
        effect: What calling it does.
        sensitive: Its results must not leave.
        recipients: Arguments naming where a ``send`` goes.
        args: The tool's argument names, when known.
        labelled: False for the fail-closed default of a tool with no label.
        untrusted_fields: Paths of the fields of its results that others write.
        result_format: How its results are structured (for `untrusted_fields`).
        columns: Cells per line of a ``listing`` result.
        other_args: The deployer accepts argument names outside `args` (``other_args:
            allow``); by default a call carrying one is denied.
    """

    results: Trust = "untrusted"
    effect: Effect = "irreversible"
    sensitive: bool = False
    recipients: tuple[str, ...] = ()
    args: tuple[str, ...] | None = None
    labelled: bool = True
    untrusted_fields: tuple[FieldPath, ...] = ()
    result_format: ResultFormat = "json"
    columns: int | None = None
    other_args: bool = False


UNLABELLED = ToolLabel(labelled=False)
"""What an unknown tool is: untrusted results, irreversible effect."""


@dataclass(frozen=True)
class Labels:
    """Every tool's labels, plus reading settings that depend on the deployment.

    Attributes:
        tools: Exact tool name -> label.
        patterns: ``(fnmatch pattern, label)`` in file order.
        phone_region: Default region for phone numbers written without ``+``.
    """

    tools: Mapping[str, ToolLabel] = field(default_factory=dict)
    patterns: tuple[tuple[str, ToolLabel], ...] = ()
    phone_region: str | None = None

    def label(self, tool: str | None) -> ToolLabel:
        """The label of a tool (:data:`UNLABELLED` when nothing names it)."""
        if tool is None:
            return UNLABELLED
        found = self.tools.get(tool)
        if found is not None:
            return found
        if not tool.isprintable() or any(c.isspace() for c in tool):
            return UNLABELLED  # a hidden or spaced character: no pattern may stand for it
        return next(
            (lab for pat, lab in self.patterns if fnmatch.fnmatchcase(tool, pat)), UNLABELLED
        )

    def kind(self, source: str) -> SourceKind:
        """The trust class of a message source (``user``, ``system``, ``model``, ``tool:X``)."""
        if source in ("user", "system", "model"):
            return cast(SourceKind, source)
        tool = source.removeprefix("tool:")
        if "#" in tool:  # a field others write, or a result that did not read as its fields
            return "untrusted_tool"
        trusted = tool != "?" and self.label(tool).results == "trusted"
        return "trusted_tool" if trusted else "untrusted_tool"

    def sensitive(self, source: str) -> bool:
        """Whether a message source is a tool labelled ``sensitive``."""
        return source.startswith("tool:") and self.label(source[5:].split("#")[0]).sensitive

    def to_json(self) -> dict[str, Any]:
        """The labels as plain data (the file format)."""

        def one(lab: ToolLabel) -> dict[str, Any]:
            out: dict[str, Any] = {"results": lab.results, "effect": lab.effect}
            if lab.sensitive:
                out["sensitive"] = True
            if lab.recipients:
                out["recipients"] = list(lab.recipients)
            if lab.args is not None:
                out["args"] = list(lab.args)
            if lab.untrusted_fields:
                out["untrusted_fields"] = [p.text for p in lab.untrusted_fields]
            if lab.result_format != "json":
                out["result_format"] = lab.result_format
            if lab.columns is not None:
                out["columns"] = lab.columns
            if lab.other_args:
                out["other_args"] = "allow"
            return out

        tools = {name: one(lab) for name, lab in self.tools.items()}
        tools.update({pat: one(lab) for pat, lab in self.patterns})
        data: dict[str, Any] = {"tools": tools}
        if self.phone_region:
            data["phone_region"] = self.phone_region
        return data

    @property
    def fingerprint(self) -> str:
        """A short digest of the labels (what a decision was made under)."""
        text = json.dumps(self.to_json(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Labels:
        """Read labels from the file format; every problem is reported at once.

        Raises:
            LabelError: unknown keys or values.
        """
        problems: list[str] = []
        raw_tools = data.get("tools", {})
        if not isinstance(raw_tools, Mapping):
            raise LabelError(["'tools' must be a mapping of tool name to labels"])
        extra = sorted(set(data) - {"tools", "phone_region"})
        if extra:
            problems.append(f"unknown keys {extra}")
        tools: dict[str, ToolLabel] = {}
        patterns: list[tuple[str, ToolLabel]] = []
        for name, raw in raw_tools.items():
            label = _label(str(name), raw, problems)
            if label is None:
                continue
            if any(c in str(name) for c in "*?["):
                patterns.append((str(name), label))
            else:
                tools[str(name)] = label
        region = data.get("phone_region")
        if region is not None and not (isinstance(region, str) and len(region) == 2):
            problems.append("phone_region must be a two-letter region code such as 'US'")
        if problems:
            raise LabelError(problems)
        return cls(tools, tuple(patterns), region.upper() if isinstance(region, str) else None)

    @classmethod
    def load(cls, path: str | Path) -> Labels:
        """Read labels from a YAML or JSON file."""
        import yaml

        from guardagent.policy.screen import screen_yaml

        text = Path(path).read_text(encoding="utf-8")
        screened = screen_yaml(text)
        if screened is not None:
            raise LabelError([f"{path}:{screened[1]}:{screened[2]}: {screened[0]}"])
        try:
            data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
            problem = getattr(exc, "problem", None) or exc
            raise LabelError([f"{where}: not valid YAML ({problem})"]) from None
        if not isinstance(data, Mapping):
            raise LabelError([f"{path}: a label file is a mapping with 'tools'"])
        return cls.from_mapping(data)


def _label(name: str, raw: Any, problems: list[str]) -> ToolLabel | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{name}: labels must be a mapping")
        return None
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        problems.append(f"{name}: unknown keys {unknown}")
    results = raw.get("results", "untrusted")
    effect = raw.get("effect", "irreversible")
    sensitive = raw.get("sensitive", False)
    if results not in ("trusted", "untrusted"):
        problems.append(f"{name}: results must be 'trusted' or 'untrusted', not {results!r}")
    if effect not in EFFECTS:
        problems.append(f"{name}: effect must be one of {', '.join(EFFECTS)}, not {effect!r}")
    if type(sensitive) is not bool:
        problems.append(f"{name}: sensitive must be true or false")
    recipients = _names(name, "recipients", raw.get("recipients", []), problems)
    args = _names(name, "args", raw["args"], problems) if "args" in raw else None
    if args is not None and recipients and not set(recipients) <= set(args):
        problems.append(
            f"{name}: recipients {sorted(set(recipients) - set(args))} are not among its args"
        )
    fields, fmt, columns = _fields(name, raw, results, problems)
    other = raw.get("other_args", "deny")
    if other not in ("allow", "deny"):
        problems.append(f"{name}: other_args must be 'allow' or 'deny', not {other!r}")
    return ToolLabel(
        results, effect, sensitive, recipients, args, True, fields, fmt, columns, other == "allow"
    )


def _fields(
    name: str, raw: Mapping[str, Any], results: Any, problems: list[str]
) -> tuple[tuple[FieldPath, ...], ResultFormat, int | None]:
    """The `untrusted_fields`, `result_format` and `columns` of one label."""
    paths: list[FieldPath] = []
    texts = raw.get("untrusted_fields", [])
    if not isinstance(texts, list) or not all(isinstance(x, str) for x in texts):
        problems.append(f"{name}: untrusted_fields must be a list of field paths ('$[*].subject')")
        texts = []
    for text in texts:
        try:
            paths.append(parse_path(text))
        except PathError as exc:
            problems.append(f"{name}: untrusted_fields: {exc}")
    fmt = raw.get("result_format", "json")
    if fmt not in RESULT_FORMATS:
        problems.append(
            f"{name}: result_format must be one of {', '.join(RESULT_FORMATS)}, not {fmt!r}"
        )
        fmt = "json"
    columns = raw.get("columns")
    if columns is not None and (type(columns) is not int or columns < 1):
        problems.append(f"{name}: columns must be a positive whole number")
        columns = None
    if paths and results != "trusted":
        problems.append(
            f"{name}: untrusted_fields are for a trusted tool (an untrusted tool's "
            "results are untrusted whole)"
        )
    if paths and fmt == "listing" and columns is None:
        problems.append(
            f"{name}: a listing needs 'columns' (a line with another number of "
            "cells is refused: an injected '|' shifts cells)"
        )
    return tuple(paths), fmt, columns


def _names(tool: str, key: str, raw: Any, problems: list[str]) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        problems.append(f"{tool}: {key} must be a list of argument names")
        return ()
    return tuple(raw)


def labels_from_schemas(tools: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """A label file to edit, from tool schemas.

    Schemas: OpenAI ``{"type": "function", "function": {...}}``, bare ``{"name",
    "parameters"}``, Anthropic ``{"name", "input_schema"}`` or ``{"name", "args_schema"}``.
    Every tool starts fail-closed (``untrusted``, ``irreversible``) with its argument
    names filled in; the deployer then marks the user's own data ``trusted`` and lowers
    effects. Nothing is guessed from names or descriptions.
    """
    out: dict[str, Any] = {}
    for tool in tools:
        spec = tool.get("function", tool) if isinstance(tool.get("function"), Mapping) else tool
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise LabelError(["a tool schema has no name"])
        params = spec.get("parameters") or spec.get("input_schema") or spec.get("args_schema")
        props = params.get("properties", {}) if isinstance(params, Mapping) else {}
        entry: dict[str, Any] = {
            "results": "untrusted",
            "effect": "irreversible",
            "args": sorted(props),
        }
        if isinstance(spec.get("description"), str):
            entry["description"] = " ".join(spec["description"].split())[:200]
        out[name] = entry
    return {"tools": out}
