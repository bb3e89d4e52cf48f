"""`observation_masking`: replace tool outputs older than the last M turns by a one-line
placeholder, keeping the calls and the tool pairs (JetBrains, "The Complexity Trap", 2025)."""

from __future__ import annotations

import re

from harness.context import Context
from harness.messages import Block, Message, ToolResult, rebuild, tokens_of
from strategies.base import CannotReduce, ContextStrategy, StrategyParams, commit, register
from strategies.params import NonNegativeInt
from strategies.split import assistant_indices, is_pinned

PLACEHOLDER_RE = re.compile(r"^Old environment output: \(\d+ lines omitted\)$")


def placeholder(content: str) -> str:
    return f"Old environment output: ({len(content.splitlines())} lines omitted)"


class ObservationMaskingParams(StrategyParams):
    #: Turns whose outputs stay visible (the paper's M = 10).
    keep_turns: NonNegativeInt = 10


@register("observation_masking")
class ObservationMasking(ContextStrategy):
    """Mask every tool output older than the last ``keep_turns`` turns with a placeholder.

    Invariants (checked by tests/properties):
    - the window keeps its length, roles, tool ids, statuses, Text and ToolUse blocks;
    - messages from the cut (the M-th last assistant message) on are untouched; before it, every
      unprotected non-task result message holds only placeholders (kind ``placeholder``);
    - ``removed_count`` never changes; a second ``apply`` is a no-op;
    - ``unmask`` returns the original of any message this instance masked.
    """

    Params = ObservationMaskingParams
    params: ObservationMaskingParams

    def __init__(self, params: ObservationMaskingParams | None = None) -> None:
        super().__init__(params)
        self._originals: dict[str, tuple[Message, Message]] = {}

    def _masked(self, window: list[Message]) -> tuple[list[Message], dict[str, tuple[Message, Message]]] | None:
        """The window with old outputs masked and the (masked, original) pairs by first tool id, or
        None when nothing is maskable."""
        m_keep = self.params.keep_turns
        turns = assistant_indices(window)
        if len(turns) <= m_keep:
            return None
        cut = turns[-m_keep] if m_keep else len(window)
        new = list(window)
        masked_pairs: dict[str, tuple[Message, Message]] = {}
        for j in range(cut):
            m = window[j]
            if m.role != "user" or not m.has_result or m.kind == "task" or is_pinned(window, j):
                continue
            blocks: list[Block] = []
            touched = False
            for b in m.blocks:
                if isinstance(b, ToolResult) and not PLACEHOLDER_RE.match(b.content):
                    b, touched = ToolResult(b.tool_use_id, b.status, placeholder(b.content)), True
                blocks.append(b)
            if touched:
                masked = rebuild(m, blocks, kind="placeholder")
                first_id = next(b.tool_use_id for b in m.blocks if isinstance(b, ToolResult))
                known = self._originals.get(first_id)
                masked_pairs[first_id] = (masked, known[1] if known is not None else m)
                new[j] = masked
        return (new, masked_pairs) if masked_pairs else None

    def _commit(self, ctx: Context, new: list[Message], pairs: dict[str, tuple[Message, Message]]) -> None:
        commit(ctx, new)
        self._originals.update(pairs)

    def unmask(self, m: Message) -> Message:
        """The original of a message this instance masked; any other message as it is."""
        for b in m.blocks:
            if isinstance(b, ToolResult):
                entry = self._originals.get(b.tool_use_id)
                if entry is not None and entry[0].blocks == m.blocks:
                    return entry[1]
                break
        return m

    def apply(self, ctx: Context) -> None:
        masked = self._masked(ctx.messages)
        if masked is not None:
            self._commit(ctx, *masked)

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        masked = self._masked(ctx.messages)
        if masked is None:
            raise CannotReduce("nothing to mask before the last turns") from overflow
        if tokens_of(masked[0]) >= ctx.tokens:
            raise CannotReduce("masking would not lower the tokens") from overflow
        self._commit(ctx, *masked)
