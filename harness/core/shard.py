"""The shard ``K/N`` of ``ctxbench run --shard``: the deterministic slice of a run's batches one
process runs, so that N of them, merged, make the tables of one unsharded run.

It lives in the core because the command line reads it, the runner and the run directory select batches by
it, and the manifest records it as its ``"K/N"`` text: one type keeps the spelling and the slicing
rule the same in each of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["SHARD", "Shard", "ShardError"]

T = TypeVar("T")

#: ``K/N``: ASCII digits only (``str.isdigit`` also takes superscripts, which ``int`` refuses), and
#: few enough of them for a 64-bit count (``int`` refuses a number of thousands of digits).
SHARD = re.compile(r"([0-9]{1,18})/([0-9]{1,18})")


class ShardError(ValueError):
    """A text or pair that is no shard ``K/N`` with 1 <= K <= N; the message is the command line's
    one-line error, which names ``--shard`` because that flag is where a shard is written."""


def _refusal(text: str) -> ShardError:
    # Cut so that a pasted wall of digits does not become a wall of error text.
    shown = text if len(text) <= 60 else text[:57] + "..."
    return ShardError(f"--shard: expected K/N with 1 <= K <= N, got {shown!r} (K and N written with the digits 0-9)")


@dataclass(frozen=True, slots=True)
class Shard:
    """The shard ``index``/``count`` (1-based ``index``, 1 <= index <= count) of a run's batches."""

    index: int
    count: int

    def __post_init__(self) -> None:
        # Checked here as well as in `parse`: a shard outside 1..count selects nothing, and a count of
        # zero has no slices at all, so such a value must not exist to be passed on.
        if not 1 <= self.index <= self.count:
            raise _refusal(f"{self.index}/{self.count}")

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``K/N`` as a shard; ShardError unless K and N are decimal numbers (digits 0-9) with 1 <= K <= N."""
        match = SHARD.fullmatch(text)
        if match is None or not 1 <= int(match[1]) <= int(match[2]):
            raise _refusal(text)
        return cls(int(match[1]), int(match[2]))

    def __str__(self) -> str:
        """``K/N``, the text `parse` reads back and the manifest records."""
        return f"{self.index}/{self.count}"

    def select(self, batches: Sequence[T]) -> list[T]:
        """The batches this shard runs: every ``count``-th batch starting at the ``index``-th, so the
        ``count`` shards split the plan into disjoint slices that together hold every batch once."""
        return [b for i, b in enumerate(batches) if i % self.count == self.index - 1]
