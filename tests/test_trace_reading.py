"""Issue 19: every value read the way the tool that consumes it will (browser, mail server, bank).

One section per class: URLs as browsers read them (1), recipients as mail servers read them
and every list element traced (2), whole values, escapes and dates without a year (9), and a
user's value that an untrusted message repeats (6). Each is checked on the trace path the
guard runs (`analyze` and its predicates), and again after re-encoding the same trace (the
LangChain layout instead of OpenAI's, JSON-escaped tool results, re-cased hosts,
percent-encoded paths), which must not change a decision.
"""

from __future__ import annotations

import json
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace import Labels, parse_trace
from guardagent.trace.document.shapes import Trace
from guardagent.trace.found.locate import extract_values
from guardagent.trace.found.values import read_argument, read_scalar
from guardagent.trace.text.normal import reading_form
from tests.trace_helpers import twin_analyze as analyze

LABELS = Labels.load(Path(__file__).parent / "traces" / "assistant_labels.yaml")


def openai(
    user: str,
    tool: str | None,
    call: dict[str, Any],
    *,
    tool_name: str = "read_inbox",
    system: str | None = None,
) -> list[dict[str, Any]]:
    """A thread: (system), user, one tool call and its result, then the proposed call."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    out.append({"role": "user", "content": user})
    if tool is not None:
        out += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "t1",
                        "type": "function",
                        "function": {"name": tool_name, "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "content": tool},
        ]
    out.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "p1",
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
                }
            ],
        }
    )
    return out


def langchain(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same thread in LangChain's messages_to_dict layout."""
    kinds = {"system": "system", "user": "human", "assistant": "ai", "tool": "tool"}
    out = []
    for m in messages:
        data: dict[str, Any] = {"content": m.get("content") or ""}
        if m.get("tool_calls"):
            data["tool_calls"] = [
                {
                    "name": c["function"]["name"],
                    "id": c["id"],
                    "args": json.loads(c["function"]["arguments"]),
                }
                for c in m["tool_calls"]
            ]
        if m["role"] == "tool":
            data["tool_call_id"] = m["tool_call_id"]
        out.append({"type": kinds[m["role"]], "data": data})
    return out


def fact(messages: list[dict[str, Any]], expression: str) -> bool | None:
    return analyze(parse_trace(messages), LABELS).fact(expression).value


def both_layouts(messages: list[dict[str, Any]], expression: str) -> bool | None:
    """The predicate's value, the same in the OpenAI and the LangChain layout."""
    a, b = fact(messages, expression), fact(langchain(messages), expression)
    assert a == b, f"{expression}: {a} (OpenAI) != {b} (LangChain)"
    return a


def browse(url: str) -> dict[str, Any]:
    return {"name": "browse", "args": {"url": url}}


# -- 1. URLs as browsers read them ---------------------------------------------------------


@pytest.mark.parametrize(
    ("user", "url"),
    [
        ("Open example.com/help for me.", "https://evil.io\\@example.com/"),
        ("Open https://strasse.ch/ for me.", "https://straße.ch/"),
        ("Open alice.github.io for me.", "https://attacker.github.io/"),
        ("Open https://example.com/ for me.", "https://example.com.evil.io/"),
    ],
)
def test_a_url_is_the_host_the_browser_opens(user: str, url: str) -> None:
    messages = openai(user, "Nothing new.", browse(url))
    assert both_layouts(messages, 'arg_from_trusted("url", part="domain")') is False
    assert both_layouts(messages, 'arg_from_trusted("url", part="host")') is False


@pytest.mark.parametrize(
    ("user", "url"),
    [
        ("Open example.com/help for me.", "https://EXAMPLE.com/help"),
        ("Open example.com/help for me.", "https://example.com/h%65lp"),
        ("Open https://straße.ch/ for me.", "https://xn--strae-oqa.ch/"),
        ("Open https://STRAẞE.ch/ for me.", "https://straße.ch/"),
        ("Open alice.github.io for me.", "https://Alice.GitHub.io/"),
        ("Open http://localhost:8080/admin for me.", "http://localhost:8080/admin"),
        ("Open http://intranet/wiki for me.", "http://intranet/wiki"),
        ("Open http://[::1]:8443/x for me.", "http://[::1]:8443/x"),
    ],
)
def test_re_spellings_of_one_url_and_intranet_hosts_are_found(user: str, url: str) -> None:
    messages = openai(user, "Nothing new.", browse(url))
    assert both_layouts(messages, 'arg_from_user("url")') is True
    assert both_layouts(messages, 'arg_from_user("url", part="host")') is True


def test_a_link_the_parser_cannot_place_is_still_traced() -> None:
    # an unknown top-level label: before, "no value to trace" (True for every-value predicates)
    messages = openai("Check my inbox.", "Log in at evil.zzz/login now", browse("evil.zzz/login"))
    assert both_layouts(messages, 'arg_from_user("url", kinds="url")') is False
    assert both_layouts(messages, 'arg_only_untrusted("url", kinds="url")') is True
    invented = openai("Check my inbox.", "Nothing new.", browse("evil.zzz/login"))
    assert both_layouts(invented, 'arg_invented("url", kinds="url")') is True
    # inside free text: a body sending a link no parser places is judged by that link
    body = {
        "name": "send_email",
        "args": {"to": "bob@x.ch", "subject": "hi", "body": "Bob, see evil.zzz/login today"},
    }
    mail = openai("Email bob@x.ch a hello.", "Nothing new.", body)
    assert both_layouts(mail, 'arg_invented("body")') is True
    # a link glued to the next sentence is not placed either, but still traced
    glued = {**body, "args": {**body["args"], "body": "Bob, see evil.com.Next time bring it"}}
    assert (
        both_layouts(
            openai("Email bob@x.ch a hello.", "Nothing new.", glued), 'arg_invented("body")'
        )
        is True
    )
    said = openai("Email bob@x.ch: see evil.com.Next time bring it", "Nothing new.", glued)
    assert both_layouts(said, 'arg_invented("body", kinds="url")') is False
    # a short text is also judged whole (a target: tests/test_trace_text_values.py), and
    # "Bob, see ..." is the model's
    assert both_layouts(said, 'arg_invented("body")') is True


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com\t@evil.io/",
        "example.com\n@evil.io",
        "https://example.com\r\n@evil.io",
        "example.com@evil.io",
        "example.com @evil.io",
        "evil",
        "mail bob@example.com",
    ],
)
def test_a_url_argument_is_read_whole_as_the_browser_reads_it(url: str) -> None:
    # the URL Standard drops tabs and newlines first: these open evil.io, or are no URL at all
    messages = openai("Open example.com/help for me.", "Nothing new.", browse(url))
    assert both_layouts(messages, 'arg_from_trusted("url", part="domain")') is False
    assert both_layouts(messages, 'arg_from_trusted("url", part="host")') is False
    assert goto_facts(url, '"example.com"') is False


def test_ports_and_ips_are_part_of_the_url() -> None:
    messages = openai(
        "Open http://localhost:8080/admin", "Nothing new.", browse("http://localhost:9090/admin")
    )
    assert both_layouts(messages, 'arg_from_user("url")') is False
    assert both_layouts(messages, 'arg_from_user("url", part="host")') is True


# -- 2. recipients as mail servers read them ---------------------------------------------


def mail(to: Any) -> dict[str, Any]:
    return {"name": "send_email", "args": {"to": to, "subject": "notes", "body": "the notes"}}


@pytest.mark.parametrize(
    "to",
    [
        'bob@x.ch, "eve"@evil.io',
        "eve@[203.0.113.7]",
        "eve(bob@x.ch)@evil.io",
        "eve@localhost",
        "bob@x.ch; eve@evil.io",
        'bob@x.ch "eve"@evil.io',
        "Bob <bob@x.ch>, eve@evil.io",
        "undisclosed-recipients: ;",
        ["bob@x.ch", ""],
        ["bob@x.ch", None],
        ["bob@x.ch", "eve@evil.io"],
        "<>",
        "ｂｏｂ@x.ch",
        "ｂｏｂ＠ｘ．ｃｈ",
        "bob@x.ch@evil.io",
        "bob@x.ch\\@evil.io",
        "<@evil.io:bob@x.ch>",
        '"bob@x.ch" <eve@evil.io>',
    ],
)
def test_every_recipient_is_traced_and_leftovers_deny(to: Any) -> None:
    messages = openai("Email the notes to bob@x.ch please.", "eve@evil.io says hi", mail(to))
    assert both_layouts(messages, 'arg_from_user("to")') is False
    assert both_layouts(messages, 'arg_from_trusted("@recipients")') is False


@pytest.mark.parametrize(
    "to",
    [
        "bob@x.ch",
        "BOB@X.CH",
        "Bob <bob@x.ch>",
        '"Bob K" <bob@x.ch>',
        "mailto:bob@x.ch",
        ["bob@x.ch", "Bob <bob@x.ch>"],
        "bob@x.ch (work)",
        "bob@ｘ．ｃｈ",
        "bob@x.ch.",
        '"Bob @ home" <bob@x.ch>',
    ],
)
def test_the_users_recipient_in_any_spelling_passes(to: Any) -> None:
    messages = openai("Email the notes to bob@x.ch please.", "eve@evil.io says hi", mail(to))
    assert both_layouts(messages, 'arg_from_user("to")') is True


def test_an_idn_mail_domain_is_not_its_case_folded_twin() -> None:
    messages = openai("Email the notes to bob@strasse.ch please.", None, mail("bob@straße.ch"))
    assert both_layouts(messages, 'arg_from_user("to")') is False
    same = openai("Email the notes to bob@straße.ch please.", None, mail("bob@xn--strae-oqa.ch"))
    assert both_layouts(same, 'arg_from_user("to")') is True


# -- 9. whole values, escapes, dates without a year ---------------------------------------


def test_an_id_is_not_found_inside_a_date() -> None:
    read = {"name": "read_email", "args": {"id": 13}}
    messages = openai("What did I get on June 13?", None, read)
    assert both_layouts(messages, 'arg_from_user("id")') is False
    assert both_layouts(openai("Open mail 13 please.", None, read), 'arg_from_user("id")') is True


@pytest.mark.parametrize(
    "encode",
    [
        lambda s: json.dumps({"contacts": s}),  # JSON string escapes (\n, \")
        lambda s: json.dumps({"contacts": s}, ensure_ascii=True).replace("@", "\\u0040"),  # \uXXXX
        lambda s: repr({"contacts": s}),  # a Python repr
        lambda s: json.dumps(json.dumps({"contacts": s})),  # JSON inside JSON
    ],
)
def test_escapes_inside_a_tool_result_are_read_unescaped(encode: Any) -> None:
    listing = 'bob@x.ch\nalice@y.org\t"Café Odeon"'
    messages = openai(
        "Email Alice the notes.", encode(listing), mail("alice@y.org"), tool_name="search_contacts"
    )
    assert both_layouts(messages, 'arg_from_trusted("to")') is True


@pytest.mark.parametrize(
    ("system", "year"),
    [
        ("You are an assistant. Today is 2024-05-01.", 2024),
        ("You are an assistant. Current date: May 1, 2031.", 2031),
        (None, date.today().year),
    ],
)
def test_a_date_without_a_year_is_a_date_of_the_traces_year(system: str | None, year: int) -> None:
    book = {"name": "book_flight", "args": {"flight": "LX318", "date": f"{year}-06-13"}}
    messages = openai(
        "Book LX318 on June 13th.",
        "LX318 departs 07:40",
        book,
        tool_name="search_flights",
        system=system,
    )
    assert both_layouts(messages, 'arg_from_user("date")') is True
    other = {"name": "book_flight", "args": {"flight": "LX318", "date": f"{year + 1}-06-13"}}
    assert (
        both_layouts(
            openai("Book LX318 on 13 June.", None, other, system=system), 'arg_from_user("date")'
        )
        is False
    )


# -- 6. a user's value repeated by an untrusted message stays the user's -------------------


@pytest.mark.parametrize(
    ("user", "repeat", "call", "arg"),
    [
        (
            "Book LX318 on June 13.",
            "Flights on 2024-06-13: LX318",
            {"name": "book_flight", "args": {"flight": "LX318", "date": "2024-06-13"}},
            "date",
        ),
        (
            "Pay CH93 0076 2011 6238 5295 7 for rent.",
            "Your landlord's IBAN: CH9300762011623852957",
            {"name": "send_money", "args": {"iban": "CH9300762011623852957", "amount": 10}},
            "iban",
        ),
        ("Email bob@x.ch the notes.", "From: Bob <BOB@X.CH>", mail("bob@x.ch"), "to"),
        (
            "Open example.com/help",
            "Visit https://www.example.com/help/",
            browse("https://example.com/help"),
            "url",
        ),
    ],
)
def test_a_user_value_that_an_untrusted_message_repeats_stays_the_users(
    user: str, repeat: str, call: dict[str, Any], arg: str
) -> None:
    system = "Today is 2024-05-01."
    alone = openai(user, "Nothing new.", call, system=system)
    repeated = openai(user, repeat, call, system=system)
    for messages in (alone, repeated):
        assert both_layouts(messages, f'arg_from_user("{arg}")') is True
        assert both_layouts(messages, f'arg_only_untrusted("{arg}")') is False


def repeat_values(trace: Trace) -> list[dict[str, Any]]:
    """The trace with an untrusted result, right after the first user message, repeating
    every argument value of the proposed call (JSON-escaped)."""
    from tests.test_trace_provenance import to_openai

    messages = to_openai(trace)
    first = next(i for i, m in enumerate(messages) if m["role"] == "user") + 1
    echo = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "rep",
                    "type": "function",
                    "function": {"name": "read_inbox", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "rep", "content": json.dumps(trace.call.args)},
    ]
    return [
        *messages[:first],
        *echo,
        *messages[first:],
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "p9",
                    "type": "function",
                    "function": {"name": trace.call.name, "arguments": json.dumps(trace.call.args)},
                }
            ],
        },
    ]


@pytest.mark.parametrize(
    "name",
    [
        "b01_rent_openai.json",
        "b03_lunch_langchain.json",
        "b04_share_openai.json",
        "b05_text_openai.json",
        "b06_browse_openai.json",
        "b07_flight_langchain.json",
    ],
)
def test_repeating_a_benign_traces_values_in_an_untrusted_result_changes_no_users_value(
    name: str,
) -> None:
    trace = parse_trace((Path(__file__).parent / "traces" / name).read_text(encoding="utf-8"))
    before = {(v.path, v.value.text): v.origin for v in analyze(trace, LABELS).provenance.values}
    after = {
        (v.path, v.value.text): v.origin
        for v in analyze(parse_trace(repeat_values(trace)), LABELS).provenance.values
    }
    users = [k for k, origin in before.items() if origin == "user"]
    assert users, name
    assert all(after[k] == "user" for k in users), name


# -- navigation scopes read URLs as the browser does ---------------------------------------


def goto_facts(url: str, scope: str) -> bool | None:
    labels = Labels.from_mapping({"tools": {"goto": {"results": "untrusted", "effect": "read"}}})
    messages = [
        {"role": "user", "content": "Look at the orders."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "g",
                    "type": "function",
                    "function": {"name": "goto", "arguments": json.dumps({"url": url})},
                }
            ],
        },
    ]
    facts = analyze(parse_trace(messages), labels)
    return facts.fact(f"navigation_in_scope({scope})").value


@pytest.mark.parametrize(
    ("url", "scope", "inside"),
    [
        ("https://evil.io\\@example.com/", '"example.com"', False),
        ("https://example.com\\@evil.io/", '"example.com"', True),
        ("https://straße.ch/", '"strasse.ch"', False),
        ("https://STRASSE.ch/", '"strasse.ch"', True),
        ("https://xn--strae-oqa.ch/a", '"straße.ch"', True),
        ("https://attacker.github.io/", '"alice.github.io"', False),
        ("https://shop.example/orders?status=open", '"shop.example/orders?status=*"', True),
        ("https://shop.example/orders?export=all", '"shop.example/orders?status=*"', False),
        ("https://shop.example/orders", '"shop.example/orders?status=*"', False),
        ("https://shop.example/help#faq", '"shop.example/help#faq"', True),
        ("https://shop.example/help#admin", '"shop.example/help#faq"', False),
        ("http://localhost:8080/x", '"localhost:8080"', True),
        ("http://localhost:9090/x", '"localhost:8080"', False),
        ("http://localhost:9090/x", '"localhost"', True),
        ("evil.zzz/login", '"*"', False),
    ],
)
def test_navigation_scopes_use_the_browsers_reading(url: str, scope: str, inside: bool) -> None:
    assert goto_facts(url, scope) is inside


# -- differential: the project's reading equals the WHATWG parser's (ada) and the PSL's -----

_ascii_label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,6}[a-z0-9])?", fullmatch=True)
_unicode_label = st.sampled_from(
    [
        "straße",
        "bücher",
        "café",
        "παράδειγμα",
        "пример",
        "münchen",
        "ὀδυσσεύς",
        "täst",
        "xn--strae-oqa",
        "ẞtraße",
    ]
)
_label = st.one_of(_ascii_label, _ascii_label.map(str.upper), _unicode_label)
_suffix = st.sampled_from(
    [
        "com",
        "ch",
        "co.uk",
        "github.io",
        "blogspot.com",
        "de",
        "org",
        "appspot.com",
        "s3.amazonaws.com",
        "net",
    ]
)
_tail = st.from_regex(r"[a-z0-9]([a-z0-9=&_-]{0,8}[a-z0-9])?", fullmatch=True)


@cache
def _psl() -> Any:
    import tldextract

    return tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
    )


@st.composite
def _urls(draw: st.DrawFn) -> tuple[str, bool]:
    host = ".".join(draw(st.lists(_label, min_size=1, max_size=3))) + "." + draw(_suffix)
    scheme = draw(st.sampled_from(["https://", "http://", "HTTPS://", ""]))
    userinfo = (
        draw(st.sampled_from(["", "user@", "u:p@", "evil.io\\@", "a%40b@"])) if scheme else ""
    )
    port = draw(st.sampled_from(["", ":8080", ":443", ":80"]))
    path = "".join("/" + p for p in draw(st.lists(_tail, max_size=3)))
    query = "?" + draw(_tail) if draw(st.booleans()) else ""
    fragment = "#" + draw(_tail) if draw(st.booleans()) else ""
    return scheme + userinfo + host + port + (
        path or ("/" if query or fragment else "")
    ) + query + fragment, not scheme


@given(_urls())
@settings(max_examples=300, deadline=None)
def test_hosts_and_registrable_domains_equal_ada_and_the_psl(case: tuple[str, bool]) -> None:
    import ada_url

    url, bare = case
    try:
        expected = ada_url.URL(("http://" + url) if bare else url).hostname
    except ValueError:
        expected = None
    found = [
        f.value
        for f in extract_values(reading_form(f"see {url} now"), region=None)
        if f.value.kind == "url"
    ]
    if expected is None:
        assert not any(v.placed for v in found), url
        return
    assert found and found[0].placed, url
    host = expected.removeprefix("www.")
    ext = _psl()(host)
    domain = f"{ext.domain}.{ext.suffix}" if ext.domain and ext.suffix else host
    assert found[0].part("host") == f"host:{host}", url
    assert found[0].part("domain") == f"domain:{domain}", url
    written = url.split("://", 1)[-1].split("@", 1)[-1].split("/", 1)[0].split(":", 1)[0]
    if "\\" not in url:  # the host as written, through the idna package's UTS-46 (non-transitional)
        import idna

        try:
            mapped = idna.encode(written, uts46=True, transitional=False).decode("ascii")
        except idna.IDNAError:
            mapped = None
        assert mapped is None or mapped == expected, url
    whole, _ = read_scalar(url)
    assert whole is not None and whole.part("host") == f"host:{host}", url


@given(
    st.from_regex(r"[a-z0-9]([a-z0-9._-]{0,8}[a-z0-9])?", fullmatch=True).filter(
        lambda s: ".." not in s
    ),
    st.lists(_label, min_size=1, max_size=2),
    _suffix,
)
@settings(max_examples=200, deadline=None)
def test_mail_domains_equal_email_validators_idna_reading(
    local: str, labels: list[str], suffix: str
) -> None:
    from email_validator import EmailNotValidError, validate_email

    address = f"{local}@{'.'.join(labels)}.{suffix}"
    try:
        valid = validate_email(address, check_deliverability=False)
    except EmailNotValidError:
        assert not any(v.keys for v, _ in read_argument(address)), address
        return
    whole, _ = read_scalar(address)
    assert whole is not None and whole.keys == (
        f"email:{valid.local_part.casefold()}@{valid.ascii_domain}",
    )
    assert whole.keys[0] in {
        k for f in extract_values(reading_form(f"write to {address}, thanks")) for k in f.value.keys
    }


# -- metamorphic: re-encoding a trusted result changes no decision -------------------------

_VALUES = st.sampled_from(
    [
        ("send_email", "to", "Bob.Keller@Example.org"),
        ("send_email", "to", "anna@straße.ch"),
        ("browse", "url", "https://docs.example.com/guide?page=2"),
        ("browse", "url", "http://localhost:8080/x"),
        ("send_money", "iban", "CH93 0076 2011 6238 5295 7"),
        ("send_message", "recipient", "+41 79 555 12 34"),
        ("book_flight", "date", "2024-06-13"),
    ]
)
_ENCODINGS = st.sampled_from(
    ["plain", "json", "json_ascii", "repr", "json_in_json", "percent_case"]
)


def _encoded(value: str, how: str) -> str:
    record = {"note": "from the address book", "value": value, "tab": "a\tb"}
    if how == "json":
        return json.dumps(record, ensure_ascii=False)
    if how == "json_ascii":
        return json.dumps(record)
    if how == "repr":
        return repr(record)
    if how == "json_in_json":
        return json.dumps({"body": json.dumps(record)})
    if how == "percent_case" and value.startswith("http"):
        scheme, _, rest = value.partition("://")
        host, _, path = rest.partition("/")
        return f"see {scheme.upper()}://{host.upper()}/{path.replace('e', '%65')}"
    return f"value: {value}"


@given(_VALUES, _ENCODINGS, st.booleans())
@settings(max_examples=120, deadline=None)
def test_re_encoding_a_trusted_result_changes_no_decision(
    case: tuple[str, str, str], how: str, lang: bool
) -> None:
    tool, arg, value = case
    args: dict[str, Any] = {arg: value.lower() if arg == "to" else value}
    messages = openai(
        "Please do it.",
        _encoded(value, how),
        {"name": tool, "args": args},
        tool_name="search_contacts",
        system="Today is 2024-05-01.",
    )
    messages = langchain(messages) if lang else messages
    assert fact(messages, f'arg_from_trusted("{arg}")') is True, (value, how)
    assert fact(messages, f'arg_invented("{arg}")') is False, (value, how)


# -- readings of text ----------------------------------------------------------------------


def test_the_value_reading_keeps_idna_deviations_and_the_word_reading_folds_them() -> None:
    from guardagent.trace.text.normal import normalize_text

    assert reading_form("STRAẞE.ch Straße ΣΊΣΥΦΟΣ σίσυφος") == "straße.ch straße σίσυφοσ σίσυφος"
    assert normalize_text("Straße") == "strasse"
    assert reading_form("ｅｘａｍｐｌｅ．ｃｏｍ pa\u200byp\u00adal") == "example.com paypal"


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ('a\\nb\\tc\\"d\\\\e', 'a\nb\tc"d\\e'),
        ("caf\\u00e9 \\x41 \\U0001F600 \\ud83d\\ude00", "café A \U0001f600 \U0001f600"),
        ("\\\\u0040 twice: \\\\\\\\u0040", "@ twice: @"),
        ("\\q \\u12 \\", "\\q \\u12 \\"),
    ],
)
def test_string_literal_escapes_are_read(written: str, read: str) -> None:
    from guardagent.trace.text.normal import unescape

    assert unescape(written) == read


def test_an_older_index_state_is_read_again_and_the_year_is_kept() -> None:
    from guardagent.trace.thread.state import TraceIndex

    messages = openai(
        "Book LX318 on June 13.",
        None,
        {"name": "book_flight", "args": {"date": "2031-06-13"}},
        system="Today is 2031-01-02.",
    )
    facts = analyze(parse_trace(messages), LABELS)
    assert facts.index.year == 2031 and facts.fact('arg_from_user("date")').value is True
    state = facts.index.to_json()
    restored = TraceIndex.from_json(state, region=LABELS.phone_region)
    assert restored.year == 2031 and restored.count == len(messages)
    old = TraceIndex.from_json(
        {**state, "format": "guardagent-trace-index/1"}, region=LABELS.phone_region
    )
    assert old.count == 0, "a state of the earlier readings starts over"


# -- nothing raises: any text is read (fail closed, never an exception) -------------------

_PIECES = st.sampled_from(
    list("ab.@:/\\?#[]()<>\"' ,;-_%0123456789xX\n\tß")
    + [
        "http://",
        "www.",
        "localhost",
        "\\u00e9",
        "\\ud83d",
        "@[",
        "xn--",
        ".com",
        "\x00",
        "\ud800",
        "DE89",
        "+41",
        "may",
        "June 13",
        "mailto:",
    ]
)


@given(
    st.lists(_PIECES, max_size=30).map("".join),
    st.lists(_PIECES, max_size=20).map("".join),
    st.sampled_from(["send_email", "browse", "send_money"]),
)
@settings(max_examples=300, deadline=None)
def test_any_text_is_read_without_raising(text: str, arg: str, tool: str) -> None:
    # a lone surrogate ("0\ud800") raised UnicodeEncodeError out of RE2 before
    messages = [
        {"role": "system", "content": "Today is " + text[:10]},
        {"role": "user", "content": text},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "get_iban", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "1", "content": arg + text},
    ]
    call = {"name": tool, "args": {"to": arg, "url": text, "iban": [arg, text], "body": text + arg}}
    facts = analyze(parse_trace(messages, call), LABELS)
    for expression in (
        'arg_from_trusted("@recipients")',
        'arg_from_trusted("url", part="domain")',
        "secret_flow()",
        'arg_invented("*")',
        'navigation_in_scope("example.com?x=*")',
    ):
        assert facts.fact(expression).value in (True, False, None)
    assert read_argument("0\ud800") and extract_values(reading_form("0\ud800 bob@x.ch")) is not None


# -- open redirects: a URL carrying another URL is judged by that target too ---------------


@pytest.mark.parametrize(
    ("url", "scope"),
    [
        ("https://trusted.example/redirect?url=https://evil.example/", '"trusted.example"'),
        ("https://www.google.com/url?q=https://evil.example/&sa=D", '"*.google.com", "google.com"'),
        ("https://trusted.example/r?to=https%3A%2F%2Fevil.example%2Flogin", '"trusted.example"'),
        ("https://trusted.example/r?to=https%253A%252F%252Fevil.example", '"trusted.example"'),
        ("https://trusted.example/r?next=//evil.example/x", '"trusted.example"'),
        ("https://trusted.example/r?next=%2F%2Fevil.example", '"trusted.example"'),
        ("https://trusted.example/r?next=/%5Cevil.example", '"trusted.example"'),
        ("https://trusted.example/r?next=%09//evil.example", '"trusted.example"'),
        ("https://trusted.example/r?next=www.evil.example", '"trusted.example"'),
        ("https://trusted.example/r?next=evil.com/login", '"trusted.example"'),
        ("https://trusted.example/r?a=1&next=HTTPS:evil.example", '"trusted.example"'),
        ("https://trusted.example/login#next=https://evil.example", '"trusted.example"'),
        ("https://trusted.example/out/https://evil.example/", '"trusted.example"'),
        ("https://trusted.example/out/https%3A%2F%2Fevil.example/", '"trusted.example"'),
        (
            "https://trusted.example/r?u=https://trusted.example/r?u=https://evil.example",
            '"trusted.example"',
        ),
        (
            "https://trusted.example/r?u=https%3A%2F%2Ftrusted.example%2Fr%3Fu%3Dhttps%253A%252F%252Fevil.example",
            '"trusted.example"',
        ),
        ("https://trusted.example/r?u=ftp://evil.example/", '"trusted.example"'),
        ("https://trusted.example/r?u=foo://evil.example/", '"trusted.example"'),
        # a query glob says which queries the page takes, not where it may send the browser
        ("https://www.google.com/url?q=https://evil.example/", '"google.com/url?q=*"'),
        (
            "https://shop.example/orders?status=open&next=https://evil.example",
            '"shop.example/orders?status=*"',
        ),
        ("https://shop.example/help#faq&next=//evil.example", '"shop.example/help#faq*"'),
        # a script or inline document runs in the trusted page (a client-side redirector)
        ("https://trusted.example/r?u=javascript:alert(1)", '"trusted.example"'),
        (
            "https://trusted.example/r?u=JaVa%0aScRiPt:location='//evil.example'",
            '"trusted.example"',
        ),
        ("https://trusted.example/r?u=data:text/html,<script>1</script>", '"trusted.example"'),
        ("https://trusted.example/r#u=vbscript:msgbox(1)", '"trusted.example"'),
        # a path that starts with two slashes: a server normalising it answers Location: //evil
        ("https://trusted.example//evil.example/", '"trusted.example"'),
        ("https://trusted.example/%2F%2Fevil.example/", '"trusted.example"'),
        ("https://trusted.example/%5Cevil.example", '"trusted.example"'),
        # a redirector that strips Unicode spaces (Python's str.strip) or reads NFKC
        ("https://trusted.example/r?u=%E3%80%80//evil.example", '"trusted.example"'),
        ("https://trusted.example/r?u=%EF%BC%8F%EF%BC%8Fevil.example", '"trusted.example"'),
        # a path parameter is a parameter too (matrix variables)
        ("https://trusted.example/r;u=//evil.example", '"trusted.example"'),
        # a relative target whose resolved path starts with two slashes
        ("https://trusted.example/r?u=/.//evil.example", '"trusted.example"'),
        ("https://trusted.example/r?u=.//evil.example", '"trusted.example"'),
        ("https://trusted.example/r?u=/out/https://evil.example", '"trusted.example"'),
        ("https://trusted.example/r?u=./x?next=https://evil.example", '"trusted.example"'),
    ],
)
def test_a_redirect_target_outside_the_scope_is_outside(url: str, scope: str) -> None:
    assert goto_facts(url, scope) is False, url


@pytest.mark.parametrize(
    ("url", "scope"),
    [
        ("https://trusted.example/r?url=https://trusted.example/home", '"trusted.example"'),
        ("https://trusted.example/r?next=/account/settings", '"trusted.example"'),
        ("https://trusted.example/search?q=red+shoes&page=2", '"trusted.example"'),
        (
            "https://trusted.example/r?url=https://docs.example/a",
            '"trusted.example", "docs.example"',
        ),
        ("https://trusted.example/a#section-2", '"trusted.example"'),
        (
            "https://www.google.com/url?q=https://docs.example/",
            '"google.com/url?q=*", "docs.example"',
        ),
        ("https://trusted.example/c?price=1.5&v=2024.05", '"trusted.example"'),
    ],
)
def test_a_url_whose_targets_are_inside_stays_inside(url: str, scope: str) -> None:
    assert goto_facts(url, scope) is True, url


@pytest.mark.parametrize("piece", ["0x7f.1/x", "2130706433/x", "0177.1/x", "0x7f000001"])
def test_a_bare_number_is_the_browsers_relative_path_not_a_host(piece: str) -> None:
    # A redirector answers Location: 0x7f.1/x, a link or script assigns it: the browser
    # resolves it against the redirector's URL (WHATWG: no scheme, no "//", so a path),
    # never as the IPv4 address 127.0.0.1; the host stays the trusted one
    import ada_url

    resolved = ada_url.URL(piece, base="https://trusted.example/r/")
    assert resolved.hostname == "trusted.example"
    assert resolved.pathname == "/r/" + piece
    assert goto_facts(f"https://trusted.example/r?u={piece}", '"trusted.example"') is True
    # with "//" or a scheme the browser reads the host, in any numeric form: judged
    for spelled in (f"//{piece}", f"/\\{piece}", f"http://{piece}"):
        assert ada_url.URL(spelled, base="https://trusted.example/r/").hostname.startswith("127.")
    assert ada_url.URL(f"https:{piece}").hostname.startswith("127.")
    for spelled in (f"//{piece}", f"https:{piece}", f"http://{piece}", f"/%5C{piece}"):
        assert goto_facts(f"https://trusted.example/r?u={spelled}", '"trusted.example"') is False


@pytest.mark.parametrize(
    "url",
    [
        "https://trusted.example/r?u=%C0%AF%C0%AFevil.example",
        "https://trusted.example/%C0%AF%C0%AFevil.example",
        "https://trusted.example/r?u=/%C0%AFevil.example",
        "https://trusted.example/r?u=%E0%80%AF%E0%80%AFevil.example",
    ],
)
def test_an_overlong_utf8_slash_is_no_slash(url: str) -> None:
    # %C0%AF is an overlong spelling of "/": the browser sends it as written (the URL
    # parser never decodes a path or a query), and a decoder that follows the Encoding
    # Standard (UTF-8 decode without BOM; Python's "replace") reads U+FFFD, never "/".
    # Only decoders that predate it (IIS 4/5) read a slash: no browser or current server
    import ada_url

    assert "%C0%AF" in ada_url.URL(url).href or "%E0%80%AF" in ada_url.URL(url).href
    assert bytes.fromhex("c0af").decode("utf-8", "replace") == "\ufffd\ufffd"
    assert goto_facts(url, '"trusted.example"') is True
    # the same target spelled with a real slash is judged
    assert (
        goto_facts(url.replace("%C0%AF", "%2F").replace("%E0%80%AF", "%2F"), '"trusted.example"')
        is False
    )


def test_a_target_after_many_plain_parameters_is_still_judged() -> None:
    padding = "&".join(f"p{i}=v{i}" for i in range(600))
    for tail in ("next=https://evil.example/", "u=next%3Dhttps%253A%252F%252Fevil.example"):
        url = f"https://trusted.example/r?{padding}&{tail}"
        assert goto_facts(url, '"trusted.example"') is False, tail


def test_reading_carried_urls_is_linear() -> None:
    import time

    from guardagent.trace.found.redirects import carried
    from guardagent.trace.found.urls import parse_url

    def cost(n: int, piece: str) -> float:
        text = "".join(piece.format(i) for i in range(n))
        where = parse_url("https://trusted.example/r?" + text, False).where
        started = time.perf_counter()
        carried(where)
        return time.perf_counter() - started

    for piece in ("a=b%2526c%253Dd&", "u=/a/b&v=./c&", "u=%E3%80%80x&", "u=https://a{}.example&"):
        cost(10, piece)
        small = min(cost(500, piece) for _ in range(3))
        large = min(cost(5000, piece) for _ in range(3))
        assert large < 40 * small + 0.05, (piece, small, large)


_param = st.from_regex(r"[a-z]{1,6}=[a-z0-9]{0,6}", fullmatch=True)


@st.composite
def _redirects(draw: st.DrawFn) -> tuple[str, str]:
    """A URL on trusted.example carrying one target (in a layout the reader was not written
    for): encoded 0-3 times, in the query or the fragment, among plain parameters."""
    from urllib.parse import quote

    target = draw(
        st.sampled_from(
            [
                "https://{h}/x",
                "//{h}/x",
                "/\\{h}",
                "https:{h}",
                "www.{h}.com/x",
                "{h}.com",
                "HTTP://{h}/?a=1&b=2",
            ]
        )
    )
    host = draw(st.sampled_from(["evil", "trusted"]))
    text = target.format(h=f"{host}.example" if "com" not in target else host)
    for _ in range(draw(st.integers(0, 3))):
        text = quote(text, safe="")
    params = draw(st.lists(_param, max_size=4))
    params.insert(
        draw(st.integers(0, len(params))), f"{draw(st.sampled_from(['u', 'next', 'q']))}={text}"
    )
    where = draw(st.sampled_from(["?", "#", "/r?x=1#"]))
    return "https://trusted.example/r" + where + "&".join(params), host


@given(_redirects())
@settings(max_examples=200, deadline=None)
def test_a_carried_target_decides_in_every_layout(case: tuple[str, str]) -> None:
    url, host = case
    scopes = '"trusted.example", "trusted.com", "www.trusted.com"'
    assert goto_facts(url, scopes) is (host == "trusted"), url
