"""Which eICU columns EHRAgent's Python code reads, by abstract interpretation of its AST.

EHRAgent answers with Python that calls its tools: `LoadDB(table)`, `FilterDB(db, conditions)`,
`GetValue(db, "column[, aggregation]")`, `SQLInterpreter(sql)` / `SQLInterpreter[sql]`. The code
is attacker-influenced text, so nothing here runs it: it is parsed with `ast` and walked with a
small abstract interpreter that tracks, for each variable, the strings it may hold (constants,
`+`, `%`, `str.format`, f-strings, `str()`, joins; a run-time part is a hole) and the tables it
may hold (through assignments, tuples, branches, loops, comprehensions, calls of functions the
code defines). Branches and loops are over-approximated: every path counts, so code can only be
read as reading *more*, never less. A defined function handed to code the reader does not
follow (`map`, `df.apply`, a decorator) is walked as if called with any value around it.

Reads counted: the columns of FilterDB conditions and GetValue specs, `db["col"]`, `db.col`,
`db.loc[..., cols]`, `db[[cols]]`, keyword arguments such as `sort_values("col")`, SQL (through
:mod:`.ehr_sql`), and every column of a table that is read whole (`db.iloc`, `db.values`,
`print(db)`, iterating it, any method or function the reader does not know).

Fails closed (:func:`~guardagent.readers.evidence.unreadable`) on: code that is not valid Python
(`unparsable_code`); a table name or column chosen at run time, i.e. a hole where a name must be
(`dynamic_table`, `dynamic_column`, `dynamic_sql`); a table or column not in the eICU schema
(`unknown_table`, `unknown_column`); a table variable the code never loaded (`untraced_table`);
dynamic code or direct data access (`eval`, `exec`, `getattr`, `__import__`, `open`, sqlite,
pandas or numpy readers, a tool or `eval` handed on as a value, dunder names and attributes, an
import of a module outside `_MODULES`: `dynamic_code`); constructs it does not model (classes,
`match`, async, `global`: `unsupported_construct`); code too large or too deeply nested to
walk in bounded time (`too_complex`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from guardagent.readers.ehr_text import (
    fill_value_holes,
    filter_columns,
    lift_raw_sql,
    value_columns,
)
from guardagent.readers.ehr_values import (
    DATA,
    DATA_HOLE,
    HOLE,
    OPAQUE,
    UNKNOWN_STR,
    Value,
    as_text,
    cap,
    concat,
    is_data,
    join_all,
    join_opt,
    percent,
    str_method,
    tables_in,
)
from guardagent.readers.eicu_schema import EICU_COLUMNS
from guardagent.readers.evidence import unreadable

_MAX_CALL_DEPTH = 4  # nested calls of functions the code itself defines
_MAX_PARAMS = 16  # parameters bound when a function escapes to code the reader does not follow
_MAX_NODES = 200_000  # AST nodes walked per event, loops included
_TOOLS = frozenset({"LoadDB", "FilterDB", "GetValue", "SQLInterpreter"})
_DYNAMIC = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "vars",
        "__import__",
        "open",
        "breakpoint",
        "input",
    }
)
_DATA_ACCESS = frozenset(
    {
        "connect",
        "execute",
        "executemany",
        "executescript",
        "read_sql",
        "read_sql_query",
        "read_sql_table",
        "read_csv",
        "read_table",
        "read_json",
        "read_parquet",
        "read_pickle",
        "import_module",
    }
)
_DYNAMIC_ATTRS = (
    (_DYNAMIC - {"compile"})
    | _DATA_ACCESS
    | frozenset(
        {
            "load",
            "loadtxt",
            "genfromtxt",
            "fromfile",
            "fromregex",
            "memmap",
            "open_memmap",
            "DataSource",
            "recfromcsv",
            "recfromtxt",
            "ExcelFile",
            "HDFStore",
            "io",
            "from_csv",
        }
    )
)
"""Attributes that reach code or data the reader cannot follow (`pd.eval`, `np.loadtxt`,
`pd.io`); any `read_*` attribute too (pandas' readers). `re.compile` is plain text."""
_MODULES = frozenset(
    {
        "__future__",
        "calendar",
        "collections",
        "copy",
        "datetime",
        "dateutil",
        "decimal",
        "fractions",
        "functools",
        "itertools",
        "json",
        "math",
        "numpy",
        "operator",
        "pandas",
        "random",
        "re",
        "statistics",
        "string",
        "time",
        "typing",
    }
)
"""Modules code may import: computation only. Any other (`os`, `sys`, `__main__`, `io`,
`subprocess`, `pathlib`, `sqlite3`, ...) can reach the data, or the tools under another
name, in ways the reader cannot follow."""
_NO_READ = frozenset({"len", "isinstance", "type", "id", "bool"})
_DATA_KEEPING = frozenset({"int", "float", "round", "abs", "max", "min"})
"""Builtins that turn database data into data (a number, one of the values)."""
_DATA_METHODS = frozenset(
    {
        "strip",
        "lstrip",
        "rstrip",
        "lower",
        "upper",
        "split",
        "rsplit",
        "splitlines",
        "casefold",
        "title",
    }
)
"""Methods of database data whose result is still only data (they add no text)."""
_DATE_PARTS = frozenset(
    {"year", "month", "day", "hour", "minute", "second", "days", "seconds", "weekday"}
)
"""Attributes that are a date's or a duration's numbers (`datetime.now().year`)."""
_FRAME_ATTRS = frozenset({"shape", "empty", "columns", "index", "dtypes", "ndim", "size"})
_ROW_METHODS = frozenset(
    {
        "sort_values",
        "groupby",
        "drop_duplicates",
        "dropna",
        "nlargest",
        "nsmallest",
        "set_index",
        "sort_index",
        "reset_index",
        "query",
        "filter",
        "merge",
        "join",
        "copy",
        "rename",
        "astype",
    }
)
_INDEXERS = frozenset({"loc", "iloc", "at", "iat"})
_ROW_ITERATORS = frozenset({"iterrows", "itertuples", "items", "iteritems"})
_GROWTH = frozenset({"append", "extend", "add", "insert", "update", "setdefault"})


@dataclass
class Reads:
    """Table -> columns read; a table loaded but none of whose columns is read maps to []."""

    found: dict[str, set[str]] = field(default_factory=dict)
    strict: bool = True
    unknown: list[str] = field(default_factory=list)

    def table(self, name: str) -> None:
        """Record a loaded table (even if none of its columns is read)."""
        self.found.setdefault(name, set())

    def column(self, tables: frozenset[str], name: str, where: str) -> None:
        """Record `name` read from whichever of `tables` has it; a name none has is unreadable."""
        if HOLE in name or DATA_HOLE in name:
            unreadable("dynamic_column", f"{where}: the column name is computed at run time")
        col = name.strip().strip("`\"'[]").strip().lower()
        owners = [t for t in tables if col in EICU_COLUMNS[t]]
        if not owners:
            detail = (
                f"{where}: column '{col}' is not in the schema of table(s) "
                f"{', '.join(sorted(tables))}"
            )
            if self.strict:
                unreadable("unknown_column", detail)
            self.unknown.append(detail)
        for table in owners:
            self.found.setdefault(table, set()).add(col)

    def whole(self, tables: frozenset[str]) -> None:
        """Record every column of `tables`: the table was read whole."""
        for table in tables:
            self.found.setdefault(table, set()).update(EICU_COLUMNS[table])

    def merge(self, other: dict[str, set[str]]) -> None:
        """Add reads found elsewhere (the SQL reader)."""
        for table, cols in other.items():
            self.found.setdefault(table, set()).update(cols)


Env = dict[str, Value]


class Interpreter:
    """Walks the statements of EHRAgent's code cells in order, sharing one environment.

    Cells of one run share their variables (the agent's kernel keeps them), so a table loaded in
    one cell and read in the next is traced.
    """

    def __init__(self, sql_reads: Callable[[str], dict[str, set[str]]]) -> None:
        self.env: Env = {}
        self.reads = Reads()
        self.sql_reads = sql_reads
        self.functions: dict[str, ast.FunctionDef | ast.Lambda] = {}
        self.depth = 0
        self.budget = _MAX_NODES
        self.returns: list[list[Value]] = []

    # ------------------------------------------------------------------ entry points

    def run_source(self, source: str, where: str) -> None:
        """Parse one code block and walk it; invalid Python is unreadable.

        EHRAgent may write `SQLInterpreter[select ...]` with the SQL unquoted (its prompt's
        notation); such SQL is lifted into a string literal first, the rest must be Python.
        """
        try:
            tree = ast.parse(lift_raw_sql(source))
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            line = getattr(exc, "lineno", None)
            unreadable(
                "unparsable_code",
                f"{where} is not valid Python" + (f" (line {line})" if line else ""),
            )
        self.block(tree.body)
        self.end_of_cell(tree.body)

    # ------------------------------------------------------------------ statements

    def block(self, body: list[ast.stmt]) -> None:
        """Walk statements in order."""
        for stmt in body:
            self.stmt(stmt)

    def end_of_cell(self, body: list[ast.stmt]) -> None:
        """What a cell hands back reads its data: `answer` and a displayed last expression."""
        self.reads.whole(tables_in(self.env.get("answer", Value())))
        if body and isinstance(body[-1], ast.Expr):
            self.reads.whole(tables_in(self.env.get("_", Value())))

    def _tick(self, node: ast.AST) -> None:
        self.budget -= 1
        if self.budget < 0:
            unreadable("too_complex", "the code is too large to read in bounded time")

    def stmt(self, node: ast.stmt) -> None:  # noqa: C901 - one branch per statement kind
        """Walk one statement; a kind the reader does not model is unreadable."""
        self._tick(node)
        if isinstance(node, ast.Assign):
            value = self.expr(node.value)
            for target in node.targets:
                self.bind(target, value, node.value)
        elif isinstance(node, ast.AnnAssign):
            self.expr(node.annotation)  # evaluated at run time (outside `from __future__`)
            if node.value is not None:
                self.bind(node.target, self.expr(node.value), node.value)
        elif isinstance(node, ast.AugAssign):
            current = self.expr(node.target)
            right = self.expr(node.value)
            strings = (
                isinstance(node.op, ast.Add)
                and current.elems is None
                and (current.strs or right.strs)
            )
            self.bind(node.target, concat(current, right) if strings else current.join(right), None)
        elif isinstance(node, ast.Expr | ast.Return):
            value = self.expr(node.value) if node.value is not None else OPAQUE
            if isinstance(node, ast.Return) and self.returns:
                self.returns[-1].append(value)
            elif isinstance(node, ast.Expr):
                self.env["_"] = value  # a notebook displays a cell's last expression
        elif isinstance(node, ast.If | ast.While):
            self.expr(node.test)
            self.branches([node.body, node.orelse], loop=isinstance(node, ast.While))
        elif isinstance(node, ast.For):
            items = self.iterate(self.expr(node.iter), node.iter)
            self.bind(node.target, items, None)
            self.branches([node.body, node.orelse], loop=True, rebind=(node.target, items))
        elif isinstance(node, ast.With):
            for item in node.items:
                value = self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, value, None)
            self.block(node.body)
        elif isinstance(node, ast.Try | ast.TryStar):
            handlers: list[list[ast.stmt]] = [h.body for h in node.handlers]
            for handler in node.handlers:
                if handler.type is not None:  # evaluated when an exception reaches it
                    self.expr(handler.type)
                if handler.name:
                    self.env[handler.name] = OPAQUE
            self.branches([node.body + node.orelse, *handlers])
            self.block(node.finalbody)
        elif isinstance(node, ast.FunctionDef):
            decorators = [self.expr(decorator) for decorator in node.decorator_list]
            self.signature(node)
            self.functions[node.name] = node
            self.env[node.name] = Value(func=frozenset({node.name}))
            if decorators:  # a decorator may call the function: `@(lambda fn: fn())`
                self.escape([self.env[node.name], *decorators], node)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            self.check_import(node)
            for alias in node.names:
                top = (alias.asname or alias.name).split(".")[0]
                self.env[top] = OPAQUE
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.env.pop(target.id, None)
                else:
                    self.expr(target)
        elif isinstance(node, ast.Raise | ast.Assert):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)
        elif isinstance(node, ast.Pass | ast.Break | ast.Continue):
            return
        else:
            unreadable(
                "unsupported_construct", f"line {node.lineno}: a '{type(node).__name__}' statement"
            )

    def branches(
        self,
        bodies: list[list[ast.stmt]],
        loop: bool = False,
        rebind: tuple[ast.expr, Value] | None = None,
    ) -> None:
        """Run each body from the current state and join: every path counts.

        A loop body runs twice, so values that flow around the loop once are seen.
        """
        start = dict(self.env)
        ends = [start] if loop or len(bodies) < 2 or not bodies[-1] else []
        for body in bodies:
            self.env = dict(start)
            for _ in range(2 if loop else 1):
                if rebind is not None:
                    self.bind(rebind[0], rebind[1], None)
                self.block(body)
            ends.append(self.env)
        joined: Env = {}
        for env in ends:
            for name, value in env.items():
                joined[name] = joined[name].join(value) if name in joined else value
        self.env = joined

    def bind(self, target: ast.expr, value: Value, source: ast.expr | None) -> None:
        """Assign `value` to a target; tuples unpack element-wise when the source is a literal."""
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(source, ast.Tuple | ast.List) and len(source.elts) == len(target.elts):
                for sub, elt in zip(target.elts, source.elts, strict=True):
                    self.bind(sub, self.expr(elt), elt)
                return
            part = value.elems if value.elems is not None else (value if value.tables else OPAQUE)
            for sub in target.elts:
                self.bind(sub.value if isinstance(sub, ast.Starred) else sub, part, None)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, value, None)
        else:  # x.attr = v, x[i] = v: the container may now hold v
            self.expr(target.value if isinstance(target, ast.Attribute | ast.Subscript) else target)
            if isinstance(target, ast.Subscript):
                self.expr(target.slice)
            base = _root_name(target)
            if base is not None and base in self.env and _through_columns(target):
                self.reads.whole(tables_in(self.env[base], deep=False))  # names now lie
            if base is not None and base in self.env:
                held = self.env[base]
                elems = value if held.elems is None else held.elems.join(value)
                self.env[base] = replace(held, elems=elems)

    # ------------------------------------------------------------------ expressions

    def expr(self, node: ast.expr) -> Value:  # noqa: C901 - one branch per expression kind
        """What an expression may evaluate to, recording the reads it makes."""
        self._tick(node)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return Value(strs=frozenset({node.value}))
            if isinstance(node.value, int | float) and not isinstance(node.value, bool):
                return Value(strs=frozenset({str(node.value)}))  # what formatting it gives
            return OPAQUE
        if isinstance(node, ast.Name):
            if node.id not in self.env:
                _check_name(node.id, node.lineno)
            return self.env.get(node.id, OPAQUE)
        if isinstance(node, ast.JoinedStr):
            return self.fstring(node)
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Attribute):
            _check_attribute(node.attr, node.lineno)
            return self.attribute(self.expr(node.value), node.attr, node.lineno)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            elems = [self.expr(e.value if isinstance(e, ast.Starred) else e) for e in node.elts]
            return Value(elems=join_all(elems))
        if isinstance(node, ast.Dict):
            keys = [self.expr(k) for k in node.keys if k is not None]
            values = [self.expr(v) for v in node.values]
            return Value(elems=join_all(values), keys=join_all(keys))
        if isinstance(node, ast.IfExp):
            self.expr(node.test)
            return self.expr(node.body).join(self.expr(node.orelse))
        if isinstance(node, ast.BoolOp):
            return join_all(self.expr(v) for v in node.values)
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            return self.comprehension(node)
        if isinstance(node, ast.Lambda):
            self.signature(node)
            name = f"<lambda {id(node)}>"
            self.functions[name] = node
            return Value(func=frozenset({name}))
        if isinstance(node, ast.NamedExpr):
            value = self.expr(node.value)
            self.bind(node.target, value, node.value)
            return value
        if isinstance(node, ast.Starred):
            return self.expr(node.value)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.UnaryOp | ast.Slice | ast.FormattedValue):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.reads.whole(tables_in(self.expr(child), deep=False))  # `-db`
            return OPAQUE
        if isinstance(node, ast.Await | ast.Yield | ast.YieldFrom):
            unreadable("unsupported_construct", f"line {node.lineno}: '{type(node).__name__}'")
        unreadable("unsupported_construct", f"an expression '{type(node).__name__}'")

    def compare(self, node: ast.Compare) -> Value:
        """Comparing a table's values reads them all; `"col" in row` only asks for a name."""
        operands = [self.expr(node.left), *(self.expr(c) for c in node.comparators)]
        identity = all(isinstance(op, ast.Is | ast.IsNot) for op in node.ops)
        for i, value in enumerate(operands):
            membership = i > 0 and isinstance(node.ops[i - 1], ast.In | ast.NotIn)
            if not membership and not identity:
                self.reads.whole(tables_in(value, deep=False))
        return OPAQUE

    def fstring(self, node: ast.JoinedStr) -> Value:
        """An f-string: literal parts kept, each field its text or a hole."""
        out = Value(strs=frozenset({""}))
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                value = self.expr(part.value)
                self.reads.whole(tables_in(value))  # formatting a table prints its values
                if part.format_spec is not None:
                    self.expr(part.format_spec)
                plain = part.conversion in (-1, ord("s")) and part.format_spec is None
                piece = Value(strs=as_text(value) if plain else frozenset({HOLE}))
            else:
                piece = self.expr(part)
            out = concat(out, piece)
        return out

    def binop(self, node: ast.BinOp) -> Value:
        """`+` concatenates, `%` formats; other operators on text give unknown text.

        A table operand (`db * 1`, `'x' + db`, `'%s' % (db,)`) yields every value of it: it
        is read whole (list concatenation and repetition only move it).
        """
        left, right = self.expr(node.left), self.expr(node.right)
        if left.elems is None and right.elems is None or isinstance(node.op, ast.Mod):
            for side in (left, right):
                self.reads.whole(tables_in(side, deep=isinstance(node.op, ast.Mod)))
        if isinstance(node.op, ast.Add):
            if left.elems is not None or right.elems is not None:
                return left.join(right)
            return concat(left, right) if left.strs or right.strs else OPAQUE
        if isinstance(node.op, ast.Mod) and left.strs:
            parts = (
                [self.expr(e) for e in node.right.elts]
                if isinstance(node.right, ast.Tuple)
                else [right]
            )
            return Value(strs=cap(frozenset(percent(s, parts) for s in left.strs)))
        if left.strs or right.strs:
            return UNKNOWN_STR  # `'a' * n` and friends: text, but not knowable
        return OPAQUE

    def signature(self, node: ast.FunctionDef | ast.Lambda) -> None:
        """Defaults and annotations: Python evaluates them where the function is defined."""
        args = node.args
        parts = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None and arg.annotation is not None:
                parts.append(arg.annotation)
        if isinstance(node, ast.FunctionDef) and node.returns is not None:
            parts.append(node.returns)
        for part in parts:
            self.expr(part)

    def comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> Value:
        """A comprehension: its targets bound to the iterables' elements, in its own scope.

        A walrus inside it (`(t := ...)`) binds in the enclosing scope, as in Python.
        """
        saved = dict(self.env)
        for gen in node.generators:
            self.bind(gen.target, self.iterate(self.expr(gen.iter), gen.iter), None)
            for cond in gen.ifs:
                self.expr(cond)
        if isinstance(node, ast.DictComp):
            elem = self.expr(node.key).join(self.expr(node.value))
        else:
            elem = self.expr(node.elt)
        inner, self.env = self.env, saved
        for sub in ast.walk(node):
            if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                name = sub.target.id
                if name in inner:  # it may run zero times: the old value stays possible
                    self.env[name] = saved[name].join(inner[name]) if name in saved else inner[name]
        return Value(elems=elem)

    def iterate(self, value: Value, node: ast.expr) -> Value:
        """What a `for` over `value` binds: its elements, or a table's rows.

        A row is still that table, so `row["col"]` is a read of col and any other use of a row
        reads it whole.
        """
        rows = Value(
            tables=value.tables | frozenset(t for t, _ in value.indexer), columns=value.columns
        )
        items = join_opt(value.elems, value.keys)
        if items is not None:
            return items.join(rows) if rows.tables else items
        if rows.tables:
            return rows
        if value.strs:
            return UNKNOWN_STR
        return DATA if is_data(value) else OPAQUE  # the characters of a value: still data

    # ------------------------------------------------------------------ calls

    def call(self, node: ast.Call) -> Value:
        """A call: EHRAgent's tools, functions the code defined, or anything else."""
        func = node.func
        name = func.id if isinstance(func, ast.Name) else None
        if name in _TOOLS and name not in self.env:
            return self.tool(name, node)
        args = [self.expr(a.value if isinstance(a, ast.Starred) else a) for a in node.args]
        kwargs = {kw.arg: self.expr(kw.value) for kw in node.keywords}
        if name in _DYNAMIC or (isinstance(func, ast.Attribute) and func.attr in _DATA_ACCESS):
            if name in ("eval", "exec") and args and all(a.tables and not a.strs for a in args):
                return Value(tables=args[0].tables)  # eval() of a table: its data, not code
            callee = name or (func.attr if isinstance(func, ast.Attribute) else "?")
            unreadable("dynamic_code", f"line {node.lineno}: a call of '{callee}'")
        if isinstance(func, ast.Attribute):
            _check_attribute(func.attr, node.lineno)
            owner = self.expr(func.value)
            if func.attr in _GROWTH and not owner.tables:
                self.grow(func.value, [*args, *kwargs.values()])
                return OPAQUE
            return self.method(owner, func.attr, args, kwargs, node)
        target = self.env.get(name, OPAQUE) if name is not None else self.expr(func)
        if target.func:
            return self.user_call(target.func, args, kwargs, node)
        self.escape([*args, *kwargs.values()], node)
        if name not in _NO_READ:  # a table handed to anything else is read whole
            for value in [*args, *kwargs.values()]:
                self.reads.whole(tables_in(value))
        if name == "str" and len(args) == 1:
            return Value(strs=as_text(args[0]))
        if (
            name in _DATA_KEEPING
            and name not in self.env
            and args
            and all(is_data(a) or (a.strs and not a.other) for a in args)
            and is_data(args[0])
        ):
            return DATA  # int(stay_id): a number read from the database
        if name == "Calendar" and name not in self.env:  # EHRAgent's date tool runs SQL:
            template = Value(strs=frozenset({"select datetime(current_time, '"}))
            for arg in [*args, *kwargs.values()]:  # select datetime(current_time, '<arg>')
                self.sql(
                    concat(concat(template, arg), Value(strs=frozenset({"')"}))),
                    f"line {node.lineno}: Calendar",
                )
            return DATA  # a date, not code
        if name in ("list", "tuple", "set", "frozenset", "sorted", "reversed", "iter"):
            return Value(elems=join_all(a.elems if a.elems is not None else a for a in args))
        return OPAQUE

    def check_import(self, node: ast.Import | ast.ImportFrom) -> None:
        """Only computation modules may be imported, and no data reader out of them."""
        modules = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else ["." * node.level + (node.module or "")]
        )
        for module in modules:
            if module.split(".")[0] not in _MODULES:
                unreadable(
                    "dynamic_code",
                    f"line {node.lineno}: an import of '{module}' "
                    "(only computation modules are read; this one can reach the data "
                    "or the tools in ways the reader cannot follow)",
                )
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                _check_attribute(alias.name, node.lineno)
                if alias.name == "*" or alias.name in _DYNAMIC:
                    unreadable(
                        "dynamic_code",
                        f"line {node.lineno}: an import of '{alias.name}' from '{modules[0]}'",
                    )

    def grow(self, container: ast.expr, values: list[Value]) -> None:
        """`rows.append(x)` and friends: the container may now hold x."""
        base = _root_name(container)
        if base is None:
            return
        held = self.env.get(base, Value())
        added = join_all(values)
        self.env[base] = replace(
            held, elems=added if held.elems is None else held.elems.join(added)
        )

    def escape(self, values: list[Value], node: ast.Call | ast.FunctionDef) -> None:
        """Functions the code defined, handed to code the reader does not follow.

        `map(f, xs)`, `df.apply(f)`, `sorted(key=f)`, a decorator: the callee may call them,
        with any of the values around (or their elements), so each is walked once with its
        parameters bound to any of those, or to something unknown.
        """
        funcs = frozenset[str]().union(*(_funcs_in(v) for v in values))
        if not funcs:
            return
        given = join_all(
            [OPAQUE, *values, *(p for v in values for p in (v.elems, v.keys) if p is not None)]
        )
        self.user_call(funcs, [given] * _MAX_PARAMS, {}, node)

    def user_call(
        self,
        names: frozenset[str],
        args: list[Value],
        kwargs: dict[str | None, Value],
        node: ast.Call | ast.FunctionDef,
    ) -> Value:
        """Walk the body of a function the code defined, with these arguments bound."""
        if self.depth >= _MAX_CALL_DEPTH:
            unreadable("too_complex", f"line {node.lineno}: calls nested too deeply to follow")
        result = Value()
        for fname in sorted(names):
            fn = self.functions[fname]
            params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
            saved = dict(self.env)
            for param in (*params, *(a.arg for a in fn.args.kwonlyargs)):
                self.env[param] = OPAQUE
            defaults = [self.expr(d) for d in fn.args.defaults]  # `def g(h=f)`: h may be f
            for param, value in zip(params[len(params) - len(defaults) :], defaults, strict=True):
                self.env[param] = value
            for arg, default in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
                if default is not None:
                    self.env[arg.arg] = self.expr(default)
            for param, value in zip(params, args, strict=False):
                self.env[param] = value
            for key, value in kwargs.items():
                if key is not None:
                    self.env[key] = value
            for extra in (fn.args.vararg, fn.args.kwarg):
                if extra is not None:
                    self.env[extra.arg] = Value(elems=join_all([*args, *kwargs.values()]))
            self.depth += 1
            self.returns.append([])
            try:
                if isinstance(fn, ast.Lambda):
                    self.returns[-1].append(self.expr(fn.body))
                else:
                    self.block(fn.body)
            finally:
                self.depth -= 1
                returned = self.returns.pop()
                self.env = saved
            result = result.join(join_all(returned) if returned else OPAQUE)
        return result

    def tool(self, name: str, node: ast.Call) -> Value:
        """EHRAgent's own tools: where tables are loaded and columns named."""
        where = f"line {node.lineno}: {name}"
        args = [self.expr(a) for a in node.args]
        kwargs = {kw.arg: self.expr(kw.value) for kw in node.keywords}
        if name == "SQLInterpreter":  # any argument may be the one the tool runs
            return self.sql(join_all([*args, *kwargs.values()]), where)
        if name == "LoadDB":
            target = args[0] if args else next(iter(kwargs.values()), Value())
            return Value(tables=self.table_names(target, where))
        db = args[0] if args else Value()
        spec = args[1] if len(args) > 1 else next(iter(kwargs.values()), Value())
        tables = self.table_of(db, where)
        if not _only_text(spec) or any(HOLE in s for s in spec.strs):
            unreadable(
                "dynamic_column",
                f"{where}: the column argument is computed at run time"
                " (a part the code computes may add a column or a '||' condition)",
            )
        for text in spec.strs:
            for col in (filter_columns if name == "FilterDB" else value_columns)(text):
                self.reads.column(tables, col, where)
        return Value(tables=tables) if name == "FilterDB" else DATA

    def sql(self, sql: Value, where: str) -> Value:
        """SQL passed to SQLInterpreter: every possible text is read.

        A run-time part is allowed only where SQL takes a value (see `fill_value_holes`).
        """
        if not _only_text(sql):
            unreadable("dynamic_sql", f"{where}: the SQL text is built at run time")
        if any(HOLE in s for s in sql.strs):
            unreadable(
                "dynamic_sql",
                f"{where}: a part of the SQL is computed by the code (only "
                "a value read from the database may fill it: a computed one may close a "
                "quote or add a query)",
            )
        for text in sql.strs:
            self.reads.merge(self.sql_reads(fill_value_holes(text, where)))
        return DATA

    def table_names(self, value: Value, where: str) -> frozenset[str]:
        """The tables LoadDB may load: known constants of the schema only."""
        if not _only_text(value) or any(HOLE in s or DATA_HOLE in s for s in value.strs):
            unreadable("dynamic_table", f"{where}: the table name is computed at run time")
        names = frozenset(s.strip().lower() for s in value.strs)
        for table in names:
            if table not in EICU_COLUMNS:
                unreadable("unknown_table", f"{where}: '{table}' is not an eICU table")
            self.reads.table(table)
        return names

    def table_of(self, value: Value, where: str) -> frozenset[str]:
        """The tables a FilterDB/GetValue argument holds; an untraced one is unreadable."""
        if not value.tables:
            unreadable("untraced_table", f"{where}: its table was never loaded with LoadDB")
        return value.tables

    # ------------------------------------------------------------------ tables

    def method(
        self,
        owner: Value,
        attr: str,
        args: list[Value],
        kwargs: dict[str | None, Value],
        node: ast.Call,
    ) -> Value:
        """`owner.attr(...)`: string methods are followed, table methods counted as reads."""
        where = f"line {node.lineno}: .{attr}()"
        self.escape([owner, *args, *kwargs.values()], node)
        if owner.tables and attr in _ROW_ITERATORS:  # (index, row) pairs: rows stay the table
            return Value(elems=Value(tables=owner.tables, other=True, columns=owner.columns))
        if owner.tables:
            named = [
                *args,
                *(
                    v
                    for k, v in kwargs.items()
                    if k in ("by", "subset", "on", "columns", "items", "keys", "column", None)
                ),
            ]
            if attr == "rename" and not all(
                _text_map(v)
                for v in [
                    *args,
                    *(v for k, v in kwargs.items() if k in ("columns", "mapper", "index")),
                ]
            ):
                self.reads.whole(tables_in(owner, deep=False))  # names mapped unseen: all
            if attr in _ROW_METHODS:
                for value in named:  # a dict's keys too: `rename(columns={"old": "new"})`
                    for part in (value, value.elems, value.keys):
                        for text in part.strs if part is not None else ():
                            self.reads.column(owner.tables, text, where)
                    if value.tables:
                        self.reads.merge({t: set() for t in value.tables})
                joined = frozenset().union(*(v.tables for v in args))
                return Value(
                    tables=owner.tables | joined, columns=None if joined else owner.columns
                )
            self.reads.whole(tables_in(owner, deep=False))
            return OPAQUE
        for value in [*args, *kwargs.values()]:  # handed to an unknown method: read whole
            self.reads.whole(tables_in(value))
        if owner.strs and not owner.other:
            fields = {k: v for k, v in kwargs.items() if k is not None}
            return Value(strs=cap(frozenset(str_method(s, attr, args, fields) for s in owner.strs)))
        if is_data(owner) and attr in _DATA_METHODS:
            return DATA
        if attr in ("pop", "get", "setdefault") and owner.elems is not None:
            return owner.elems
        if attr in ("keys", "values", "items", "copy"):
            items = {
                "keys": owner.keys,
                "values": owner.elems,
                "copy": owner.elems,
                "items": join_opt(owner.keys, owner.elems),
            }[attr]
            if items is not None:
                return replace(owner, elems=items) if attr == "copy" else Value(elems=items)
        return OPAQUE

    def attribute(self, owner: Value, attr: str, line: int) -> Value:
        """`owner.attr`: a column of a table, an indexer, a harmless attribute, or a whole read."""
        if owner.tables:
            if attr in _INDEXERS:
                return Value(indexer=frozenset((t, attr) for t in owner.tables))
            if attr in _FRAME_ATTRS:
                return OPAQUE
            if attr in _ROW_METHODS:
                return owner  # the bound method; its call is handled in `method`
            if any(attr in EICU_COLUMNS[t] for t in owner.tables):
                self.reads.column(owner.tables, attr, f"line {line}: .{attr}")
                return OPAQUE
            self.reads.whole(tables_in(owner, deep=False))  # values, to_dict, head, T, ...
            return OPAQUE
        if attr in _DATE_PARTS:
            return DATA  # `datetime.now().year`: a number, no text of the code's
        return OPAQUE

    def subscript(self, node: ast.Subscript) -> Value:
        """`owner[key]`: columns of a table, rows of a table, or an element of a container."""
        base = node.value
        if (
            isinstance(base, ast.Name)
            and base.id == "SQLInterpreter"
            and "SQLInterpreter" not in self.env
        ):
            return self.sql(self.expr(node.slice), f"line {node.lineno}: SQLInterpreter[...]")
        owner = self.expr(base)
        where = f"line {node.lineno}: [...]"
        key = self.expr(node.slice) if not isinstance(node.slice, ast.Tuple) else Value()
        if owner.indexer:
            tables = frozenset(t for t, _ in owner.indexer)
            columns = self.index_columns(tables, owner.indexer, node.slice, where)
            return Value(tables=tables, columns=columns)
        if owner.tables:
            if isinstance(node.slice, ast.Slice | ast.Compare | ast.BoolOp | ast.UnaryOp) or (
                isinstance(node.slice, ast.BinOp)
                and isinstance(node.slice.op, ast.BitAnd | ast.BitOr | ast.BitXor)
            ):
                return replace(owner, indexer=frozenset())  # rows: a slice or a boolean mask
            columns = self.named_columns(owner.tables, key, where)
            return Value(tables=owner.tables, columns=columns)
        if owner.elems is not None:
            return owner.elems
        if owner.strs:
            return UNKNOWN_STR
        return DATA if is_data(owner) else OPAQUE  # stay_ids[0]: part of a value, still data

    def index_columns(
        self,
        tables: frozenset[str],
        indexer: frozenset[tuple[str, str]],
        key: ast.expr,
        where: str,
    ) -> frozenset[str] | None:
        """`.loc[rows, cols]` names columns; `.loc[rows]` and any `.iloc` read every column.

        Returns the columns the result holds, or None when it holds (and read) them all.
        """
        if any(kind in ("iloc", "iat") for _, kind in indexer):
            for elt in key.elts if isinstance(key, ast.Tuple) else [key]:
                self.expr(elt)
            self.reads.whole(tables)
            return None
        if not isinstance(key, ast.Tuple) or len(key.elts) != 2:
            if not isinstance(key, ast.Tuple):
                self.expr(key)
            self.reads.whole(tables)
            return None
        self.expr(key.elts[0])
        cols = key.elts[1]
        if isinstance(cols, ast.Slice):
            self.reads.whole(tables)
            return None
        return self.named_columns(tables, self.expr(cols), where)

    def named_columns(self, tables: frozenset[str], key: Value, where: str) -> frozenset[str]:
        """Columns named by a subscript key (a string, or a list of strings), recorded."""
        names = key.elems if key.elems is not None else key
        if not _only_text(names):
            unreadable("dynamic_column", f"{where}: the column is chosen at run time")
        for text in names.strs:
            self.reads.column(tables, text, where)
        return frozenset(n.strip().lower() for n in names.strs)


def _only_text(value: Value) -> bool:
    """Whether a value can only be text (no table, container, function or unknown object)."""
    return bool(value.strs) and not (
        value.other
        or value.tables
        or value.indexer
        or value.func
        or value.elems is not None
        or value.keys is not None
    )


def _text_map(value: Value) -> bool:
    """Whether a value is a dict from text to text (a `rename` mapping the reader can read)."""
    return (
        value.keys is not None
        and value.elems is not None
        and _only_text(value.keys)
        and _only_text(value.elems)
        and not (value.strs or value.tables or value.other or value.func)
    )


def _through_columns(target: ast.expr) -> bool:
    """Whether an assignment target goes through `.columns` (it renames columns).

    `db.columns = [...]` or `db.columns.values[2] = "x"`: later names lie.
    """
    node = target
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute) and node.attr == "columns":
            return True
        node = node.value
    return False


def _funcs_in(value: Value) -> frozenset[str]:
    """Functions the code defined that a value may be or hold (elements and keys included)."""
    inner = [_funcs_in(p) for p in (value.elems, value.keys) if p is not None]
    return value.func.union(*inner)


def _check_name(name: str, line: int) -> None:
    """A name read as a value (not called directly): a tool or `eval` handed on is unreadable.

    `L = LoadDB; L('lab')` or `{'f': eval}` would load data or run code the reader never
    sees as a call; dunder names (`__builtins__`) reach everything.
    """
    if name in _TOOLS or name in _DYNAMIC or name == "Calendar":
        unreadable(
            "dynamic_code",
            f"line {line}: '{name}' is used other than by a direct "
            "call (the reader follows direct calls only)",
        )
    if name.startswith("__") and name.endswith("__") and name != "__name__":
        unreadable("dynamic_code", f"line {line}: the name '{name}'")


def _check_attribute(attr: str, line: int) -> None:
    """An attribute that reaches code, data or a function's internals is unreadable."""
    if (
        attr in _DYNAMIC_ATTRS
        or attr.startswith("read_")
        or (attr.startswith("__") and attr.endswith("__"))
    ):
        unreadable(
            "dynamic_code",
            f"line {line}: the attribute '{attr}' (code or data the reader cannot follow)",
        )


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None
