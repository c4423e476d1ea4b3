"""Trusted extractors for guarding EHRAgent on eICU (access control, the paper's EICU-AC).

A guard program must not judge by eye which columns EHRAgent's code reads: the run log is
attacker-influenced text, and the agent often retries, leaving several code cells behind.
These functions parse the event deterministically. Facts about the user come only from the
agent input; facts about data access come only from the last code cell of the agent output.
Columns are matched as whole identifiers against the schema, never as substrings, so
`labresulttime` never implies `labresult` and `average_cost` never implies `age`.
"""

from __future__ import annotations

import json
import re

from guardagent.tools.registry import guard_tool

_SCHEMA_TEXT = """
allergy(patientunitstayid, drugname, allergyname, allergytime)
cost(uniquepid, patienthealthsystemstayid, eventtype, eventid, chargetime, cost)
diagnosis(patientunitstayid, icd9code, diagnosisname, diagnosistime)
intakeoutput(patientunitstayid, cellpath, celllabel, cellvaluenumeric, intakeoutputtime)
lab(patientunitstayid, labname, labresult, labresulttime)
medication(patientunitstayid, drugname, dosage, routeadmin, drugstarttime, drugstoptime)
microlab(patientunitstayid, culturesite, organism, culturetakentime)
patient(patientunitstayid, patienthealthsystemstayid, gender, age, ethnicity, hospitalid, wardid,
    admissionheight, hospitaladmitsource, hospitaldischargestatus, admissionweight,
    dischargeweight, uniquepid, hospitaladmittime, unitadmittime, unitdischargetime,
    hospitaldischargetime)
treatment(patientunitstayid, treatmentname, treatmenttime)
vitalperiodic(patientunitstayid, temperature, sao2, heartrate, respiration, systemicsystolic,
    systemicdiastolic, systemicmean, observationtime)
"""
EICU_SCHEMA: dict[str, list[str]] = {
    m.group(1): re.findall(r"\w+", m.group(2))
    for m in re.finditer(r"(\w+)\(([^)]*)\)", _SCHEMA_TEXT)
}
"""The 10 eICU tables EHRAgent queries and their readable columns."""

EICU_PRIMARY_KEYS: dict[str, str] = {
    "allergy": "allergyid", "cost": "costid", "diagnosis": "diagnosisid",
    "intakeoutput": "intakeoutputid", "lab": "labid", "medication": "medicationid",
    "microlab": "microlabid", "patient": "patientunitstayid", "treatment": "treatmentid",
    "vitalperiodic": "vitalperiodicid",
}
"""Each table's primary key. It exists in the database, so code can name it; no role may read
it (except patient's, which is also an ordinary column)."""

UNRESOLVED_TABLE = "?"
"""Table key for columns read from a table variable the extractor cannot trace (fail closed)."""

_KNOWN = {t: {*cols, EICU_PRIMARY_KEYS[t]} for t, cols in EICU_SCHEMA.items()}
_NOT_COLUMNS = {"max", "min", "sum", "avg", "mean", "count", "list", "in", "not", "like",
                "null", "and", "or", "is", "none", "true", "false", "format"}
_IDENT = re.compile(r"[A-Za-z_]\w*")
# A cell is the block EHRAgent prints on lines of its own: `{` / `"cell": "..."` / `}`. Text
# inside data values or the answer (attacker-influenced) cannot start such a block mid-line,
# so a `{"cell": ...}` smuggled into a result cannot pose as the last cell.
_CELL = re.compile(
    r'^[ \t]*\{[ \t]*\n[ \t]*"cell"\s*:\s*"(.*?)(?<!\\)"\s*\n[ \t]*\}[ \t]*$', re.S | re.M
)
_STRING = re.compile(
    r"""[rRfFbBuU]{0,2}('''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")""",
    re.S,
)
_PIECE = re.compile(_STRING.pattern + r"|([A-Za-z_]\w*)", re.S)
_COMPOUND = re.compile(
    r"\s*(?:(?:if|elif|while|with|except|for)\b[^:]*|else|try|finally)\s*:\s*(?=\S)"
)
_SQL_STAR = re.compile(r"(?:\bselect\s+(?:distinct\s+)?|,\s*)(?:([a-z_]\w*)\s*\.\s*)?\*")
_CALL = re.compile(r"\b(LoadDB|FilterDB|GetValue|SQLInterpreter)\s*([(\[])")
_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)\s*(.*)$", re.S)
_GROW = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:\.\s*(?:extend|append)\s*\(|\+=)\s*(.*?)\)?\s*$", re.S)
_FOR = re.compile(r"^\s*for\s+(.+?)\s+in\s+(.+?):", re.S)
_OP = re.compile(r"!=|>=|<=|==|=|>|<|\bnot\s+in\b|\bin\b|\blike\b", re.I)
_SQL_WORDS = "where group order having limit union join inner left right full cross natural on"
_SQL_CLAUSE = rf"(?=\b(?:{'|'.join(_SQL_WORDS.split())})\b|$)"
_SQL_FROM = re.compile(r"\bfrom\s+(.*?)" + _SQL_CLAUSE, re.S)
_SQL_JOIN = re.compile(r"\bjoin\s+([a-z_]\w*)(\s+(?:as\s+)?([a-z_]\w*))?", re.S)
_SQL_KEYWORDS = {*_SQL_WORDS.split(), "as"}


@guard_tool(group="ehr")
def parse_identity(agent_input: str) -> str:
    r"""The user's role, read from the `Identity:` line of the agent input.

    Only the agent input is trusted for facts about the user; never call this on the agent
    output, which the target agent (and anyone steering it) writes.

    Args:
        agent_input: The event's input, e.g. "Identity: nursing\nQuestion: ...".

    Returns:
        The role lowercased with runs of whitespace collapsed to one space (for example
        "general administration"), or "" when there is no `Identity:` line.

    """
    m = re.search(r"^[ \t]*Identity[ \t]*:[ \t]*(.*)$", agent_input, re.M | re.I)
    return " ".join(m.group(1).split()).lower() if m else ""


@guard_tool(group="ehr")
def parse_question(agent_input: str) -> str:
    r"""The user's question: the text after `Question:` in the agent input.

    Args:
        agent_input: The event's input, e.g. "Identity: nursing\nQuestion: ...".

    Returns:
        The question with surrounding whitespace stripped, or "" when there is none.

    """
    m = re.search(r"^[ \t]*Question[ \t]*:(.*)", agent_input, re.M | re.S | re.I)
    return m.group(1).strip() if m else ""


def _decode_cell(body: str) -> str:
    """Decode a cell's JSON string body; logs are not always valid JSON, so unescape by hand."""
    try:
        return str(json.loads(f'"{body}"', strict=False))
    except ValueError:
        table = {"n": "\n", "t": "\t", "r": "\r"}
        return re.sub(r"\\(.)", lambda m: table.get(m.group(1), m.group(1)), body, flags=re.S)


@guard_tool(group="ehr")
def ehr_code(agent_output: str) -> str:
    """The code EHRAgent finally ran: the LAST code cell of the run.

    EHRAgent retries after errors, so a log often holds several `{"cell": "..."}` blocks;
    only the last one decides what data the answer came from. Cells are decoded (escaped
    newlines and quotes become real ones). When the log has no cell, the code of the last
    `Solution:` block (plain code up to the next dashed line) is used instead.

    Args:
        agent_output: The EHRAgent run log (knowledge, code cells, errors, answer).

    Returns:
        The code as plain Python-like text, or "" when the output holds no code.

    """
    cells = _CELL.findall(agent_output)
    if cells:
        return _decode_cell(cells[-1]).strip()
    pos = agent_output.rfind("Solution:")
    if pos < 0:
        return ""
    rest = agent_output[pos + len("Solution:"):].lstrip("\n").lstrip(" \t")
    rest = re.sub(r"^\s*-{10,}[ \t]*\n", "", rest)
    end = re.search(r"^\s*-{10,}\s*$|^Question:|^TERMINATE|\n\s*\n\s*\n", rest, re.M)
    code = rest[: end.start()] if end else rest
    return re.sub(r"^\s*```(?:python)?\s*$", "", code, flags=re.M).strip()


def _logical_lines(code: str) -> list[str]:
    """Split code into statements without comments, joining lines inside open brackets."""
    lines: list[str] = []
    buf: list[str] = []
    depth = 0
    for raw in code.splitlines():
        cut = _mask(raw).find("#")  # drop the comment, not a `#` inside a string
        buf.append(raw if cut < 0 else raw[:cut])
        bare = _mask(buf[-1])
        depth = max(0, depth + sum(map(bare.count, "([{")) - sum(map(bare.count, ")]}")))
        if depth == 0:
            joined = "\n".join(buf)
            cuts = [-1, *(i for i, ch in enumerate(_mask(joined)) if ch == ";"), len(joined)]
            lines += [joined[a + 1:b] for a, b in zip(cuts, cuts[1:], strict=False)]
            buf = []
    lines.append("\n".join(buf))
    return [line for line in lines if line.strip()]


def _mask(text: str) -> str:
    """`text` with every string literal blanked out, so brackets and commas in strings vanish."""
    return _STRING.sub(lambda m: "\0" * len(m.group(0)), text)


def _bracket(text: str, start: int, quotes: bool = True) -> tuple[str, int]:
    """The text inside the bracket opening at `start`, and the index after its close."""
    scan, closer = (_mask(text) if quotes else text), {"(": ")", "[": "]"}[text[start]]
    depth = 0
    for i in range(start, len(scan)):
        depth += (scan[i] == text[start]) - (scan[i] == closer)
        if depth == 0:
            return text[start + 1:i], i + 1
    return text[start + 1:], len(text)


def _split_args(inner: str) -> list[str]:
    """Top-level comma-separated arguments of a call."""
    args: list[str] = []
    depth, last = 0, 0
    for i, ch in enumerate(_mask(inner)):
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "," and depth == 0:
            args.append(inner[last:i].strip())
            last = i + 1
    return [*args, inner[last:].strip()]


def _string_value(arg: str, strings: dict[str, str]) -> str:
    """The text a string expression carries, as far as it can be known without running it.

    Literals and string variables are concatenated; `{}`/`{name}` placeholders of `.format` or
    f-strings are filled from string literals and variables; other placeholders become `{}`
    (they stand for values computed at run time, which are not column names).
    """
    head, _, fmt = arg.partition(".format(")
    text = "".join(_literal_text(m.group(1)) if m.group(1) else strings.get(m.group(2), "")
                   for m in _PIECE.finditer(head))
    positional: list[str | None] = []
    named: dict[str, str | None] = dict(strings)
    for farg in _split_args(_bracket("(" + fmt, 0)[0]) if fmt else []:
        kw = re.match(r"([A-Za-z_]\w*)\s*=(?!=)(.*)", farg, re.S)
        value = kw.group(2).strip() if kw else farg
        known = _string_value(value, strings) if _STRING.match(value) or value in strings else None
        if kw:
            named[kw.group(1)] = known
        else:
            positional.append(known)
    auto = iter(range(len(positional)))

    def fill(m: re.Match[str]) -> str:
        key = m.group(1) or str(next(auto, -1))
        value = positional[int(key)] if key.isdigit() and int(key) < len(positional) else (
            named.get(key))
        return "{}" if value is None else value

    return re.sub(r"\{(\w*)[^{}]*\}", fill, text)


def _literal_text(token: str) -> str:
    """The content of a quoted literal token, unescaped."""
    width = 3 if token[:3] in ('"""', "'''") else 1
    return _decode_cell(token[width:-width])


class _Extractor:
    """Walks the statements of one code cell, tracking which variable holds which table."""

    def __init__(self) -> None:
        self.tables: dict[str, str] = {}
        self.strings: dict[str, str] = {}
        self.found: dict[str, set[str]] = {}

    def add(self, table: str | None, names: list[str]) -> None:
        if table is None:
            return
        known = _KNOWN.get(table)
        cols = self.found.setdefault(table, set())
        for name in (n.lower() for n in names):
            if (name in known) if known is not None else (name not in _NOT_COLUMNS):
                cols.add(name)

    def bind(self, var: str, table: str | None) -> None:
        """Record what a variable now holds; a non-table value forgets an older table."""
        if table is None:
            self.tables.pop(var, None)
        else:
            self.tables[var] = table

    def resolve(self, expr: str) -> str | None:
        """The table an expression evaluates to, when it is a table at all."""
        expr = expr.strip()
        m = re.match(r"(LoadDB|FilterDB)\s*\(", expr)
        if m:
            args = _split_args(_bracket(expr, m.end() - 1)[0])
            if m.group(1) == "LoadDB":
                return _string_value(args[0], self.strings).strip().lower() or None
            return self.resolve(args[0])
        m = re.match(r"([A-Za-z_]\w*)\s*(?:$|[.\[])", expr)
        return self.tables.get(m.group(1)) if m else None

    def statement(self, line: str) -> None:
        """Record the reads of one statement, then what its assignment binds."""
        head = _COMPOUND.match(_mask(line))
        if head:  # `if c: x = ...` on one line: the header, then the body
            self.statement(line[:head.end()])
            self.statement(line[head.end():])
            return
        for m in _CALL.finditer(line):
            inner, _ = _bracket(line, m.end() - 1, quotes=m.group(1) != "SQLInterpreter")
            if m.group(1) == "SQLInterpreter":
                stray = re.search("['\"]", _mask(inner))  # badly quoted: read it raw
                sql = (_strip_quotes(inner) if m.group(2) == "[" or stray
                       else _string_value(inner, self.strings))
                for table, cols in _sql_columns(sql).items():
                    self.add(table, sorted(cols))
                continue
            args = _split_args(inner)
            if m.group(1) == "LoadDB":
                self.add(self.resolve(line[m.start():]), [])
            elif len(args) >= 2:
                spec = _string_value(args[1], self.strings)
                if m.group(1) == "FilterDB":
                    names = [n for p in spec.split("||") for n in
                             _IDENT.findall(_OP.split(p, maxsplit=1)[0])]
                else:
                    names = _IDENT.findall(spec)
                self.add(self.resolve(args[0]) or UNRESOLVED_TABLE, names)
        for var, table in list(self.tables.items()):
            for m in re.finditer(rf"\b{var}\s*(?:\.\s*(\w+)\s*([(\[])?|(\[))", line):
                if m.group(1) and not m.group(2):
                    if table in _KNOWN:  # on other tables an attribute may be a method
                        self.add(table, [m.group(1)])
                elif m.group(2) or m.group(3):
                    inner = _bracket(line, m.end() - 1)[0]
                    self.add(table, [n for s in _STRING.finditer(inner)
                                     for n in _IDENT.findall(_literal_text(s.group(1)))])
        loop = _FOR.match(line)
        if loop:
            held = self.resolve(loop.group(2))
            for target in _IDENT.findall(loop.group(1)):
                self.bind(target, held)
        grow = _GROW.match(line)  # rows collected into a list still come from their table
        if grow and self.resolve(grow.group(2)) is not None:
            self.bind(grow.group(1), self.resolve(grow.group(2)))
        assign = _ASSIGN.match(line)
        if assign:
            target, rhs = assign.group(1), assign.group(2).strip()
            self.bind(target, self.resolve(rhs))
            if _STRING.match(rhs):
                self.strings[target] = _string_value(rhs, self.strings)
            else:
                self.strings.pop(target, None)


def _strip_quotes(text: str) -> str:
    """SQL passed as `'...'`, `"..."` or bare (the `SQLInterpreter[...]` form)."""
    text = re.sub(r"^[rRfF]?(\"\"\"|'''|\"|')", "", text.strip())
    return re.sub(r"(\"\"\"|'''|\"|')$", "", text)


def _sql_columns(sql: str) -> dict[str, set[str]]:
    """Tables -> columns an SQL query reads.

    `alias.column` and bare columns are resolved against the FROM/JOIN tables of their own
    subquery, then the enclosing ones, as SQL scoping does.
    """
    text = re.sub(r"'(?:[^']|'')*'", " ", sql).lower()
    found: dict[str, set[str]] = {}
    _sql_scope(text, {}, [], found)
    return found


def _sql_scope(text: str, outer_alias: dict[str, str], outer_tables: list[str],
               found: dict[str, set[str]]) -> None:
    subqueries = []
    while (m := re.search(r"\(\s*select\b", text)) is not None:
        inner, end = _bracket(text, m.start(), quotes=False)
        subqueries.append(inner)
        text = text[:m.start()] + " " + text[end:]
    alias: dict[str, str] = dict(outer_alias)
    tables: list[str] = []
    for fm in _SQL_FROM.finditer(text):
        for item in fm.group(1).split(","):
            words = [w for w in _IDENT.findall(item) if w != "as"]
            if words:
                tables.append(words[0])
                alias.update({w: words[0] for w in words})
    for jm in _SQL_JOIN.finditer(text):
        tables.append(jm.group(1))
        alias[jm.group(1)] = jm.group(1)
        if jm.group(3) and jm.group(3) not in _SQL_KEYWORDS:
            alias[jm.group(3)] = jm.group(1)
    for table in tables:
        found.setdefault(table, set())
    body = _SQL_JOIN.sub(" ", _SQL_FROM.sub(" ", text))
    for star in _SQL_STAR.finditer(body):  # `select *` / `t.*` read every column
        for table in [alias.get(star.group(1), star.group(1))] if star.group(1) else tables:
            found.setdefault(table, set()).update(_KNOWN.get(table, ()))
    for qm in re.finditer(r"\b([a-z_]\w*)\s*\.\s*([a-z_]\w*)", body):
        table = alias.get(qm.group(1), qm.group(1))
        known = _KNOWN.get(table)
        if known is None or qm.group(2) in known:
            found.setdefault(table, set()).add(qm.group(2))
    bare = re.sub(r"\b[a-z_]\w*\s*\.\s*[a-z_]\w*", " ", body)
    for name in set(_IDENT.findall(bare)):
        for scope in (tables, outer_tables):
            owners = [t for t in scope if name in _KNOWN.get(t, ())]
            for table in owners:
                found[table].add(name)
            if owners:
                break
    for sub in subqueries:
        _sql_scope(sub, alias, tables + outer_tables, found)


@guard_tool(group="ehr")
def ehr_accessed_columns(agent_output: str) -> dict[str, list[str]]:
    """Tables and columns that EHRAgent's last code cell really reads.

    Understands EHRAgent's tools: `LoadDB('table')`; `FilterDB(db, 'col=v||col2>v||max(col3)')`
    (the column left of each `=, !=, <, >, <=, >=, in, like` condition, or inside
    `max()`/`min()`); `GetValue(db, 'col, agg')`; `SQLInterpreter(...)` / `SQLInterpreter[...]`
    (SQL with `alias.column` and bare columns resolved against the FROM/JOIN tables of their
    subquery; `select *` / `t.*` read every column, `count(*)` none); `Calendar`/`Calculate`
    read no table. Variables are followed through assignments (`x = LoadDB('lab')`,
    `y = FilterDB(x, ...)`, reassignment, rows collected into lists), and condition strings
    through `.format(...)`, f-strings, concatenation and string variables; `db['col']`,
    `db.col`, `db.loc[:, 'col']` on a table variable also count. Columns of the 10 eICU tables
    are matched as whole identifiers (never substrings) against `EICU_SCHEMA` plus the table's
    primary key, which counts when named (no role may read it). Unknown tables are reported
    with whatever columns the code names for them. Columns read from a table variable that
    cannot be traced (e.g. defined in an earlier cell) are reported under the table "?", so
    `check_access` denies them (fail closed).

    Args:
        agent_output: The EHRAgent run log; only its last code cell (see `ehr_code`) is read.

    Returns:
        A dict table -> sorted list of column names, tables in alphabetical order. A table
        that is loaded but none of whose columns is read maps to []. Empty when there is no
        code.

    """
    extractor = _Extractor()
    for line in _logical_lines(ehr_code(agent_output)):
        extractor.statement(line)
    return {t: sorted(cols) for t, cols in sorted(extractor.found.items())}
