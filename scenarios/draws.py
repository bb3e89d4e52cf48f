"""Deterministic random draws for script generators, stable on any machine and Python version.

Everything derives from `random.Random.random()`, the one part of the random module whose sequence
Python guarantees across versions for a given integer seed; choices, integers and lognormals are
computed from it here rather than with library helpers whose algorithms may change.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from statistics import NormalDist
from typing import TypeVar

T = TypeVar("T")
_NORMAL = NormalDist()
BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
HEX = "0123456789abcdef"


def derive_seed(*parts: object) -> int:
    """A 64-bit seed from any parts, through blake2b (never Python's salted ``hash``)."""
    text = "|".join(str(p) for p in parts)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


class Draws:
    """A seeded stream of draws. ``child(name)`` gives an independent stream for a sub-purpose, so
    adding draws to one part of a generator does not shift the others."""

    __slots__ = ("_rng", "seed")

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._rng = random.Random(seed)

    def child(self, *name: object) -> Draws:
        return Draws(derive_seed(self.seed, *name))

    def uniform(self) -> float:
        return self._rng.random()

    def integer(self, low: int, high: int) -> int:
        """Uniform integer in [low, high]."""
        if high < low:
            raise ValueError(f"empty range [{low}, {high}]")
        return low + min(int(self.uniform() * (high - low + 1)), high - low)

    def chance(self, p: float) -> bool:
        return self.uniform() < p

    def choice(self, options: Sequence[T]) -> T:
        if not options:
            raise ValueError("choice from an empty sequence")
        return options[min(int(self.uniform() * len(options)), len(options) - 1)]

    def weighted(self, options: Sequence[T], weights: Sequence[float]) -> T:
        total = sum(weights)
        target = self.uniform() * total
        acc = 0.0
        for option, weight in zip(options, weights, strict=True):
            acc += weight
            if target < acc:
                return option
        return options[-1]

    def shuffled(self, items: Sequence[T]) -> list[T]:
        out = list(items)
        for i in range(len(out) - 1, 0, -1):
            j = self.integer(0, i)
            out[i], out[j] = out[j], out[i]
        return out

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        return self.shuffled(items)[:k]

    def normal(self) -> float:
        # Clamp away from 0 and 1 so inv_cdf stays finite.
        return _NORMAL.inv_cdf(min(max(self.uniform(), 1e-12), 1 - 1e-12))

    def lognormal(self, median: float, sigma: float) -> float:
        return median * math.exp(sigma * self.normal())

    def token(self, n: int, alphabet: str = BASE32) -> str:
        """``n`` characters of ``alphabet`` (a power-of-two size), several from each uniform draw:
        ``random()`` carries 53 random bits, enough for 10 base32 or 13 hex characters."""
        size = len(alphabet)
        bits = size.bit_length() - 1
        if 1 << bits != size:
            return "".join(self.choice(alphabet) for _ in range(n))
        per_draw = 52 // bits
        mask = size - 1
        out: list[str] = []
        while len(out) < n:
            word = int(self.uniform() * (1 << 52))
            for _ in range(min(per_draw, n - len(out))):
                out.append(alphabet[word & mask])
                word >>= bits
        return "".join(out)
