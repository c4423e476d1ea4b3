"""One table of settings (`guardagent.environment.SETTINGS`), read in one place.

Issue 36 item 1: environment reads were scattered over a dozen modules, each with its own
parsing, and a list of names in one of them drifted from the others (the served graph then
ignored documented limits). These tests hold the shape that prevents it: only
`guardagent/environment.py` reads the process environment; every `GUARDAGENT_*` name the
package mentions is a row of the table; every row is on the docs' settings page with its
meaning, default and who may set it; a row that fills a `GuardContext` / `ServiceSettings`
field has that field's default; and a value that does not parse is refused naming the
variable (never silently replaced by the default).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent import environment
from guardagent.context import GuardContext
from guardagent.environment import SETTINGS, Setting, value
from guardagent.service.settings import ServiceSettings

PACKAGE = Path(__file__).resolve().parents[1] / "guardagent"

ALLOWED_ENVIRON = {
    "guardagent.environment": "the one reader",
    "guardagent.sandbox.child": "empties a sandboxed child's environment (a write, not a setting)",
    "guardagent.trace.found.secrets": "a policy's `env:` secret references are policy data, not settings",
}


_READS = {"environ", "getenv", "environb"}


def _environ_uses(tree: ast.AST) -> list[int]:
    lines = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in _READS]
    lines += [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom)
        and n.module == "os"
        and any(a.name in _READS for a in n.names)
    ]
    return lines


def test_only_the_settings_table_reads_the_process_environment() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        dotted = "guardagent." + rel.removesuffix(".py").replace("/", ".")
        if dotted in ALLOWED_ENVIRON or rel.startswith("profiles/") and rel.count("/") > 1:
            continue
        lines = _environ_uses(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            found[rel] = lines
    assert not found, f"read the environment through guardagent.environment: {found}"


def test_every_variable_the_package_names_is_a_row_of_the_table() -> None:
    rows = {s.name for s in SETTINGS}
    named: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in re.findall(r"\bGUARDAGENT_[A-Z][A-Z_]*[A-Z]\b", path.read_text("utf-8")):
            named.setdefault(name, set()).add(path.relative_to(PACKAGE).as_posix())
    missing = {n: sorted(where) for n, where in named.items() if n not in rows}
    assert not missing, missing


def test_rows_are_unique_and_describe_who_sets_them() -> None:
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names))
    for row in SETTINGS:
        assert row.set_by and set(row.set_by) <= set(environment.SET_BY), row.name
        assert row.kind.strip(), row.name
        assert row.field is not None or row.summary.strip(), row.name


@pytest.mark.parametrize(("owner", "cls"), [("guard", GuardContext), ("service", ServiceSettings)])
def test_a_row_that_fills_a_field_has_that_fields_default(owner: str, cls: type) -> None:
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    rows = [s for s in SETTINGS if s.owner == owner and s.field is not None]
    assert rows
    for row in rows:
        assert row.field in defaults, row.name
        if row.field == "max_request_bytes":  # 0 there means "the trace limit + 1 MiB"
            continue
        assert row.default == defaults[row.field], row.name


def test_every_guard_field_read_from_the_environment_is_a_row() -> None:
    from guardagent.context import ENV_NAMES

    guard_rows = {s.name for s in SETTINGS if s.owner == "guard"}
    assert set(ENV_NAMES) == guard_rows


def test_the_docs_settings_page_lists_every_row_with_who_sets_it() -> None:
    from tests.docs_blocks import ROOT, expand

    page = expand((ROOT / "docs" / "reference" / "settings.md").read_text(encoding="utf-8"))
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([A-Z_]+)` \|.*$", page, re.M)}
    for row in SETTINGS:
        line = rows.get(row.name)
        assert line is not None, f"{row.name} is not on docs/reference/settings.md"
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert len(cells) == 5 and all(cells), line
        assert all(who in cells[4] for who in row.set_by), line


_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "0",
            "1",
            "-1",
            "7",
            "99",
            "1.5",
            "nan",
            "inf",
            "true",
            "false",
            "yes",
            "{}",
            "[]",
            '{"verified": true}',
            "a=b",
            "a=",
            "2025-01-09",
            "x" * 40,
            "postgresql://u:p@h/db",
            "mysql://u:secret@h/db",
            " 3 ",
            "\t",
        ]
    ),
)


@settings(max_examples=400, deadline=None)
@given(row=st.sampled_from(SETTINGS), raw=_TEXT)
def test_a_value_parses_or_is_refused_naming_the_variable(row: Setting[object], raw: str) -> None:
    try:
        got = value(row, {row.name: raw})
    except ValueError as exc:
        assert row.name in str(exc)
        if row.secret and raw.strip():
            assert raw.strip() not in str(exc), "a secret's value must not be echoed"
        return
    if not raw.strip():
        assert got == row.default  # unset or blank: the default
    else:
        assert got is not None or row.default is None


@pytest.mark.parametrize("row", SETTINGS, ids=lambda s: s.name)
def test_unset_and_blank_give_the_default(row: Setting[object]) -> None:
    assert value(row, {}) == row.default
    assert value(row, {row.name: "  "}) == row.default


@pytest.mark.parametrize(
    ("raw", "on"),
    [("", True), ("1", True), ("0", False), (" 0 ", False), ("yes", True), ("false", True)],
)
def test_the_sandbox_switches_go_off_only_at_zero(
    monkeypatch: pytest.MonkeyPatch, raw: str, on: bool
) -> None:
    from guardagent.sandbox import process

    for name in ("GUARDAGENT_SANDBOX_ZYGOTE", "GUARDAGENT_SANDBOX_WARM"):
        monkeypatch.setenv(name, raw)
    assert (process._zygote_enabled(), process._warm_enabled()) == (on, on)


@pytest.mark.parametrize("raw", ["abc", "nan", "-5", "0", "inf"])
def test_a_bad_model_timeout_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    from guardagent.llm import model_timeout

    monkeypatch.setenv("GUARDAGENT_LLM_TIMEOUT", raw)
    with pytest.raises(ValueError, match="GUARDAGENT_LLM_TIMEOUT"):
        model_timeout()


@pytest.mark.parametrize("raw", ["[]", "1", '"x"', "{"])
def test_demo_user_info_that_is_no_fact_object_is_refused(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    from guardagent.integrations.demo_agent import deployment_user_info

    monkeypatch.setenv("GUARDAGENT_DEMO_USER_INFO", raw)
    with pytest.raises(ValueError, match="GUARDAGENT_DEMO_USER_INFO"):
        deployment_user_info()


def test_a_database_url_that_is_refused_is_not_echoed() -> None:
    with pytest.raises(ValueError, match="GUARDAGENT_DATABASE_URL") as info:
        ServiceSettings.from_env({"GUARDAGENT_DATABASE_URL": "mysql://u:hunter2@h/db"})
    assert "hunter2" not in str(info.value)


def test_the_memory_key_and_dir_come_from_the_table(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from guardagent.memory_store.integrity import memory_key
    from guardagent.memory_store.store import default_memory_dir

    monkeypatch.setenv("GUARDAGENT_MEMORY_DIR", str(tmp_path / "m"))
    monkeypatch.setenv("GUARDAGENT_MEMORY_KEY", "k" * 16)
    assert default_memory_dir() == tmp_path / "m"
    assert memory_key(None, tmp_path, None) == b"k" * 16
