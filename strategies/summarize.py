"""`summarize`: replace the oldest share of the window by a model-written summary
(strands' SummarizingConversationManager, plus the Complexity Trap's turn trigger)."""

from __future__ import annotations

import math
from collections.abc import Callable

from pydantic import Field, field_validator

from harness.core import Context, Message, as_summary, tokens_of
from strategies.base import CannotReduce, ContextStrategy, ProactiveParams, commit, register
from strategies.params import NonNegativeInt, PinFirst, PositiveInt
from strategies.split import (
    adjust_split_point_for_tool_pairs,
    apply_pin_first,
    assistant_indices,
    partition_pinned,
)


class SummarizeParams(ProactiveParams):
    #: Share of the window summarized on a reduce; clamped to [0.1, 0.8] like strands.
    summary_ratio: float = Field(0.3, allow_inf_nan=False)
    #: Messages kept after the split point (soft: the split only moves forward past tool pairs).
    preserve_recent_messages: NonNegativeInt = 10
    pin_first: PinFirst = 0
    #: LLM-Summary turn trigger (Complexity Trap: N=21): summarize when N+M turns have no summary.
    trigger_turns: PositiveInt | None = None
    #: Turns kept verbatim by the turn trigger (Complexity Trap: M=10).
    keep_turns: NonNegativeInt = 10

    @field_validator("summary_ratio")
    @classmethod
    def _clamp_ratio(cls, value: float) -> float:
        return max(0.1, min(0.8, value))


def summarize_into(ctx: Context, messages: list[Message]) -> Message:
    """One summarizer call turned into the window's summary; any failure becomes CannotReduce."""
    try:
        return as_summary(ctx.summarize(messages))
    except Exception as e:  # R3/R9: every summarizer failure is a failed reduce
        raise CannotReduce(f"summarizer failed: {e}") from e


def _as_is(message: Message) -> Message:
    """The message itself: what the summarizer sees of a message no other stage masked (a module
    function, not a lambda, so that a strategy instance pickles with a saved replay)."""
    return message


def turns_since_summary(messages: list[Message]) -> int:
    """T: assistant messages after the last summary (or in the whole window when there is none)."""
    count = 0
    for m in reversed(messages):
        if m.kind == "summary":
            break
        if m.role == "assistant":
            count += 1
    return count


@register("summarize")
class Summarize(ContextStrategy):
    """Summarize the oldest ``summary_ratio`` of the window into one user message.

    Invariants (checked by tests/properties):
    - on success the window is ``P + [S] + B[k:]``: P the protected messages of ``B[:k]``, S the
      summary (role user, kind summary, text only), ``k >= min(max(1, int(n*r)), n-q)`` and
      ``B[k]`` holds no tool result (or ``k == n``);
    - ``removed_count`` grows by the non-summary messages summarized, only on success;
    - every failure (summarizer error, nothing to summarize, a summary that is not smaller) leaves
      the window and ``removed_count`` unchanged; the summarizer never sees a protected message;
    - with the turn trigger on, after ``apply`` fewer than N+M turns follow the last summary
      (whenever the summary succeeded), plus the call still open at the end of the window, which
      stays after the summary so that no user message answers it (only possible when M = 0).
    """

    source = 'strands-agents SummarizingConversationManager; Complexity Trap trigger (docs/strategies.md 3.4)'

    Params = SummarizeParams
    params: SummarizeParams

    def __init__(self, params: SummarizeParams | None = None) -> None:
        super().__init__(params)
        self._pinned_once = False
        #: Maps a window message to what the summarizer should see (hybrid sets masking's unmask).
        self.unmask: Callable[[Message], Message] = _as_is

    def _core(self, ctx: Context, k: int) -> None:
        window = ctx.messages
        k = adjust_split_point_for_tool_pairs(window, k)
        if not self._pinned_once:
            self._pinned_once = True
            apply_pin_first(window, self.params.pin_first)
        protected, to_summarize = partition_pinned(window, 0, k)
        if not to_summarize:
            raise CannotReduce("Cannot summarize: all messages in summarize range are pinned")
        summary = summarize_into(ctx, [self.unmask(m) for m in to_summarize])
        new = [*protected, summary, *window[k:]]
        if tokens_of(new) >= ctx.tokens:
            raise CannotReduce("summary did not shrink the context")
        commit(ctx, new)

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        n = len(ctx.messages)
        k = min(max(1, math.floor(n * self.params.summary_ratio)), n - self.params.preserve_recent_messages)
        try:
            if k <= 0:
                raise CannotReduce("Cannot summarize: insufficient messages for summarization")
            self._core(ctx, k)
        except CannotReduce as e:
            if e.__cause__ is None and overflow is not None:
                raise CannotReduce(str(e)) from overflow
            raise

    def apply(self, ctx: Context) -> None:
        n_turns = self.params.trigger_turns
        if n_turns is None:
            return
        m_keep = self.params.keep_turns
        if turns_since_summary(ctx.messages) < n_turns + m_keep:
            return
        window = ctx.messages
        k = assistant_indices(window)[-m_keep] if m_keep else len(window)
        if k == len(window) and window[-1].has_use:
            # keep_turns=0 only: a call still open at the end stays after the summary, or a pinned
            # one would be followed by the (user) summary instead of its results. This guard
            # belongs here, not in _core: reduce reaches k == len too (n = 1, q = 0), and there
            # 3.4 and strands summarize that message.
            k -= 1
        try:
            self._core(ctx, k)
        except CannotReduce:
            pass  # R3: the trigger fires again after the next turn
