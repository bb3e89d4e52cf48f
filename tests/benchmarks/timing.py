"""Timing ratios that hold up on a shared machine.

The two workloads are timed in alternation, so a burst of load from other processes hits both alike,
and each keeps its best time. Each timed sample repeats its workload until the short one has run for
``min_seconds``: a run shorter than the scheduler's time slice is either never preempted or
preempted once, which would make the ratio of a 2 ms and a 4 ms run swing between 2 and 4 when
other processes compete for the cores.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def interleaved_best(repeats: int, short: Callable[[], T], long: Callable[[], T], *,
                     min_seconds: float = 0.05) -> tuple[float, float, T, T]:
    """Best seconds per run of ``short`` and of ``long`` over ``repeats`` alternating samples, and the
    results of their last runs."""
    started = time.perf_counter()
    short()
    loops = max(1, math.ceil(min_seconds / max(time.perf_counter() - started, 1e-9)))
    best = [math.inf, math.inf]
    results: list[T] = []
    for _ in range(repeats):
        results = []
        for i, work in enumerate((short, long)):
            started = time.perf_counter()
            for _ in range(loops):
                result = work()
            best[i] = min(best[i], (time.perf_counter() - started) / loops)
            results.append(result)
    return best[0], best[1], results[0], results[1]
