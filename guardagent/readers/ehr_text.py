"""EHRAgent's small text languages: FilterDB conditions, GetValue specs, and SQL in Python.

FilterDB takes `col=v||col2>v||max(col3)`, GetValue `col[, aggregation]`; these are EHRAgent's
own syntax (split on its separators), not code. SQL reaches `SQLInterpreter` either quoted or,
as EHRAgent's prompt writes it, raw inside brackets (`SQLInterpreter[select ...]`), and it may
be built with run-time parts (`.format(pid)`), which are allowed only where SQL takes a value.
"""

from __future__ import annotations

import ast

import sqlglot
import sqlglot.dialects.sqlite  # noqa: F401 - loaded now: a sandbox child may open no file
from sqlglot import exp
from sqlglot.errors import SqlglotError

from guardagent.readers.ehr_values import DATA_HOLE
from guardagent.readers.evidence import unreadable

_AGGREGATIONS = frozenset(
    {
        "max",
        "min",
        "mean",
        "avg",
        "sum",
        "count",
        "list",
        "median",
        "first",
        "last",
        "std",
        "var",
        "unique",
        "nunique",
    }
)
_FILTER_OPS = ("<=", ">=", "!=", "==", "=", "<", ">")
_FILTER_WORD_OPS = (" not in ", " in ", " not like ", " like ", " is not ", " is ")


def filter_columns(conditions: str) -> list[str]:
    """Columns of a FilterDB condition string: `col=v||col2>v||max(col3)` (EHRAgent's syntax).

    Each condition gives the name before its earliest operator and, besides, the column
    EHRAgent's `data_filter` itself takes (:func:`_tool_column`), so a condition it reads
    differently (`labresulttime is max(labresult)` filters on labresult) reports both. The
    tool's column counts only when it is a plain name (`celllabel!` of `celllabel!=x` is a
    KeyError: the tool stops, reading nothing).
    """
    cols = []
    for cond in conditions.split("||"):
        text = cond.strip()
        if not text:
            continue
        tool = _tool_column(cond)
        if tool is not None and tool.isidentifier():  # else a KeyError: the tool reads nothing
            cols.append(tool)
        low = text.lower()
        if low.startswith(("max(", "min(")) and text.endswith(")"):
            cols.append(text[4:-1])
            continue
        cut = _first_operator(text)
        if cut is None:
            cols.append(text)  # no operator: not a condition EHRAgent understands; still a name
        else:
            cols.append(text[:cut])
    return cols


def _tool_column(cond: str) -> str | None:
    """The column EHRAgent's `data_filter` filters on (None: it filters on nothing).

    The text before the first of the first operator it tests (`>=`, `<=`, `>`, `<`, `=`,
    ` in `), else inside `max(` / `min(` anywhere in the condition, up to `)`.
    """
    for op in (">=", "<=", ">", "<", "=", " in "):
        if op in cond:
            return cond.split(op, 1)[0]
    for agg in ("max", "min"):
        if agg in cond:
            parts = cond.split(agg + "(", 1)
            return parts[1].split(")", 1)[0] if len(parts) > 1 else None
    return None


def _first_operator(text: str) -> int | None:
    """Index where the condition's operator starts (the earliest of any operator)."""
    low = text.lower()
    hits = [i for op in (*_FILTER_OPS, *_FILTER_WORD_OPS) if (i := low.find(op)) > 0]
    return min(hits) if hits else None


def value_columns(spec: str) -> list[str]:
    """Columns of a GetValue spec: `col` or `col, aggregation`.

    A second name that is no aggregation counts as a column too (over-approximation).
    """
    parts = [p.strip() for p in spec.split(",")]
    return [parts[0], *(p for p in parts[1:] if p and p.lower() not in _AGGREGATIONS)]


def lift_raw_sql(source: str) -> str:
    """`SQLInterpreter[<raw SQL>]` rewritten as `SQLInterpreter['<raw SQL>']`.

    Only when the source is not valid Python as it stands: EHRAgent's prompt writes the tool
    that way, with the SQL unquoted.
    """
    if parses(source):
        return source
    out, pos = [], 0
    while (start := source.find("SQLInterpreter", pos)) >= 0:
        open_at = start + len("SQLInterpreter")
        while open_at < len(source) and source[open_at] in " \t":
            open_at += 1
        close = _closing_bracket(source, open_at) if source[open_at : open_at + 1] == "[" else None
        if close is None:
            out.append(source[pos:open_at])
            pos = open_at
            continue
        inner = source[open_at + 1 : close]
        literal = inner if _is_string_literal(inner) else repr(inner.strip())
        out.append(source[pos:open_at] + "[" + literal + "]")
        pos = close + 1
    return "".join(out) + source[pos:]


def parses(source: str) -> bool:
    """Whether `source` is valid Python as it stands."""
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _is_string_literal(text: str) -> bool:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return isinstance(tree.body, ast.Constant | ast.JoinedStr | ast.BinOp | ast.Call | ast.Name)


def _closing_bracket(text: str, open_at: int) -> int | None:
    """Index of the `]` closing the `[` at `open_at`, skipping SQL/Python quoted strings."""
    depth, i, quote = 0, open_at, ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
            if depth == 0:
                return i if ch == "]" else None
        i += 1
    return None


_HOLE_NAME = "__guard_hole__"
_VALUE_PARENTS = (
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.Like,
    exp.ILike,
    exp.In,
    exp.Between,
    exp.Is,
    exp.Limit,
    exp.Offset,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Tuple,
)


def fill_value_holes(sql: str, where: str) -> str:
    """SQL with its run-time parts (`.format(pid)`) checked and filled, or unreadable.

    A run-time part inside a quoted string, or standing where SQL takes a value (an operand
    of a comparison, `IN (...)`, `BETWEEN`, `LIMIT`, arithmetic) is a value and is filled with
    a literal; anywhere else (a column, a table, a keyword, the select list) it could name
    data, so the SQL is unreadable.
    """
    if DATA_HOLE not in sql:
        return sql
    text = sql.replace(DATA_HOLE, _HOLE_NAME)
    try:
        trees = [t for t in sqlglot.parse(text, read="sqlite") if t is not None]
    except (SqlglotError, RecursionError):
        unreadable("dynamic_sql", f"{where}: SQL built at run time that does not parse")
    for tree in trees:
        for node in list(tree.find_all(exp.Column, exp.Table, exp.Identifier)):
            if _HOLE_NAME not in node.name or (
                isinstance(node, exp.Identifier) and isinstance(node.parent, exp.Column)
            ):
                continue
            value = (
                isinstance(node, exp.Column)
                and not node.table
                and isinstance(node.parent, _VALUE_PARENTS)
            )
            if not value:
                unreadable(
                    "dynamic_sql",
                    f"{where}: a run-time part of the SQL stands where a name must be",
                )
            node.replace(exp.Literal.number(0))
    return ";\n".join(t.sql(dialect="sqlite") for t in trees)
