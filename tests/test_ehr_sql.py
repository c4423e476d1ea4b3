"""The eICU SQL reader: hand-written corpus, refusals, and properties (no alias ever leaks).

The corpus (`tests/corpus/eicu_sql_corpus.py`) gives each query's base reads written by
hand. The properties check what a corpus cannot enumerate: every reported pair is a real
schema column; renaming aliases / CTEs / derived columns to random names, and re-spelling
the query (keyword case, whitespace, comments), never changes what it reads; randomly nested
derived tables and CTEs report exactly the innermost base columns. Rewrites are made on the
sqlglot AST and its token stream, never with regexes over SQL.
"""

from __future__ import annotations

import contextlib
import contextvars
import random
from collections.abc import Callable

import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot import exp
from sqlglot.dialects.sqlite import SQLite
from sqlglot.tokenizer_core import TokenType

from guardagent.readers import ehr_sql
from guardagent.readers.ehr_sql import sql_reads
from guardagent.readers.eicu_schema import EICU_COLUMNS, EICU_PRIMARY_KEYS, EICU_SCHEMA
from guardagent.readers.evidence import UnreadableEvidence, open_ledger
from tests.corpus.eicu_sql_corpus import CORPUS, UNREADABLE, BadSql, SqlCase

REASONS = {"unparsable_sql", "unsupported_statement", "unknown_table", "unknown_column"}
SCHEMA_NAMES = frozenset(EICU_COLUMNS) | frozenset().union(*EICU_COLUMNS.values())

# ---------------------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------------------


def test_corpus_is_large_and_ids_are_unique() -> None:
    assert len(CORPUS) >= 150
    assert len(UNREADABLE) >= 25
    ids = [c.id for c in CORPUS] + [b.id for b in UNREADABLE]
    assert len(ids) == len(set(ids))
    assert {b.reason for b in UNREADABLE} == REASONS


def test_corpus_expectations_use_schema_columns_only() -> None:
    """A typo in an expected value would make a case meaningless: check the corpus itself."""
    for case in CORPUS:
        for table, cols in case.reads.items():
            assert cols <= EICU_COLUMNS[table], case.id


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_corpus_reads(case: SqlCase) -> None:
    assert sql_reads(case.sql) == case.reads


def test_no_alias_leaks_in_corpus() -> None:
    """Property (a): every reported (table, column) is a real eICU schema pair."""
    for case in CORPUS:
        for table, cols in sql_reads(case.sql).items():
            assert table in EICU_COLUMNS, (case.id, table)
            assert cols <= EICU_COLUMNS[table], (case.id, cols - EICU_COLUMNS[table])


@pytest.mark.parametrize("bad", UNREADABLE, ids=[b.id for b in UNREADABLE])
def test_unreadable_queries_fail_closed(bad: BadSql) -> None:
    sql, reason = bad.sql, bad.reason
    with pytest.raises(UnreadableEvidence) as caught:
        sql_reads(sql)
    assert caught.value.reason == reason
    assert caught.value.detail


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("select labresults from lab", "column 'labresults' is not in the schema of table(s) lab"),
        ("select * from sqlite_master", "'sqlite_master'"),
        ("select t1.c2 from (select labname as c1 from lab) t1", "derived table(s) t1"),
        ("select lab.labname from lab; delete from lab", "DELETE"),
        ("select x.labname from lab", "'x'"),
        ('select labname from lab where labname = "sodium"', "single quotes"),
        ("select readfile('/etc/passwd')", "readfile"),
    ],
)
def test_details_name_what_could_not_be_read(sql: str, named: str) -> None:
    with pytest.raises(UnreadableEvidence) as caught:
        sql_reads(sql)
    assert named in caught.value.detail


def test_unreadable_is_recorded_in_the_run_ledger() -> None:
    """A guard program that swallows the exception still cannot allow: the ledger has it."""

    def run() -> list[object]:
        ledger = open_ledger()
        with contextlib.suppress(UnreadableEvidence):  # the program swallows it
            sql_reads("select * from patients")
        return list(ledger)

    entries = contextvars.copy_context().run(run)
    assert entries == [
        {"reason": "unknown_table", "detail": "table 'patients' is not one of the eICU tables"}
    ]


def test_result_is_lowercase_and_fresh() -> None:
    first = sql_reads("SELECT LAB.LABNAME FROM LAB")
    assert first == {"lab": {"labname"}}
    first["lab"].add("mutated")
    assert sql_reads("SELECT LAB.LABNAME FROM LAB") == {"lab": {"labname"}}


def test_every_statement_is_read() -> None:
    assert sql_reads("select gender from patient; select 1; select labname from lab") == {
        "patient": {"gender"},
        "lab": {"labname"},
    }


def test_parses_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real: Callable[..., object] = sqlglot.parse

    def counting(sql: str, *args: object, **kwargs: object) -> object:
        calls.append(sql)
        return real(sql, *args, **kwargs)

    monkeypatch.setattr(sqlglot, "parse", counting)  # the reader calls sqlglot.parse(...)
    monkeypatch.setattr(sqlglot, "parse_one", lambda *a, **k: pytest.fail("re-parse"))
    nested = next(c for c in CORPUS if c.id == "d17-three-level-correlated")
    assert sql_reads(nested.sql + "; " + nested.sql) == nested.reads
    assert len(calls) == 1


# ---------------------------------------------------------------------------------------
# Metamorphic rewrites: random names, case, whitespace and comments change nothing
# ---------------------------------------------------------------------------------------

_RESERVED = (
    frozenset(k.lower() for k in SQLite.Tokenizer.KEYWORDS)
    | frozenset(k.lower() for k in SQLite.Parser.FUNCTIONS)
    | ehr_sql._READ_ONLY_FUNCTIONS
    | SCHEMA_NAMES
    | {
        "main",
        "temp",
        "rowid",
        "oid",
        "_rowid_",
        "nocase",
        "current_time",
        "current_date",
        "current_timestamp",
        "true",
        "false",
        "null",
        "glob",
        "like",
        "regexp",
        "match",
        "escape",
        "over",
        "filter",
        "window",
        "rows",
        "range",
        "groups",
        "indexed",
        "natural",
    }
)
_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(lambda n: n not in _RESERVED)


def _renamable(trees: list[exp.Expr]) -> list[str]:
    """Names that are not schema names: aliases, CTE names, derived columns, window names."""
    names = {i.name.lower() for t in trees for i in t.find_all(exp.Identifier)}
    return sorted(names - SCHEMA_NAMES - {"main"})


def _parse(sql: str) -> list[exp.Expr]:
    return [
        t
        for t in sqlglot.parse(sql, read="sqlite")
        if t is not None and not isinstance(t, exp.Semicolon)
    ]


def _rename(trees: list[exp.Expr], mapping: dict[str, str]) -> str:
    """Rename identifiers consistently on the AST and print the statements back."""
    out = []
    for tree in trees:
        tree = tree.copy()
        for ident in tree.find_all(exp.Identifier):
            new = mapping.get(ident.name.lower())
            if new is not None:
                ident.set("this", new)
        out.append(tree.sql(dialect="sqlite"))
    return "; ".join(out)


_CASINGS: list[Callable[[str], str]] = [str.upper, str.lower, str.title, str.swapcase, str]
_SEPARATORS = [" ", "  ", "\n", "\t", " \n\t ", " /* note */ ", " -- note\n", "/**/"]


def _respell(sql: str, rng: random.Random) -> str:
    """Re-spell SQL from its token stream: keyword/identifier case, spacing, comments."""
    tokens = SQLite().tokenize(sql)
    parts: list[str] = []
    for i, tok in enumerate(tokens):
        text = sql[tok.start : tok.end + 1]
        if tok.token_type not in (TokenType.STRING, TokenType.IDENTIFIER):
            text = rng.choice(_CASINGS)(text)
        if i:
            prev = tokens[i - 1]
            glued = prev.end + 1 == tok.start and TokenType.COLON in (
                prev.token_type,
                tok.token_type,
            )
            parts.append("" if glued else rng.choice(_SEPARATORS))
        parts.append(text)
    lead = rng.choice(["", "-- leading comment\n", "/* leading */", "\n  "])
    return lead + "".join(parts) + rng.choice(["", ";", " -- tail", "\n"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(CORPUS),
    names=st.lists(_NAMES, min_size=12, max_size=12, unique=True),
    rng=st.randoms(use_true_random=False),
)
def test_metamorphic_rewrites_keep_reads(
    case: SqlCase, names: list[str], rng: random.Random
) -> None:
    """Property (b): random alias names, casing, whitespace and comments change nothing."""
    trees = _parse(case.sql)
    old = _renamable(trees)
    fresh = [n for n in names if n not in old]
    mapping = dict(zip(old, fresh, strict=False))
    renamed = _rename(trees, mapping) if trees else ""
    rewritten = _respell(renamed, rng) if renamed else renamed
    if not rewritten.strip():
        return  # k03-like cases with nothing to rewrite
    assert sql_reads(rewritten) == case.reads, rewritten


@settings(max_examples=40, deadline=None)
@given(
    bad=st.sampled_from([b for b in UNREADABLE if b.reason != "unparsable_sql"]),
    rng=st.randoms(use_true_random=False),
)
def test_metamorphic_respelling_keeps_refusals(bad: BadSql, rng: random.Random) -> None:
    sql, reason = bad.sql, bad.reason
    with pytest.raises(UnreadableEvidence) as caught:
        sql_reads(_respell(sql, rng))
    assert caught.value.reason == reason


# ---------------------------------------------------------------------------------------
# Generated nestings: derived tables and CTEs with random names report the base reads only
# ---------------------------------------------------------------------------------------


@st.composite
def _nested_query(draw: st.DrawFn) -> tuple[str, dict[str, set[str]]]:
    table = draw(st.sampled_from(sorted(EICU_SCHEMA)))
    columns = sorted(EICU_COLUMNS[table])
    picked = draw(st.lists(st.sampled_from(columns), min_size=1, max_size=3, unique=True))
    filtered = draw(st.sampled_from(columns))
    depth = draw(st.integers(min_value=0, max_value=3))
    names = draw(
        st.lists(_NAMES, min_size=4 + 5 * (depth + 1), max_size=4 + 5 * (depth + 1), unique=True)
    )
    alias = names.pop()
    outputs = [names.pop() for _ in picked]
    select = ", ".join(f"{alias}.{c} as {o}" for c, o in zip(picked, outputs, strict=True))
    sql = f"select {select} from {table} {alias} where {alias}.{filtered} is not null"
    ctes: list[str] = []
    for _level in range(depth):
        alias = names.pop()
        keep = draw(
            st.lists(st.sampled_from(outputs), min_size=1, max_size=len(outputs), unique=True)
        )
        renamed = [names.pop() if draw(st.booleans()) else k for k in keep]
        select = ", ".join(f"{alias}.{k} as {r}" for k, r in zip(keep, renamed, strict=True))
        if draw(st.booleans()):
            rank = names.pop()
            select += f", dense_rank() over (order by {alias}.{keep[0]} desc) as {rank}"
            renamed.append(rank)
        where = (
            f" where {alias}.{draw(st.sampled_from(keep))} is not null"
            if draw(st.booleans())
            else ""
        )
        if draw(st.booleans()):
            ctes.append(f"{alias} as ({sql})")
            sql = f"select {select} from {alias}{where}"
        else:
            sql = f"select {select} from ({sql}) as {alias}{where}"
        outputs = renamed
    if ctes:
        sql = "with " + ", ".join(ctes) + " " + sql
    if draw(st.booleans()):
        sql = f"select * from ({sql})"
    return sql, {table: set(picked) | {filtered}}


@settings(max_examples=80, deadline=None)
@given(generated=_nested_query())
def test_generated_nestings_report_base_columns_only(
    generated: tuple[str, dict[str, set[str]]],
) -> None:
    sql, expected = generated
    assert sql_reads(sql) == expected, sql


def test_primary_keys_are_reported_under_their_table() -> None:
    for table, key in EICU_PRIMARY_KEYS.items():
        assert sql_reads(f"select {key} from {table}") == {table: {key}}


def test_a_resolver_gap_is_refused_not_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last check: a column or star the resolver never visited makes the SQL unreadable.

    Simulates a gap (the walk skipping WHERE clauses / select lists): the reads would be
    silently incomplete without the check.
    """
    real = ehr_sql._Reader.walk

    def gappy(self: ehr_sql._Reader, value: object, scope: object, ctes: object) -> None:
        if isinstance(value, (exp.Where, list)):
            return
        real(self, value, scope, ctes)  # type: ignore[arg-type]

    monkeypatch.setattr(ehr_sql._Reader, "walk", gappy)
    for sql in ("select 1 from lab where labresult > 1", "select * from lab"):
        with pytest.raises(UnreadableEvidence) as caught:
            sql_reads(sql)
        assert caught.value.reason == "unsupported_statement"
        assert "where the reader does not look" in caught.value.detail
