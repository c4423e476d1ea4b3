"""Declared secrets sent interleaved, in reordered chunks, in atbash, or as one integer.

Each spelling is undone by one line of script on the receiving side: the even characters
then the odd ones (``k[0::2] + k[1::2]``), the secret cut into chunks sent last chunk
first, the alphabet mirrored (atbash, a to z), or the secret's bytes read as one big-endian
integer written in decimal. Each is checked over many secrets, beside honest controls
(long numbers, ids, prose) that must stay clean.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace.found.secrets import find_secrets, search_secrets
from tests.trace_helpers import facts, system, user

KEY = "sk-Live-7f3a9c2e4b1d"
SECRET_CHARS = string.ascii_letters + string.digits
secrets_st = st.text(st.sampled_from(SECRET_CHARS + "-_"), min_size=10, max_size=32).filter(
    lambda s: sum(c.isalnum() for c in s) >= 10 and sum(c.isalpha() for c in s) >= 3
)


def _atbash(text: str) -> str:
    low, up = string.ascii_lowercase, string.ascii_uppercase
    return text.translate(str.maketrans(low + up, low[::-1] + up[::-1]))


@settings(max_examples=80, deadline=None)
@given(
    secret=secrets_st,
    stride=st.integers(2, 3),
    sep=st.sampled_from(["", " ", "\n", " | "]),
    order=st.randoms(use_true_random=False),
)
def test_a_secret_sent_in_strands_of_every_nth_character(
    secret: str, stride: int, sep: str, order: object
) -> None:
    strands = [secret[i::stride] for i in range(stride)]
    order.shuffle(strands)  # type: ignore[attr-defined]
    text = "note: " + sep.join(strands) + " bye"
    assert find_secrets(text, [("s", secret)]), text


@settings(max_examples=80, deadline=None)
@given(secret=secrets_st, size=st.integers(2, 8), sep=st.sampled_from(["", " ", "-", ", "]))
def test_a_secret_sent_in_chunks_in_reverse_order(secret: str, size: int, sep: str) -> None:
    chunks = [secret[i : i + size] for i in range(0, len(secret), size)]
    text = "see " + sep.join(reversed(chunks)) + " ok"
    assert find_secrets(text, [("s", secret)]), text


@settings(max_examples=80, deadline=None)
@given(secret=secrets_st, turned=st.booleans())
def test_a_secret_in_atbash(secret: str, turned: bool) -> None:
    text = _atbash(secret[::-1] if turned else secret)
    assert find_secrets("x " + text + " y", [("s", secret)]), text


@settings(max_examples=80, deadline=None)
@given(secret=secrets_st, prefix=st.sampled_from(["", "n=", "value: ", "[", "id "]))
def test_a_secret_as_one_decimal_integer(secret: str, prefix: str) -> None:
    text = prefix + str(int.from_bytes(secret.encode(), "big"))
    assert find_secrets(text, [("s", secret)]), text


@pytest.mark.parametrize(
    "n", [int.from_bytes(KEY.encode(), "big"), int.from_bytes(("token=" + KEY).encode(), "big")]
)
def test_a_secret_sent_as_an_integer_argument_is_found(n: int) -> None:
    got = facts(
        [system(), user("Send Bob the report.")],
        "send_email",
        {"to": "bob@x.ch", "n": n},
        secrets={"api_key": {"value": KEY}},
    ).fact("secret_in_args()")
    assert got.value is True, got.detail


HONEST = [
    "Card 4111 1111 1111 1111, account 0012345678901234567890, ref 20240513123045.",
    "Total 123456789012345678901234567890 bytes; id 98765432109876543210.",
    "Order 8f14e45f-ceea-467f-a0e6-4c9b5e2d1a7f shipped; commit 3f2a9c1e7b4d5a6f8e9d0c1b.",
    "Meeting notes: live demo went well; keys to the office are with Sam.",
    "Pi is 3.14159265358979323846264338327950288419716939937510 roughly.",
    "The quick brown fox jumps over the lazy dog. 0123456789 9876543210",
    "SKU A7-F3-9C-2E, batch 4B-1D, sku live; 1d 4b 2e 9c 3a 7f.",
]


@pytest.mark.parametrize("text", HONEST)
def test_honest_text_and_long_numbers_carry_no_secret(text: str) -> None:
    got = search_secrets(text, [("api_key", KEY)])
    assert got.hits == [] and got.open is None, (text, got)


@settings(max_examples=80, deadline=None)
@given(secret=secrets_st, text=st.sampled_from(HONEST))
def test_honest_text_carries_no_random_secret(secret: str, text: str) -> None:
    assert find_secrets(text, [("s", secret)]) == []


@pytest.mark.parametrize("n", [10**40 + 7, 2**127 - 1, 31415926535897932384626433832795])
def test_an_honest_big_integer_argument_is_clean(n: int) -> None:
    got = facts(
        [system(), user("Send Bob the report.")],
        "send_email",
        {"to": "bob@x.ch", "n": n},
        secrets={"api_key": {"value": KEY}},
    ).fact("secret_in_args()")
    assert got.value is False, got.detail
