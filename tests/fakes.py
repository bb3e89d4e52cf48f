"""Deterministic test doubles shared by unit, property and parity tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness.core.messages import Message, Text, ToolUse

Mode = Literal["ok", "fail", "empty", "huge", "fixed"]


class SummarizerFailed(RuntimeError):
    pass


@dataclass
class FakeSummarizer:
    """Returns an assistant reply ``"SUMMARY <call#>"`` (or ``fixed_text``), and records every call.

    Modes: ``ok``; ``fail`` raises; ``empty`` returns a reply with no Text block (a summarizer
    failure by R9); ``huge`` returns a reply far larger than any window; ``fixed`` returns
    ``fixed_text`` every time. ``fail_first`` makes the first n calls fail, then behaves per mode.
    """

    mode: Mode = "ok"
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
