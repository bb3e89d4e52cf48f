"""One agent's context window under its strategy, as a runtime keeps it from call to call: the one window
engine that both the simulated replay (`harness.sim.kernel`) and the accounting replay of recorded
sessions (`harness.sim.recorded`) drive, so that a strategy is hooked, fitted, counted and billed the
same way in both (docs/model.md 5).

What it does, in the runtime's order: every message goes through the strategy's ``on_append`` into the
window (`AgentWindow.append`); a hook runs on the context and, when it took tokens out, counts as a
compaction (with ``thrash`` when it follows the previous one within `THRASH_TURNS` turns;
`AgentWindow.hook`); before a call, the strategy reduces until the prompt and the output reserve fit,
each overflow costing a round trip on the clock (`AgentWindow.fit`); the call is then sent from the
window, which says from which message on it changed since the previous call (prompt caching compares from
there; an edit inside what that call sent is a cache-breaking edit) and how many tokens were freed since
(`AgentWindow.sending`). What the call then says is the caller's: a mock decision, or the recorded reply.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message
from harness.sim.billing import PromptCache
from harness.sim.clock import SimClock
from harness.sim.metrics import THRASH_TURNS, Tally
from harness.sim.profiles import Profile
from strategies.base import CannotReduce, ContextStrategy

__all__ = ["AgentWindow", "Hook"]

#: How a hook is run on the window: ``run(ctx, *args)`` and its counting (`AgentWindow.hook`, or a caller's
#: wrapper around it that also logs what the hook changed).
Hook = Callable[..., None]


@dataclass(slots=True)
class AgentWindow:
    """One agent's context under its strategy, with the state the runtime keeps between its calls."""

    strategy: ContextStrategy
    ctx: Context
    profile: Profile
    #: The system prompt's tokens, sent before the window with every call.
    system_tokens: int
    #: The session's counters (shared by its agents) and clock.
    tally: Tally
    clock: SimClock
    #: The two prompt-cache streams of the agent: its own calls, and its summary calls.
    agent_cache: PromptCache
    summary_cache: PromptCache
    #: Messages the agent's previous call sent (an edit below this breaks the cached prefix).
    sent: int = 0
    #: Tokens compactions freed since the agent's previous call (the next call's ``tokens_freed``).
    freed_since_call: int = 0
    #: The turn of the agent's latest compaction (None: none yet), for ``thrash``.
    last_compaction_turn: int | None = None

    @classmethod
    def open(cls, strategy: ContextStrategy, profile: Profile, *, system_tokens: int,
             summarizer: Callable[[list[Message]], Message], tally: Tally, clock: SimClock) -> AgentWindow:
        """An empty window for ``strategy`` (a fresh instance: strategies keep per-session state) under
        ``profile``; ``summarizer`` makes the summary message of a summarizing strategy's call."""
        ctx = Context(window_tokens=profile.window_tokens, summarizer=summarizer, prompt_overhead=system_tokens)
        return cls(strategy=strategy, ctx=ctx, profile=profile, system_tokens=system_tokens, tally=tally, clock=clock,
                   agent_cache=PromptCache(profile, system_tokens),
                   summary_cache=PromptCache(profile, profile.summarizer_prompt_tokens))

    def append(self, message: Message) -> Message:
        """Add ``message`` through the strategy's ``on_append``; the message the window now holds."""
        appended = self.strategy.on_append(self.ctx, message)
        self.ctx.messages.append(appended)
        return appended

    def hook(self, run: Hook, *args: Any) -> None:
        """Run a strategy hook on the context (``run(ctx, *args)``), counted as a compaction when it took
        tokens out of the window."""
        window = self.ctx.messages
        before = window.tokens
        run(self.ctx, *args)
        if window.tokens < before:
            self._compacted(before - window.tokens)

    def _compacted(self, freed: int) -> None:
        t = self.tally
        t.compactions += 1
        t.tokens_freed += freed
        self.freed_since_call += freed
        turn = t.turns
        if self.last_compaction_turn is not None and turn - self.last_compaction_turn <= THRASH_TURNS:
            t.thrash += 1
        self.last_compaction_turn = turn

    def fit(self, hook: Callable[..., None] | None = None) -> int | None:
        """Reduce until the prompt and the output reserve fit the window: each overflow is counted and
        costs a round trip on the clock, then the strategy's ``reduce`` runs (through ``hook``, default
        `hook`). The prompt's tokens; None when the strategy cannot reduce (the call cannot be sent)."""
        p = self.profile
        run_hook = hook or self.hook
        while True:
            prompt = self.system_tokens + self.ctx.tokens
            if prompt + p.max_output_reserve <= p.window_tokens:
                return prompt
            self.tally.overflow_events += 1
            self.clock.advance(p.base_s, "overflow")
            try:
                run_hook(self.strategy.reduce, ContextOverflow(prompt, p.window_tokens))
            except CannotReduce:
                return None

    def sending(self) -> tuple[int | None, int]:
        """Before a call is billed: the lowest index changed since the previous call (prompt caching
        compares from there), counted as a cache-breaking edit when it lies inside what that call sent;
        and the tokens freed since then, which the call's row carries."""
        window = self.ctx.messages
        touched = window.take_touched()
        if touched is not None and touched < self.sent:
            self.tally.cache_breaking_edits += 1
        self.sent = len(window)
        freed, self.freed_since_call = self.freed_since_call, 0
        return touched, freed
