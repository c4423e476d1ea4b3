"""The fast trace reader finds exactly what the old one found (differential, with hypothesis).

The old reader (one RE2 pass per kind, every boundary read in full) is frozen in
``tests/reference``. Texts are generated from fragments of every kind, glued with
separators that make kinds overlap (an address inside a URL, an IBAN's digits read as a
phone number, a date's day as an amount, a link glued to the next sentence, a value split
across two messages), in ASCII and not: the values found (spans, keys, parts, tokens) and
a thread's whole index (postings, written keys, unindexed messages, size) must be equal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardagent.trace import Labels, TraceIndex, parse_trace
from guardagent.trace.found.locate import extract_values
from guardagent.trace.text.normal import reading_form
from guardagent.trace.thread.state import text_keys
from tests.reference import old_locate
from tests.reference.old_index import OldIndex, old_text_keys
from tests.traces.synthetic import proposed, thread

TRACES = Path(__file__).parent / "traces"
LABELS = Labels.load(TRACES / "assistant_labels.yaml")

FRAGMENTS = [
    # addresses, handles, leftovers
    "bob@x.org",
    "a.b@example.co.uk",
    "x@y",
    "@alice",
    "bob@x.ch@evil.io",
    "'bob@x.org'",
    "eve@localhost",
    "ｂｏｂ＠x.org",
    "straße@straße.ch",
    "a@b.c.d",
    "mailto:bob@x.org",
    "@",
    "a@",
    # links
    "https://example.com/pay?x=1#f",
    "http://a.b",
    "ftp://files.example.net/x",
    "ws://localhost:80/",
    "https://evil.io\\@example.com/",
    "https://www.Example.com/pay/",
    "http://[::1]:8080/a",
    "www.example.com",
    "example.com/pay",
    "localhost:8080/x",
    "alice.github.io",
    "3.14",
    "1.2.3.4",
    "a.b",
    "mibebe.from",
    "x.example.org.please",
    "http://ex%41mple.com/%2e%2e/",
    "(see https://a.example.com/x)",
    "straße.ch/pfad",
    # IBANs, whole and in pieces
    "DE89 3704 0044 0532 0130 00",
    "de89370400440532013000",
    "GB82-WEST-1234-5698-7654-32",
    "CH93 0076 2011 6238 5295 7",
    "FR14 2004 1010 0505 0001 3M02 606",
    "de89 ",
    "DE89 3704",
    "0044 0532 0130 00",
    "NL91ABNA0417164300",
    "XX12 3456",
    # dates
    "2024-05-17",
    "2024-05-17 10:30",
    "2024-05-17t10:30:00z",
    "17.05.2024",
    "05/17/24",
    "14 May 2024",
    "14th of may",
    "May 14, 2024",
    "june 13",
    "sept 3rd",
    "31/02/2024",
    "2024-13-01",
    "1 jan",
    "dec. 25",
    # phones
    "+41 44 668 18 00",
    "(044) 668-18-00",
    "044 668 18 00",
    "+1 (415) 555-2671",
    "555.123.4567",
    "+41 44 945 42 70",
    # amounts and numbers
    "1,500",
    "2'500.00",
    "1.5",
    "CHF 3,743.18",
    "$2500",
    "0",
    "007",
    "1.2.3",
    "5,828.02",
    "12",
    "2004",
    "١٢٣",
    "½",
    "5 Mio.",
    "5k",
    "CHF 5 million",
    "1b",
    "2 bn",
    "3 m",
    "mio",
    # words and odd characters
    "please",
    "check",
    "the",
    "from",
    "mibebe",
    "Straße",
    "é",
    "\u200b",
    "\u00a0",
    "ß",
    "ς",
    "\u200d",
    "日本",
    "\\u0040",
    "\\n",
    "%40",
    "&#64;",
    "\ufffd",
]
SEPARATORS = [
    "",
    " ",
    " ",
    "  ",
    "\n",
    ".",
    ". ",
    ",",
    ", ",
    ":",
    ": ",
    "/",
    "-",
    "@",
    "|",
    "\t",
    "\u00a0",
    "(",
    ")",
    "'",
    "\u3000",
    "\x0b",
]

pieces = st.lists(
    st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(SEPARATORS)), min_size=1, max_size=12
)
noise = st.text(alphabet="ab1 .@:/-,'+()\n\u00a0é", max_size=30)


@st.composite
def texts(draw: Any) -> str:
    parts = draw(pieces)
    text = "".join(f + s for f, s in parts)
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(noise) + text[at:]
    return text


def found(values: list[Any]) -> list[tuple[Any, ...]]:
    return [(f.start, f.end, f.value) for f in values]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts(), st.sampled_from([None, "CH", "US"]), st.sampled_from([None, 0, 2024]))
def test_values_equal_the_old_reader(text: str, region: str | None, year: int | None) -> None:
    form = reading_form(text)
    assert found(extract_values(form, region=region, year=year)) == found(
        old_locate.extract_values(form, region=region, year=year)
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts(), texts(), st.sampled_from(["", " "]), st.sampled_from([None, "CH"]))
def test_boundary_values_equal_the_old_reader(
    tail: str, head: str, sep: str, region: str | None
) -> None:
    tail, head = reading_form(tail)[-48:], reading_form(head)[:48]
    joined, cut = tail + sep + head, len(tail)
    across = (cut, cut + len(sep))
    assert found(extract_values(joined, region=region, year=2024, across=across)) == found(
        old_locate.extract_values(joined, region=region, year=2024, across=across)
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts(), st.sampled_from([None, "CH"]))
def test_text_keys_equal_the_old_reader(text: str, region: str | None) -> None:
    assert text_keys(text, region, 2024) == old_text_keys(text, region, 2024)


@st.composite
def tool_threads(draw: Any) -> list[dict[str, Any]]:
    """A thread of user messages, calls and results of two tools, values split across them."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are an assistant."}]
    for turn in range(draw(st.integers(1, 5))):
        out.append({"role": "user", "content": draw(texts())})
        tool = draw(st.sampled_from(["read_inbox", "search_contacts"]))
        arg = draw(st.sampled_from(FRAGMENTS))
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{turn}",
                        "type": "function",
                        "function": {"name": tool, "arguments": json.dumps({"query": arg})},
                    }
                ],
            }
        )
        out.append(
            {
                "role": "tool",
                "tool_call_id": f"c{turn}",
                "content": draw(texts()) + (f" {arg}" if draw(st.booleans()) else ""),
            }
        )
    return out


def same_index(
    messages: list[dict[str, Any]], call: dict[str, Any] | None, max_state_bytes: int = 1_000_000
) -> None:
    trace = parse_trace(messages, call, labels=LABELS)
    old = OldIndex(LABELS.phone_region, max_state_bytes)
    old.update(trace)
    new = TraceIndex(LABELS.phone_region, max_state_bytes)
    new.update(trace)
    assert new.to_json() == old.to_json()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from([1_000_000, 2_000]))
def test_index_equals_the_old_reader(data: Any, budget: int) -> None:
    messages = data.draw(tool_threads())
    call = {
        "name": "send_email",
        "args": {"to": data.draw(st.sampled_from(FRAGMENTS)), "body": data.draw(texts())},
    }
    same_index(messages, call, budget)


@pytest.mark.parametrize("seed", [1, 100])
def test_synthetic_thread_index_equals_the_old_reader(seed: int) -> None:
    messages = thread(100, seed=seed)
    same_index(messages, proposed(messages))


@pytest.mark.parametrize("path", sorted(TRACES.glob("*.json")), ids=lambda p: p.stem)
def test_example_trace_index_equals_the_old_reader(path: Path) -> None:
    case = json.loads(path.read_text())
    same_index(case["messages"], case.get("proposed_call"))


label = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=8)
tops = st.sampled_from(
    [
        "com",
        "org",
        "ch",
        "io",
        "from",
        "please",
        "zz",
        "localhost",
        "02",
        "255",
        "xn--p1ai",
        "co",
        "uk",
        "github",
        "ck",
        "www",
        "1",
        "0x1f",
    ]
)


@st.composite
def bare_candidates(draw: Any) -> str:
    labels = draw(st.lists(label, min_size=0, max_size=3))
    host = ".".join([*labels, draw(tops)])
    if draw(st.booleans()):
        host = draw(st.sampled_from(["www.", "localhost.", "1.2.3.", ""])) + host
    tail = draw(
        st.sampled_from(
            [
                "",
                ":80",
                ":99999",
                ":x",
                "/",
                "/pay?x=1#f",
                "?q",
                "#f",
                "\\@evil.io",
                "@evil.io",
                ".",
                "/a.b",
            ]
        )
    )
    return host + tail


@settings(max_examples=600, deadline=None)
@given(bare_candidates())
def test_unplaceable_candidates_are_not_placed(candidate: str) -> None:
    """The URL shortcut answers only where parsing finds no URL (and link_like still runs)."""
    from guardagent.trace.found.urls import parse_url, unplaceable

    if unplaceable(candidate):
        assert parse_url(candidate, True) is None, candidate


atom = st.text(alphabet="abcXYZ019_+-", min_size=1, max_size=6)
dlabel = st.text(alphabet="abcXYZ019-", min_size=1, max_size=6)


@st.composite
def plain_addresses(draw: Any) -> str:
    local = ".".join(draw(st.lists(atom, min_size=1, max_size=3)))
    domain = ".".join(draw(st.lists(dlabel, min_size=2, max_size=4)))
    return draw(st.sampled_from(["", " ", "mailto:"])) + f"{local}@{domain}"


@settings(max_examples=400, deadline=None)
@given(plain_addresses())
def test_plain_addresses_read_as_the_parser_reads_them(text: str) -> None:
    """The plain-address shortcut gives what the RFC 5322 parser gives."""
    from guardagent.trace.found.addresses import parse_address_list, read_address_list

    assert read_address_list(text) == parse_address_list(text.strip().removeprefix("mailto:"))


@pytest.mark.parametrize("fragment", FRAGMENTS)
def test_each_fragment_reads_as_the_old_reader(fragment: str) -> None:
    """Every fragment alone, in a sentence, glued to a word, and split at each position."""
    for text in (
        fragment,
        f"see {fragment} now",
        f"see {fragment}. next",
        f"x{fragment}y",
        f"{fragment}@{fragment}",
        f"({fragment})",
    ):
        form = reading_form(text)
        for region in (None, "CH"):
            assert found(extract_values(form, region=region, year=2024)) == found(
                old_locate.extract_values(form, region=region, year=2024)
            ), (text, region)
    form = reading_form(f"pay {fragment} today")
    for cut in range(1, len(form)):
        for sep in ("", " "):
            joined, across = form[:cut] + sep + form[cut:], (cut, cut + len(sep))
            assert found(extract_values(joined, region="CH", year=2024, across=across)) == found(
                old_locate.extract_values(joined, region="CH", year=2024, across=across)
            ), (cut, sep)
