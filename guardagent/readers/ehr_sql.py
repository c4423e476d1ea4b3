"""The eICU SQL reader: which base (table, column) pairs an SQL text EHRAgent runs reads.

EHRAgent sometimes answers with `SQLInterpreter("select ...")`. The guard checks every column
the query reads against the user's role, so this reader must report each base column the
query touches, under its real table, and nothing else: never an alias, a CTE name or a
derived column, which would deny a correct event with a nonsense detail or, worse, let a read
hide behind a name the permission table does not know.

What it reads. The text is parsed once with `sqlglot` (sqlite dialect); comments are dropped
by the parser; every statement of a `;`-separated text is read and the reads are united.
Each column reference anywhere in a statement is a read (select list, WHERE, JOIN ON/USING,
NATURAL JOIN, GROUP BY, HAVING, ORDER BY, window clauses, CASE, function arguments, scalar,
`IN` and `EXISTS` subqueries, every branch of UNION/INTERSECT/EXCEPT, unused CTEs). Names
are resolved through the query's scopes, as SQLite does: table aliases, derived tables, CTEs
(a CTE may use an earlier one; `WITH RECURSIVE` too), and result-column aliases. A reference
to a derived column (`t1.c1` where `c1` is `dense_rank() over (...)` in the subquery `t1`)
reports nothing by itself: the columns of its defining expression are read where it is
defined. `SELECT *` / `t.*` read every column (`EICU_COLUMNS`, primary key included) of
each base table in scope; over a derived table or CTE they read its result columns, which
map back to the base columns already reported inside it. `count(*)` reads no column. Every
base table in a FROM or JOIN is reported, possibly with no column. A bare column that
several tables in scope have is reported for each of them; a bare column unknown to a
correlated subquery's own tables is looked up in the enclosing queries. Identifiers are
case-insensitive; quoted ones (`"x"`, `[x]`, backticks) are identifiers.

Trust role. The SQL is attacker-influenced text (it sits in the agent's output). The reader
trusts only :mod:`.eicu_schema`; it never guesses, and it over-approximates where SQL would
be ambiguous (an extra read can only deny more).

Fails closed (:func:`guardagent.readers.evidence.unreadable`, which raises) on:

- `unparsable_sql`: text sqlglot cannot tokenize or parse, an empty text (or only comments),
  nesting too deep to read;
- `unsupported_statement`: anything but a read (INSERT, UPDATE, DELETE, CREATE, DROP, ALTER,
  ATTACH, PRAGMA, REPLACE, VACUUM, transactions, EXPLAIN, a bare VALUES, ...); a construct
  the resolver does not model (a table-valued function or VALUES in FROM, a derived table
  with a column list, `SELECT ... INTO`, a star outside a select list or `count(*)`, a
  `a.b.c.d` path, a function that is not a read-only SQLite built-in such as
  `load_extension`); and, as a last check, any column or table node of the tree the
  resolver did not visit;
- `unknown_table`: a table that is not one of the 10 eICU tables (`sqlite_master`,
  `patients`), a schema other than `main`, a qualifier (`foo.x`) naming no table or alias
  in scope;
- `unknown_column`: a column in no table in scope, no derived table's result and no
  result-column alias (a misspelling, `rowid`, a double-quoted string used as text).
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
import sqlglot.dialects.sqlite  # noqa: F401 - loaded now: a sandbox child may open no file
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from guardagent.readers.eicu_schema import EICU_COLUMNS
from guardagent.readers.evidence import unreadable

__all__ = ["sql_reads"]

_READ_ONLY_FUNCTIONS = frozenset(
    {
        # core scalar functions
        "abs",
        "char",
        "coalesce",
        "concat",
        "concat_ws",
        "format",
        "glob",
        "hex",
        "ifnull",
        "iif",
        "if",
        "instr",
        "length",
        "like",
        "likelihood",
        "likely",
        "lower",
        "ltrim",
        "max",
        "min",
        "nullif",
        "octet_length",
        "printf",
        "quote",
        "random",
        "randomblob",
        "replace",
        "round",
        "rtrim",
        "sign",
        "soundex",
        "substr",
        "substring",
        "trim",
        "typeof",
        "unhex",
        "unicode",
        "unlikely",
        "upper",
        "zeroblob",
        "changes",
        "total_changes",
        "last_insert_rowid",
        "sqlite_version",
        "sqlite_source_id",
        # date and time
        "date",
        "time",
        "datetime",
        "julianday",
        "unixepoch",
        "strftime",
        "timediff",
        # aggregates and window functions
        "avg",
        "count",
        "group_concat",
        "string_agg",
        "sum",
        "total",
        "row_number",
        "rank",
        "dense_rank",
        "percent_rank",
        "cume_dist",
        "ntile",
        "lag",
        "lead",
        "first_value",
        "last_value",
        "nth_value",
        # math
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atan2",
        "atanh",
        "ceil",
        "ceiling",
        "cos",
        "cosh",
        "degrees",
        "exp",
        "floor",
        "ln",
        "log",
        "log10",
        "log2",
        "mod",
        "pi",
        "pow",
        "power",
        "radians",
        "sin",
        "sinh",
        "sqrt",
        "tan",
        "tanh",
        "trunc",
        # JSON
        "json",
        "jsonb",
        "json_array",
        "jsonb_array",
        "json_array_length",
        "json_error_position",
        "json_extract",
        "jsonb_extract",
        "json_insert",
        "jsonb_insert",
        "json_object",
        "jsonb_object",
        "json_patch",
        "jsonb_patch",
        "json_pretty",
        "json_remove",
        "jsonb_remove",
        "json_replace",
        "jsonb_replace",
        "json_set",
        "jsonb_set",
        "json_type",
        "json_valid",
        "json_quote",
        "json_group_array",
        "jsonb_group_array",
        "json_group_object",
        "jsonb_group_object",
    }
)
"""Functions sqlglot does not know by type (`exp.Anonymous`) that a query may call: SQLite's
read-only built-ins. Anything else (`load_extension`, an application-defined function) may
do more than read, so the query is unsupported."""

_SELECT_CLAUSES = frozenset(
    {
        "expressions",
        "from_",
        "joins",
        "where",
        "group",
        "having",
        "order",
        "limit",
        "offset",
        "distinct",
        "windows",
        "with_",
        "kind",
    }
)
"""Select arguments the resolver understands; any other clause is unsupported."""

_TABLE_ARGS = frozenset({"this", "db", "alias", "joins", "indexed"})
"""Table arguments the resolver understands (`indexed`: INDEXED BY / NOT INDEXED)."""

_DERIVED_ARGS = frozenset({"this", "alias", "joins"})
"""Arguments of a subquery in FROM the resolver understands."""


@dataclass(frozen=True)
class _Source:
    """One FROM/JOIN item of a select: a base table, or a derived table / CTE."""

    name: str
    """What the select calls it: its alias, else its name ('' for an unaliased subquery)."""
    table: str | None
    """The base eICU table, or None for a derived table or CTE."""
    columns: frozenset[str]
    """The columns it exposes: every column of a base table, the result of a derived one."""


@dataclass(frozen=True)
class _Rel:
    """The result columns of a query, in order; `ordered` is False when a star made them."""

    names: tuple[str, ...]
    ordered: bool = True


@dataclass
class _Scope:
    """The names a column can resolve to inside one query, and the enclosing query's scope."""

    sources: list[_Source]
    aliases: frozenset[str]
    """Result-column aliases of this select (or a compound's result names)."""
    parent: _Scope | None


_Ctes = dict[str, _Rel]


class _Reader:
    """One pass over the statements of an SQL text, collecting base reads."""

    def __init__(self) -> None:
        self.reads: dict[str, set[str]] = {}
        self.seen: set[int] = set()
        """Ids of the column, table and star nodes resolved (see :meth:`check_all_seen`)."""

    # -- queries -----------------------------------------------------------------------------

    def query(self, node: exp.Expr, outer: _Scope | None, ctes: _Ctes) -> _Rel:
        """Read a query (select, compound or parenthesized) and return its result columns."""
        ctes = self.with_clause(node, outer, ctes)
        if isinstance(node, exp.Select):
            return self.select(node, outer, ctes)
        if isinstance(node, exp.SetOperation):
            left = self.query(node.this, outer, ctes)
            right = self.query(node.expression, outer, ctes)
            scope = _Scope([], frozenset(left.names) | frozenset(right.names), outer)
            self.modifiers(node, scope, ctes, skip={"this", "expression", "with_"})
            return left
        if isinstance(node, exp.Subquery):
            if node.args.get("alias") is not None:
                unreadable(
                    "unsupported_statement",
                    f"an aliased parenthesized query outside FROM: {_quote(node)}",
                )
            inner = self.query(node.this, outer, ctes)
            scope = _Scope([], frozenset(inner.names), outer)
            self.modifiers(node, scope, ctes, skip={"this", "with_"})
            return inner
        unreadable("unsupported_statement", f"not a SELECT query: {_quote(node)}")

    def with_clause(self, node: exp.Expr, outer: _Scope | None, ctes: _Ctes) -> _Ctes:
        """Read the CTEs of `node`'s WITH, each seeing the ones before it."""
        with_ = node.args.get("with_")
        if not isinstance(with_, exp.With):
            return ctes
        ctes = dict(ctes)
        for cte in with_.expressions:
            if not isinstance(cte, exp.CTE):
                unreadable("unsupported_statement", f"a WITH item: {_quote(cte)}")
            name = cte.alias.lower()
            declared = tuple(c.lower() for c in cte.alias_column_names)
            body = cte.this
            visible = ctes
            if with_.args.get("recursive") and isinstance(body, exp.SetOperation):
                anchor = declared or self.query(body.this, outer, ctes).names
                visible = {**ctes, name: _Rel(tuple(anchor))}
            result = self.query(body, outer, visible)
            if declared:
                if not result.ordered:
                    unreadable(
                        "unsupported_statement", f"CTE '{name}' names its columns over a select *"
                    )
                if len(declared) != len(result.names):
                    unreadable(
                        "unsupported_statement",
                        f"CTE '{name}' names {len(declared)} columns but its query "
                        f"returns {len(result.names)}",
                    )
                result = _Rel(declared)
            ctes[name] = result
        return ctes

    def select(self, node: exp.Select, outer: _Scope | None, ctes: _Ctes) -> _Rel:
        """Read one SELECT: its sources first, then every clause against them."""
        for key, value in node.args.items():
            if _present(value) and key not in _SELECT_CLAUSES:
                unreadable("unsupported_statement", f"a SELECT with a '{key}' clause")
        aliases = frozenset(p.alias.lower() for p in node.expressions if isinstance(p, exp.Alias))
        scope = _Scope([], aliases, outer)
        from_ = node.args.get("from_")
        if isinstance(from_, exp.From):
            self.source(from_.this, scope, ctes)
        for join in node.args.get("joins") or []:
            self.join(join, scope, ctes)
        for key, value in node.args.items():
            if key not in ("from_", "joins", "with_"):
                self.walk(value, scope, ctes)
        return self.result(node, scope)

    def result(self, node: exp.Select, scope: _Scope) -> _Rel:
        """The result column names of a select (stars expanded over its sources)."""
        names: list[str] = []
        ordered = True
        for projection in node.expressions:
            if isinstance(projection, exp.Star):
                ordered = False
                names.extend(c for s in scope.sources for c in sorted(s.columns))
            elif isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star):
                ordered = False
                qualifier = projection.table.lower()
                names.extend(
                    c for s in scope.sources if s.name == qualifier for c in sorted(s.columns)
                )
            else:
                names.append(projection.alias_or_name.lower())
        return _Rel(tuple(names), ordered)

    def modifiers(self, node: exp.Expr, scope: _Scope, ctes: _Ctes, skip: set[str]) -> None:
        """ORDER BY / LIMIT / OFFSET of a compound or parenthesized query."""
        for key, value in node.args.items():
            if key not in skip:
                self.walk(value, scope, ctes)

    # -- sources -----------------------------------------------------------------------------

    def source(self, node: exp.Expr, scope: _Scope, ctes: _Ctes) -> None:
        """Add one FROM/JOIN item to `scope` (reading a derived table on the way)."""
        if isinstance(node, exp.Table):
            self.table(node, scope, ctes)
            for join in node.args.get("joins") or []:
                self.join(join, scope, ctes)
        elif isinstance(node, exp.Subquery) and isinstance(node.this, exp.Table):
            self.source(node.this, scope, ctes)  # a parenthesized join: `(a join b on ...)`
            for join in node.args.get("joins") or []:
                self.join(join, scope, ctes)
        elif isinstance(node, exp.Subquery):
            self.only(node, _DERIVED_ARGS)
            alias = node.args.get("alias")
            if isinstance(alias, exp.TableAlias) and alias.columns:
                unreadable(
                    "unsupported_statement", f"a derived table with a column list: {_quote(alias)}"
                )
            # A FROM subquery cannot see its siblings; it may see enclosing queries.
            result = self.query(node.this, scope.parent, ctes)
            scope.sources.append(_Source(node.alias.lower(), None, frozenset(result.names)))
            for join in node.args.get("joins") or []:
                self.join(join, scope, ctes)
        else:
            unreadable(
                "unsupported_statement", f"a FROM item the reader does not read: {_quote(node)}"
            )

    def table(self, node: exp.Table, scope: _Scope, ctes: _Ctes) -> None:
        """A named FROM item: a CTE in scope, or one of the eICU tables."""
        self.seen.add(id(node))
        if not isinstance(node.this, exp.Identifier):
            unreadable("unsupported_statement", f"a table-valued function: {_quote(node)}")
        self.only(node, _TABLE_ARGS)
        alias = node.args.get("alias")
        if isinstance(alias, exp.TableAlias) and alias.columns:
            unreadable("unsupported_statement", f"a table alias with a column list: {_quote(node)}")
        name, db = node.name.lower(), node.db.lower()
        if db and db != "main":
            unreadable("unknown_table", f"table '{db}.{name}' is not in the main eICU database")
        if not db and name in ctes:
            scope.sources.append(
                _Source(node.alias_or_name.lower(), None, frozenset(ctes[name].names))
            )
        elif name in EICU_COLUMNS:
            self.reads.setdefault(name, set())
            scope.sources.append(_Source(node.alias_or_name.lower(), name, EICU_COLUMNS[name]))
        else:
            unreadable("unknown_table", f"table '{name}' is not one of the eICU tables")

    def only(self, node: exp.Expr, allowed: frozenset[str]) -> None:
        """Refuse a FROM item that carries a clause the reader does not read."""
        for key, value in node.args.items():
            if _present(value) and key not in allowed:
                unreadable(
                    "unsupported_statement", f"a FROM item with a '{key}' clause: {_quote(node)}"
                )

    def join(self, join: exp.Expr, scope: _Scope, ctes: _Ctes) -> None:
        """A JOIN: its item, then USING / NATURAL columns (both sides) and ON."""
        if not isinstance(join, exp.Join):
            unreadable("unsupported_statement", f"a join the reader does not read: {_quote(join)}")
        before = list(scope.sources)
        self.source(join.this, scope, ctes)
        added = scope.sources[len(before) :]
        for ident in join.args.get("using") or []:
            name = ident.name.lower()
            if isinstance(ident, exp.Column):
                self.seen.add(id(ident))
            owners = [s for s in scope.sources if name in s.columns]
            if not owners:
                unreadable("unknown_column", f"column '{name}' in USING is in no joined table")
            self.report(owners, name)
        if str(join.args.get("method") or "").lower() == "natural":
            left: frozenset[str] = frozenset().union(*(s.columns for s in before))
            for name in sorted(left.intersection(*(s.columns for s in added))):
                self.report([s for s in scope.sources if name in s.columns], name)
        for key, value in join.args.items():
            if key not in ("this", "using"):
                self.walk(value, scope, ctes)

    # -- expressions -------------------------------------------------------------------------

    def walk(self, value: object, scope: _Scope, ctes: _Ctes) -> None:
        """Read every column reference in an expression (subqueries get their own scope)."""
        if isinstance(value, list):
            for item in value:
                self.walk(item, scope, ctes)
            return
        if not isinstance(value, exp.Expr):
            return
        node = value
        if isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):
                self.star(node, scope, qualifier=node.table.lower())
            else:
                self.column(node, scope)
            return
        if isinstance(node, exp.Star):
            if isinstance(node.parent, exp.Count):
                self.seen.add(id(node))
                return  # count(*) reads rows, no column
            self.star(node, scope, qualifier=None)
            return
        if isinstance(node, (exp.Select, exp.SetOperation, exp.Subquery)):
            self.query(node, scope, ctes)  # correlated: sees this scope
            return
        if isinstance(node, (exp.Table, exp.Dot, exp.Command, exp.DDL, exp.DML)):
            unreadable("unsupported_statement", f"'{_quote(node)}' inside an expression")
        if isinstance(node, exp.Identifier) and not isinstance(
            node.parent, (exp.Alias, exp.TableAlias, exp.Window)
        ):
            unreadable("unsupported_statement", f"a name the reader does not place: {_quote(node)}")
        if isinstance(node, exp.Var) and not isinstance(node.parent, exp.Collate):
            unreadable(
                "unsupported_statement", f"a bare word the reader does not place: {_quote(node)}"
            )
        if isinstance(node, exp.Anonymous) and node.name.lower() not in _READ_ONLY_FUNCTIONS:
            unreadable(
                "unsupported_statement",
                f"function '{node.name.lower()}' is not a read-only SQLite built-in",
            )
        for child in node.args.values():
            self.walk(child, scope, ctes)

    def star(self, node: exp.Expr, scope: _Scope, qualifier: str | None) -> None:
        """`*` / `t.*` in a select list: every column of each base table it covers."""
        select = node.parent
        if not (isinstance(select, exp.Select) and node.arg_key == "expressions"):
            unreadable("unsupported_statement", f"'{_quote(node)}' outside a select list")
        self.seen.add(id(node))
        if isinstance(node, exp.Column):
            self.seen.add(id(node.this))  # the Star inside `t.*`
        covered = [s for s in scope.sources if qualifier is None or s.name == qualifier]
        if qualifier is not None and not covered:
            unreadable(
                "unknown_table", f"'{qualifier}.*': no table or alias '{qualifier}' in scope"
            )
        for source in covered:
            if source.table is not None:
                self.reads[source.table].update(source.columns)

    def column(self, node: exp.Column, scope: _Scope) -> None:
        """Resolve one column reference through the scopes and report its base column."""
        self.seen.add(id(node))
        name, qualifier = node.name.lower(), node.table.lower()
        if node.args.get("catalog") is not None:
            unreadable("unsupported_statement", f"a four-part name: {_quote(node)}")
        db = node.db.lower()
        if db and db != "main":
            unreadable(
                "unknown_table", f"table '{db}.{qualifier}' is not in the main eICU database"
            )
        if qualifier:
            level: _Scope | None = scope
            while level is not None:
                matches = [s for s in level.sources if s.name == qualifier]
                if matches:
                    missing = [s for s in matches if name not in s.columns]
                    if missing:
                        unreadable(
                            "unknown_column",
                            f"column '{name}' is not in the schema of {_describe(missing)}",
                        )
                    self.report(matches, name)
                    return
                level = level.parent
            unreadable(
                "unknown_table", f"'{qualifier}.{name}': no table or alias '{qualifier}' in scope"
            )
        level = scope
        while level is not None:
            owners = [s for s in level.sources if name in s.columns]
            if owners:
                self.report(owners, name)
                return
            if level is scope and name in scope.aliases:
                return  # a result-column alias: its expression is read where it is defined
            level = level.parent
        where = _describe(scope.sources) if scope.sources else "any table in scope"
        hint = " (a quoted name is a column; text takes single quotes)" if node.this.quoted else ""
        unreadable("unknown_column", f"column '{name}' is not in the schema of {where}{hint}")

    def report(self, sources: list[_Source], name: str) -> None:
        """Record `name` as read from every base table among `sources`."""
        for source in sources:
            if source.table is not None:
                self.reads[source.table].add(name)

    def check_all_seen(self, tree: exp.Expr) -> None:
        """Last line of defence: every column, table and star node must have been resolved."""
        for node in tree.find_all(exp.Column, exp.Table, exp.Star):
            if id(node) not in self.seen and node.arg_key != "indexed":
                unreadable(
                    "unsupported_statement", f"'{_quote(node)}' sits where the reader does not look"
                )


def _present(value: object) -> bool:
    """Whether a node argument is set (sqlglot leaves unset ones None, False or [])."""
    return not (value is None or value is False or (isinstance(value, list) and not value))


def _describe(sources: list[_Source]) -> str:
    tables = sorted({s.table for s in sources if s.table is not None})
    derived = sorted({s.name or "(subquery)" for s in sources if s.table is None})
    parts = []
    if tables:
        parts.append("table(s) " + ", ".join(tables))
    if derived:
        parts.append("derived table(s) " + ", ".join(derived))
    return " or ".join(parts)


def _quote(node: exp.Expr) -> str:
    """A node's SQL for a detail, short (details quote attacker text)."""
    try:
        text = node.sql(dialect="sqlite", unsupported_level=ErrorLevel.IGNORE)
    except SqlglotError:  # pragma: no cover - generation of a parsed node should not fail
        text = type(node).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def sql_reads(sql: str) -> dict[str, set[str]]:
    """Base table -> columns an eICU SQL text reads (every statement in it).

    Args:
        sql: One or more SQL statements (attacker-influenced text from the agent's output).

    Returns:
        Each eICU table the text loads, mapped to the lowercase columns it reads (an empty
        set when it reads no column of it, e.g. `count(*)`). Never an alias, a CTE name or a
        derived column.

    Raises:
        UnreadableEvidence: Through :func:`unreadable` with `unparsable_sql`,
            `unsupported_statement`, `unknown_table` or `unknown_column` (see the module
            docstring); the current run is then denied.

    """
    try:
        statements = sqlglot.parse(sql, read="sqlite")
    except SqlglotError as error:
        unreadable("unparsable_sql", f"SQL that does not parse: {str(error).splitlines()[0]}")
    except RecursionError:
        unreadable("unparsable_sql", "SQL nested too deeply to parse")
    trees = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    if not trees:
        unreadable("unparsable_sql", "empty SQL: no statement to read")
    reader = _Reader()
    try:
        for tree in trees:
            if not isinstance(tree, (exp.Select, exp.SetOperation, exp.Subquery)):
                kind = tree.key.upper() if not isinstance(tree, exp.Command) else tree.name
                unreadable(
                    "unsupported_statement",
                    f"{kind.upper()} statement: only SELECT queries are read",
                )
            reader.query(tree, None, {})
            reader.check_all_seen(tree)
    except RecursionError:
        unreadable("unparsable_sql", "SQL nested too deeply to read")
    return reader.reads
