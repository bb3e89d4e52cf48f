"""`sliding_window`: keep the last ``window_size`` messages without breaking tool pairs
(strands' SlidingWindowConversationManager with ``should_truncate_results=False``)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field, StrictBool, StrictInt

from harness.core import Context, Message, tokens_of
from strategies.base import CannotReduce, ContextStrategy, ProactiveParams, commit, register
from strategies.params import NonNegativeInt, PinFirst
from strategies.split import apply_pin_first, find_tool_pair_trim_point, find_valid_trim_point, is_pinned

TRIM_FAILED = "Unable to trim conversation context!"


class SlidingWindowParams(ProactiveParams):
    window_size: NonNegativeInt = 40
    #: False: slide only after each turn; True: also before every model call; n: before every n-th call.
    per_turn: StrictBool | Annotated[StrictInt, Field(ge=1)] = False
    pin_first: PinFirst = 0


@register("sliding_window")
class SlidingWindow(ContextStrategy):
    """Keep the newest ``window_size`` messages, trimming only at safe user-message boundaries.

    Invariants (checked by tests/properties):
    - no content changes: the window after a hook is its protected messages before the trim point,
      then a suffix of the old window (a plain suffix when nothing is pinned);
    - tool pairs stay whole: a well-formed window stays well-formed;
    - pinned messages (and their tool-pair partners) are never dropped;
    - after sliding, ``len <= window_size + protected``; with ``window_size == 0`` only protected
      messages remain;
    - ``removed_count`` grows by exactly the non-summary messages dropped;
    - ``reduce`` strictly lowers tokens or raises CannotReduce with the window unchanged.
    """

    source = 'strands-agents SlidingWindowConversationManager (docs/strategies.md 3.2)'

    Params = SlidingWindowParams
    params: SlidingWindowParams
    #: Reactive reduces truncate the oldest tool result before trimming (truncate_then_slide).
    truncates: ClassVar[bool] = False

    def __init__(self, params: SlidingWindowParams | None = None) -> None:
        super().__init__(params)
        self._pinned_once = False
        self._calls = 0

    def _truncate(self, window: list[Message]) -> bool:
        """Step 2 of truncate_then_slide; sliding_window never truncates."""
        return False

    def _step(self, window: list[Message], overflow: BaseException | None) -> None:
        """One strands reduction step on the working list: truncate, or drop before a trim point."""
        w = self.params.window_size
        if w == 0:
            keep = [m for i, m in enumerate(window) if is_pinned(window, i)]
            if len(keep) == len(window):
                raise CannotReduce(TRIM_FAILED)
            window[:] = keep
            return
        if self.truncates and overflow is not None and self._truncate(window):
            return
        start = 2 if len(window) <= w else len(window) - w
        t = find_valid_trim_point(window, start)
        if t is None:
            t = find_tool_pair_trim_point(window, start)
        if t is None:
            raise CannotReduce(TRIM_FAILED)
        keep_mask = [i >= t or is_pinned(window, i) for i in range(len(window))]
        if all(keep_mask):
            raise CannotReduce(TRIM_FAILED)
        window[:] = [m for m, keep in zip(window, keep_mask, strict=True) if keep]

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        if not self._pinned_once:
            self._pinned_once = True
            apply_pin_first(ctx.messages, self.params.pin_first)
        window = list(ctx.messages)
        try:
            while tokens_of(window) >= ctx.tokens:
                self._step(window, overflow)
        except CannotReduce as e:
            if e.__cause__ is None and overflow is not None:
                raise CannotReduce(str(e)) from overflow
            raise
        commit(ctx, window)

    def apply(self, ctx: Context) -> None:
        if len(ctx.messages) > self.params.window_size:
            try:
                self.reduce(ctx)
            except CannotReduce:
                pass  # R3: nothing safe to trim this turn; the next turn tries again

    def before_call(self, ctx: Context) -> None:
        super().before_call(ctx)
        per_turn = self.params.per_turn
        if per_turn is False:
            return
        self._calls += 1
        if per_turn is True or self._calls % per_turn == 0:
            self.apply(ctx)
