"""A scope's wildcard never vouches for an internationalised host label (look-alikes).

Seen failing before: ``navigation_in_scope("admin.*.example")`` held for
``https://admin.shоp.example`` (a Cyrillic ``о``: another party's domain, which a browser
may show as admin.shop.example), ``"*.shop.example"`` for ``аdmin.shop.example`` and
``"admin.shop.*"`` for ``admin.shop.exаmple``; ``NOT history_in_scope(<forbidden>)`` held
after an earlier visit inside the forbidden scope by one reading only.
"""

from __future__ import annotations

from typing import Any

import pytest

from guardagent.trace import Labels
from tests.trace_helpers import call, facts, result, system, user

LABELS = Labels.from_mapping(
    {
        "tools": {
            "goto": {"results": "untrusted", "effect": "navigate", "args": ["url"]},
            "fill": {"results": "untrusted", "effect": "write", "args": ["field", "text"]},
        }
    }
)


def in_scope(url: str, scope: str) -> Any:
    return facts(
        [system(), user("Open the admin site.")], "goto", {"url": url}, labels=LABELS
    ).fact(f'navigation_in_scope("{scope}")')


@pytest.mark.parametrize(
    ("scope", "url"),
    [
        ("admin.*.example", "https://admin.sh\u043ep.example/"),  # Cyrillic o
        ("*.shop.example", "https://\u0430dmin.shop.example/"),  # Cyrillic a
        ("*.shop.example", "https://\u03b1dmin.shop.example/"),  # Greek alpha
        ("admin.shop.*", "https://admin.shop.ex\u0430mple/orders"),
        ("*.example", "https://xn--dmin-5cd.shop.example/"),  # written in IDNA form
        ("*.shop.example/orders/*", "https://\u0430dmin.shop.example/orders/1"),
    ],
)
def test_a_wildcard_over_an_internationalised_label_is_open(scope: str, url: str) -> None:
    fact = in_scope(url, scope)
    assert fact.value is None, fact.detail
    assert "internationalised" in fact.detail


@pytest.mark.parametrize(
    ("scope", "url", "inside"),
    [
        ("admin.shop.example", "https://admin.shop.example/x", True),
        ("*.shop.example", "https://admin.shop.example/x", True),
        ("admin.shop.example", "https://\u0430dmin.shop.example/", False),  # no wildcard: outside
        ("b\u00fccher.example", "https://b\u00fccher.example/", True),  # the scope writes the label
        ("*.b\u00fccher.example", "https://shop.b\u00fccher.example/", True),
        ("xn--bcher-kva.example", "https://b\u00fccher.example/", True),
    ],
)
def test_written_labels_and_ascii_hosts_read_as_before(scope: str, url: str, inside: bool) -> None:
    assert in_scope(url, scope).value is inside


def test_a_redirect_to_a_lookalike_is_open_too() -> None:
    url = "https://admin.shop.example/go?next=https://\u0430dmin.shop.example/"
    assert in_scope(url, "*.shop.example").value is None


@pytest.mark.parametrize(
    "earlier",
    [
        "https://\u0430dmin.pay.example/settings",  # through a wildcard over an IDN label
        "https://admin.pay.example/catalog/..%2fsettings",  # inside as a server resolves it only
    ],
)
def test_history_inside_by_one_reading_only_is_open(earlier: str) -> None:
    messages = [
        system(),
        user("Fix the shop's settings."),
        call("1", "goto", {"url": earlier}),
        result("1", "<page>"),
    ]
    f = facts(messages, "fill", {"field": "q", "text": "x"}, labels=LABELS)
    fact = f.fact("history_in_scope('*.pay.example/settings', tool='goto')")
    assert fact.value is None, fact.detail
