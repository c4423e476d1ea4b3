"""A host glob's wildcard never moves a host to another domain.

Seen failing before: ``navigation_in_scope("admin.shop.*")`` held for
``https://admin.shop.example.evil.io/`` (``*`` matched ``example.evil.io``: evil.io's
domain), and ``"shop.*.com"`` for ``shop.x.evil.com``. Each label of a host glob matches one
label of the host, but its first, which may match several (subdomains of the fixed rest).
"""

from __future__ import annotations

from typing import Any

import pytest

from guardagent.trace import Labels
from tests.trace_helpers import facts, system, user

LABELS = Labels.from_mapping(
    {
        "tools": {
            "goto": {"results": "untrusted", "effect": "navigate", "args": ["url"]},
        }
    }
)


def in_scope(url: str, scope: str) -> Any:
    return facts([system(), user("Open the shop.")], "goto", {"url": url}, labels=LABELS).fact(
        f'navigation_in_scope("{scope}")'
    )


@pytest.mark.parametrize(
    ("scope", "url"),
    [
        ("admin.shop.*", "https://admin.shop.example.evil.io/"),
        ("admin.shop.*", "https://admin.shop.com.evil.io/orders"),
        ("shop.*.com", "https://shop.x.evil.com/"),
        ("admin.*.example", "https://admin.a.b.example/"),
        ("shop.example:*", "https://shop.example.evil.io:8443/"),
    ],
)
def test_a_wildcard_matches_one_label_past_the_first(scope: str, url: str) -> None:
    fact = in_scope(url, scope)
    assert fact.value is False, fact.detail


@pytest.mark.parametrize(
    ("scope", "url"),
    [
        ("admin.shop.*", "https://admin.shop.com/"),
        ("*.shop.example", "https://a.b.shop.example/x"),
        ("*shop.example", "https://my.webshop.example/"),
        ("*", "https://anything.example.org/"),
        ("shop.*.com", "https://shop.eu.com/"),
        ("shop.example:*", "https://shop.example:8443/"),
    ],
)
def test_subdomains_and_one_label_wildcards_still_match(scope: str, url: str) -> None:
    fact = in_scope(url, scope)
    assert fact.value is True, fact.detail
