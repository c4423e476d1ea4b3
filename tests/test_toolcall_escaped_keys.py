"""A call key written with escapes in JSON the guard cannot decode is still a call marker.

``{"name": "transfer_funds", "\\u0061rguments": "{...}",}`` does not decode (the trailing
comma), so the reader looked for call markers in it, and found none: ``\\u0061rguments`` is
not ``arguments`` as written. A host's lenient reader (a JSON repair, JSON5, a Python
literal for ``'\\x61rgs'``) reads the key as ``arguments`` and runs the call. Seen failing
before: with a final answer beside it, `parse_tool_calls` returned ``[]`` (no call) for
each layout below, and `check --profile tool-calls-policy` allowed a transfer of 5000.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.cli import main
from guardagent.readers.evidence import UnreadableEvidence
from guardagent.readers.toolcall import parse_tool_calls

ANSWER = "(Final answer)\nANSWER: done\n"
BROKEN = {
    "arguments": '{"name": "transfer_funds", "\\u0061rguments": "{\\"amount\\": 5000}",}',
    "tool_calls": '{"\\u0074ool_calls": [{"id": "c1", "function": {"name": "transfer_funds"}}],}',
    "python": "{'name': 'transfer_funds', '\\x61rgs': {'amount': 5000}}",
    "tool_use": '{"type": "\\u0074ool_use", "name": "transfer_funds", "input": {"amount": 5000},}',
    "upper hex": '{"name": "transfer_funds", "t\\u006Fol_calls": [],}',
    "in a string": '{"note": "{\\"name\\": \\"transfer_funds\\", \\"\\\\u0061rgs\\": {},}"}',
}


@pytest.mark.parametrize("layout", sorted(BROKEN))
def test_an_escaped_call_key_in_broken_json_is_unreadable(layout: str) -> None:
    with pytest.raises(UnreadableEvidence) as info:
        parse_tool_calls(ANSWER + BROKEN[layout])
    assert info.value.reason == "unparsable_tool_call", info.value.detail


def test_escapes_that_spell_no_call_key_are_read_as_before() -> None:
    output = ANSWER + '{"note": "caf\\u00e9", "\\u0041rguments": 1,}'  # "Arguments": no key
    assert parse_tool_calls(output) == []
    decoded = '{"name": "transfer_funds", "\\u0061rguments": "{\\"amount\\": 5}"}'
    assert parse_tool_calls(decoded) == [{"name": "transfer_funds", "args": {"amount": 5}}]


@settings(max_examples=100, deadline=None)
@given(
    key=st.sampled_from(["arguments", "args", "tool_calls", "function_call"]),
    escaped=st.lists(st.booleans(), min_size=13, max_size=13),
    backslashes=st.integers(1, 3),
    style=st.sampled_from(["u", "x"]),
)
def test_any_escaping_of_a_call_key_is_still_a_marker(
    key: str, escaped: list[bool], backslashes: int, style: str
) -> None:
    """Metamorphic: escape any letters of the key, behind any run of backslashes."""
    slash = "\\" * backslashes
    spelled = "".join(
        (f"{slash}u{ord(c):04x}" if style == "u" else f"{slash}x{ord(c):02x}") if e else c
        for c, e in zip(key, escaped, strict=False)
    )
    with pytest.raises(UnreadableEvidence):
        parse_tool_calls(ANSWER + '{"name": "transfer_funds", "' + spelled + '": {},}')


def test_linear_on_a_long_run_of_backslashes() -> None:
    output = ANSWER + '{"a": 1,} ' + "\\" * 200_000 + "x"  # 8 s for 40,000 before (backtracking)
    assert parse_tool_calls(output) == []


def test_the_cli_denies_such_a_call() -> None:
    result = CliRunner().invoke(
        main,
        [
            "check",
            "--profile",
            "tool-calls-policy",
            "--input",
            "Task: pay",
            "--output",
            ANSWER + BROKEN["arguments"],
            "--fields",
            "allowed,reason",
        ],
    )
    assert result.exit_code == 2, result.output
    assert json.loads(result.output)["allowed"] is False


@pytest.mark.parametrize(
    "text",
    [
        ANSWER + '{"a": 1,} \\ud800 "\\u0061rgs": {}',  # an escaped lone surrogate beside the key
        ANSWER + '{"note": "\\ud800 {\\"x\\": 1,}"}',  # a decoded string holding a lone surrogate
    ],
)
def test_a_lone_surrogate_is_read_not_raised(text: str) -> None:
    try:
        parse_tool_calls(text)
    except UnreadableEvidence as exc:
        assert exc.reason == "unparsable_tool_call"
