"""The Python reader on a hand-written corpus of EHRAgent-style programs (expected reads by hand)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.readers.ehr_python import Interpreter
from guardagent.readers.ehr_sql import sql_reads
from guardagent.readers.ehragent import ehr_accessed_columns
from guardagent.readers.eicu_schema import EICU_COLUMNS
from tests.corpus.ehr_programs import PROGRAMS


def reads(code: str) -> dict[str, set[str]]:
    interpreter = Interpreter(sql_reads)
    interpreter.run_source(code, "program")
    return interpreter.reads.found


def test_corpus_size() -> None:
    assert len(PROGRAMS) >= 60
    assert len({name for name, _, _ in PROGRAMS}) == len(PROGRAMS)


@pytest.mark.parametrize(("name", "code", "expected"), PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program_reads(name: str, code: str, expected: dict[str, set[str]]) -> None:
    assert reads(code) == expected


@pytest.mark.parametrize(("name", "code", "expected"), PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_every_reported_name_is_a_schema_column(name: str, code: str, expected: object) -> None:
    for table, cols in reads(code).items():
        assert cols <= EICU_COLUMNS[table]


IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda s: (
        s
        not in {
            "if",
            "in",
            "is",
            "or",
            "and",
            "for",
            "not",
            "def",
            "del",
            "as",
            "try",
            "with",
            "else",
            "elif",
            "from",
            "pass",
            "None",
            "True",
            "False",
            "while",
            "print",
            "len",
            "str",
            "answer",
            "c",
        }
        and s not in EICU_COLUMNS
    )
)


@settings(max_examples=40, deadline=None)
@given(a=IDENT, b=IDENT, indent=st.sampled_from(["    ", "\t", "  "]), spaces=st.integers(0, 3))
def test_renaming_and_spacing_keep_the_reads(a: str, b: str, indent: str, spaces: int) -> None:
    if a == b:
        return
    pad = " " * spaces
    code = (
        f"{a}{pad}={pad}LoadDB('lab')\nfor c in ['labname']:\n"
        f"{indent}{b} = FilterDB({a},{pad}'{{}}=bun'.format(c))\n"
        f"answer = GetValue({b}, 'labresult, max')"
    )
    assert reads(code) == {"lab": {"labname", "labresult"}}
    fenced = f"Some text.\n```python\n{code}\n```\nThe answer is 4."
    assert ehr_accessed_columns(fenced) == {"lab": ["labname", "labresult"]}
