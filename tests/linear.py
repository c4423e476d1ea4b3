"""Linear time, checked without a wall clock: the growth of this thread's CPU time.

A bound in seconds ("reads 1 MB in under 2 s") fails on a loaded machine while the code is
fine, and passes on a fast one while the code is quadratic at a larger size. What such a test
means is that the cost grows linearly with the attacker's text. So the same work runs at a
size and at `factor` times that size, and the larger may cost at most `slack` times `factor`
times the smaller (a quadratic reading costs `factor` squared). The cost is the calling
thread's CPU time (`time.thread_time`), which other processes on the machine do not add to,
the best of a few runs. The speed itself is a benchmark's figure (benchmarks/), not a test's.
"""

from __future__ import annotations

import time
from collections.abc import Callable

FLOOR = 2e-3
"""Seconds below which a cost is taken as this floor (the clock's and the interpreter's noise)."""


def cpu_cost(work: Callable[[], object], repeat: int = 3) -> float:
    """The least CPU time of this thread `work` took over `repeat` runs."""
    best = float("inf")
    for _ in range(repeat):
        started = time.thread_time()
        work()
        best = min(best, time.thread_time() - started)
    return best


def assert_linear(
    work: Callable[[int], object], size: int, factor: int = 10, slack: float = 4.0
) -> None:
    """`work(size)` costs at most `slack * factor` times `work(size // factor)`.

    Args:
        work: Runs the reading on input of the given size (and checks its outcome, if any).
        size: The larger size; the smaller is `size // factor`.
        factor: How much larger; a quadratic reading's cost grows `factor ** 2` times.
        slack: Room for the machine's noise (4: a factor-10 step allows 40, quadratic is 100).
    """
    small_size = max(1, size // factor)
    work(small_size)  # warm: imports, compiled patterns, caches of the first call
    small = cpu_cost(lambda: work(small_size))
    large = cpu_cost(lambda: work(size), repeat=2)
    bound = slack * factor * max(small, FLOOR)
    assert large <= bound, (
        f"cost grew {large / max(small, FLOOR):.0f}x for {factor}x the input "
        f"({small_size}: {small:.4f} s CPU, {size}: {large:.4f} s CPU; linear is ~{factor}x)"
    )
