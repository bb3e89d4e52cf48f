"""Timing ratios that hold up on a shared machine: the two workloads are timed in alternation, so a
burst of load from other processes hits both alike, and each keeps its best time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def interleaved_best(repeats: int, short: Callable[[], T], long: Callable[[], T]) -> tuple[float, float, T, T]:
    """Best seconds of ``short`` and of ``long`` over ``repeats`` alternating runs, and their last results."""
    best = [float("inf"), float("inf")]
    results: list[T] = []
    for _ in range(repeats):
        results = []
        for i, work in enumerate((short, long)):
            started = time.perf_counter()
            results.append(work())
            best[i] = min(best[i], time.perf_counter() - started)
    return best[0], best[1], results[0], results[1]
