"""Billing of model calls (docs/model.md 6): the prompt cache, simulated model seconds and the cost
of each call, summed into the session's tally and written as one ``CallRecord`` per call."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mypy_extensions import mypyc_attr

from harness.build import pickle_frozen_by_fields
from harness.core.crn import z
from harness.core.messages import Message
from harness.sim.clock import SimClock
from harness.sim.metrics import CallKind, CallRecord, Tally
from harness.sim.profiles import Profile

__all__ = ["Billing", "ModelCall", "PromptCache"]


@mypyc_attr(native_class=False)  # pickled whole (`Replay.save`): see harness/build.py
class PromptCache:
    """One cache stream (docs/model.md 6.2): the longest unchanged prefix of the previous prompt,
    counted only above the minimum size and within the TTL; every large prompt writes the rest."""

    def __init__(self, profile: Profile, system_tokens: int) -> None:
        self.profile = profile
        self.system_tokens = system_tokens
        #: The previous prompt's messages and their running token sums (``_sums[i]``: tokens of the
        #: first i), kept up to date from the first changed message on, so that a window that only
        #: grows costs O(new messages) per call, not O(window): linear sessions, not quadratic.
        self._previous: list[Message] = []
        self._sums: list[int] = [0]
        self._last_use: float | None = None

    def account(self, window: Sequence[Message], touched: int | None, now: float) -> tuple[int, int]:
        """(cached, written) tokens of a prompt made of the system prefix and ``window``. ``touched``
        is the first index the strategy may have changed since the last prompt (None: compare all)."""
        prev, sums = self._previous, self._sums
        limit = min(len(prev), len(window))
        same = limit if touched is None else min(limit, touched)
        while same < limit and (window[same] is prev[same] or window[same] == prev[same]):
            same += 1
        prefix = sums[same]
        del prev[same:]
        del sums[same + 1:]
        total = sums[-1]
        for m in window[same:]:
            prev.append(m)
            total += m.tokens
            sums.append(total)
        p = self.profile
        prompt = self.system_tokens + total  # the window's tokens: sums[-1] covers it all now
        if not p.caching or p.cache_min_tokens is None or prompt < p.cache_min_tokens:
            return 0, 0
        cached_prefix = self.system_tokens + prefix
        fresh = self._last_use is not None and now - self._last_use <= p.cache_ttl_s
        cached = 0
        if fresh and cached_prefix >= p.cache_min_tokens:
            cached = cached_prefix - cached_prefix % p.cache_granularity
        self._last_use = now
        return cached, prompt - cached


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCall:
    """One model call as it is billed: who made it, the prompt it sent and what it produced."""

    agent: str
    kind: CallKind
    #: The messages after the system prefix, as the prompt cache compares them.
    window: Sequence[Message]
    #: First index of ``window`` that may differ from the previous prompt (None: compare from 0).
    touched: int | None
    prompt_tokens: int
    output_tokens: int
    step_id: str
    attempt: int
    #: What the call produced (see ``CallRecord.action``).
    action: str
    malformed: str = ""
    #: The decision trace of the call (one entry per needed key).
    trace: Sequence[dict[str, Any]] = ()
    #: Share of the prompt that is raw tool output (the syntax-error curve's noise input).
    noise: float = 0.0
    #: Tokens compactions freed since the agent's previous call.
    tokens_freed: int = 0


@dataclass(slots=True)
class Billing:
    """Bills the model calls of one session replay: cache hits and writes, model seconds on the clock,
    cost, the tally's token sums, and the ``CallRecord`` rows."""

    profile: Profile
    #: The session's seed (the latency draws of its calls).
    seed: int
    clock: SimClock
    tally: Tally
    #: The session's key, which every call row carries.
    scenario: str = field(kw_only=True)
    session_index: int = field(kw_only=True)
    strategy: str = field(kw_only=True)
    calls: list[CallRecord] = field(default_factory=list, kw_only=True)

    def bill(self, call: ModelCall, cache: PromptCache) -> None:
        """Account ``call`` against ``cache`` (the agent's or its summarizer's stream)."""
        cached, written = cache.account(call.window, call.touched, self.clock.now)
        prompt, output = call.prompt_tokens, call.output_tokens
        uncached = prompt - cached
        p = self.profile
        seconds = p.model_seconds(uncached, cached, output, prompt,
                                  z(self.seed, "lat", call.step_id, call.attempt, call.kind))
        cost = p.cost_usd(uncached, cached, written, output)
        t = self.tally
        t.model_calls += 1
        t.input_tokens += prompt
        t.output_tokens += output
        t.cached_input_tokens += cached
        t.cost_usd += cost
        if call.kind == "summary":
            t.summary_calls += 1
            t.summary_cost_usd += cost
        elif call.kind == "agent":
            t.agent_calls += 1
            t.agent_context_tokens_sum += prompt
            t.context_tokens_peak = max(t.context_tokens_peak, prompt)
        self.clock.advance(seconds, "model")
        self.calls.append(CallRecord(
            scenario=self.scenario, session_index=self.session_index, strategy=self.strategy, agent=call.agent,
            call_index=len(self.calls), call_kind=call.kind, step_id=call.step_id, attempt=call.attempt,
            action=call.action, malformed_kind=call.malformed, input_tokens=prompt, cached_input_tokens=cached,
            cache_write_tokens=written, output_tokens=output, context_tokens=prompt - cache.system_tokens,
            noise=round(call.noise, 6), model_s=round(seconds, 6), clock_s=round(self.clock.now, 6), cost_usd=cost,
            tokens_freed=call.tokens_freed, trace=json.dumps(list(call.trace), sort_keys=True, separators=(",", ":")),
        ))


# Compiled (setup.py), a frozen dataclass cannot restore itself from a pickle: see `harness.build`.
pickle_frozen_by_fields(globals())
