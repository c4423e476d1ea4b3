"""Typed values: each kind read by its parser, normalisation properties (hypothesis), no network."""

from __future__ import annotations

import socket
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace.found import values
from guardagent.trace.found.values import (
    amount_readings,
    extract_values,
    normalize_text,
    read_scalar,
    tokens,
)


def keys(text: str, region: str | None = None) -> list[str]:
    return [k for f in extract_values(normalize_text(text), region=region) for k in f.value.keys]


def whole(value: object, region: str | None = None) -> values.Value:
    found, _ = read_scalar(value, region=region)
    assert found is not None
    return found


def test_format_character_table_matches_unicodedata() -> None:
    expected = {c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"}
    table = {c for lo, hi in values._FORMAT_RANGES for c in range(lo, hi + 1)}
    assert table == expected


def test_normalisation_folds_width_case_and_format_characters() -> None:
    assert normalize_text("ＡＬＩＣＥ＠Ｅｘａｍｐｌｅ．ｃｏｍ") == "alice@example.com"
    assert normalize_text("Stra\u00dfe") == "strasse"
    assert normalize_text("pa\u200by\u00adpal") == "paypal"
    assert normalize_text("\ufb01le") == "file"


def test_kinds_in_free_text() -> None:
    text = (
        "Pay CHF 2'500.00 to DE89 3704 0044 0532 0130 00 by 14 May 2024; mail Bob.K@Example.COM "
        "or see https://www.example.com/Pay/?ref=1 and evil.co.uk/login; call +41 44 668 18 00."
    )
    found = keys(text)
    for key in [
        "amount:2500",
        "iban:DE89370400440532013000",
        "date:2024-05-14",
        "email:bob.k@example.com",
        "url:example.com/pay?ref=1",
        "url:evil.co.uk/login",
        "phone:+41446681800",
    ]:
        assert key in found, key
    assert "amount:89" not in found and "amount:3704" not in found, (
        "digits of an IBAN are not amounts"
    )


def test_iban_checksum_and_length() -> None:
    assert not any(k.startswith("iban:") for k in keys("DE89 3704 0044 0532 0130 01"))
    assert whole("de89-3704-0044-0532-0130-00").keys == ("iban:DE89370400440532013000",)
    assert whole("DE89 3704 0044 0532 0130 01").kind == "text", "a wrong checksum is no IBAN"
    # an IBAN directly followed by more letters is not read (wrong length)
    assert not any(k.startswith("iban:") for k in keys("DE89370400440532013000X"))


def test_urls() -> None:
    variants = [
        "https://www.Example.com/Docs/",
        "http://example.com/docs",
        "example.com/docs",
        "WWW.EXAMPLE.COM/docs/",
        "https://example.com:443/docs#top",
    ]
    assert {whole(v).keys for v in variants} == {("url:example.com/docs",)}
    tricky = whole("https://trusted.com@evil.example.net/x")
    assert (
        tricky.keys == ("url:evil.example.net/x",)
        and tricky.part("host") == "host:evil.example.net"
    )
    assert whole("https://a.b.example.co.uk/").part("domain") == "domain:example.co.uk"
    # link-shaped but under no public suffix: not a placed URL, a token traced whole (issue 19)
    assert whole("notes.txt").keys == ("raw:notes.txt",) and not whole("notes.txt").placed
    assert "url:example.com/a" in keys("(see example.com/a).")


def test_phones_need_a_region_without_plus() -> None:
    assert whole("+41 44 668 18 00").keys == ("phone:+41446681800",)
    assert whole("044 668 18 00", region="CH").keys[0] == "phone:+41446681800"
    assert not any(k.startswith("phone:") for k in keys("044 668 18 00"))
    assert "phone:+41446681800" in keys("call 044 668 18 00 today", region="CH")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2500", ("2500",)),
        ("2,500.00", ("2500",)),
        ("2.500,00", ("2500",)),
        ("2'500", ("2500",)),
        ("1,500", ("1500", "1.5")),
        ("1.5", ("1.5",)),
        ("1,234,567.89", ("1234567.89",)),
        ("1.2.3", ()),
        ("0,500", ("500", "0.5")),
        ("12,34,56", ()),
    ],
)
def test_amount_readings(text: str, expected: tuple[str, ...]) -> None:
    assert amount_readings(text) == expected


def test_dates() -> None:
    for text in [
        "2024-05-14",
        "14.05.2024",
        "05/14/2024",
        "14 May 2024",
        "May 14, 2024",
        "14th of May 2024",
        "2024-05-14T09:30:00Z",
    ]:
        assert "date:2024-05-14" in whole(text).keys, text
    assert set(whole("03/04/2024").keys) == {"date:2024-04-03", "date:2024-03-04"}
    assert whole("31.02.2024").kind != "date"


def test_scalars() -> None:
    assert whole(2500).keys == whole(2500.0).keys == whole("$2,500.00").keys[:1] == ("amount:2500",)
    assert read_scalar(True) == (None, [])
    assert read_scalar(float("nan")) == (None, [])
    assert read_scalar("   ") == (None, [])
    text, inner = read_scalar("Hi Bob, pay GB82 WEST 1234 5698 7654 32 and write to x@y.org")
    assert text is not None and text.kind == "text"
    assert [v.kind for v in inner] == ["iban", "email"]


def test_tldextract_never_touches_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    values._tld.cache_clear()
    values._url_value.cache_clear()
    assert whole("https://shop.example.co.uk/cart").part("domain") == "domain:example.co.uk"
    # the private section of the PSL: github.io sites are registrable domains (issue 19)
    assert whole("login.foo.github.io").part("domain") == "domain:foo.github.io"


# -- properties ----------------------------------------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)


@given(_text)
@settings(max_examples=300, deadline=None)
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once
    assert tokens(normalize_text(once)) == tokens(once)


@given(_text)
@settings(max_examples=200, deadline=None)
def test_format_characters_never_change_tokens(text: str) -> None:
    spliced = "\u200b".join(text) + "\ufeff"
    assert normalize_text(spliced) == normalize_text(text)


_local = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9._+-]{0,10}[A-Za-z0-9])?", fullmatch=True).filter(
    lambda s: ".." not in s
)
# "--" in the 3rd and 4th places is reserved (RFC 5891 4.2.3.1: xn--): no valid domain has it
_label = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9-]{0,8}[A-Za-z0-9])?", fullmatch=True).filter(
    lambda s: s[2:4] != "--"
)


@given(_local, _label, st.sampled_from(["com", "org", "ch", "co.uk", "net"]), st.randoms())
@settings(max_examples=200, deadline=None)
def test_email_case_never_matters(local: str, domain: str, suffix: str, rnd: object) -> None:
    address = f"{local}@{domain}.{suffix}"
    swapped = "".join(c.upper() if i % 2 else c.lower() for i, c in enumerate(address))
    assert whole(address).keys == whole(swapped).keys == whole(address.upper()).keys
    assert whole(address).keys[0] in keys(f"write to {swapped}.")


_ibans = st.sampled_from(
    [
        "DE89370400440532013000",
        "GB82WEST12345698765432",
        "CH9300762011623852957",
        "FR1420041010050500013M02606",
        "NL91ABNA0417164300",
    ]
)


@given(_ibans, st.lists(st.sampled_from(["", " ", "-"]), min_size=40, max_size=40), st.booleans())
@settings(max_examples=200, deadline=None)
def test_iban_spacing_never_matters(iban: str, seps: list[str], lower: bool) -> None:
    spaced = iban[:2] + "".join(c + seps[i] for i, c in enumerate(iban[2:])).strip(" -")
    if lower:
        spaced = spaced.lower()
    key = f"iban:{iban}"
    assert whole(spaced).keys == (key,)
    assert key in keys(f"pay to {spaced}, thanks")


@given(
    st.sampled_from(["example.com", "shop.example.co.uk", "sub.domain.org"]),
    st.lists(st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True), max_size=3),
    st.sampled_from(["http://", "https://", ""]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_url_variants_never_matter(
    host: str, path: list[str], scheme: str, www: bool, slash: bool, upper: bool
) -> None:
    base = host + ("/" + "/".join(path) if path else "")
    variant = scheme + ("www." if www else "") + base + ("/" if slash else "")
    if upper:
        variant = variant.upper()
    assert whole(variant).keys == whole("https://" + base).keys
    assert whole(variant).keys[0] in keys(f"go to {variant} now")


@given(
    st.integers(min_value=0, max_value=10**9), st.sampled_from([",", ".", "'", ""]), st.booleans()
)
@settings(max_examples=200, deadline=None)
def test_grouped_amounts_read_their_value(n: int, group: str, cents: bool) -> None:
    digits = str(n)
    groups = []
    while digits:
        groups.insert(0, digits[-3:])
        digits = digits[:-3]
    written = group.join(groups)
    if cents:
        decimal = "," if group == "." else "."
        written += decimal + "00"
    assert f"amount:{n}" in whole(written).keys or f"amount:{n}" in whole("CHF " + written).keys


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a lenient parser (a bank's that drops grouping, locale.atof, babel non-strict) reads
        # the separator away: 15000, where the decimal reading is 1.5
        ("1,5000", ("15000", "1.5")),
        ("1.5000", ("15000", "1.5")),
        ("1500,000", ("1500000", "1500")),
        ("1500.000", ("1500000", "1500")),
        ("0,500", ("500", "0.5")),
        # two digits or fewer after the separator: a currency's minor unit, read as written
        ("12.50", ("12.5",)),
        ("12,5", ("12.5",)),
    ],
)
def test_a_separator_before_three_or_more_digits_is_read_both_ways(
    text: str, expected: tuple[str, ...]
) -> None:
    assert amount_readings(text) == expected


def test_an_amount_a_lenient_bank_reads_larger_does_not_compare_below_a_limit() -> None:
    from tests.trace_helpers import facts, system, user

    for amount in ("1,5000", "1.5000", "1500,000"):
        f = facts(
            [system(), user("Pay the invoice")],
            "send_money",
            {"iban": "CH9300762011623852957", "amount": amount},
        )
        assert f.fact('arg_compare("amount", "<=", 2000)').value is None, amount


@pytest.mark.parametrize("quote", ["'", '"', "\u2018", "`"])
@pytest.mark.parametrize(
    "layout",
    [
        "id_: {q}26{q}",
        "ID {q}26{q}",
        "{q}26{q}",
        "- {q}26{q}\n- {q}27{q}",
        "file ({q}26{q})",
        "ids: [{q}26{q}, {q}27{q}]",
    ],
)
def test_a_quoted_number_is_read_as_the_number(quote: str, layout: str) -> None:
    """YAML writes string ids quoted (`id_: '26'`); users quote them too ("the file with ID '26'")."""
    text = layout.format(q=quote)
    assert "amount:26" in keys(text), text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1'000", ["amount:1000"]),
        ("CHF 2'500.50", ["amount:2500.5"]),
        ("x'26'", []),
        ("'1'000'", ["amount:1000"]),
        ("rock'n'roll 5", ["amount:5"]),
    ],
)
def test_an_apostrophe_inside_a_number_or_a_word_still_groups_it(
    text: str, expected: list[str]
) -> None:
    """A Swiss thousands mark is no quote: `1'000` is one thousand, never `000`."""
    assert [k for k in keys(text) if k.startswith("amount:")] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("from January 11th to January 15th 2025", ["date:2025-01-11", "date:2025-01-15"]),
        ("January 11 - January 15, 2025", ["date:2025-01-11", "date:2025-01-15"]),
        ("Jan 11 until Feb 2, 2025", ["date:2025-01-11", "date:2025-02-02"]),
        ("11 January to 15 January 2025", ["date:2025-01-11", "date:2025-01-15"]),
        ("between 3rd of March and 9th of March 2031", ["date:2031-03-03", "date:2031-03-09"]),
        ("January 11-15, 2025", ["date:2025-01-11"]),
        ("June 13 through June 20, 2030", ["date:2030-06-13", "date:2030-06-20"]),
    ],
)
def test_a_range_shares_its_year(text: str, expected: list[str]) -> None:
    """The first date of a range written with one year is in that year, not the host's."""
    assert [k for k in keys(text) if k.startswith("date:")] == expected


@pytest.mark.parametrize(
    "text",
    [
        "January 11. The report for January 15 2025 is late.",  # another sentence: no range
        "on January 11 we met; 2025 was a good year",
        "January 11 to pay 2025",
    ],
)
def test_a_date_outside_a_range_keeps_the_trace_year(text: str) -> None:
    dates = [k for k in keys(text) if k.startswith("date:")]
    assert dates and dates[0] == f"date:{values.host_year()}-01-11", dates
