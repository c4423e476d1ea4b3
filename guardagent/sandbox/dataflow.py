"""Data-flow discipline: the raw event reaches a guard program only through readers.

A guard program gets the event as two strings, `agent_input` and `agent_output`. If it could
look at them itself (`"xyzzy" in agent_output`, `agent_output[-9:]`, `len(agent_input)`), a
model steered by attacker text could write a program that is right on every demonstration
and allows whenever the output holds a trigger only the attacker knows. Verification on
examples can never rule that out, so the whole class is refused on the AST, before a
program is verified, stored or run: each of the two names may appear only as a direct
positional argument of a call to a toolbox **reader**, in the parameter that reads it.
Everything a program decides on is then a function of what trusted readers return.

What a reader is: a toolbox function that declares a parameter named `agent_input` or
`agent_output` (the registry's convention: `parse_identity(agent_input)`,
`seeact_final_action(agent_output)`). Only that parameter may receive that text, so
`parse_user_info(agent_output)` (user facts from the attacker's side) is refused too. Verdict
functions and checks (`allow`, `deny`, `check_rules`, `web_action_category`) declare no such
parameter and never see raw text. To register a reader of your own, name its parameter
accordingly.

Limits: this governs the raw strings only. What a reader returns may itself hold attacker
text (a web action's typed value, a tool call's arguments, `ehr_code`'s code); programs may
inspect that, and counterfactual verification (:mod:`guardagent.counterfactuals`) is the
layer that checks what they do with it. Rebinding a reader's name is refused by the sandbox's
compile policy (:func:`guardagent.sandbox.policy.policy_errors`), which every run passes.
"""

from __future__ import annotations

import ast
import inspect

from guardagent.sandbox.policy import AST_LOCK
from guardagent.tools.registry import Toolbox

EVENT_NAMES = ("agent_input", "agent_output")
"""The two names a program receives the raw event under."""

ERROR_KIND = "DataFlowError"
_SNIPPET_CHARS = 60


def reader_slots(toolbox: Toolbox) -> dict[str, dict[int, str]]:
    """The readers of `toolbox`: name -> {positional index: the event name it reads}.

    A function with no parameter named `agent_input` / `agent_output` is no reader and is
    left out, so raw text can never be passed to it.
    """
    slots: dict[str, dict[int, str]] = {}
    for spec in toolbox:
        try:
            params = list(inspect.signature(spec.func).parameters.values())
        except (TypeError, ValueError):
            continue
        taken = {
            i: p.name
            for i, p in enumerate(params)
            if p.name in EVENT_NAMES and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        }
        if taken:
            slots[spec.name] = taken
    return slots


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _snippet(node: ast.AST) -> str:
    try:
        text = " ".join(ast.unparse(node).split())
    except (ValueError, RecursionError):  # pragma: no cover - unparse of a parsed tree
        return ""
    return text if len(text) <= _SNIPPET_CHARS else text[: _SNIPPET_CHARS - 3] + "..."


def _call_name(call: ast.Call) -> str | None:
    return call.func.id if isinstance(call.func, ast.Name) else None


def _misuse(name: ast.Name, parent: ast.AST | None, slots: dict[str, dict[int, str]]) -> str | None:
    """Why this occurrence of an event name is refused, or None when it is a reader's argument."""
    if not isinstance(name.ctx, ast.Load):
        return f"cannot assign to or delete {name.id!r}"
    if isinstance(parent, ast.Call) and name is not parent.func:
        func = _call_name(parent)
        index = next((i for i, a in enumerate(parent.args) if a is name), None)
        reads = slots.get(func or "", {})
        if index is not None and reads.get(index) == name.id:
            return None
        if func is None:
            return f"{name.id} is passed to a computed callable (`{_snippet(parent)}`)"
        if not reads:
            return f"{name.id} is passed to {func}(), which is not a reader"
        if index is None:
            return f"{name.id} is passed to {func}() other than as its positional argument"
        wanted = ", ".join(f"argument {i + 1} reads {n}" for i, n in sorted(reads.items()))
        return f"{name.id} is passed to {func}() in the wrong place ({wanted})"
    if isinstance(parent, ast.keyword):
        return f"{name.id} is passed as keyword argument {parent.arg or '**'}"
    what = {
        ast.Compare: "compared or searched",
        ast.Subscript: "indexed or sliced",
        ast.Attribute: "used through an attribute",
        ast.FormattedValue: "formatted into a string",
        ast.JoinedStr: "formatted into a string",
        ast.Assign: "aliased to another name",
        ast.AnnAssign: "aliased to another name",
        ast.NamedExpr: "aliased to another name",
        ast.AugAssign: "used in an assignment",
        ast.BinOp: "used in an expression",
        ast.BoolOp: "used as a condition",
        ast.UnaryOp: "used in an expression",
        ast.IfExp: "used in a conditional expression",
        ast.Starred: "unpacked",
    }
    how = next((v for k, v in what.items() if isinstance(parent, k)), "used")
    where = f" (`{_snippet(parent)}`)" if parent is not None else ""
    return f"{name.id} is {how}{where}"


def dataflow_errors(tree: ast.AST, toolbox: Toolbox) -> list[str]:
    """`"Line N: ..."` for every use of the raw event other than as a reader's argument.

    Args:
        tree: The program's parsed (untransformed) module.
        toolbox: The functions the program is given; its readers are found by
            :func:`reader_slots`.
    """
    slots = reader_slots(toolbox)
    readers = ", ".join(sorted(slots)) or "none in this toolbox"
    parents = _parents(tree)
    found: set[tuple[int, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in EVENT_NAMES:
            why = _misuse(node, parents.get(id(node)), slots)
            if why is not None:
                found.add((node.lineno, why))
    return [
        f"Line {line}: {why}; the event text may only be passed directly to a reader ({readers})"
        for line, why in sorted(found)
    ]


def check_dataflow(source: str, toolbox: Toolbox) -> list[str]:
    """Data-flow violations of a program's source, each `"DataFlowError: Line N: ..."`.

    A source that does not parse yields no data-flow error here: the sandbox's compile step
    reports the syntax error and refuses it anyway. Results are cached per source and
    toolbox functions: the execute node checks the same verified program on every event.
    """
    key = (source, tuple((spec.name, spec.func) for spec in toolbox))
    found = _CHECKED.get(key)
    if found is None:
        with AST_LOCK:
            try:
                tree: ast.Module | None = ast.parse(source)
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                tree = None
        found = (
            ()
            if tree is None
            else tuple(f"{ERROR_KIND}: {e}" for e in dataflow_errors(tree, toolbox))
        )
        if len(_CHECKED) >= _MAX_CHECKED:
            _CHECKED.clear()
        _CHECKED[key] = found
    return list(found)


_MAX_CHECKED = 256
_CHECKED: dict[tuple[str, tuple[tuple[str, object], ...]], tuple[str, ...]] = {}
