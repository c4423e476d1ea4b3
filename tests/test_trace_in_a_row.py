"""History adjacency: "these earlier steps were contiguous" (issue 33, item 7).

``called_in_a_row(p1, p2, ...)`` holds when some run of consecutive earlier calls matches the
patterns in order, with no call in between (messages that are not calls are no steps, as for
``immediately_after``). Checked against a brute-force reading over many generated runs.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace import PredicateSpecError, compile_bindings
from tests.linear import assert_linear
from tests.trace_helpers import call, facts, result, system, user

PAY = {"iban": "CH9300762011623852957", "amount": 1200}
TOOLS = ["get_balance", "read_inbox", "send_email", "read_file"]
ARGS = {
    "get_balance": {"account": "main"},
    "read_inbox": {"folder": "unread"},
    "send_email": {"to": "me@home.example", "body": "hi"},
    "read_file": {"path": "a.txt"},
}


def run_of(
    names: list[str], statuses: list[str] | None = None, chatter: bool = False
) -> list[dict[str, Any]]:
    """A thread whose calls are `names`, in order (an assistant reply between them if asked)."""
    out: list[dict[str, Any]] = [system(), user("Check my balance and mail, then pay rent.")]
    for i, name in enumerate(names):
        out.append(call(f"c{i}", name, ARGS[name]))
        failed = statuses is not None and statuses[i] == "error"
        out.append(
            {
                **result(f"c{i}", "failed" if failed else "ok"),
                **({"status": "error"} if failed else {}),
            }
        )
        if chatter:
            out.append({"role": "assistant", "content": "Done; next step."})
            out.append(user("Go on."))
    return out


def value(expression: str, messages: list[dict[str, Any]]) -> tuple[bool | None, str]:
    found = facts(messages, "send_money", PAY).fact(expression)
    return found.value, found.detail


def brute(names: list[str], wanted: list[str]) -> bool:
    k = len(wanted)
    return any(names[i : i + k] == wanted for i in range(len(names) - k + 1))


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["get_balance", "read_inbox"], True),
        (["read_file", "get_balance", "read_inbox", "send_email"], True),
        (["get_balance", "send_email", "read_inbox"], False),
        (["read_inbox", "get_balance"], False),
        (["get_balance"], False),
        ([], False),
        (["get_balance", "get_balance", "read_inbox"], True),
    ],
)
def test_two_steps_in_a_row(names: list[str], expected: bool) -> None:
    assert value('called_in_a_row("get_balance", "read_inbox")', run_of(names))[0] is expected


def test_replies_between_calls_are_no_steps() -> None:
    thread = run_of(["get_balance", "read_inbox"], chatter=True)
    assert value('called_in_a_row("get_balance", "read_inbox")', thread)[0] is True


def test_patterns_take_args_status_and_effects() -> None:
    thread = run_of(["get_balance", "send_email"], ["ok", "error"])
    assert (
        value('called_in_a_row("get_balance", {"tool": "send_email", "status": "ok"})', thread)[0]
        is False
    )
    assert (
        value('called_in_a_row("get_balance", {"tool": "send_email", "status": "error"})', thread)[
            0
        ]
        is True
    )
    assert value('called_in_a_row("get_balance", "effect:send")', thread)[0] is True
    assert (
        value(
            'called_in_a_row("get_balance", {"tool": "send_email", "args": '
            '{"to": "*@evil.example"}})',
            thread,
        )[0]
        is False
    )


def test_the_detail_names_the_run() -> None:
    got, detail = value(
        'called_in_a_row("get_balance", "read_inbox", "send_email")',
        run_of(["read_file", "get_balance", "read_inbox", "send_email"]),
    )
    assert got is True and "messages 4, 6, 8" in detail


@settings(max_examples=200, deadline=None)
@given(
    names=st.lists(st.sampled_from(TOOLS), max_size=8),
    wanted=st.lists(st.sampled_from(TOOLS), min_size=2, max_size=4),
)
def test_same_as_brute_force(names: list[str], wanted: list[str]) -> None:
    expression = "called_in_a_row(" + ", ".join(repr(w) for w in wanted) + ")"
    assert value(expression, run_of(names))[0] is brute(names, wanted)


def test_a_summary_leaves_a_run_not_found_open() -> None:
    summary = {
        "role": "user",
        "content": "Here is a summary of the conversation to date: the balance was checked.",
    }
    thread = [system(), summary, call("c1", "read_inbox", ARGS["read_inbox"]), result("c1", "ok")]
    got, detail = value('called_in_a_row("get_balance", "read_inbox")', thread)
    assert got is None and "summary" in detail
    found = [system(), summary, *run_of(["get_balance", "read_inbox"])[2:]]
    assert value('called_in_a_row("get_balance", "read_inbox")', found)[0] is True


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('called_in_a_row("get_balance")', "at least two"),
        ('called_in_a_row("a", "effect:fly")', "effect must be"),
        ('called_in_a_row("a", {"tool": "b", "when": 1})', "unknown call pattern keys"),
        ("called_in_a_row(" + ", ".join(['"a"'] * 21) + ")", "at most 20"),
    ],
)
def test_bad_patterns_fail_when_bound(expression: str, message: str) -> None:
    with pytest.raises(PredicateSpecError, match=message):
        compile_bindings({"p": expression})


def test_linear_in_the_number_of_calls() -> None:
    def work(n: int) -> None:
        names = ["get_balance", "read_file"] * (n // 2)
        thread = run_of(names)
        assert (
            value(
                'called_in_a_row("get_balance", "read_file", "get_balance", "read_inbox")', thread
            )[0]
            is False
        )

    assert_linear(work, 600, factor=6)
