"""A value's decoded views are kept by its text: each text is decoded once (issue 38).

A policy that declares secrets reads every earlier call's values again at each call (a
secret split between this call and earlier ones, :mod:`guardagent.trace.found.secret_split`): a
thread of n calls decoded O(n^2) values over its life. The views are now kept by content
(:func:`guardagent.trace.found.secrets.read_views`); these tests count the decoding work.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace.found import secrets
from guardagent.trace.found.reading import clear_caches
from tests.trace_helpers import call, facts, result, system, user

KEY = "sk-Live-7f3a9c2e4b1d"


@pytest.fixture
def decoded() -> Iterator[Counter[str]]:
    """How many times each view was decoded (one layer: :func:`decoders.decodings`, or
    :func:`decoders.first_decodings` for a value as written)."""
    seen: Counter[str] = Counter()
    real, real_first = secrets.decodings, secrets.first_decodings

    def counting(view: str) -> Any:
        seen[view] += 1
        return real(view)

    def counting_first(view: str) -> Any:
        seen[view] += 1
        return real_first(view)

    clear_caches()
    with (
        mock.patch.object(secrets, "decodings", counting),
        mock.patch.object(secrets, "first_decodings", counting_first),
    ):
        yield seen
    clear_caches()


@settings(max_examples=50, deadline=None)
@given(
    text=st.text(st.sampled_from("aGVsbG8gd29ybGQ=%41 0123456789abcdef-_."), max_size=60),
    turned=st.booleans(),
)
def test_a_text_is_decoded_once_and_read_alike(text: str, turned: bool) -> None:
    clear_caches()
    with mock.patch.object(secrets, "decodings", wraps=secrets.decodings) as counted:
        first = secrets.read_views(text, turned=turned)
        work = counted.call_count
        again = secrets.read_views(text, turned=turned)
        assert counted.call_count == work  # the second read decodes nothing
    assert first == again == secrets.decoded_views(text, turned=turned)


def test_an_earlier_calls_values_are_decoded_once_across_two_decisions(
    decoded: Counter[str],
) -> None:
    earlier = "note 9c2e4b1d"  # the secret's second half, sent by an earlier call
    thread = [
        system(),
        user("Write to bob@x.ch"),
        call("0", "send_email", {"to": "bob@x.ch", "body": earlier}),
        result("0", "sent"),
    ]
    proposed = {"to": "bob@x.ch", "body": "sk-Live-7f3a"}  # the first half
    one = facts(thread, "send_email", proposed, secrets={"api_key": {"value": KEY}})
    assert one.fact("secret_in_args()").value is True
    assert decoded[earlier] >= 1
    before = decoded[earlier]
    longer = [
        *thread,
        user("And once more please."),
        call("1", "send_email", {"to": "bob@x.ch", "body": "hello"}),
        result("1", "sent"),
    ]
    two = facts(longer, "send_email", proposed, secrets={"api_key": {"value": KEY}})
    fact = two.fact("secret_in_args()")
    assert fact.value is True and "earlier call" in fact.detail, fact.detail
    assert decoded[earlier] == before  # read again, not decoded again
