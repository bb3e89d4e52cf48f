"""`condense`: OpenHands' LLMSummarizingCondenser over messages: keep the first ``keep_first``,
summarize the forgotten middle, keep about the newest half, with a hard reset as the last resort."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import Field, StrictInt, model_validator

from harness.core import Block, Context, Message, Text, ToolResult, rebuild, tokens_of
from strategies.base import CannotReduce, ContextStrategy, StrategyParams, commit, register
from strategies.params import NonNegativeInt, PositiveInt
from strategies.split import cut_points, partition_pinned
from strategies.summarize import summarize_into

#: Marks where a hard reset clipped the middle out of a long text sent to the summarizer.
NOTICE = "\n<clipped>\n"


class CondenseParams(StrategyParams):
    max_size: PositiveInt = 240
    keep_first: NonNegativeInt = 1
    max_tokens: PositiveInt | None = None
    minimum_progress: float = Field(0.1, gt=0, lt=1)
    #: Each retry is one summarizer call (OpenHands: 5); past 100 a failing summarizer only spins.
    hard_reset_retries: StrictInt = Field(5, ge=1, le=100)
    hard_reset_scaling: float = Field(0.8, gt=0, lt=1)

    @model_validator(mode="after")
    def _room_for_a_tail(self) -> CondenseParams:
        if self.max_size // 2 - self.keep_first - 1 <= 0:
            raise ValueError(
                f"max_size//2 - keep_first - 1 must be > 0 (max_size={self.max_size}, keep_first={self.keep_first})"
            )
        return self


def clip(text: str, cap: int) -> str:
    """``text`` cut to ``cap`` characters around NOTICE (only the summarizer's copy is clipped)."""
    if len(text) <= cap:
        return text
    if cap <= len(NOTICE):
        return NOTICE[:cap]
    room = cap - len(NOTICE)
    return text[: math.ceil(room / 2)] + NOTICE + (text[-(room // 2) :] if room // 2 else "")


def clipped_copy(m: Message, cap: int) -> Message:
    blocks: list[Block] = []
    changed = False
    for b in m.blocks:
        if isinstance(b, Text) and len(b.text) > cap:
            b, changed = Text(clip(b.text, cap)), True
        elif isinstance(b, ToolResult) and len(b.content) > cap:
            b, changed = ToolResult(b.tool_use_id, b.status, clip(b.content, cap)), True
        blocks.append(b)
    return rebuild(m, blocks) if changed else m


def token_tail(messages: list[Message], need: int) -> int:
    """How many of the newest messages may stay so that dropping the rest frees more than ``need``."""
    if not messages:
        return 0
    if need <= 0:
        return len(messages)
    total = 0
    for p, m in enumerate(messages, start=1):
        total += m.tokens
        if total > need:
            return len(messages) - p
    return 0


@dataclass(frozen=True, slots=True)
class _Reasons:
    request: bool
    tokens: bool
    events: bool

    @property
    def hard(self) -> bool:
        return self.request or self.tokens

    @property
    def any(self) -> bool:
        return self.request or self.tokens or self.events


@register("condense")
class Condense(ContextStrategy):
    """Summarize the middle of the window, keeping the head and about the newest half.

    Invariants (checked by tests/properties):
    - a normal condensation gives ``B[:s] + P + [S] + B[e:]`` with ``s >= keep_first``, s and e cut
      points (no tool call open), at least ``minimum_progress`` of the window summarized, the
      summary at index ``s + len(P)``; an events-only success with no pins leaves at most
      ``max_size//2`` messages;
    - a hard reset gives ``protected(B) + [S]`` after at most ``hard_reset_retries`` summarizer
      calls with shrinking caps on the copies sent;
    - a soft trigger with nothing to condense changes nothing; ``reduce`` lowers tokens or raises
      CannotReduce with the window unchanged; ``removed_count`` counts summarized non-summaries.
    """

    source = 'OpenHands LLMSummarizingCondenser (docs/strategies.md 3.5)'

    Params = CondenseParams
    params: CondenseParams

    def _effective_limit(self, ctx: Context) -> int:
        cap = self.params.max_tokens
        return ctx.window_tokens if cap is None else min(cap, ctx.window_tokens)

    def _reasons(self, ctx: Context, request: bool) -> _Reasons:
        return _Reasons(
            request=request,
            tokens=ctx.tokens > self._effective_limit(ctx),
            events=len(ctx.messages) > self.params.max_size,
        )

    def _normal(self, ctx: Context, reasons: _Reasons) -> bool:
        """Try one normal condensation; True when committed."""
        window = list(ctx.messages)
        n, keep_first = len(window), self.params.keep_first
        tails = []
        if reasons.request:
            tails.append(n // 2 - keep_first - 1)
        if reasons.events:
            tails.append(self.params.max_size // 2 - keep_first - 1)
        if reasons.tokens:
            eff = self._effective_limit(ctx)
            tails.append(token_tail(window[keep_first:], ctx.tokens - eff // 2))
        tail = min(tails)
        points = cut_points(window)

        def find_next(target: int) -> int | None:
            if target > n:
                return None
            return next((i for i in range(max(target, 0), n + 1) if points[i]), None)

        s, e = find_next(keep_first), find_next(n - tail)
        if s is None or e is None or e <= s:
            return False
        protected, forgotten = partition_pinned(window, s, e)
        if not forgotten or len(forgotten) < self.params.minimum_progress * n:
            return False
        try:
            summary = summarize_into(ctx, forgotten)
        except CannotReduce:
            return False
        new = [*window[:s], *protected, summary, *window[e:]]
        if tokens_of(new) >= tokens_of(window):
            return False
        commit(ctx, new)
        return True

    def _hard_reset(self, ctx: Context) -> None:
        window = list(ctx.messages)
        protected, forgotten = partition_pinned(window)
        # A protected call still open at the end goes after the summary, not before it.
        trailing = [window[-1]] if window and window[-1].has_use and protected and protected[-1] is window[-1] else []
        if trailing:
            protected = protected[:-1]
        if not forgotten:
            raise CannotReduce("hard reset: every message is protected")
        longest = max(
            (
                len(b.text) if isinstance(b, Text) else len(b.content)
                for m in forgotten
                for b in m.blocks
                if isinstance(b, Text | ToolResult)
            ),
            default=0,
        )
        cap: int | None = None
        last_error: BaseException | None = None
        for attempt in range(self.params.hard_reset_retries):
            if attempt == 1:
                cap = int(longest * self.params.hard_reset_scaling)
            elif attempt > 1 and cap is not None:
                cap = int(cap * self.params.hard_reset_scaling)
            sent = forgotten if cap is None else [clipped_copy(m, cap) for m in forgotten]
            try:
                summary = summarize_into(ctx, sent)
            except CannotReduce as e:
                last_error = e
                continue
            new = [*protected, summary, *trailing]
            if tokens_of(new) < ctx.tokens:
                commit(ctx, new)
                return
            last_error = CannotReduce("summary did not shrink the context")
        raise CannotReduce("hard reset failed") from last_error

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        if self._normal(ctx, self._reasons(ctx, request=True)):
            return
        try:
            self._hard_reset(ctx)
        except CannotReduce as e:
            raise CannotReduce(f"condense: {e}") from (e.__cause__ or overflow)

    def before_call(self, ctx: Context) -> None:
        reasons = self._reasons(ctx, request=False)
        if not reasons.any or self._normal(ctx, reasons) or not reasons.hard:
            return
        try:
            self._hard_reset(ctx)
        except CannotReduce:
            pass  # R3: the model call proceeds and may overflow; reduce then tries again
