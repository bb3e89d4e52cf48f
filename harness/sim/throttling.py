"""Throttling of model calls (docs/model.md 5) and the retry policy that answers it.

A call is throttled by the profile's ``p_throttle`` draw or by its ``rpm`` / ``tpm`` limits over the
last simulated minute; the policy then backs off on the simulated clock and tries again, as strands'
``ModelRetryStrategy`` does, until its attempts run out.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from harness.core.crn import u
from harness.sim.clock import SimClock
from harness.sim.profiles import Profile

__all__ = ["RetryPolicy", "Throttle", "Throttled"]


class Throttled(Exception):
    """Every attempt of a model call was throttled."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential back-off in the shape of strands' ``ModelRetryStrategy`` (strands-agents 1.62,
    ``strands/event_loop/_retry.py``): ``max_attempts`` attempts in all, the i-th retry after
    ``initial_delay_s * 2**i`` seconds, capped at ``max_delay_s``. The defaults are strands' (6, 4 s,
    240 s), so a call that is always throttled waits 4, 8, 16, 32 and 64 s and then fails."""

    max_attempts: int = 6
    initial_delay_s: float = 4.0
    max_delay_s: float = 240.0

    def delay_s(self, retry: int) -> float:
        """Seconds to sleep before retry number ``retry`` (0-based)."""
        return min(self.initial_delay_s * 2**retry, self.max_delay_s)


class Throttle:
    """Admits the model calls of one session, backing off on its clock when a call is throttled."""

    def __init__(self, profile: Profile, seed: int, clock: SimClock, policy: RetryPolicy = RetryPolicy()) -> None:
        self.profile = profile
        self.seed = seed
        self.clock = clock
        self.policy = policy
        #: Back-off sleeps taken so far (the ``throttle_retries`` column).
        self.retries = 0
        self._recent: deque[tuple[float, int]] = deque()  # (clock, tokens) of the admitted calls

    def admit(self, kind: str, step_id: str, attempt: int, tokens: int) -> None:
        """Let a call of ``tokens`` prompt tokens through, retrying per the policy; Throttled when no
        attempt gets through."""
        for i in range(self.policy.max_attempts):
            if not self._throttled(kind, step_id, attempt, tokens, i):
                self._recent.append((self.clock.now, tokens))
                return
            if i == self.policy.max_attempts - 1:
                raise Throttled()
            self.clock.advance(self.policy.delay_s(i), "backoff")
            self.retries += 1

    def _throttled(self, kind: str, step_id: str, attempt: int, tokens: int, try_index: int) -> bool:
        p = self.profile
        if p.p_throttle > 0 and u(self.seed, "throttle", step_id, attempt, kind, str(try_index)) < p.p_throttle:
            return True
        if p.rpm is None and p.tpm is None:
            return False
        while self._recent and self._recent[0][0] <= self.clock.now - 60:
            self._recent.popleft()
        return (p.rpm is not None and len(self._recent) >= p.rpm) or (
            p.tpm is not None and sum(t for _, t in self._recent) + tokens > p.tpm)
