"""`observation_masking`: replace tool outputs older than the last M turns by a one-line
placeholder, keeping the calls and the tool pairs (JetBrains, "The Complexity Trap", 2025)."""

from __future__ import annotations

import re

from harness.core import Block, Context, Message, ToolResult, rebuild
from strategies.base import CannotReduce, ContextStrategy, StrategyParams, register
from strategies.params import NonNegativeInt
from strategies.split import is_pinned

PLACEHOLDER_RE = re.compile(r"^Old environment output: \(\d+ lines omitted\)$")


def placeholder(content: str) -> str:
    return f"Old environment output: ({len(content.splitlines())} lines omitted)"


class ObservationMaskingParams(StrategyParams):
    #: Turns whose outputs stay visible (the paper's M = 10).
    keep_turns: NonNegativeInt = 10


def _turn_cut(window: list[Message], keep_turns: int) -> int | None:
    """Index of the ``keep_turns``-th last assistant message (len when 0); None if there are not
    more than ``keep_turns`` turns. Scans from the end, so it costs O(messages of M turns)."""
    if keep_turns == 0:
        return len(window) if any(m.role == "assistant" for m in window) else None
    seen = 0
    for i in range(len(window) - 1, -1, -1):
        if window[i].role == "assistant":
            seen += 1
            if seen == keep_turns:
                return i if any(window[j].role == "assistant" for j in range(i)) else None
    return None


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

    source = 'Complexity Trap observation masking (docs/strategies.md 3.6)'

    Params = ObservationMaskingParams
    params: ObservationMaskingParams

    def __init__(self, params: ObservationMaskingParams | None = None) -> None:
        super().__init__(params)
        #: first tool_use_id of a masked message -> (the masked message, its original)
        self._originals: dict[str, tuple[Message, Message]] = {}
        #: (index, message) of the last position already scanned; everything before it is done.
        #: Lets each turn scan only the newly aged messages instead of the whole window.
        self._scanned: tuple[int, Message] | None = None

    def _start(self, window: list[Message]) -> int:
        if self._scanned is not None:
            index, message = self._scanned
            if index < len(window) and window[index] is message:
                return index + 1
        return 0

    def _changes(self, window: list[Message]) -> tuple[int, list[tuple[int, Message, Message]]]:
        """(cut, [(index, masked, original)]) for the unmasked outputs before the cut."""
        cut = _turn_cut(window, self.params.keep_turns)
        if cut is None:
            return 0, []
        changes: list[tuple[int, Message, Message]] = []
        for j in range(self._start(window), cut):
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
                changes.append((j, rebuild(m, blocks, kind="placeholder"), m))
        return cut, changes

    def _commit(self, ctx: Context, cut: int, changes: list[tuple[int, Message, Message]]) -> None:
        # Rewrites in place keep the length and remove nothing (R5: removed_count unchanged).
        for j, masked, original in changes:
            ctx.messages[j] = masked
            first_id = next(b.tool_use_id for b in original.blocks if isinstance(b, ToolResult))
            known = self._originals.get(first_id)
            self._originals[first_id] = (masked, known[1] if known is not None else original)
        if cut > 0:
            self._scanned = (cut - 1, ctx.messages[cut - 1])

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
        cut, changes = self._changes(ctx.messages)
        self._commit(ctx, cut, changes)

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        cut, changes = self._changes(ctx.messages)
        if not changes:
            raise CannotReduce("nothing to mask before the last turns") from overflow
        if sum(masked.tokens - original.tokens for _, masked, original in changes) >= 0:
            raise CannotReduce("masking would not lower the tokens") from overflow
        self._commit(ctx, cut, changes)
