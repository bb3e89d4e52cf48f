"""The simulated clock of one session (docs/model.md 6.1): model time, tool time, back-off sleeps and
the overflow round trips of section 5 advance it; nothing sleeps. Wall time is the harness's own,
measured elsewhere."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["BUCKETS", "ClockBucket", "SimClock"]

#: What a simulated second was spent on: a model call, a tool (or its validation), a back-off sleep
#: after throttling, or the round trip of an overflowed call (docs/model.md 5, 6.1).
ClockBucket = Literal["model", "tool", "backoff", "overflow"]
BUCKETS: tuple[ClockBucket, ...] = ("model", "tool", "backoff", "overflow")


@dataclass(slots=True)
class SimClock:
    """Simulated seconds since the session began, and how many went to each bucket."""

    now: float = 0.0
    spent: dict[ClockBucket, float] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0.0))

    def advance(self, seconds: float, bucket: ClockBucket) -> None:
        """Move the clock on by ``seconds`` spent on ``bucket``."""
        self.now += seconds
        self.spent[bucket] += seconds
