"""Common random numbers: every draw inside a session is a pure function of (session seed, purpose,
step, attempt, ...) through blake2b (docs/model.md 8), so two strategies replaying the same session
get the same draws wherever their situations coincide. Never ``hash()``, never a global RNG."""

from __future__ import annotations

import hashlib
from statistics import NormalDist

_NORMAL = NormalDist()
_SCALE = float(2**64)


def session_seed(root_seed: int, scenario: str, session_index: int) -> int:
    """The seed of one session: the strategy is not part of it, so every strategy replays it."""
    digest = hashlib.blake2b(f"{root_seed}|{scenario}|{session_index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def u(seed: int, purpose: str, step_id: str, attempt: int, *sub: str) -> float:
    """A uniform draw in (0, 1) keyed by its purpose, step and attempt (never by turn number)."""
    text = f"{seed}|{purpose}|{step_id}|{attempt}|{'|'.join(sub)}"
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "big") + 0.5) / _SCALE


def z(seed: int, purpose: str, step_id: str, attempt: int, *sub: str) -> float:
    """A standard normal draw through the inverse CDF of `u` (so its median is 0)."""
    return _NORMAL.inv_cdf(u(seed, purpose, step_id, attempt, *sub))
