"""The state one agent of a session replay carries between turns: its window (strategy, context, prompt-cache
streams and compaction bookkeeping: `harness.sim.window.AgentWindow`), its loop detector, its script
pointer, and its per-step error counters."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.core.context import Context
from harness.sim.loops import StuckDetector
from harness.sim.model import Pointer
from harness.sim.window import AgentWindow
from strategies.base import ContextStrategy

__all__ = ["AgentState"]


@dataclass(slots=True)
class AgentState:
    """One agent of a session (a single-agent session has one, an alert chain five)."""

    name: str
    window: AgentWindow
    detector: StuckDetector
    pointer: Pointer
    #: Contract errors in a row on the current step (reset by a valid call).
    contract_failures: int = 0
    #: step id -> timeouts so far (retryable up to the runtime's limit).
    timeouts: dict[str, int] = field(default_factory=dict)
    #: step id -> valid calls so far (a scripted fault fails the first ``fails`` of them).
    valid_attempts: dict[str, int] = field(default_factory=dict)

    @property
    def strategy(self) -> ContextStrategy:
        """The agent's strategy instance."""
        return self.window.strategy

    @property
    def ctx(self) -> Context:
        """The agent's context."""
        return self.window.ctx
