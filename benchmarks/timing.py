"""The benchmarks' one timer (imports nothing of the project: a benchmark may load older code)."""

from __future__ import annotations

import time


def best(fn, runs: int) -> float:
    """The fastest of `runs` calls of `fn`, in seconds (the least disturbed by the machine)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
