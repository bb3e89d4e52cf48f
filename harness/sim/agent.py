"""The state one agent of a session replay carries between turns: its strategy and context, its loop
detector, its two prompt-cache streams, its script pointer, and its per-step error counters."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.core.context import Context
from harness.sim.billing import PromptCache
from harness.sim.loops import StuckDetector
from harness.sim.model import Pointer
from strategies.base import ContextStrategy

__all__ = ["AgentState"]


@dataclass(slots=True)
class AgentState:
    """One agent of a session (a single-agent session has one, an alert chain five)."""

    name: str
    strategy: ContextStrategy
    ctx: Context
    detector: StuckDetector
    agent_cache: PromptCache
    summary_cache: PromptCache
    pointer: Pointer
    #: Contract errors in a row on the current step (reset by a valid call).
    contract_failures: int = 0
    #: step id -> timeouts so far (retryable up to the runtime's limit).
    timeouts: dict[str, int] = field(default_factory=dict)
    #: step id -> valid calls so far (a scripted fault fails the first ``fails`` of them).
    valid_attempts: dict[str, int] = field(default_factory=dict)
    #: Messages the agent's previous call sent (an edit below this breaks the cached prefix).
    sent: int = 0
    #: Tokens compactions freed since the agent's previous call (the next call's ``tokens_freed``).
    freed_since_call: int = 0
    #: The turn of the agent's latest compaction (None: none yet), for ``thrash``.
    last_compaction_turn: int | None = None
