"""A well-known redirector's target written without a scheme is judged as a URL too.

Google's ``/url?q=`` sends the browser on to its target; written without a scheme
(``q=evil-phish.example/login``) it is still a place to go (or at least the guard cannot
tell it is not), whatever its suffix: a rule that allows google.com must not call it inside.
Honest controls: a target on the allowed site, a path of the site itself, and a search.
"""

from __future__ import annotations

import pytest

from tests.test_trace_reading import goto_facts

HOSTS = [
    "https://www.google.com",
    "https://google.com",
    "https://www.google.co.uk",
    "http://google.de",
]
TARGETS = [
    "evil-phish.example/login",
    "evil-phish.example",
    "evil.test:8443/x",
    "login.evil.internal/a%3Fb%3Dc",
    "evil.example%2Flogin",
    "EVIL.EXAMPLE/Login",
    "10.0.0.7/admin",
    "evil..example",
    "evil example",
]


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("param", ["q", "url"])
@pytest.mark.parametrize("target", TARGETS)
def test_a_schemeless_target_of_google_url_is_not_inside(
    host: str, param: str, target: str
) -> None:
    url = f"{host}/url?sa=t&{param}={target}&usg=AOv"
    assert goto_facts(url, '"google.com", "google.co.uk", "google.de"') is not True, url


@pytest.mark.parametrize(
    "url",
    [
        "https://www.google.com/url?q=https://google.com/maps&sa=D",
        "https://www.google.com/url?q=google.com/maps",
        "https://www.google.com/url?q=/maps/place",
        "https://www.google.com/search?q=evil-phish.example",
        "https://www.google.com/search?q=how+to+cook+rice",
        "https://www.google.com/url?sa=t&usg=AOv",
    ],
)
def test_honest_google_links_stay_inside(url: str) -> None:
    assert goto_facts(url, '"google.com"') is True, url


@pytest.mark.parametrize(
    ("template", "scope"),
    [
        ("https://l.facebook.com/l.php?u={t}&h=AT0", '"*.facebook.com"'),
        ("https://lm.facebook.com/l.php?u={t}", '"*.facebook.com"'),
        ("https://l.instagram.com/?u={t}&e=x", '"*.instagram.com"'),
        ("https://www.youtube.com/redirect?event=x&q={t}", '"youtube.com"'),
        ("https://slack-redir.net/link?url={t}", '"slack-redir.net"'),
        ("https://eur01.safelinks.protection.outlook.com/?url={t}&data=x", '"*.outlook.com"'),
        ("https://out.reddit.com/t3_abc?url={t}&token=x", '"*.reddit.com"'),
    ],
)
@pytest.mark.parametrize("target", TARGETS)
def test_a_schemeless_target_of_another_known_redirector_is_not_inside(
    template: str, scope: str, target: str
) -> None:
    url = template.format(t=target)
    assert goto_facts(url, scope) is not True, url
