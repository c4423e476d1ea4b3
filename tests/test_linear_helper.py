"""The linear-time check (tests/linear.py) tells linear work from quadratic work."""

from __future__ import annotations

import pytest

from tests.linear import assert_linear


def _linear(n: int) -> int:
    return sum(range(n * 200))


def _quadratic(n: int) -> int:
    total = 0
    for _ in range(n):  # each step rescans a share of the input: n^2 / 100
        for _ in range(n // 100):
            total += 1
    return total


@pytest.mark.parametrize("size", [30_000, 50_000])
def test_a_quadratic_reading_fails_the_check(size: int) -> None:
    with pytest.raises(AssertionError, match="cost grew"):
        assert_linear(_quadratic, size)


def test_a_linear_reading_passes_it() -> None:
    assert_linear(_linear, 20_000)
