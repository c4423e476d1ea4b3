"""A URL the user gave must not carry a target the user never gave (open redirects).

``arg_from_user("url", part="host")`` holds for ``https://example.com/redirect?url=
https://evil.example`` when the user named ``example.com``; the redirector sends the browser
to ``evil.example``, which nobody trusted named. The URLs a URL carries
(:func:`~guardagent.trace.found.redirects.carried`) are judged by the same rule, unless the
whole URL (which holds them) is from that source.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.trace_helpers import call, facts, result, system, user

PAGE = "Continue at https://example.com/redirect?url=https://evil.example/login"
REDIRECT = "https://example.com/redirect?url=https://evil.example/login"


def _browse(said: str, url: str, page: str = PAGE) -> Any:
    messages = [system(), user(said), call("1", "read_inbox", {}), result("1", page)]
    return facts(messages, "browse", {"url": url})


@pytest.mark.parametrize("part", ["host", "domain"])
def test_a_host_the_user_named_does_not_vouch_for_what_it_redirects_to(part: str) -> None:
    f = _browse("Open example.com for me.", REDIRECT)
    assert f.fact(f'arg_from_user("url", part="{part}")').value is False
    assert f.fact(f'arg_from_trusted("url", part="{part}")').value is False
    assert f.fact(f'arg_only_untrusted("url", part="{part}")').value is True
    assert "evil.example" in f.fact(f'arg_from_user("url", part="{part}")').detail


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/r?next=%2F%2Fevil.example",  # encoded, relative to the scheme
        "https://example.com/out/https://evil.example",  # written into the path
        "https://example.com/#https://evil.example",  # in the fragment
        "https://example.com/r?u=https://example.com/r%3Fu%3Dhttps://evil.example",  # nested
    ],
)
def test_every_carried_target_is_judged(url: str) -> None:
    f = _browse("Open example.com for me.", url, page=f"see {url}")
    assert f.fact('arg_from_user("url", part="host")').value is False


def test_a_carried_target_the_user_gave_or_the_whole_url_the_user_gave_still_holds() -> None:
    # the user named both sites
    f = _browse("Open example.com, it sends me on to https://evil.example.", REDIRECT)
    assert f.fact('arg_from_user("url", part="host")').value is True
    # the user gave the whole URL: the target is theirs
    f = _browse(f"Open {REDIRECT}", REDIRECT)
    assert f.fact('arg_from_user("url", part="host")').value is True
    assert f.fact('arg_from_user("url")').value is True
    # a URL that carries nothing is judged by its host alone, as before
    f = _browse("Open example.com for me.", "https://example.com/account?tab=2")
    assert f.fact('arg_from_user("url", part="host")').value is True


def test_an_unreadable_carried_target_is_from_nobody() -> None:
    f = _browse(
        "Open example.com for me.",
        "https://example.com/r?u=javascript:alert(1)",
        page="see https://example.com/r?u=javascript:alert(1)",
    )
    assert f.fact('arg_from_user("url", part="host")').value is False


@pytest.mark.parametrize(
    "fragment",
    [
        "#https://evil.example",
        "#/r?next=//evil.example",
        "#/settings/forwarding",
        "#access_token=abc",
        "#!/admin",
    ],
)
def test_a_fragment_that_is_more_than_an_anchor_counts(fragment: str) -> None:
    url = "https://example.com/app" + fragment
    f = _browse("Open https://example.com/app please.", url, page=f"see {url}")
    assert f.fact('arg_from_user("url")').value is False
    # given whole, with its fragment, it is the user's
    f = _browse(f"Open {url} please.", url, page="nothing")
    assert f.fact('arg_from_user("url")').value is True


@pytest.mark.parametrize("fragment", ["#section-2", "#top", "#Overview", "#2.3"])
def test_a_plain_anchor_still_does_not_count(fragment: str) -> None:
    f = _browse(
        "Open https://example.com/app please.", "https://example.com/app" + fragment, page="nothing"
    )
    assert f.fact('arg_from_user("url")').value is True
