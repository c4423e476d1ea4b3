"""A tool call whose arguments give a key twice is unreadable, in every presentation.

JSON readers disagree on ``{"amount": 5000, "amount": 1}``: Python's keeps the last value,
others the first, and the tool may run with the one the guard did not check. Seen failing
before: `guardagent check --profile tool-calls-policy` allowed ``ARGS: {"amount": 5000,
"amount": 1}`` (exit 0: it read 1, under the 1000 limit). The trace reader refuses such
arguments already (``ambiguous_argument``); the event reader now denies them too
(``unparsable_tool_call``). JSON elsewhere in the output (a tool result's content) is not a
call's arguments and is read as before.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from guardagent.cli import main
from guardagent.readers.evidence import UnreadableEvidence
from guardagent.readers.toolcall import parse_tool_calls

TWICE = '{"amount": 5000, "to": "acct-9", "amount": 1}'
OUTPUTS = {
    "block": f"(Tool call)\nTOOL: transfer_funds\nARGS: {TWICE}",
    "openai": json.dumps(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "transfer_funds", "arguments": TWICE},
                }
            ],
        }
    ),
    "langchain": '{"name": "transfer_funds", "args": ' + TWICE + ', "type": "tool_call"}',
    "anthropic": '{"type": "tool_use", "id": "t1", "name": "transfer_funds", "input": '
    + TWICE
    + "}",
    "nested": '{"name": "transfer_funds", "args": {"payee": {"iban": "A", "iban": "B"}}, '
    '"type": "tool_call"}',
}


@pytest.mark.parametrize("layout", sorted(OUTPUTS))
def test_arguments_giving_a_key_twice_are_unreadable(layout: str) -> None:
    with pytest.raises(UnreadableEvidence) as info:
        parse_tool_calls(OUTPUTS[layout])
    assert info.value.reason == "unparsable_tool_call"
    assert "twice" in info.value.detail


def test_json_outside_a_calls_arguments_is_read_as_before() -> None:
    output = (
        '(Conversation)\n  TOOL RESULT [lookup]: {"status": "ok", "status": "stale"}\n'
        '(Tool call)\nTOOL: transfer_funds\nARGS: {"amount": 5, "to": "acct-9"}'
    )
    assert parse_tool_calls(output) == [
        {"name": "transfer_funds", "args": {"amount": 5, "to": "acct-9"}}
    ]


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
            OUTPUTS["block"],
            "--fields",
            "allowed,reason",
        ],
    )
    assert result.exit_code == 2, result.output
    assert json.loads(result.output)["allowed"] is False
