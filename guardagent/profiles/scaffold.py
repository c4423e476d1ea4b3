"""`guardagent profile new`: a trace-guard profile to edit, from the agent's tool schemas.

A deployer starts from what they have, the tools' schemas, and should get a profile that
already guards (fail closed) and says what is left to decide. :func:`scaffold_profile`
writes, in a new directory:

- ``policy.yaml``: a policy model whose ``labels`` come from the schemas
  (:func:`guardagent.trace.document.labels.labels_from_schemas`: every tool ``untrusted`` and
  ``irreversible``, its argument names filled in), one action predicate per tool, and one
  **deny-by-default** rule per tool (``calls_<tool> IMPLIES FALSE``) marked as a
  placeholder, plus a rule denying tools the labels do not list. Condition predicates for
  consent and provenance are there, commented, with an example rule for each tool;
- ``profile.yaml``: a profile guarding with that policy through ``check_trace`` (every
  predicate is a trace predicate: no guard program, no model).

:func:`check_trace_profile` is what ``guardagent profile check`` says about such a profile:
the policy's own check (z3), the tools still at the fail-closed labels, the placeholder
rules still denying a tool outright, and every example trace (in ``traces/`` of the profile
or next to its policy) decided and compared with its ``expect``. Schemas are read as data;
nothing is guessed from a tool's name or description.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from guardagent.profiles.loader import Profile

PLACEHOLDER = "guardagent profile new (deny by default)"
"""The `source` of a scaffolded placeholder rule; one still ending in FALSE is left to edit."""

PLACEHOLDER_POLICY = " is denied until the policy says when it may run"
"""How the `policy` text of a scaffolded rule ends (after the tool's name). Denials show a
rule's `policy`, so this text left under an edited `logic` would tell a user the tool is
denied by default when the rule now allows it under a condition: `profile check` lists it."""

TRACES_DIR = "traces"
"""Example traces of a profile (JSON, the trace format, with an ``expect`` and optionally the
``task`` policy the host attaches to that thread): the folder of
that name in the profile, and the one next to its policy model (so a shipped example policy
brings its traces to every profile that guards with it)."""

_IDENT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class ScaffoldError(ValueError):
    """Tool schemas that cannot be read, or a directory that would be overwritten."""


# -- reading tool schemas --------------------------------------------------------------------


def read_tool_schemas(data: Any) -> list[dict[str, Any]]:
    """Tool schemas in the shape `labels_from_schemas` reads, from the usual exports.

    Accepted: a list (or ``{"tools": [...]}``) of OpenAI tools (``{"type": "function",
    "function": {"name", "description", "parameters"}}``), bare functions (``{"name",
    "parameters"}``), Anthropic tools (``{"name", "input_schema"}``), LangChain tool dicts
    (``{"name", "description", "args_schema"}``, or ``{"name", "args": {argument: schema}}``
    as ``BaseTool.args`` gives them) and JSON schemas of a tool's arguments with a
    ``title`` (``tool.tool_call_schema.model_json_schema()``).

    Raises:
        ScaffoldError: not a list of tools, a tool without a name, or a name twice.
    """
    if isinstance(data, Mapping) and "tools" in data:
        data = data["tools"]
    if isinstance(data, Mapping):
        data = [data]
    if not isinstance(data, list) or not data:
        raise ScaffoldError(
            'the tools file must hold a non-empty list of tool schemas (or {"tools": [...]})'
        )
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, raw in enumerate(data, start=1):
        tool = _one_schema(raw, number)
        name = tool["name"]
        if name in seen:
            raise ScaffoldError(f"tool {name!r} is listed twice")
        seen.add(name)
        out.append(tool)
    return out


def _one_schema(raw: Any, number: int) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ScaffoldError(f"tool {number}: a tool schema is a JSON object")
    spec: Mapping[str, Any] = raw["function"] if isinstance(raw.get("function"), Mapping) else raw
    name = spec.get("name")
    if name is None and spec.get("type") == "object" and isinstance(spec.get("title"), str):
        name = spec["title"]  # a LangChain tool_call_schema's JSON schema
        spec = {"name": name, "description": spec.get("description"), "parameters": spec}
    if not isinstance(name, str) or not name.strip():
        raise ScaffoldError(
            f"tool {number}: no name (expected 'name', 'function.name' or a JSON schema's 'title')"
        )
    params = spec.get("parameters") or spec.get("input_schema") or spec.get("args_schema")
    if params is None and isinstance(spec.get("args"), Mapping):
        params = {"type": "object", "properties": dict(spec["args"])}
    if params is not None and not isinstance(params, Mapping):
        raise ScaffoldError(f"tool {name!r}: its parameters are not a JSON schema object")
    out: dict[str, Any] = {"name": name.strip(), "parameters": dict(params or {})}
    if isinstance(spec.get("description"), str):
        out["description"] = spec["description"]
    return out


# -- writing the profile ---------------------------------------------------------------------


def _ident(name: str, taken: set[str]) -> str:
    base = "".join(c if c in _IDENT else "_" for c in name).strip("_") or "tool"
    ident, n = f"calls_{base}", 2
    while ident in taken:
        ident, n = f"calls_{base}_{n}", n + 1
    taken.add(ident)
    return ident


def _q(text: str) -> str:
    """A YAML scalar for any text (a JSON string is a YAML double-quoted scalar)."""
    return json.dumps(text, ensure_ascii=False)


def _sq(text: str) -> str:
    """A single-quoted YAML scalar (keeps the double quotes of a predicate call readable)."""
    return "'" + text.replace("'", "''") + "'"


def _flow(entry: Mapping[str, Any]) -> str:
    return yaml.safe_dump(
        dict(entry), default_flow_style=True, sort_keys=False, width=10_000
    ).strip()


def _comment(text: str, limit: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


_DEFAULTED = frozenset({"results", "effect"})
"""Label keys the scaffold leaves unset: the fail-closed default until the author sets them."""

_CONDITIONS = [
    (
        "call_confirmed",
        "A reviewer approved this call (the host's review; never text in a message).",
        "consent_given()",
    ),
    (
        "args_trusted",
        "Every argument value comes from the user, the system prompt or a trusted tool.",
        'arg_from_trusted("*")',
    ),
    (
        "args_from_page_only",
        "Some argument value is found only in untrusted tool results.",
        'arg_only_untrusted("*")',
    ),
    (
        "recipient_trusted",
        "Every recipient (the `recipients` of the tool's label) comes from "
        "the user or a trusted tool.",
        'arg_from_trusted("@recipients")',
    ),
    (
        "leaks_secret",
        "A value from a `sensitive` tool goes to a recipient the user did not give.",
        "secret_flow()",
    ),
]
"""Commented condition predicates offered to every scaffolded policy (name, text, predicate)."""


def policy_text(name: str, tools: list[dict[str, Any]]) -> str:
    """The deny-by-default policy model of a scaffold, with its comments (see the module)."""
    from guardagent.trace.document.labels import labels_from_schemas

    labels = labels_from_schemas(tools)["tools"]
    taken: set[str] = set()
    actions = {t["name"]: _ident(t["name"], taken) for t in tools}
    lines = [
        f"# Policy model of the guard profile {name!r}, scaffolded by `guardagent profile new`.",
        "# Deny by default: every tool below is denied until you edit its rule. To finish it:",
        "#  1. labels: mark tools returning the user's own records `results: trusted`; lower",
        "#     `effect` to read / write / send; give `send` tools their `recipients`; mark",
        "#     results that must not leave `sensitive: true`. A tool not listed is untrusted",
        "#     and irreversible.",
        "#  2. rules: replace each `IMPLIES FALSE` with the condition under which the tool may",
        "#     run (uncomment the conditions you use); for a read-only tool, `TRUE`.",
        "#  3. run `guardagent profile check <profile dir>`; add example traces to its traces/.",
        "# Trace predicates: guardagent/trace/predicates/; labels: "
        "guardagent/trace/document/labels.py.",
        "format: guardagent-policy/1",
        f"name: {_q(name)}",
        'version: "1"',
        f"description: {_q(f'Tool calls of {name}, judged by the whole conversation.')}",
        "threshold: 0.5",
        "labels:",
        "  tools:",
    ]
    at = lines.index("labels:")
    lines[at:at] = [
        "# A label without `results` / `effect` is untrusted and irreversible; profile",
        "# check lists it until you write both (even to those same values).",
    ]
    for tool in tools:
        entry = {k: v for k, v in labels[tool["name"]].items() if k not in _DEFAULTED}
        description = entry.pop("description", "")
        if description:
            lines.append(f"    # {_comment(description)}")
        lines.append(f"    {_q(tool['name'])}: {_flow(entry)}")
    lines += ["predicates:"]
    for tool in tools:
        lines += [
            f"  - name: {actions[tool['name']]}",
            "    kind: action",
            f"    description: {_q('The call is ' + tool['name'] + '.')}",
            f"    assign: {{trace: {_sq('tool_is(' + _q(tool['name']) + ')')}}}",
        ]
    lines += [
        "  - name: tool_listed",
        "    kind: condition",
        "    description: The call's tool is listed in the labels.",
        "    assign: {trace: 'tool_labelled()'}",
        "  # Conditions for your rules (uncomment the ones you use):",
    ]
    for cond, text, expression in _CONDITIONS:
        lines += [
            f"  # - name: {cond}",
            "  #   kind: condition",
            f"  #   description: {text}",
            f"  #   assign: {{trace: {_sq(expression)}}}",
        ]
    lines += [
        "rules:",
        "  - id: listed-tools-only",
        "    logic: tool_listed",
        "    policy: Only tools listed in the labels may be called",
        "    remediation: Label the tool in policy.yaml (and add its rule), or do not call it.",
        "    risk_types: [configuration]",
    ]
    for tool in tools:
        action, tname = actions[tool["name"]], tool["name"]
        lines += [
            f"  - id: {_q(tname + '-allowed')}",
            f"    # EDIT: when may {tname} run? Change `logic` (then `policy`, `remediation`);",
            "    # for example (uncomment the conditions you use):",
            f"    #   logic: {action} IMPLIES TRUE                      # harmless reads",
            f"    #   logic: {action} IMPLIES (args_trusted OR call_confirmed)",
            f"    #   logic: {action} IMPLIES ((recipient_trusted AND NOT leaks_secret) "
            "OR call_confirmed)",
            f"    logic: {action} IMPLIES FALSE",
            f"    policy: {_q(tname + PLACEHOLDER_POLICY)}",
            f"    remediation: {_q('Ask the user to approve this ' + tname + ' call.')}",
            "    risk_types: [deny by default]",
            f"    source: {_q(PLACEHOLDER)}",
        ]
    return "\n".join(lines) + "\n"


def profile_text(name: str, tools: list[dict[str, Any]]) -> str:
    """The profile.yaml of a scaffold: a trace guard with policy.yaml, no programs."""
    import textwrap

    listed = ", ".join(t["name"] for t in tools)

    def block(text: str) -> str:
        return "\n".join("  " + line for line in textwrap.wrap(text, 88))

    request = (
        f"Guard the tool calls of {name} against prompt injection and misuse. Each "
        "proposed call is judged with the whole conversation before it "
        "(GuardAgent.check_trace, or GuardAgentMiddleware(trace=True)) by the policy "
        "model policy.yaml; every predicate is assigned from the trace by the host, so "
        "no guard program runs and no model is needed."
    )
    spec = (
        f"A tool-calling agent with the tools {listed}. Its events are traces: LangChain "
        "messages_to_dict JSON or OpenAI chat messages with tool_calls, and the proposed "
        "call. User messages are trusted; tool results are trusted only as labelled; "
        "model text is never a source of a value."
    )
    return (
        "\n".join(
            [
                f"# Guard profile {name!r}, scaffolded by `guardagent profile new`: "
                "edit policy.yaml.",
                f"name: {_q(name)}",
                "description: "
                + _q(f"(trace policy) Tool calls of {name}, judged by the whole trace."),
                "guard_request: |",
                block(request),
                "agent_specification: |",
                block(spec),
                "toolbox: []",
                "demonstrations: []",
                "policy_model: policy.yaml",
            ]
        )
        + "\n"
    )


def scaffold_profile(name: str, tools: Any, out_dir: str | Path) -> list[Path]:
    """Write a new profile directory (profile.yaml, policy.yaml) from tool schemas.

    `tools` is what :func:`read_tool_schemas` reads (the decoded JSON of a tools file).

    Returns:
        The files written.

    Raises:
        ScaffoldError: unreadable schemas, or `out_dir` exists and is not empty.
    """
    from guardagent.policy.model import PolicyError, load_policy_text

    schemas = read_tool_schemas(tools)
    root = Path(out_dir)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ScaffoldError(f"{root} exists and is not an empty directory; choose another --out")
    policy = policy_text(name, schemas)
    try:  # what we write must load: a failure here is a bug, never a file to debug
        load_policy_text(policy, str(root / "policy.yaml"))
    except PolicyError as exc:
        raise ScaffoldError(f"the scaffolded policy does not load: {exc}") from None
    root.mkdir(parents=True, exist_ok=True)
    written = [root / "policy.yaml", root / "profile.yaml"]
    written[0].write_text(policy, encoding="utf-8")
    written[1].write_text(profile_text(name, schemas), encoding="utf-8")
    return written


# -- checking a trace profile ----------------------------------------------------------------


def is_trace_profile(profile: Profile) -> bool:
    """Whether the profile guards with trace predicates only (labels, no guard program)."""
    from guardagent.policy.model import PolicyError
    from guardagent.policy.runs import profile_policy

    try:
        model = profile_policy(profile)
    except (PolicyError, OSError):
        return False  # the ordinary check reports what does not load
    return (
        model is not None
        and model.labels is not None
        and bool(model.trace_bindings)
        and set(model.trace_bindings) == {p.name for p in model.predicates}
    )


@dataclass(frozen=True)
class TraceRun:
    """One example trace decided under the profile, next to what its ``expect`` says."""

    name: str
    allowed: bool | None
    rules: tuple[str, ...] = ()
    reason: str = ""
    expected: str | None = None
    """``allow``, ``deny by <rule>`` or ``deny``; None when the trace says nothing."""
    problem: str | None = None


@dataclass
class TraceProfileCheck:
    """What `profile check` found on a trace profile."""

    profile: Profile
    policy_path: str
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    to_edit: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    traces: list[TraceRun] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        """No policy error, no placeholder rule left, every example trace as expected."""
        return not self.errors and not self.to_edit and not any(t.problem for t in self.traces)


def _expected(doc: Any) -> tuple[str | None, str | None, str | None]:
    """``(expected text, rule, source)`` from a trace's ``expect``.

    ``{"unreadable": "<reason>"}`` expects the trace path's own denial (an unlabelled tool,
    an inconsistent trace), which no rule decides; it is returned as the rule
    ``unreadable:<reason>``.
    """
    expect = doc.get("expect") if isinstance(doc, Mapping) else None
    if not isinstance(expect, Mapping):
        return None, None, None
    rule, source = expect.get("rule"), expect.get("source")
    if isinstance(expect.get("unreadable"), str):
        return f"deny ({expect['unreadable']})", f"unreadable:{expect['unreadable']}", None
    if expect.get("allowed") is True:
        return "allow", None, None
    if rule or expect.get("allowed") is False:
        return (f"deny by {rule}" if rule else "deny"), rule, source
    return None, None, None


def _run_trace(guard: Any, path: Path) -> TraceRun:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return TraceRun(path.name, None, problem=f"cannot read it ({exc})")
    expected, rule, source = _expected(doc)
    task = doc.get("task") if isinstance(doc, Mapping) else None  # the example's task policy
    decision = guard.check_trace(doc, task=task)
    violated = tuple(r.id for r in decision.rules if r.status in ("violated", "possibly_violated"))
    run = TraceRun(path.name, decision.allowed, violated, decision.reason, expected)
    problem = None
    reasons = {f"unreadable:{u.get('reason')}" for u in decision.unreadable}
    if rule and rule.startswith("unreadable:"):
        if decision.allowed or rule not in reasons:
            problem = f"{'allowed' if decision.allowed else decision.reason}, expected {expected}"
    elif decision.unreadable:
        problem = f"unreadable: {decision.reason}"
    elif expected == "allow" and not decision.allowed:
        problem = f"denied ({', '.join(violated) or decision.reason}), expected allowed"
    elif expected is not None and expected != "allow" and decision.allowed:
        problem = f"allowed, expected {expected}"
    elif rule and rule not in violated:
        problem = f"denied by {', '.join(violated) or 'no rule'}, expected by {rule}"
    elif source and source not in decision.reason:
        problem = f"denied without naming the source {source!r}"
    return TraceRun(run.name, run.allowed, run.rules, run.reason, run.expected, problem)


def _where(finding: Any) -> str:
    return f"{finding.location}: " if finding.location else ""


def _written_labels(path: Path) -> dict[str, set[str]]:
    """The keys each tool's label sets in the file (what the author wrote, not defaults).

    A label the author wrote out (``effect: irreversible``, ``recipients: []``) is on
    purpose and is not listed as left to decide; only keys left unset are.
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    raw = data.get("labels") if isinstance(data, Mapping) else None
    tools = raw.get("tools", raw) if isinstance(raw, Mapping) else raw
    if not isinstance(tools, Mapping):
        return {}
    return {
        str(name): set(entry) if isinstance(entry, Mapping) else set()
        for name, entry in tools.items()
    }


def check_trace_profile(profile: Profile) -> TraceProfileCheck:
    """Check a trace profile: policy (z3), labels, placeholder rules, example traces."""
    from guardagent.agent import GuardAgent
    from guardagent.policy.check import check_policy
    from guardagent.policy.model import load_policy, resolve_policy

    assert profile.policy_model is not None
    path = resolve_policy(profile.root, profile.policy_model).resolve()
    result = TraceProfileCheck(profile, str(path))
    report = check_policy(path)
    result.errors = [_where(f) + f.message for f in report.errors]
    if result.errors:
        return result  # the rest reads the policy
    model = load_policy(path)
    placeholders = {
        r.id
        for r in model.rules
        if r.source == PLACEHOLDER and r.logic.replace(" ", "").endswith("IMPLIESFALSE")
    }
    # a placeholder's "forbids outright" is said once, under "to edit"
    shown = [
        f
        for f in report.warnings
        if f.code != "forbidden_action" or not set(f.rules) <= placeholders
    ]
    result.warnings = [_where(f) + f.message for f in shown]
    if placeholders:
        result.to_edit.append(
            f"rules: {len(placeholders)} tool(s) still denied by default, rule(s) "
            f"{', '.join(sorted(placeholders))}: replace `IMPLIES FALSE` with the condition "
            "under which the tool may run (the comments above each rule show examples)"
        )
    for rule in model.rules:  # edited logic, scaffold text: denials would show the placeholder
        if rule.id not in placeholders and rule.policy.strip().endswith(PLACEHOLDER_POLICY.strip()):
            result.to_edit.append(
                f"rule {rule.id}: its `policy` is still the scaffold's placeholder text "
                f"{rule.policy.strip()!r}, which every denial by this rule shows: write in "
                '`policy` what the rule allows, in words a user reads (for example "Mail goes '
                'only to recipients the user gave, unless the user approves."), and in '
                "`remediation` what to do when it denies"
            )
    labels = model.labels
    if labels is not None:
        written = _written_labels(path)
        default = sorted(n for n in labels.tools if not written.get(n, set()) >= _DEFAULTED)
        if default:
            result.notes.append(
                f"labels: {len(default)} tool(s) left at the fail-closed default (untrusted "
                f"results, irreversible): {', '.join(default)}. Right for tools that move money "
                "or delete (say so: write `results` and `effect`); otherwise mark the user's own "
                "records `results: trusted` and lower `effect`"
            )
        sends = sorted(
            n
            for n, lab in labels.tools.items()
            if lab.effect == "send" and "recipients" not in written.get(n, set())
        )
        if sends:
            result.notes.append(
                f"labels: send tool(s) {', '.join(sends)} name no `recipients`: every address, "
                "number, URL and IBAN in their arguments counts as one"
            )
    folder = profile.root / TRACES_DIR
    folders = dict.fromkeys(f.resolve() for f in (folder, path.parent / TRACES_DIR) if f.is_dir())
    files = sorted((f for d in folders for f in d.glob("*.json")), key=lambda f: f.name)
    if not files:
        result.notes.append(
            f'traces: none in {folder}: add example traces (the trace format, with "expect": '
            '{"allowed": true} or {"rule": "<rule id>"}) to check the policy against'
        )
    elif not result.errors:
        guard = GuardAgent(profile=str(profile.root))
        result.traces = [_run_trace(guard, f) for f in files]
    return result


def render_trace_check(check: TraceProfileCheck) -> str:
    """The report of :func:`check_trace_profile` as text, what to edit first."""
    profile = check.profile
    lines = [f"profile {profile.name!r} ({profile.root}): trace policy {check.policy_path}"]
    for title, items in (
        ("errors", check.errors),
        ("to edit", check.to_edit),
        ("warnings", check.warnings),
        ("notes", check.notes),
    ):
        if items:
            lines += ["", f"{title}:"] + [f"  - {item}" for item in items]
    if check.traces:
        lines += ["", "example traces:"]
        rows = [("trace", "expected", "got", "result")]
        for run in check.traces:
            got = (
                "allow"
                if run.allowed
                else f"deny by {', '.join(run.rules)}"
                if run.rules
                else "deny"
                if run.allowed is False
                else "no decision"
            )
            rows.append(
                (
                    run.name,
                    run.expected or "-",
                    got,
                    "ok" if run.problem is None else "FAIL: " + run.problem,
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines += [
            "  " + "  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3] for r in rows
        ]
    failed = sum(t.problem is not None for t in check.traces)
    lines.append("")
    if check.ready:
        lines.append(
            f"ready: the policy checks and {len(check.traces)} example trace(s) decide as expected"
        )
    else:
        parts = [
            f"{len(check.errors)} error(s)" if check.errors else "",
            f"{len(check.to_edit)} thing(s) to edit" if check.to_edit else "",
            f"{failed} example trace(s) failing" if failed else "",
        ]
        lines.append(
            "NOT READY: " + ", ".join(p for p in parts if p) + " (until then the "
            "profile guards, failing closed: what the policy does not allow is denied)"
        )
    return "\n".join(lines)
