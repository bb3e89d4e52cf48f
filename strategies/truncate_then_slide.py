"""`truncate_then_slide`: on overflow, first cut the middle out of the oldest tool result, then
slide (strands' SlidingWindowConversationManager with ``should_truncate_results=True``)."""

from __future__ import annotations

from typing import ClassVar

from harness.core import Block, Message, ToolResult, rebuild
from strategies.base import register
from strategies.sliding_window import SlidingWindow
from strategies.split import is_pinned

#: Characters kept at each end of a truncated tool result (strands' _PRESERVE_CHARS).
PRESERVE = 200
TRUNCATION_TAG = "... [truncated:"


def truncated(content: str) -> str:
    """``content`` with its middle replaced by strands' marker (only for > 2*PRESERVE chars)."""
    removed = len(content) - 2 * PRESERVE
    return f"{content[:PRESERVE]}...\n\n... [truncated: {removed} chars removed] ...\n\n...{content[-PRESERVE:]}"


def truncatable(content: str) -> bool:
    return len(content) > 2 * PRESERVE and TRUNCATION_TAG not in content


@register("truncate_then_slide")
class TruncateThenSlide(SlidingWindow):
    """Sliding window whose reactive reduce first truncates the oldest unprotected tool result.

    Invariants (checked by tests/properties), beside sliding_window's:
    - a reactive ``reduce`` ends in exactly one of: truncate only (same length, one message changed:
      the first unprotected message with a result, each unmarked content over 400 chars replaced by
      ``head200 + marker + tail200``, ids and statuses kept), a trim of the window after at most one
      truncation, or CannotReduce with the window unchanged;
    - ``apply`` and ``before_call`` never truncate; ``reduce`` always lowers tokens when it returns.
    """

    source = 'strands-agents sliding window, tool results truncated first (docs/strategies.md 3.3)'

    truncates: ClassVar[bool] = True

    def _truncate(self, window: list[Message]) -> bool:
        j = next((i for i, m in enumerate(window) if m.has_result and not is_pinned(window, i)), None)
        if j is None:
            return False
        changed = False
        blocks: list[Block] = []
        for block in window[j].blocks:
            if isinstance(block, ToolResult) and truncatable(block.content):
                block = ToolResult(block.tool_use_id, block.status, truncated(block.content))
                changed = True
            blocks.append(block)
        if changed:
            window[j] = rebuild(window[j], blocks)
        return changed
