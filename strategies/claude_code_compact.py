"""`claude_code_compact`: Claude Code's auto-compact near the window's end: first clear older tool
outputs, then, if the prompt is still over the threshold, summarize the conversation; stop when it
thrashes.

Sources. Claude Code ships no installable reference, and its thresholds are not an official API:
- Official docs, https://code.claude.com/docs/en/how-claude-code-works ("When context fills up"):
  Claude Code "clears older tool outputs first, then summarizes the conversation if needed".
- The thrash stop, as Claude Code prints it (quoted in anthropics/claude-code issues #48983 and
  #82131; #41796 asks the docs to describe it): "Autocompact is thrashing: the context refilled to
  the limit within 3 turns of the previous compact, 3 times in a row."
- Secondary sources only (readings of the CLI's ``services/compact/autoCompact.ts`` and
  ``microCompact.ts``: Zhang Handong, "Harness engineering from Claude Code", ch. 9; the
  claude-code-source.doccupine.app "Compact Service" page; gentic.news "Claude Code's 3-tier
  compaction"): the threshold is the context window minus ``MAX_OUTPUT_TOKENS_FOR_SUMMARY`` = 20,000
  (the output reserved for the summary) minus ``AUTOCOMPACT_BUFFER_TOKENS`` = 13,000, compared with
  ``>=`` to the current prompt's tokens (system prompt and tools included) at the top of each turn;
  microcompact keeps the 5 most recent tool results and replaces the content of older ones by
  ``[Old tool result content cleared]``; after ``MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES`` = 3 failed
  compactions in a row auto-compact stops for the session. These numbers change between versions.

Params (defaults as above): ``summary_reserve_tokens`` 20,000, ``buffer_tokens`` 13,000 (threshold =
``ctx.window_tokens`` - both), ``keep_tool_results`` 5, ``thrash_turns`` 3, ``thrash_limit`` 3,
``max_failures`` 3 (Claude Code hard-codes the last three).

What this models, before each model call when ``ctx.prompt_tokens >= threshold``:
1. **Clear** (microcompact): every tool result older than the newest ``keep_tool_results`` results
   gets the placeholder as its content (ids and statuses kept; message kind ``placeholder``).
   Claude Code clears only its own file, shell, search and web tools; here every tool is clearable.
2. **Summarize** (full compact), only if the prompt is still at or over the threshold: the
   conversation (results already cleared) goes to ``ctx.summarize`` and the window becomes the
   summary alone (plus protected messages, and a call still waiting for its results after it).
   What the summary keeps is the mock model's decision; the files, CLAUDE.md and plan Claude Code
   re-attaches after a compaction, and its ``compact_boundary`` marker, are not modelled.
A *refill* is the trigger firing again within ``thrash_turns`` model calls of the previous summary;
at the ``thrash_limit``-th refill in a row (a later refill resets the count) nothing is compacted any
more, as after ``max_failures`` failed summaries in a row (summarizer error, empty reply, a summary
not smaller, nothing to summarize). The session then goes on without compacting until the prompt
overflows the window, and the runtime's overflow handling applies: ``reduce`` raises CannotReduce.
Before that, ``reduce`` (Claude Code's reactive compact after a prompt-too-long error) runs the same
two stages regardless of the threshold.
ctxbench pins have no Claude Code counterpart: a protected message is never cleared nor summarized.
"""

from __future__ import annotations

from harness.core import Block, Context, Message, ToolResult, rebuild, tokens_of
from strategies.base import CannotReduce, ContextStrategy, StrategyParams, commit, register
from strategies.params import NonNegativeInt, PositiveInt
from strategies.split import is_pinned
from strategies.summarize import summarize_into

#: What a cleared tool result holds (secondary sources; Claude Code's TOOL_RESULT_CLEARED_MESSAGE).
CLEARED = "[Old tool result content cleared]"


class ClaudeCodeCompactParams(StrategyParams):
    #: Output reserved for the summary (MAX_OUTPUT_TOKENS_FOR_SUMMARY).
    summary_reserve_tokens: NonNegativeInt = 20_000
    #: How far below the effective window auto-compact fires (AUTOCOMPACT_BUFFER_TOKENS).
    buffer_tokens: NonNegativeInt = 13_000
    #: Newest tool results left whole by the clearing stage.
    keep_tool_results: NonNegativeInt = 5
    #: A refill within this many model calls of the previous summary is rapid.
    thrash_turns: PositiveInt = 3
    #: Rapid refills in a row after which auto-compact stops.
    thrash_limit: PositiveInt = 3
    #: Failed summaries in a row after which auto-compact stops (MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES).
    max_failures: PositiveInt = 3


def cleared(window: list[Message], keep: int) -> list[Message]:
    """The window with every unprotected tool result older than the newest ``keep`` cleared; messages
    with nothing to clear stay the same objects."""
    positions = [(i, j) for i, m in enumerate(window) for j, b in enumerate(m.blocks) if isinstance(b, ToolResult)]
    old = positions[: max(0, len(positions) - keep)]
    to_clear: dict[int, set[int]] = {}
    for i, j in old:
        block = window[i].blocks[j]
        assert isinstance(block, ToolResult)
        if block.content != CLEARED and not is_pinned(window, i):
            to_clear.setdefault(i, set()).add(j)
    out = list(window)
    for i, js in to_clear.items():
        blocks: list[Block] = [
            ToolResult(b.tool_use_id, b.status, CLEARED) if j in js and isinstance(b, ToolResult) else b
            for j, b in enumerate(window[i].blocks)
        ]
        out[i] = rebuild(window[i], blocks, kind="placeholder")
    return out


@register("claude_code_compact")
class ClaudeCodeCompact(ContextStrategy):
    """Claude Code's auto-compact: clear old tool outputs, then summarize, then stop if it thrashes.

    Invariants (checked by tests/properties and tests/strategies/test_claude_code_compact.py):
    - nothing happens while ``ctx.prompt_tokens`` is below the threshold (``ctx.window_tokens -
      summary_reserve_tokens - buffer_tokens``);
    - clearing keeps the window's length, roles, ids, statuses and other blocks; it rewrites only
      result contents, to exactly ``CLEARED`` (kind ``placeholder``), outside the newest
      ``keep_tool_results`` results and protected messages;
    - a summary leaves the protected messages, the summary, and a call still waiting at the end;
    - the window stays well-formed and its token total exact; ``removed_count`` never decreases;
      every pinned message stays, the same object;
    - a call still waiting for its result stays the window's last message, never cleared nor
      summarized; a cleared or summarized result never comes back whole;
    - after a firing the prompt is below the threshold, unless the summary failed or what a summary
      cannot remove (protected messages, the open call, the summary, the overhead) is over it;
    - after ``thrash_limit`` rapid refills in a row, or ``max_failures`` failed summaries in a row,
      no hook changes the window again and ``reduce`` raises CannotReduce;
    - ``reduce`` lowers the tokens, or raises CannotReduce leaving the window and ``removed_count``
      as they were.
    """

    source = 'Claude Code auto-compact (docs and secondary sources)'
    sdk = True

    Params = ClaudeCodeCompactParams
    params: ClaudeCodeCompactParams

    def __init__(self, params: ClaudeCodeCompactParams | None = None) -> None:
        super().__init__(params)
        #: Model calls seen (before_call runs once per call).
        self._turn = 0
        self._last_summary_turn: int | None = None
        self._rapid_refills = 0
        self._failures = 0
        #: Why auto-compact stopped for this session, once it has.
        self.stopped: str | None = None

    def threshold(self, ctx: Context) -> int:
        return ctx.window_tokens - self.params.summary_reserve_tokens - self.params.buffer_tokens

    def _summarized(self, ctx: Context, window: list[Message]) -> list[Message]:
        """Protected messages, the summary of the rest, and an open call at the end after it."""
        open_call = window[-1] if window and window[-1].role == "assistant" and window[-1].has_use else None
        body = window[:-1] if open_call is not None else window
        protected = [m for i, m in enumerate(body) if is_pinned(window, i)]
        rest = [m for i, m in enumerate(body) if not is_pinned(window, i)]
        if not rest:
            raise CannotReduce("nothing to summarize: every message is protected")
        new = [*protected, summarize_into(ctx, rest), *([open_call] if open_call is not None else [])]
        if tokens_of(new) >= tokens_of(window):
            raise CannotReduce("the summary is not smaller than what it replaces")
        return new

    def _compact(self, ctx: Context) -> str | None:
        """Clear, then summarize if still at the threshold; commit. The summary's failure, if any."""
        threshold = self.threshold(ctx)
        window = cleared(list(ctx.messages), self.params.keep_tool_results)
        failure = None
        if ctx.prompt_overhead + tokens_of(window) >= threshold or tokens_of(window) >= ctx.tokens:
            try:
                window = self._summarized(ctx, window)
                self._failures = 0
                self._last_summary_turn = self._turn
            except CannotReduce as e:
                failure = str(e)
                self._failures += 1
                if self._failures >= self.params.max_failures:
                    self.stopped = f"{self._failures} failed compactions in a row: {failure}"
        if len(window) != len(ctx.messages) or any(a is not b for a, b in zip(window, ctx.messages, strict=True)):
            commit(ctx, window)
        return failure

    def before_call(self, ctx: Context) -> None:
        self._turn += 1
        if self.stopped is not None or ctx.prompt_tokens < self.threshold(ctx):
            return
        last = self._last_summary_turn
        if last is not None and self._turn - last <= self.params.thrash_turns:
            self._rapid_refills += 1
            if self._rapid_refills >= self.params.thrash_limit:
                self.stopped = (
                    f"autocompact is thrashing: the context refilled to the threshold within "
                    f"{self.params.thrash_turns} turns of the previous compact, {self._rapid_refills} times in a row"
                )
                return
        else:
            self._rapid_refills = 0
        self._compact(ctx)

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        if self.stopped is not None:
            raise CannotReduce(self.stopped) from overflow
        before = list(ctx.messages)
        tokens = ctx.tokens
        failure = self._compact(ctx)
        if ctx.tokens < tokens:
            return
        if len(before) != len(ctx.messages) or any(a is not b for a, b in zip(before, ctx.messages, strict=True)):
            commit(ctx, before)  # a clearing that did not lower the tokens: undo it (R2)
        raise CannotReduce(failure or "nothing to clear or summarize") from overflow
