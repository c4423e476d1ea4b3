"""Text functions for guard programs: RE2 searches and `format_text` (issue 16, item 7)."""

from __future__ import annotations

from typing import Any

import pytest

from guardagent.profiles.loader import builtin_profiles, load_profile
from guardagent.sandbox.dataflow import check_dataflow
from guardagent.sandbox.process import run_program
from guardagent.sandbox.zygote import toolbox_refs
from guardagent.tools import DEFAULT_TOOLBOX
from guardagent.tools.text import (
    MAX_MATCHES,
    MAX_PATTERN_CHARS,
    MAX_TEXT_CHARS,
    format_text,
    re_findall,
    re_fullmatch,
    re_search,
)
from tests.linear import assert_linear

TEXT_TOOLS = ("re_search", "re_fullmatch", "re_findall", "format_text")
EVENT = "Task: pay the invoice\nUser information:\n   age: 30,\n   email: Bob@Example.com"

# -- RE2 ----------------------------------------------------------------------------------


def test_search_fullmatch_and_findall_read_like_python_re() -> None:
    assert re_search(r"(\w+)@(\w+)\.com", "mail bob@example.com now") == [
        "bob@example.com",
        "bob",
        "example",
    ]
    assert re_search(r"x(y)?z", "xz") == ["xz", ""]  # a group that took no part is ""
    assert re_search("absent", "text") is None
    assert re_search("BOB", "bob", ignore_case=True) == ["bob"]
    assert re_fullmatch(r"\d{4}-\d{2}-\d{2}", "2026-11-23") == ["2026-11-23"]
    assert re_fullmatch(r"\d+", "12a") is None
    assert re_findall(r"\d+", "a1 b22 c333") == ["1", "22", "333"]
    assert re_findall(r"(\w)=(\d)", "a=1, b=2") == [["a", "1"], ["b", "2"]]
    assert re_findall(r"(\w)=\d", "a=1, b=2") == ["a", "b"]
    assert re_search("é(.)", "café!") == ["é!", "!"]  # code points, not UTF-8 bytes


@pytest.mark.parametrize("pattern", [r"(a)\1", r"a(?=b)", r"(?<=a)b", r"(?!x)y", "(", "a{1001}"])
def test_what_re2_cannot_do_is_a_clear_error(pattern: str) -> None:
    with pytest.raises(ValueError, match="is not an RE2 pattern .*no backreferences"):
        re_search(pattern, "aab")


def test_matching_is_linear_in_the_text() -> None:
    """The classic catastrophic-backtracking pattern takes milliseconds on a long text."""

    def match(n: int) -> None:
        assert re_search(r"^(a+)+$", "a" * n + "b") is None
        assert re_fullmatch(r"(x+x+)+y", "x" * (n // 2)) is None

    assert_linear(match, 200_000)


def test_sizes_and_types_are_bounded() -> None:
    with pytest.raises(ValueError, match="pattern has"):
        re_search("a" * (MAX_PATTERN_CHARS + 1), "a")
    with pytest.raises(ValueError, match="text has"):
        re_search("a", "a" * (MAX_TEXT_CHARS + 1))
    with pytest.raises(ValueError, match="narrow the pattern"):
        re_findall("a", "a" * (MAX_MATCHES + 1))
    bad: Any = 5
    with pytest.raises(TypeError, match="must be strings"):
        re_search("a", bad)
    with pytest.raises(TypeError, match="ignore_case"):
        re_search("a", "a", ignore_case=bad)


# -- format_text --------------------------------------------------------------------------


def test_plain_fields_format_like_str_format() -> None:
    assert format_text("{} sent {amount:.2f} to {to!r}", "bob", amount=25, to="ACME") == (
        "bob sent 25.00 to 'ACME'"
    )
    assert format_text("{0}-{1}-{0}", "a", "b") == "a-b-a"
    assert format_text("{{literal}} {:>5}|{!s}", "x", None) == "{literal}     x|None"
    assert format_text("{ok} {n:,}", ok=True, n=1234567) == "True 1,234,567"


@pytest.mark.parametrize(
    "template",
    [
        "{0.__class__}",
        "{0.__class__.__mro__}",
        "{x.__init__.__globals__}",
        "{0[0]}",
        "{x[__builtins__]}",
        "{.upper}",
        "{!a}",
        "{0!a}",
        "{0:{1}}",
        "{:>1000000000}",
        "{:.99999}",
        "{0",
        "}",
    ],
)
def test_hostile_templates_are_refused_before_formatting(template: str) -> None:
    with pytest.raises(ValueError, match="format_text"):
        format_text(template, "secret", 3, x="secret")


@pytest.mark.parametrize("value", [[1], {"a": 1}, (1,), b"x", type("S", (str,), {})("s")])
def test_only_plain_values_are_formatted(value: Any) -> None:
    with pytest.raises(TypeError, match="only str, int, float, bool and None"):
        format_text("{}", value)


def test_missing_arguments_and_mixed_numbering_are_named() -> None:
    with pytest.raises(ValueError, match="no argument for field 'who'"):
        format_text("{who}")
    with pytest.raises(ValueError, match="positional field has no argument"):
        format_text("{1}", "a")
    with pytest.raises(ValueError, match="manual field"):
        format_text("{} {0}", "a")


# -- in the toolbox, the sandbox and the data-flow rule ------------------------------------


def test_registered_but_not_in_the_shipped_profiles() -> None:
    assert all(name in DEFAULT_TOOLBOX for name in TEXT_TOOLS)
    for name in builtin_profiles():
        assert not set(TEXT_TOOLS) & set(load_profile(name).toolbox), name
    assert all(spec.group == "text" for spec in DEFAULT_TOOLBOX.subset(TEXT_TOOLS))
    assert "format_text(template: str, *args: Any, **kwargs: Any) -> str" in (
        DEFAULT_TOOLBOX.subset(TEXT_TOOLS).describe()
    )


def test_the_raw_event_may_not_be_searched_or_formatted() -> None:
    tools = DEFAULT_TOOLBOX.subset(["parse_user_info", *TEXT_TOOLS])
    for call in (
        "re_search('x', agent_output)",
        "re_findall(agent_input, 'x')",
        "format_text('{}', agent_output)",
        "format_text(agent_input)",
        "re_search('x', text=agent_output)",
    ):
        assert check_dataflow(f"m = {call}\nallow('ok')\n", tools), call
    reader_first = "info = parse_user_info(agent_input)\nm = re_search('x', info['email'])\n"
    assert check_dataflow(reader_first + "allow('ok')\n", tools) == []


def test_a_program_uses_them_in_the_sandbox() -> None:
    tools = DEFAULT_TOOLBOX.subset(["parse_user_info", *TEXT_TOOLS])
    assert toolbox_refs(tools) is not None  # built-ins: the zygote serves them
    program = (
        "info = parse_user_info(agent_input)\n"
        "host = re_fullmatch(r'[^@]+@([\\w.]+)', info['email'], ignore_case=True)\n"
        "if host and host[1].lower() == 'example.com':\n"
        "    deny([format_text('mail to {host} for a user of {age}', host=host[1], "
        "age=info['age'])], 'external')\n"
        "else:\n"
        "    allow('internal')\n"
    )
    result = run_program(program, tools, EVENT, "")
    assert result["ok"], result["error"]
    assert result["verdict"]["violations"] == [  # type: ignore[index]
        "mail to Example.com for a user of 30"
    ]
    refused = run_program("m = '{0.__class__}'.format(1)\nallow(m)\n", tools, EVENT, "")
    assert not refused["ok"]  # str.format itself stays refused; format_text is the way
