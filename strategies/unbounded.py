"""`unbounded`: the baseline that keeps everything (strands' NullConversationManager)."""

from __future__ import annotations

from harness.core import Context
from strategies.base import CannotReduce, ContextStrategy, register


@register("unbounded")
class Unbounded(ContextStrategy):
    """Keep the whole history; never reduce (the raw-history baseline).

    Invariants: every hook leaves the window, its tokens and ``removed_count`` unchanged;
    ``reduce`` always raises CannotReduce, caused by the overflow.
    """

    source = 'baseline: no management (docs/strategies.md 3.1)'

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        raise CannotReduce("unbounded keeps everything") from overflow
