"""Loop detection over the session's history of loop events (`LoopEvent`: what happened, as the OpenHands
SDK StuckDetector reads its event stream; not the per-turn event log of `harness.sim.events`): the
StuckDetector rules (docs/model.md 7). It reads actions, observations, errors and messages, never the
model's context, and runs before every agent turn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.build import pickle_frozen_by_fields

EventKind = Literal["message", "action", "observation", "error", "condensation"]
Source = Literal["user", "agent", "environment"]
#: Events considered (the last 20, then only those after the last user message).
WINDOW = 20


@dataclass(frozen=True, slots=True)
class LoopEvent:
    """One entry of the detector's history. ``signature`` is what equality compares, ids excluded:
    actions (tool, argument text, thought); observations and errors (tool, text); messages
    (source, text)."""

    kind: EventKind
    source: Source
    signature: tuple[str, ...]

    @classmethod
    def action(cls, tool: str, args_text: str, thought: str) -> LoopEvent:
        return cls("action", "agent", (tool, args_text, thought))

    @classmethod
    def observation(cls, tool: str, text: str) -> LoopEvent:
        return cls("observation", "environment", (tool, text))

    @classmethod
    def error(cls, tool: str, text: str) -> LoopEvent:
        return cls("error", "environment", (tool, text))

    @classmethod
    def message(cls, source: Source, text: str) -> LoopEvent:
        return cls("message", source, (source, text))

    @classmethod
    def condensation(cls) -> LoopEvent:
        return cls("condensation", "environment", ())


@dataclass(frozen=True, slots=True)
class Verdict:
    stuck: bool
    rule: str | None = None
    #: True once when an error streak reaches 3: the runtime appends the nudge message.
    nudge: bool = False


class StuckDetector:
    """Rules, in order: repeat, error_streak (nudge at 3, stuck at 4), monologue, alternation."""

    def __init__(self, *, nudge: bool = True) -> None:
        self.history: list[LoopEvent] = []
        self.nudge_enabled = nudge
        self._nudged: set[tuple[str, ...]] = set()

    def log(self, event: LoopEvent) -> None:
        self.history.append(event)

    def _window(self) -> list[LoopEvent]:
        recent = self.history[-WINDOW:]
        for i in range(len(recent) - 1, -1, -1):
            if recent[i].kind == "message" and recent[i].source == "user":
                return recent[i + 1 :]
        return recent

    def check(self) -> Verdict:
        events = self._window()
        if len(events) < 3:
            return Verdict(False)
        actions = [e for e in events if e.kind == "action"]
        observed = [e for e in events if e.kind in ("observation", "error")]

        if len(actions) >= 4 and len(observed) >= 4:
            last_a, last_o = actions[-4:], observed[-4:]
            if all(a == last_a[0] for a in last_a) and all(o == last_o[0] for o in last_o):
                return Verdict(True, "repeat")

        streak = self._error_streak(events)
        if streak >= 4:
            return Verdict(True, "error_streak")
        nudge = False
        if streak == 3 and self.nudge_enabled:
            latest = actions[-1].signature
            if latest not in self._nudged:
                self._nudged.add(latest)
                nudge = True

        run = 0
        for e in reversed(events):
            if e.kind == "condensation" or (e.kind == "message" and e.source == "environment"):
                continue
            if e.kind == "message" and e.source == "agent":
                run += 1
                if run >= 3:
                    return Verdict(True, "monologue")
                continue
            break

        if len(actions) >= 6 and len(observed) >= 6:
            a, o = actions[-6:], observed[-6:]
            if all(a[i] == a[i + 2] and o[i] == o[i + 2] for i in range(4)):
                return Verdict(True, "alternation")
        return Verdict(False, nudge=nudge)

    @staticmethod
    def _error_streak(events: list[LoopEvent]) -> int:
        """Consecutive (action, result) pairs, newest first, whose action equals the latest action
        and whose result is an error."""
        pairs: list[tuple[LoopEvent, LoopEvent]] = []
        pending: LoopEvent | None = None
        for e in events:
            if e.kind == "action":
                pending = e
            elif e.kind in ("observation", "error") and pending is not None:
                pairs.append((pending, e))
                pending = None
        if not pairs:
            return 0
        latest = pairs[-1][0]
        count = 0
        for action, result in reversed(pairs):
            if action != latest or result.kind != "error":
                break
            count += 1
        return count


# Compiled (setup.py), a frozen dataclass cannot restore itself from a pickle: see `harness.build`.
pickle_frozen_by_fields(globals())
