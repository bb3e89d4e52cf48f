"""What counts tokens: the `Tokenizer` protocol (the counters themselves are in `harness.core.tokens`).

Its own module, kept out of the compiled build (setup.py): a compiled class cannot be a runtime-checkable
protocol.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Tokenizer"]


@runtime_checkable
class Tokenizer(Protocol):
    """Anything that can count the tokens of a text. ``name`` identifies it in run manifests."""

    name: str

    def count(self, text: str) -> int: ...
