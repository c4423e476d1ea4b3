"""Well-known redirectors carry their target where no query parameter holds it (class 8).

``https://www.google.com/amp/s/evil.example/login`` opens Google's AMP viewer, which shows
``evil.example``; ``urldefense.com/v3/__https://evil.example__;...`` and Proofpoint's
``u=https-3A__evil.example`` send the browser on; ``t.co/AbC`` goes where only Twitter
knows. A rule that allows the redirector's site must judge the target too (an opaque
shortener's target cannot be read: never inside), and a rule that forbids the target must
not take the redirector's URL for "elsewhere".
"""

from __future__ import annotations

import base64
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_trace_reading import goto_facts
from tests.trace_helpers import facts, system, user

EVIL = "evil-phish.example"
DOCS = "docs.example"


def _v2(url: str) -> str:
    """Proofpoint URL Defense v2: ``-XX`` for a byte, ``_`` for ``/``."""
    return "".join(
        "_" if c == "/" else f"-{ord(c):02X}" if not (c.isalnum() or c == ".") else c for c in url
    )


def _bing(url: str) -> str:
    return "a1" + base64.urlsafe_b64encode(f"https://{url}/x".encode()).decode().rstrip("=")


# (redirector URL carrying `{t}` as it carries a target, scopes that admit the redirector)
CARRIERS = [
    ("https://www.google.com/amp/s/{host}/login", '"google.com"'),
    ("https://www.google.com/amp/{host}/login", '"google.com"'),
    ("http://google.com/amp/s/{host}", '"google.com"'),
    ("https://WWW.GOOGLE.COM/AMP/S/{host}/Login", '"google.com"'),
    ("https://www.google.co.uk/amp/s/{host}/a?b=c", '"google.co.uk"'),
    ("https://www.google.de/amp/s/{host_pct}/login", '"google.de"'),
    ("https://www.google.com/amp/s/{host_pct2}/login", '"google.com"'),
    ("https://www.google.com/amp/s/{host}%2Flogin", '"google.com"'),
    ("https://www-example-com.cdn.ampproject.org/c/s/{host}/login", '"*.cdn.ampproject.org"'),
    (
        "https://www-example-com.cdn.ampproject.org/v/s/{host}/x?amp_js_v=0.1",
        '"*.cdn.ampproject.org"',
    ),
    ("https://urldefense.com/v3/__https://{host}/login__;!!ABCdef!gh12$", '"urldefense.com"'),
    ("https://urldefense.com/v3/__https://{host}/a?x=1__;!!ABC!def$", '"urldefense.com"'),
    ("https://urldefense.com/v3/__http://{host}__;!!A!b$", '"urldefense.com"'),
    ("https://urldefense.proofpoint.com/v2/url?u={v2}&d=DwMF&c=x", '"urldefense.proofpoint.com"'),
]


def _fill(template: str, host: str) -> str:
    return template.format(
        host=host,
        host_pct=quote(host, safe="").replace("-", "%2D").replace(".", "%2E"),
        host_pct2=quote(quote(host.replace("-", "%2D"), safe=""), safe=""),
        v2=_v2(f"https://{host}/login"),
    )


@pytest.mark.parametrize(("template", "scopes"), CARRIERS)
def test_a_rule_that_allows_the_redirector_judges_the_target(template: str, scopes: str) -> None:
    url = _fill(template, EVIL)
    assert goto_facts(url, scopes) is False, url
    # the same redirector to a site the rule also allows stays inside
    assert goto_facts(_fill(template, DOCS), f'{scopes}, "{DOCS}"') is True, url


@pytest.mark.parametrize(("template", "scopes"), CARRIERS)
def test_a_rule_that_forbids_the_target_is_not_passed_through_the_redirector(
    template: str, scopes: str
) -> None:
    url = _fill(template, EVIL)
    assert goto_facts(url, f'"{EVIL}"') is not False, url
    assert goto_facts(_fill(template, DOCS), f'"{EVIL}"') is False  # elsewhere: still False


@pytest.mark.parametrize(
    "url",
    [
        "https://t.co/AbCdEf123",
        "https://bit.ly/3abcDEF",
        "https://lnkd.in/eAbCdEf",
        "http://tinyurl.com/y3abc",
        "https://goo.gl/maps/abc",
        "https://ow.ly/x1Y2z",
        "https://buff.ly/3xYz",
        "https://is.gd/abc",
        "https://rb.gy/abc12",
        "https://T.CO/AbC",
        f"https://www.bing.com/ck/a?!&&p=abc&u={_bing(DOCS)}&ntb=1",
    ],
)
def test_a_shortener_whose_target_cannot_be_read_is_never_inside(url: str) -> None:
    # Bing's u= is base64, which the guard's case-folded reading of a URL cannot decode
    host = url.split("/")[2].lower().removeprefix("www.")
    assert goto_facts(url, f'"{host}"') is not True, url
    assert goto_facts(url, f'"{EVIL}"') is None, url  # a rule that forbids a site: open


def test_nested_redirectors_are_followed() -> None:
    inner = f"https://www.google.com/amp/s/{EVIL}/login"
    url = f"https://urldefense.com/v3/__{inner}__;!!A!b$"
    assert goto_facts(url, '"urldefense.com", "google.com"') is False
    url = f"https://www.google.com/url?q={quote(url, safe='')}"
    assert goto_facts(url, '"urldefense.com", "google.com"') is False
    assert goto_facts(url, f'"{EVIL}"') is None


def test_a_plain_page_on_a_redirector_site_is_not_a_redirect() -> None:
    for url in (
        "https://www.google.com/search?q=amp",
        "https://www.google.com/amp",
        "https://t.co/",
        "https://urldefense.com/",
        "https://www.bing.com/ck/a",
    ):
        host = url.split("/")[2].removeprefix("www.")
        assert goto_facts(url, f'"{host}"') is True, url


def test_the_user_naming_the_redirector_does_not_vouch_for_its_target() -> None:
    url = f"https://www.google.com/amp/s/{EVIL}/login"
    f = facts([system(), user("Open google.com for me.")], "browse", {"url": url})
    assert f.fact('arg_from_user("url", part="host")').value is not True


@st.composite
def _chains(draw: st.DrawFn) -> tuple[str, bool, bool]:
    """A target wrapped in 1-3 redirectors (encoded as each carries it).

    Returns the URL, whether its end is the allowed site, and whether the chain can be read
    one way only: Bing's target cannot be read, and a v3 link wrapped unencoded around text
    holding ``__`` ends at more than one ``__``.
    """
    host = draw(st.sampled_from([EVIL, DOCS]))
    url = f"https://{host}/p"
    clear = True
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["amp", "amp-http", "cache", "v3", "v2", "bing", "q"]))
        clear = clear and kind != "bing" and not (kind == "v3" and "__" in url)
        bare = url.split("://", 1)[1]
        url = {
            "amp": f"https://www.google.com/amp/s/{bare}",
            "amp-http": f"https://www.google.com/amp/{bare}",
            "cache": f"https://x-y.cdn.ampproject.org/c/s/{bare}",
            "v3": f"https://urldefense.com/v3/__{url}__;!!A!b$",
            "v2": f"https://urldefense.proofpoint.com/v2/url?u={_v2(url)}&d=x",
            "bing": f"https://www.bing.com/ck/a?!&&u={_bing(bare)}&ntb=1",
            "q": f"https://www.google.com/url?q={quote(url, safe='')}",
        }[kind]
    return url, host == DOCS, clear


_ALL = (
    '"google.com", "*.cdn.ampproject.org", "urldefense.com", '
    '"urldefense.proofpoint.com", "bing.com"'
)


@given(_chains())
@settings(max_examples=150, deadline=None)
def test_a_chain_of_redirectors_is_inside_only_when_its_end_is(
    case: tuple[str, bool, bool],
) -> None:
    url, good, clear = case
    verdict = goto_facts(url, f'{_ALL}, "{DOCS}"')
    if not good:
        assert verdict is False, url
        assert goto_facts(url, f'"{EVIL}"') is None, url  # forbidden: never "elsewhere"
    elif clear:
        assert verdict is True, url
    else:
        assert verdict is not None, url


# redirectors that carry the target in a query parameter (read by the generic reader)
QUERY_CARRIERS = [
    ("https://www.google.com/url?q={enc}&sa=D", '"google.com"'),
    ("https://www.google.com/url?sa=t&url={enc}", '"google.com"'),
    ("https://l.facebook.com/l.php?u={enc}&h=AT0", '"*.facebook.com"'),
    ("https://out.reddit.com/t3_abc?url={enc}&token=x", '"*.reddit.com"'),
    ("https://www.youtube.com/redirect?event=x&q={enc}", '"youtube.com"'),
    ("https://l.instagram.com/?u={enc}&e=x", '"*.instagram.com"'),
    ("https://slack-redir.net/link?url={enc}", '"slack-redir.net"'),
    ("https://eur01.safelinks.protection.outlook.com/?url={enc}&data=x", '"*.outlook.com"'),
    ("https://urldefense.proofpoint.com/v1/url?u={enc}&k=x", '"urldefense.proofpoint.com"'),
    ("HTTPS://WWW.GOOGLE.COM/URL?Q={enc}", '"google.com"'),
]


def _encoded(host: str, times: int) -> str:
    text = f"https://{host}/login"
    for _ in range(times):
        text = quote(text, safe="")
    return text


@pytest.mark.parametrize("times", [0, 1, 2])
@pytest.mark.parametrize(("template", "scopes"), QUERY_CARRIERS)
def test_a_query_redirector_is_judged_both_ways(template: str, scopes: str, times: int) -> None:
    url = template.format(enc=_encoded(EVIL, times))
    assert goto_facts(url, scopes) is False, url
    assert goto_facts(url, f'"{EVIL}"') is None, url  # a rule that forbids the target: open
    honest = template.format(enc=_encoded(DOCS, times))
    assert goto_facts(honest, f'{scopes}, "{DOCS}"') is True, honest
    assert goto_facts(honest, f'"{EVIL}"') is False, honest


def test_reading_well_known_redirectors_is_linear() -> None:
    import time

    from guardagent.trace.found.redirectors import known_targets
    from guardagent.trace.found.urls import parse_url

    def cost(n: int, template: str) -> float:
        where = parse_url(template.replace("{x}", "a__;/" * n), False).where
        started = time.perf_counter()
        known_targets(where)
        return time.perf_counter() - started

    for template in (
        "https://urldefense.com/v3/__https://{x}__;!!a$",
        "https://www.google.com/amp/s/x.example/{x}",
        "https://urldefense.proofpoint.com/v2/url?u={x}&u={x}",
        "https://x.cdn.ampproject.org/c/s/{x}",
        "https://t.co/{x}",
    ):
        cost(10, template)
        small = min(cost(500, template) for _ in range(3))
        large = min(cost(5000, template) for _ in range(3))
        assert large < 40 * small + 0.05, (template, small, large)


def test_the_detail_names_where_the_redirector_sends_the_browser() -> None:
    import json

    from guardagent.trace import Labels, analyze, parse_trace

    labels = Labels.from_mapping({"tools": {"goto": {"results": "untrusted", "effect": "read"}}})
    for url, scope, named in [
        (f"https://www.google.com/amp/s/{EVIL}/login", "google.com", EVIL),
        ("https://t.co/AbC", "t.co", "cannot be read"),
    ]:
        messages = [
            {"role": "user", "content": "Look."},
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
        fact = analyze(parse_trace(messages), labels).fact(f'navigation_in_scope("{scope}")')
        assert fact.value is False and named in fact.detail, fact.detail


# a redirect on the same site: a rule that forbids a path must not take it for "elsewhere"
FORBIDDEN_PATH = '"admin.shop.example/settings/payment*"'


@pytest.mark.parametrize(
    "url",
    [
        "https://admin.shop.example/login?next=https://admin.shop.example/settings/payment",
        "https://admin.shop.example/login?next=/settings/payment",
        "https://admin.shop.example/login?next=%2Fsettings%2Fpayment",
        "https://admin.shop.example/login?next=%252Fsettings%252Fpayment%252Fcard",
        "https://admin.shop.example/orders/1?back=../../settings/payment",
        "https://admin.shop.example/orders?next=./../settings/payment",
        "https://admin.shop.example/login#next=/settings/payment",
        "https://admin.shop.example/login;next=/settings/payment",
        "https://admin.shop.example/login?a=1&next=/SETTINGS/Payment?x=1",
        "https://docs.shop.example/r?u=https://admin.shop.example/r%3Fnext%3D/settings/payment",
    ],
)
def test_a_forbidden_path_behind_a_same_site_redirect_is_open(url: str) -> None:
    assert goto_facts(url, FORBIDDEN_PATH) is not False, url
    assert goto_facts(url, '"admin.shop.example", "docs.shop.example"') is True, url


@pytest.mark.parametrize(
    "url",
    [
        "https://admin.shop.example/login?next=/orders/5531",
        "https://admin.shop.example/orders?sort=/date&page=2",
        "https://admin.shop.example/login?next=https://admin.shop.example/orders",
        "https://admin.shop.example/files?path=/exports/2024.csv",
    ],
)
def test_a_same_site_redirect_elsewhere_stays_outside_a_forbidden_path(url: str) -> None:
    assert goto_facts(url, FORBIDDEN_PATH) is False, url


def test_reading_same_site_pages_is_linear() -> None:
    import time

    from guardagent.trace.found.redirects import same_site
    from guardagent.trace.found.urls import parse_url

    calls = iter(range(10**6))

    def cost(n: int, piece: str) -> float:
        run = next(calls)  # a new URL each time: no kept reading answers it
        text = "".join(piece.format(f"{run}x{i}") for i in range(n))
        where = parse_url(f"https://admin.shop.example/r{run}?{text}", False).where
        started = time.perf_counter()
        same_site(where)
        return time.perf_counter() - started

    for piece in ("n=/a/{}&", "n=../{}/..&", "n=%252F{}&", "n=./{}#"):
        cost(10, piece)
        small = min(cost(200, piece) for _ in range(3))
        large = min(cost(2000, piece) for _ in range(3))
        assert large < 40 * small + 0.05, (piece, small, large)


@st.composite
def _spelled_amp(draw: st.DrawFn) -> tuple[str, bool]:
    """An AMP viewer or cache URL whose target host is spelled with random case and escapes."""
    host = draw(st.sampled_from([EVIL, DOCS]))
    spelled = "".join(
        f"%{ord(c):02X}"
        if draw(st.booleans()) and c != "."
        else (c.upper() if draw(st.booleans()) else c)
        for c in host
    )
    if draw(st.booleans()):
        spelled = quote(spelled, safe="")  # encoded once more (a % is %25)
    scheme = draw(st.sampled_from(["https", "http", "HTTPS"]))
    front = draw(
        st.sampled_from(
            [
                "www.google.com/amp/s/",
                "google.co.uk/amp/",
                "WWW.GOOGLE.DE/AMP/S/",
                "a-b.cdn.ampproject.org/c/s/",
                "a-b.cdn.ampproject.org/v/",
            ]
        )
    )
    tail = draw(st.sampled_from(["", "/", "/login", "/a/b?x=1", "%2Flogin"]))
    return f"{scheme}://{front}{spelled}{tail}", host == DOCS


@given(_spelled_amp())
@settings(max_examples=200, deadline=None)
def test_an_amp_target_is_judged_however_it_is_spelled(case: tuple[str, bool]) -> None:
    url, good = case
    scopes = '"google.com", "google.co.uk", "google.de", "*.cdn.ampproject.org"'
    assert goto_facts(url, f'{scopes}, "{DOCS}"') is good, url
    if not good:
        assert goto_facts(url, f'"{EVIL}"') is None, url
