"""A deterministic summarizer for property tests of context strategies.

`FakeSummarizer` stands in for the model call behind `Context.summarize`: it answers ``"SUMMARY <n>"``
for its n-th call (or a fixed text), records what it was given, and can be told to fail, to answer
without text (a failure by R9 of docs/strategies.md) or to answer with a text far larger than any window,
so that a strategy's failure paths are exercised as often as its happy path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness.core.messages import Message, Text, ToolUse

#: ``ok`` answers ``"SUMMARY <n>"``; ``fail`` raises `SummarizerFailed`; ``empty`` answers with no Text
#: block; ``huge`` answers with a text far larger than any window; ``fixed`` answers ``fixed_text``.
SummarizerMode = Literal["ok", "fail", "empty", "huge", "fixed"]
#: Every mode but ``fixed``: what a generated test case draws from.
SUMMARIZER_MODES: tuple[SummarizerMode, ...] = ("ok", "fail", "empty", "huge")


class SummarizerFailed(RuntimeError):
    """The error a failing `FakeSummarizer` raises (a model call that went wrong)."""


@dataclass
class FakeSummarizer:
    """Returns an assistant reply ``"SUMMARY <call#>"`` (or ``fixed_text``), and records every call.

    Modes: ``ok``; ``fail`` raises; ``empty`` returns a reply with no Text block (a summarizer
    failure by R9); ``huge`` returns a reply far larger than any window; ``fixed`` returns
    ``fixed_text`` every time. ``fail_first`` makes the first n calls fail, then behaves per mode.
    ``calls`` holds the messages of every call, in order.
    """

    mode: SummarizerMode = "ok"
    fixed_text: str = "SUMMARY"
    fail_first: int = 0
    calls: list[list[Message]] = field(default_factory=list)

    def __call__(self, messages: list[Message]) -> Message:
        self.calls.append(list(messages))
        n = len(self.calls)
        if n <= self.fail_first or self.mode == "fail":
            raise SummarizerFailed(f"summarizer call {n} failed")
        if self.mode == "empty":
            return Message.build("assistant", [ToolUse(f"sum{n}", "noop", {})])
        if self.mode == "huge":
            return Message.build("assistant", [Text("SUMMARY " + "lorem ipsum dolor " * 20_000)])
        if self.mode == "fixed":
            return Message.build("assistant", [Text(self.fixed_text)])
        return Message.build("assistant", [Text(f"SUMMARY {n}")])

    def fresh(self) -> FakeSummarizer:
        """The same fake with no calls recorded (its call numbers start again at 1)."""
        return FakeSummarizer(mode=self.mode, fixed_text=self.fixed_text, fail_first=self.fail_first)
