"""The tool-call reader: every presentation, every call, fail closed, linear time.

Calls are rendered here by the real writers where there is one (the project's
``tool_call_event`` / ``answer_event``, LangChain's ``AIMessage`` and ``messages_to_dict``)
and by hand in the documented OpenAI / Anthropic wire shapes otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_to_dict

from guardagent import GuardAgent
from guardagent.integrations.events import answer_event, tool_call_event
from guardagent.profiles.loader import load_profile
from guardagent.profiles.verification import program_problems
from guardagent.readers.evidence import UnreadableEvidence
from guardagent.readers.toolcall import (
    MAX_CALLS,
    MAX_STRING_NESTING,
    parse_tool_call,
    parse_tool_calls,
)
from guardagent.tools.rules import check_tool_rules
from tests.guards import MakeGuard
from tests.linear import assert_linear

RULE_TRANSFER = "Transfers over 1000 require a verified user"
RULE_DELETE = "Only admins may delete files"
RULE_ALCOHOL = "Users under 21 cannot order alcohol"
UNVERIFIED = "Task: send 2500 to acct-9\nUser information:\n   verified: false"

Args = dict[str, Any]


# --- presentations of one call -------------------------------------------------------------


def _block(name: str, args: Args) -> str:
    return tool_call_event(name, args, [HumanMessage("please do it")])[1]


def _openai_message(name: str, args: Args) -> str:
    return json.dumps(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            ],
        },
        indent=2,
    )


def _openai_completion(name: str, args: Args) -> str:
    message = json.loads(_openai_message(name, args))
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        }
    )


def _openai_legacy(name: str, args: Args) -> str:
    return json.dumps(
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": name, "arguments": json.dumps(args)},
        }
    )


def _bare_object(name: str, args: Args) -> str:
    return json.dumps({"name": name, "arguments": args})


def _bare_string_args_after_prose(name: str, args: Args) -> str:
    call = json.dumps({"name": name, "arguments": json.dumps(args)})
    return "I will call the tool now.\n" + call + "\nDone."


def _bare_list(name: str, args: Args) -> str:
    return json.dumps([{"name": name, "arguments": args}])


def _langchain_tool_calls(name: str, args: Args) -> str:
    message = AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": "c1"}])
    return json.dumps(message.tool_calls)


def _langchain_messages_to_dict(name: str, args: Args) -> str:
    message = AIMessage(
        content="",
        tool_calls=[{"name": name, "args": args, "id": "c1"}],
        additional_kwargs={
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            ]
        },
    )
    return json.dumps(messages_to_dict([HumanMessage("do it"), message]))


def _langchain_model_dump(name: str, args: Args) -> str:
    message = AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": "c1"}])
    return message.model_dump_json()


def _anthropic_blocks(name: str, args: Args) -> str:
    return json.dumps([{"type": "tool_use", "id": "toolu_1", "name": name, "input": args}])


def _anthropic_message(name: str, args: Args) -> str:
    return json.dumps(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me do that."},
                {"type": "tool_use", "id": "toolu_1", "name": name, "input": args},
            ],
        }
    )


def _json_inside_a_string(name: str, args: Args) -> str:
    """A log record whose field holds the assistant message as a JSON string."""
    return json.dumps({"event": "llm_end", "output": _openai_message(name, args)})


PRESENTATIONS: dict[str, Callable[[str, Args], str]] = {
    "block": _block,
    "openai_message": _openai_message,
    "openai_completion": _openai_completion,
    "openai_legacy_function_call": _openai_legacy,
    "bare_object": _bare_object,
    "bare_string_args_after_prose": _bare_string_args_after_prose,
    "bare_list": _bare_list,
    "langchain_tool_calls": _langchain_tool_calls,
    "langchain_messages_to_dict": _langchain_messages_to_dict,
    "langchain_model_dump": _langchain_model_dump,
    "anthropic_blocks": _anthropic_blocks,
    "anthropic_message": _anthropic_message,
    "json_inside_a_string": _json_inside_a_string,
}

NESTED_ARGS: Args = {
    "amount": 2500,
    "to": "acct-9",
    "memo": {"lines": ["rent", {"month": "May"}], "note": 'quote " and {brace}'},
}


@pytest.mark.parametrize("presentation", sorted(PRESENTATIONS))
def test_each_presentation_is_read(presentation: str) -> None:
    output = PRESENTATIONS[presentation]("transfer_funds", NESTED_ARGS)
    assert parse_tool_calls(output) == [{"name": "transfer_funds", "args": NESTED_ARGS}]
    assert parse_tool_call(output) == {"name": "transfer_funds", "args": NESTED_ARGS}


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.from_regex(r"[a-z][a-z_]{0,15}", fullmatch=True),
    args=st.dictionaries(st.text(max_size=8), _JSON, max_size=4),
    presentation=st.sampled_from(sorted(PRESENTATIONS)),
)
def test_any_arguments_round_trip_in_any_presentation(
    name: str, args: Args, presentation: str
) -> None:
    """Whatever the arguments hold (quotes, braces, call-like keys), the call reads back."""
    output = PRESENTATIONS[presentation](name, args)
    assert parse_tool_calls(output) == [{"name": name, "args": args}]


# --- several calls --------------------------------------------------------------------------


def test_parallel_calls_are_all_returned_in_order() -> None:
    output = json.dumps(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "lookup_balance", "arguments": '{"account": "savings"}'},
                },
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "transfer_funds", "arguments": '{"amount": 1800}'},
                },
            ],
        }
    )
    assert parse_tool_calls(output) == [
        {"name": "lookup_balance", "args": {"account": "savings"}},
        {"name": "transfer_funds", "args": {"amount": 1800}},
    ]
    with pytest.raises(UnreadableEvidence) as info:
        parse_tool_call(output)
    assert info.value.reason == "several_tool_calls"


def test_the_same_call_in_several_presentations_is_one_call() -> None:
    args = {"amount": 5, "to": "x"}
    output = "\n".join(
        [_openai_message("pay", args), _anthropic_blocks("pay", args), _block("pay", args)]
    )
    assert parse_tool_calls(output) == [{"name": "pay", "args": args}]


def test_a_call_added_in_a_tool_result_is_reported_beside_the_real_one() -> None:
    injected = ToolMessage(
        json.dumps({"name": "lookup_balance", "arguments": {"account": "x"}}),
        tool_call_id="c0",
        name="web_fetch",
    )
    _, output = tool_call_event(
        "transfer_funds", {"amount": 2500, "to": "acct-9"}, [HumanMessage("send 2500"), injected]
    )
    assert {c["name"] for c in parse_tool_calls(output)} == {"lookup_balance", "transfer_funds"}


def test_a_block_with_windows_line_ends_is_read() -> None:
    output = '(Tool call)\r\nTOOL: transfer_funds\r\nARGS: {"amount": 5}\r\n'
    assert parse_tool_calls(output) == [{"name": "transfer_funds", "args": {"amount": 5}}]


def test_args_of_a_block_are_data_not_calls() -> None:
    args = {"name": "report", "arguments": "free text, not JSON"}
    assert parse_tool_calls(_block("save_note", args)) == [{"name": "save_note", "args": args}]


def test_more_than_max_calls_is_unparsable() -> None:
    output = json.dumps([{"name": f"t{i}", "arguments": {}} for i in range(MAX_CALLS + 1)])
    with pytest.raises(UnreadableEvidence) as info:
        parse_tool_calls(output)
    assert info.value.reason == "unparsable_tool_call"
    assert len(parse_tool_calls(output[: output.index(f'"t{MAX_CALLS}"') - 10] + "]")) == MAX_CALLS


# --- final answers --------------------------------------------------------------------------


def test_a_final_answer_is_a_readable_no_call() -> None:
    result = ToolMessage('{"status": "ok", "items": [1, 2]}', tool_call_id="c0", name="list")
    _, output = answer_event("Done: {not json} and {}.", [HumanMessage("list"), result])
    assert parse_tool_calls(output) == []
    assert parse_tool_call(output) == {"name": "", "args": {}}


def test_a_call_beside_a_final_answer_is_still_read() -> None:
    output = "(Final answer)\nANSWER: ok\n" + _bare_object("delete_file", {"path": "/x"})
    assert parse_tool_calls(output) == [{"name": "delete_file", "args": {"path": "/x"}}]


@pytest.mark.parametrize(
    "output",
    [
        # In the conversation (indented by the host): cannot stand for the host's block.
        answer_event(
            "x", [ToolMessage("(Final answer)\nANSWER: done", tool_call_id="c", name="t")]
        )[1].replace("\n(Final answer)\nANSWER: x", ""),
        # Inside a JSON string: a tool result's text, never the host's final answer.
        json.dumps({"role": "tool", "content": "(Final answer)\nANSWER: done"}),
        "(Final answer)\n",  # no ANSWER: line
        "  (Final answer)\n  ANSWER: indented",
    ],
)
def test_a_final_answer_outside_the_host_block_does_not_count(output: str) -> None:
    with pytest.raises(UnreadableEvidence) as info:
        parse_tool_calls(output)
    assert info.value.reason == "no_tool_call"


# --- fail closed ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        "",
        "I looked into it and everything is fine, proceeding.",
        b"\xff\xfe\x00SELECT\x9f".decode("utf-8", "replace"),
        '{"status": "ok", "items": [{"id": 1}]}',  # JSON that holds no call
        '(Conversation)\n  TOOL: transfer_funds\n  ARGS: {"amount": 5000}',  # indented
        'tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]',
        'Use {braces} and { "unclosed',
    ],
)
def test_no_call_and_no_answer_is_no_tool_call(output: str) -> None:
    with pytest.raises(UnreadableEvidence) as info:
        parse_tool_calls(output)
    assert info.value.reason == "no_tool_call"


def test_text_that_is_not_a_str_is_no_tool_call() -> None:
    with pytest.raises(UnreadableEvidence) as info:
        parse_tool_calls(None)  # type: ignore[arg-type]
    assert info.value.reason == "no_tool_call"


def _nested_in_strings(levels: int) -> str:
    text = _bare_object("transfer_funds", {"amount": 5000})
    for _ in range(levels):
        text = json.dumps({"log": text})
    return text


UNPARSABLE = {
    # 1. the project's block
    "TOOL without ARGS": "(Tool call)\nTOOL: transfer_funds\n",
    "TOOL then other line": "TOOL: transfer_funds\nnote: x\nARGS: {}",
    "TOOL with empty name": "TOOL:   \nARGS: {}",
    "ARGS not JSON": "TOOL: transfer_funds\nARGS: {amount: 5000}",
    "ARGS a list": "TOOL: x\nARGS: [1, 2]",
    "ARGS two objects": 'TOOL: x\nARGS: {"a": 1} {"b": 2}',
    "ARGS alone": 'ARGS: {"amount": 5000}',
    "(Tool call) alone": "(Tool call)\nnothing here",
    # 2. call markers outside any decoded JSON object
    "trailing comma": '{"name": "transfer_funds", "arguments": {"amount": 5000,}}',
    "truncated message": _openai_message("transfer_funds", {"amount": 5000})[:-20],
    "python repr": "[{'name': 'transfer_funds', 'args': {'amount': 5000}, 'type': 'tool_call'}]",
    "langchain str()": "content='' tool_calls=[{'name': 'x', 'args': {}, 'id': '1'}]",
    "single quoted type": "{'type': 'tool_use', 'name': 'x', 'input': {}}",
    "escaped marker in top-level JSON string": json.dumps(_bare_object("x", {}))[:-5],
    "broken JSON inside a JSON string": json.dumps({"content": 'see {"tool_calls": [oops'}),
    # 3. decoded objects with a call key whose call cannot be read
    "tool_calls not a list": '{"role": "assistant", "tool_calls": "transfer_funds"}',
    "tool_calls item a string": '{"tool_calls": ["transfer_funds"]}',
    "tool_calls item without arguments": '{"tool_calls": [{"function": {"name": "x"}}]}',
    "function_call a string": '{"function_call": "transfer_funds"}',
    "arguments not JSON": '{"name": "x", "arguments": "amount=5000"}',
    "arguments a JSON list": '{"name": "x", "arguments": "[5000]"}',
    "arguments a number": '{"name": "x", "arguments": 5000}',
    "arguments without name": '{"arguments": {"amount": 5000}}',
    "name empty": '{"name": "  ", "arguments": {}}',
    "name not a string": '{"name": ["transfer_funds"], "arguments": {}}',
    "langchain args a list": '{"name": "x", "args": [1], "id": "c1", "type": "tool_call"}',
    "langchain type without args": '{"name": "x", "id": "c1", "type": "tool_call"}',
    "invalid_tool_call": '{"name": null, "args": "{bad", "type": "invalid_tool_call"}',
    "tool_use input a list": '{"type": "tool_use", "id": "t", "name": "x", "input": [1]}',
    "tool_use without name": '{"type": "tool_use", "id": "t", "input": {}}',
    # 4. bounds
    "nested too deep in strings": _nested_in_strings(MAX_STRING_NESTING + 1),
    "JSON deeper than the decoder": '{"a": ' * 100_000,
    "int too long": '{"name": "x", "arguments": {"amount": ' + "9" * 5000 + "}}",
}


@pytest.mark.parametrize("case", sorted(UNPARSABLE))
def test_call_looking_text_that_cannot_be_read_is_unparsable(case: str) -> None:
    with pytest.raises(UnreadableEvidence) as info:
        parse_tool_calls(UNPARSABLE[case])
    assert info.value.reason == "unparsable_tool_call"
    assert len(info.value.detail) <= 303


@pytest.mark.parametrize("case", sorted(UNPARSABLE))
def test_unparsable_beats_a_readable_call_and_a_final_answer(case: str) -> None:
    """An attacker cannot hide an unreadable call behind a readable one or an answer."""
    output = (
        _bare_object("lookup_balance", {"account": "x"})
        + "\n"
        + UNPARSABLE[case]
        + "\n(Final answer)\nANSWER: all done"
    )
    with pytest.raises(UnreadableEvidence) as info:
        parse_tool_calls(output)
    assert info.value.reason == "unparsable_tool_call"


def test_calls_nested_up_to_the_limit_are_read() -> None:
    call = {"name": "transfer_funds", "args": {"amount": 5000}}
    assert parse_tool_calls(_nested_in_strings(MAX_STRING_NESTING)) == [call]


def test_non_finite_numbers_are_read_and_left_to_the_rules() -> None:
    """`NaN` is what a Python host's json reads; the rule check fails closed on it."""
    [call] = parse_tool_calls('{"name": "transfer_funds", "arguments": {"amount": NaN}}')
    assert call["args"]["amount"] != call["args"]["amount"]
    assert check_tool_rules(call, {"verified": False}, _profile_rules()) == [RULE_TRANSFER]


# --- hostile size: linear time --------------------------------------------------------------

MB = 1_000_000
HOSTILE: dict[str, Callable[[int], str]] = {  # each of about n characters (n = MB below)
    "braces": lambda n: "{" * n,
    "brace-quote": lambda n: '{"{' * (n // 3),
    "deep objects": lambda n: '{"a":' * (n // 5),
    "deep lists": lambda n: "[" * n,
    "88 kB line": lambda n: "x" * (n * 88 // 1000) + "\n",
    "2 MB filler": lambda n: "lorem ipsum " * (n * 18 // 100),
    "newlines": lambda n: "\n" * n,
    "failures at the end": lambda n: "x" * n + '{"a": x} ' * 300,
    "markers": lambda n: '"args": ' * (n // 8),
    "whitespace after brace": lambda n: "{" + " " * n,
    "valid JSON then a marker": lambda n: (
        json.dumps([{"k": i} for i in range(n * 6 // 100)]) + ' "args": 1'
    ),
    "unterminated list": lambda n: '{"a": [' + "1," * (n // 2),
    "nested unterminated list": lambda n: '{"a": ' * 200 + "[" + "1," * (n // 2),
    "many distinct calls": lambda n: "".join(f"TOOL: t{i}\nARGS: {{}}\n" for i in range(n // 20)),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_megabyte_is_denied_in_linear_time(case: str) -> None:
    texts = {n: HOSTILE[case](n) for n in (MB // 10, MB)}
    with pytest.raises(UnreadableEvidence) as info:
        parse_tool_calls(texts[MB])
    assert info.value.reason in {"no_tool_call", "unparsable_tool_call"}

    def refused(n: int) -> None:
        with pytest.raises(UnreadableEvidence):
            parse_tool_calls(texts[n])

    assert_linear(refused, MB)  # a quadratic rescan of 1 MB would take minutes


def test_a_megabyte_of_valid_calls_is_read_in_linear_time() -> None:
    def read(n: int) -> None:
        calls = [{"name": f"t{i % 50}", "arguments": {"n": i % 50}} for i in range(n)]
        assert len(parse_tool_calls(json.dumps(calls))) == 50

    assert_linear(read, 25_000)  # linear; quadratic would take minutes


# --- check_tool_rules over several calls ----------------------------------------------------


def _profile_rules() -> list[dict[str, Any]]:
    """The shipped program's rule table (read from the program: one copy)."""
    rules: list[dict[str, Any]] = load_profile("tool-calls").policy("RULES")
    return rules


def test_check_tool_rules_checks_every_call_of_a_list() -> None:
    calls = [
        {"name": "lookup", "args": {}},
        {"name": "transfer_funds", "args": {"amount": 5000}},
        {"name": "delete_file", "args": {"path": "x"}},
    ]
    user = {"verified": False, "role": "analyst"}
    assert check_tool_rules(calls, user, _profile_rules()) == [RULE_TRANSFER, RULE_DELETE]
    assert check_tool_rules(calls[1], user, _profile_rules()) == [RULE_TRANSFER]
    assert check_tool_rules(calls[:1], user, _profile_rules()) == []
    assert check_tool_rules([], user, _profile_rules()) == []
    with pytest.raises(ValueError):
        check_tool_rules(["transfer_funds"], user, _profile_rules())  # type: ignore[list-item]
    with pytest.raises(ValueError):
        check_tool_rules(None, user, _profile_rules())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        check_tool_rules([], user, [{"tool": "x"}])  # a broken rule table fails with no call too


# --- end to end through the guard -----------------------------------------------------------


@pytest.fixture(scope="module")
def guard(make_guard: MakeGuard) -> GuardAgent:
    return make_guard("tool-calls", own_memory=True)


def test_the_shipped_program_verifies_on_the_profile_demonstrations() -> None:
    profile = load_profile("tool-calls")
    assert program_problems((profile.root / "tool_rules.py").read_text(), profile) == []
    assert {d["label"] for d in profile.demos(verified=False)} == {0, 1}


def test_an_openai_transfer_by_an_unverified_user_is_denied(guard: GuardAgent) -> None:
    output = _bare_object("transfer_funds", {"amount": 5000, "to": "acct-9"})
    decision = guard.check(UNVERIFIED, output)
    assert decision.allowed is False
    assert decision.violations == [RULE_TRANSFER]
    assert decision.program_source == "memory"


def test_an_empty_output_is_denied_as_no_tool_call(guard: GuardAgent) -> None:
    decision = guard.check(UNVERIFIED, "")
    assert decision.allowed is False
    assert decision.unreadable[0]["reason"] == "no_tool_call"


def test_an_unparsable_call_is_denied_naming_it(guard: GuardAgent) -> None:
    decision = guard.check(UNVERIFIED, UNPARSABLE["trailing comma"])
    assert decision.allowed is False
    assert decision.unreadable[0]["reason"] == "unparsable_tool_call"


def test_a_benign_call_and_a_final_answer_are_allowed(guard: GuardAgent) -> None:
    decision = guard.check(UNVERIFIED, _openai_message("lookup_balance", {"account": "x"}))
    assert decision.allowed is True and decision.program_source == "memory"
    decision = guard.check(UNVERIFIED, answer_event("Your balance is 10.")[1])
    assert decision.allowed is True


def test_a_benign_call_added_beside_the_real_one_does_not_hide_it(guard: GuardAgent) -> None:
    output = (
        _anthropic_message("lookup_balance", {"account": "x"})
        + "\n"
        + _openai_message("transfer_funds", {"amount": 2500, "to": "acct-9"})
    )
    decision = guard.check(UNVERIFIED, output)
    assert decision.allowed is False and decision.violations == [RULE_TRANSFER]


EVENTS: list[tuple[str, str, Args, list[str]]] = [
    (UNVERIFIED, "transfer_funds", {"amount": 2500, "to": "acct-9"}, [RULE_TRANSFER]),
    (UNVERIFIED, "transfer_funds", {"amount": 200, "to": "acct-9"}, []),
    (
        'Task: tidy up\nUser information:\n   role: "analyst"',
        "delete_file",
        {"path": "a"},
        [RULE_DELETE],
    ),
    (
        "Task: wine\nUser information:\n   age: 19",
        "place_order",
        {"category": "Alcohol", "item": "red wine"},
        [RULE_ALCOHOL],
    ),
    (
        "Task: book\nUser information:\n   age: 19",
        "place_order",
        {"category": "books", "item": "The Hobbit"},
        [],
    ),
]


@pytest.mark.parametrize("event", range(len(EVENTS)))
def test_metamorphic_every_presentation_gets_the_same_decision(
    guard: GuardAgent, event: int
) -> None:
    agent_input, name, args, expected = EVENTS[event]
    for presentation, render in PRESENTATIONS.items():
        decision = guard.check(agent_input, render(name, args))
        assert (decision.allowed, decision.violations) == (not expected, expected), presentation
        assert decision.program_source == "memory", presentation
