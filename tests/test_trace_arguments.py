"""Predicates over the proposed call's own arguments (issue 20 item 3).

Each is judged on this call, not the run: equality by kind, lists (and records sections),
normalised substrings, globs and RE2 patterns, numeric comparisons that refuse ambiguous
readings, and fuzzy similarity. A named argument with no value is open (None), never
"holds"; a value a test cannot read is open unless another value settles it.
"""

from __future__ import annotations

import fnmatch
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace import PredicateSpecError, compile_bindings
from guardagent.trace.predicates.arguments import _glob, glob_regex
from tests.trace_helpers import call, facts, result, system, user

BASE = [system(), user("Pay my rent to the landlord, CHF 1,200.")]


def value(name: str, args: dict[str, object], expression: str, **kw: object) -> bool | None:
    return facts(BASE, name, args, **kw).fact(expression).value  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "expression", "expected"),
    [
        ({"amount": 1200}, 'arg_compare("amount", "<=", 1500)', True),
        ({"amount": "CHF 1,200.00"}, 'arg_compare("amount", "<=", 1500)', True),
        ({"amount": 4950}, 'arg_compare("amount", "<=", 1500)', False),
        ({"amount": "2'500"}, 'arg_compare("amount", ">", 2000)', True),
        # 1,500 reads as 1500 and as 1.5: the readings disagree on "<= 1000", so it is open
        ({"amount": "1,500"}, 'arg_compare("amount", "<=", 1000)', None),
        ({"amount": "1,500"}, 'arg_compare("amount", "<=", 2000)', True),
        ({"amount": "a lot"}, 'arg_compare("amount", "<=", 1000)', None),
        ({"subject": "rent"}, 'arg_compare("amount", "<=", 1000)', None),  # absent: open
        ({"amount": 12.5}, 'arg_compare("amount", "==", 12.50)', True),
        ({"amount": 12.5}, 'arg_compare("amount", "!=", 12.50)', False),
    ],
)
def test_numeric_comparisons(
    args: dict[str, object], expression: str, expected: bool | None
) -> None:
    assert value("send_money", args, expression) is expected


def test_equals_and_in_compare_by_kind() -> None:
    iban = {"iban": "ch93 0076 2011 6238 5295 7", "amount": "1,200.00"}
    assert value("send_money", iban, 'arg_equals("iban", "CH9300762011623852957")') is True
    assert value("send_money", iban, 'arg_equals("amount", 1200)') is True
    assert value("send_money", iban, 'arg_equals("iban", "GB82WEST12345698765432")') is False
    to = {"to": ["Alice@Example.com", "bob@example.com"]}
    listed = 'arg_in("to", ["alice@example.com", "bob@example.com"])'
    assert value("send_email", to, listed) is True
    # every value of a named argument must pass: one outsider fails the list
    to2 = {"to": ["alice@example.com", "eve@evil.example"]}
    fact = facts(BASE, "send_email", to2).fact(listed)
    assert fact.value is False and "eve@evil.example" in fact.detail
    some = 'arg_in("to", ["alice@example.com"], match="any")'
    assert value("send_email", to2, some) is True
    assert value("send_email", {"cc": "x@y.org"}, listed) is None  # `to` absent: open


def test_in_a_records_section_and_a_missing_section_is_open() -> None:
    sites = {"allowed_sites": ["shop.example.com", "https://docs.shop.example.com"]}
    assert (
        value(
            "browse",
            {"url": "https://www.docs.shop.example.com/"},
            'arg_in("url", "@allowed_sites", compare="typed")',
            values=sites,
        )
        is True
    )
    # by default the list is of spellings: the site is not written so in the section
    assert (
        value(
            "browse",
            {"url": "https://www.docs.shop.example.com/"},
            'arg_in("url", "@allowed_sites")',
            values=sites,
        )
        is False
    )
    assert (
        value(
            "browse",
            {"url": "https://evil.example.com/"},
            'arg_in("url", "@allowed_sites")',
            values=sites,
        )
        is False
    )
    fact = facts(BASE, "browse", {"url": "https://a.ch"}).fact('arg_in("url", "@nowhere")')
    assert fact.value is None and "no section 'nowhere'" in fact.detail
    # the host's user facts are sections too
    assert (
        value(
            "send_email",
            {"to": "mum@family.example"},
            'arg_in("to", "@contacts")',
            user_facts={"contacts": [{"name": "Mum", "email": "mum@family.example"}]},
        )
        is True
    )


def test_contains_glob_and_regex_on_normalised_text() -> None:
    body = {"to": "a@b.example", "body": "Here is my ＰＡＳＳ\u200bWORD reset link"}
    assert value("send_email", body, 'arg_contains("body", "password")') is True
    assert value("send_email", body, 'arg_contains("*", "password")') is True  # any argument
    assert value("send_email", body, 'arg_contains("to", "password")') is False
    assert value("send_email", body, 'arg_glob("to", "*@b.example")') is True
    assert value("send_email", body, 'arg_glob("to", "*@[!b].example")') is False
    assert value("send_email", body, r'arg_match("body", "pass\\w*")') is True
    ascii_body = {"to": "a@b.example", "body": "New PASSWORD"}
    assert value("send_email", ascii_body, r'arg_match("body", "PASS", raw=True)') is True
    assert value("send_email", ascii_body, r'arg_match("body", "pass", raw=True)') is False
    assert value("send_email", ascii_body, r'arg_match("body", "pass")') is True
    assert value("send_email", body, r'arg_match("body", "^pass")') is False
    # "*" with no argument at all: no value contains it (False, not open)
    assert value("get_iban", {}, 'arg_contains("*", "password")') is False


def test_fuzzy_similarity_with_a_threshold() -> None:
    contacts = {"landlord": ["Hans Meier Immobilien AG"]}
    near = {"iban": "CH9300762011623852957", "subject": "Rent Hans Meier Immobilien"}
    expression = 'arg_similar("subject", "@landlord", threshold=80, scorer="partial_ratio")'
    assert value("send_money", near, expression, values=contacts) is True
    far = {"iban": "CH9300762011623852957", "subject": "deposit"}
    assert value("send_money", far, expression, values=contacts) is False
    assert (
        value(
            "send_money",
            {"subject": "Meier Hans"},
            'arg_similar("subject", "hans meier", threshold=95, scorer="token_sort_ratio")',
        )
        is True
    )


def test_a_predicate_in_a_rule_judges_this_call_not_the_run() -> None:
    """`order_holds` with an argument pattern judged the whole run; these judge the call."""
    messages = [
        *BASE,
        call("c1", "send_money", {"iban": "CH9300762011623852957", "amount": 9000}),
        result("c1", "done"),
    ]
    small = facts(messages, "send_money", {"iban": "CH9300762011623852957", "amount": 100})
    assert small.fact('arg_compare("amount", "<=", 1000)').value is True


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('arg_compare("amount", "=<", 5)', "op must be"),
        ('arg_compare("amount", "<", "5")', "number must be"),
        ('arg_match("body", "(a")', "not an RE2 pattern"),
        (r'arg_match("body", "(a)\\1")', "not an RE2 pattern"),
        ('arg_match("body", "(?=a)")', "not an RE2 pattern"),
        ('arg_in("to", "contacts")', "values must be a list"),
        ('arg_in("to", [])', "empty list"),
        ('arg_similar("to", "x", threshold=0)', "threshold"),
        ('arg_similar("to", "x", scorer="levenshtein")', "scorer must be"),
        ('arg_contains("body", "")', "non-empty"),
        ('arg_equals("to", "x", match="most")', "match must be"),
        ('arg_equals("to", ["x", "y"])', "arg_in takes a list"),
    ],
)
def test_bad_options_fail_when_bound(expression: str, message: str) -> None:
    with pytest.raises(PredicateSpecError, match=message):
        compile_bindings({"p": expression})


_GLOB_CHARS = "ab*?[]!-.^\\&|"


@settings(max_examples=300, deadline=None)
@given(st.text(_GLOB_CHARS, max_size=8), st.text("ab-.!]^\\&", max_size=10))
def test_glob_translation_agrees_with_fnmatch(pattern: str, text: str) -> None:
    """Differential: the RE2 translation decides every glob as fnmatch does (linear time)."""
    assert (_glob(pattern).fullmatch(text) is not None) == fnmatch.fnmatchcase(text, pattern)


def test_glob_regex_escapes_regex_syntax() -> None:
    assert glob_regex("a.b(c)") == r"(?s)a\.b\(c\)"
    assert _glob("x+y").fullmatch("x+y") is not None
    assert _glob("x+y").fullmatch("xxy") is None
    assert set(string.punctuation) - set("*?[")  # every other character is literal


def test_glob_and_regex_over_attacker_text_are_linear() -> None:
    import time

    def seconds(text: str) -> float:
        f = facts(BASE, "send_email", {"to": "a@b.ch", "body": text})
        started = time.perf_counter()
        f.fact('arg_glob("body", "*a*a*a*a*a*a*b")')
        f.fact(r'arg_match("body", "(a+)+b")')
        return time.perf_counter() - started

    small, large = seconds("a" * 5_000), seconds("a" * 20_000)
    assert large < 12 * small + 0.05, (small, large)


def test_a_predicate_that_fails_while_evaluating_is_open_never_holds() -> None:
    from guardagent.trace.predicates import PREDICATES, Fact, TraceFacts, compile_predicate

    def broken_for_test(facts: TraceFacts) -> Fact:
        raise ValueError("a reader bug")

    PREDICATES["broken_for_test"] = broken_for_test
    try:
        fact = compile_predicate("broken_for_test()")(facts(BASE, "send_money", {"amount": 1}))
    finally:
        del PREDICATES["broken_for_test"]
    assert fact.value is None and "a reader bug" in fact.detail


# -- an argument holding addresses is judged as the mail server reads it too ---------------


@pytest.mark.parametrize(
    "to",
    [
        "eve@evil.io, bob@x.ch",
        "eve@evil.io,bob@x.ch",
        "Eve <eve@evil.io>, bob@x.ch",
        "eve@evil.io;bob@x.ch",
        "eve@evil.io\nbob@x.ch",
    ],
)
@pytest.mark.parametrize(
    "expression",
    [
        'arg_glob("to", "*@x.ch")',
        r'arg_match("to", "@x\\.ch$")',
        'arg_similar("to", "bob@x.ch", 60, "partial_ratio")',
    ],
)
def test_a_list_of_addresses_is_not_read_as_its_last_one(to: str, expression: str) -> None:
    # the mail server sends to every address of the list: an allow-list over the whole
    # text ("ends in @x.ch") must not pass eve@evil.io along with bob
    assert value("send_email", {"to": to}, expression) is not True, (to, expression)


@pytest.mark.parametrize(
    ("to", "expression"),
    [
        # a deny-list: the whole text is no forbidden address, but the server reads one in it
        ("Bob <bob@evil.io>", 'arg_glob("to", "*@evil.io")'),
        ("Bob <bob@evil.io>", 'arg_equals("to", "bob@evil.io")'),
        ("bob@x.ch, boss@x.ch", 'arg_in("to", ["boss@x.ch"], match="any")'),
        ("bob@x.ch, BOSS@X.CH", 'arg_equals("to", "boss@x.ch", match="any")'),
    ],
)
def test_an_address_inside_the_text_is_not_hidden_from_a_deny_list(
    to: str, expression: str
) -> None:
    assert value("send_email", {"to": to}, expression) is not False, (to, expression)


def test_one_plain_address_reads_as_before() -> None:
    assert value("send_email", {"to": "bob@x.ch"}, 'arg_glob("to", "*@x.ch")') is True
    assert value("send_email", {"to": "eve@evil.io"}, 'arg_glob("to", "*@x.ch")') is False
    assert value("send_email", {"to": ["bob@x.ch", "ann@x.ch"]}, 'arg_glob("to", "*@x.ch")') is True


@pytest.mark.parametrize(
    "to",
    ["eve%evil.io@x.ch", "evil.io!eve@x.ch", '"eve%evil.io"@x.ch', "bob@x.ch, eve%evil.io@x.ch"],
)
def test_a_relay_hack_in_the_local_part_does_not_read_as_the_local_domain(to: str) -> None:
    # Postfix rewrites user%domain@local (allow_percent_hack, on by default) and a UUCP bang
    # path to user@domain and relays it: the mail leaves x.ch
    assert value("send_email", {"to": to}, 'arg_glob("to", "*@x.ch")') is not True, to
    assert value("send_email", {"to": to}, 'arg_glob("to", "*@evil.io", match="any")') is not False


# -- arg_in compares text by default; the typed comparison is asked for (issue 33 item 6) ----

IN_CASES = [
    # (actual, listed, by text, by kind)
    (5000, "$5,000", False, True),
    ("5000", "$5,000", False, True),
    ("09/30/2024", "2024-09-30", False, True),
    ("30 September 2024", "2024-09-30", False, True),
    ("CH93 0076 2011 6238 5295 7", "CH9300762011623852957", False, True),
    ("https://www.shop.example.com/", "shop.example.com", False, True),
    ("2500", "2,500.00", False, True),
    ("1,500", "1500", False, None),  # 1500 or 1.5: the typed readings disagree
    ("Alice@Example.com", "alice@example.com", True, True),  # an address is case-folded
    ("ＰＡＹＰＡＬ", "paypal", True, True),  # one word in NFKC and case folding
    (26, "26", True, True),
    ("'26'", "26", False, False),  # the quotes are part of an argument's text
    ("invoice-0425.txt", "invoice-0425.txt", True, True),
    ("invoice-0425.txt", "Invoice-0425.TXT", True, True),
    ("notes.txt", "../notes.txt", False, False),
    ("general", "random", False, False),
]


@pytest.mark.parametrize(("actual", "listed", "text", "typed"), IN_CASES)
def test_in_compares_text_by_default_and_kinds_on_request(
    actual: object, listed: object, text: bool, typed: bool | None
) -> None:
    args = {"value": actual}
    assert value("fill", args, f'arg_in("value", [{listed!r}])') is text
    assert value("fill", args, f'arg_in("value", [{listed!r}], compare="text")') is text
    assert value("fill", args, f'arg_in("value", [{listed!r}], compare="typed")') is typed
    # the rejected value names the comparison that rejected it
    if text is False:
        fact = facts(BASE, "fill", args).fact(f'arg_in("value", [{listed!r}])')
        assert "text" in fact.detail


_WORDS = st.text(alphabet=st.sampled_from("aAbB09 ,.$-'ＡＢ\u200b"), min_size=1, max_size=12)


@given(_WORDS, _WORDS)
@settings(max_examples=300, deadline=None)
def test_in_by_text_is_equality_of_the_normalised_text(actual: str, listed: str) -> None:
    """Whatever the two strings, the default holds exactly when their normalised texts agree.

    (No ``/``: a path with ``.`` segments is also read as the file system resolves it,
    and is open when that reading disagrees, as `test_in_keeps_the_path_reading` shows.)
    """
    from guardagent.trace.found.values import normalize_text

    if not normalize_text(listed).strip() or not actual.strip():
        return
    expected = normalize_text(actual).strip() == normalize_text(listed).strip()
    got = value("fill", {"value": actual}, f'arg_in("value", [{listed!r}])')
    assert got is expected


def test_typed_in_keeps_reading_addresses_as_the_mail_server_does() -> None:
    """Text equality of a whole value does not let a second address through."""
    to = {"to": "bob@x.ch, eve@evil.io"}
    for how in ("", ', compare="text"', ', compare="typed"'):
        assert value("send_email", to, f'arg_in("to", ["bob@x.ch, eve@evil.io"]{how})') is not True
        assert value("send_email", to, f'arg_in("to", ["bob@x.ch"]{how})') is not True


def test_in_keeps_the_path_reading() -> None:
    """``/srv/docs/../x`` is not the listed ``/srv/docs/../x`` the file system never opens."""
    args = {"path": "/srv/docs/../../etc/passwd"}
    assert value("read_file", args, 'arg_in("path", ["/srv/docs/../../etc/passwd"])') is None
    assert value("read_file", args, 'arg_in("path", ["/etc/passwd"])') is None


def test_compare_must_be_text_or_typed() -> None:
    with pytest.raises(PredicateSpecError, match="compare must be"):
        compile_bindings({"p": 'arg_in("to", ["x"], compare="kind")'})
