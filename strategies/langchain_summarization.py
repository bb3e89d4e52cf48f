"""`langchain_summarization`: LangChain v1's ``SummarizationMiddleware``. Before a model call whose
trigger is met, everything but the last ``keep`` messages becomes one human message that opens with
"Here is a summary of the conversation to date:"; the cut never separates an AI message from its tool
messages.

Primary source: ``langchain/agents/middleware/summarization.py`` in langchain 1.5.2 (the class, its
``before_model``, ``_should_summarize``, ``_determine_cutoff_index``, ``_find_token_based_cutoff``,
``_find_safe_cutoff_point``, ``_create_summary`` and ``_trim_messages_for_summary``), with
``trim_messages`` from langchain-core's ``messages/utils.py``.

What the source does, and how it maps here:

- **State, not the request.** ``before_model`` returns ``RemoveMessage(REMOVE_ALL_MESSAGES)``, the
  summary and the kept messages: the agent's history itself is replaced. So the window is the history;
  ``before_call`` rewrites it (``apply`` does nothing).
- **Units.** LangChain holds one ``ToolMessage`` per tool call. Every count and cut here is made in
  LangChain's units: an assistant message is one AI message, a user message with k tool results is k
  tool messages (plus one human message if it also has text), any other user message is one human
  message. A cut that LangChain would make inside one of our messages rounds forward to the next
  message; only a user message holding both results and text can be cut that way (the runtime never
  builds one).
- **trigger** (required: the source's default ``None`` means "never summarize"; a config must set it,
  and may set it to None explicitly). A ``(kind, value)`` pair, a clause ``{kind: value, ...}`` whose
  kinds must all be met (AND), or a list of either (OR). ``("tokens", N)`` fires at ``prompt >= N``,
  ``("fraction", f)`` at ``prompt >= max(1, int(window * f))``, ``("messages", N)`` at ``N`` or more
  LangChain messages. The prompt is ``ctx.prompt_tokens``: the whole input of the call. The source
  counts with ``count_tokens_approximately`` (about 4 characters a token, 3 extra per message, scaled
  by the last reply's reported usage) over the state's messages only, without the system prompt and
  tool schemas; it also fires when the last AI message's provider-reported ``total_tokens`` reach the
  threshold. Both are approximations of what this measures exactly; ``fraction`` reads the model
  profile's ``max_input_tokens``, here ``ctx.window_tokens``.
- **keep** ``("messages", 20)``: the last 20 LangChain messages; ``("tokens", N)`` or
  ``("fraction", f)``: the shortest suffix of at most N (or ``int(window * f)``) tokens, found by the
  source's binary search (at least the last message). Suffix tokens are our real counts (the overhead
  of a message is counted with its first LangChain message). If the cut lands on a tool message, it
  moves back to the AI message that made the call (keeping more), or, when there is none, forward past
  the tool messages. A cut at 0 does nothing.
- **trim_tokens_to_summarize** 4,000: the summarizer sees at most the last 4,000 tokens of what is
  summarized, whole messages plus the last lines of the message that overflows (``allow_partial``),
  starting at a human message (``start_on="human"``). When no human message fits, the summarizer is
  not called and the summary reads "Previous conversation was too long to summarize." (an agent's
  history is mostly AI and tool messages, so this is common: langchain-ai/langchain#39261). None: no
  trimming.
- **The summary** is a human message, ``"Here is a summary of the conversation to date:\\n\\n"``
  followed by the summarizer's text, stripped. The mock decides what that text keeps.

Not modelled, or different: ``summary_prompt`` (the mock writes summaries); the source's retries and
its overflow retry of the summary call; a summarizer failure, which in the source ends the agent run,
here leaves the window unchanged (hooks never raise). Pins are a ctxbench notion: protected messages
before the cut stay, ahead of the summary, and are never summarized. Values the source accepts but
that are nonsense are rejected: a float token or message count, a negative trim. The middleware has no
answer to an overflow of the main call: ``reduce`` always raises ``CannotReduce``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator

from harness.core import Context, Message, Text, ToolResult
from harness.core.messages import block_text
from harness.core.tokens import MESSAGE_OVERHEAD_TOKENS
from strategies.base import CannotReduce, ContextStrategy, StrategyParams, commit, register
from strategies.params import NonNegativeInt
from strategies.split import partition_pinned
from strategies.summarize import summarize_into

#: ``_build_new_messages``: the summary message's text is this prefix, then the summary.
SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"
#: ``_create_summary`` when trimming leaves nothing to summarize (no summarizer call is made).
TOO_LONG_SUMMARY = "Previous conversation was too long to summarize."
DEFAULT_MESSAGES_TO_KEEP = 20
DEFAULT_TRIM_TOKEN_LIMIT = 4000
KINDS = ("fraction", "tokens", "messages")

#: ``(kind, value)``: the source's ContextSize.
ContextSize = tuple[str, int | float]
#: ``{kind: value}``: the source's TriggerClause (all kinds must be met).
TriggerClause = dict[str, int | float]


def _threshold(kind: Any, value: Any, parameter: str) -> int | float:
    """A trigger or keep value checked like the source's ``_validate_context_size``; its messages."""
    if kind not in KINDS:
        raise ValueError(f"Unsupported context size type {kind} for {parameter}.")
    if isinstance(value, bool):
        raise ValueError(f"{kind} {parameter} value must be numeric, got {value!r}")
    if kind == "fraction":
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"Fraction {parameter} values must be numeric, got {value!r}")
        if not 0 < value <= 1:
            raise ValueError(f"Fractional {parameter} values must be between 0 and 1, got {value}.")
        return value
    if not isinstance(value, int):
        raise ValueError(f"{kind} {parameter} values must be integers, got {value!r}")
    if value <= 0:
        raise ValueError(f"{parameter} thresholds must be greater than 0, got {value}.")
    return value


def _context_size(value: Any, parameter: str) -> ContextSize:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(f"{parameter} must be a (kind, value) pair such as ('tokens', 3000), got {value!r}")
    kind, amount = value
    return (kind, _threshold(kind, amount, parameter))


def _clause(value: Any) -> TriggerClause:
    if isinstance(value, Mapping):
        if not value:
            raise ValueError("trigger clause must specify at least one of 'tokens', 'messages', 'fraction'")
        for key in value:
            if key not in KINDS:
                raise ValueError(f"Unsupported trigger metric: {key!r}")
        return {key: _threshold(key, amount, "trigger") for key, amount in value.items()}
    kind, amount = _context_size(value, "trigger")
    return {kind: amount}


def _is_pair(value: Any) -> bool:
    return isinstance(value, tuple | list) and len(value) == 2 and isinstance(value[0], str)


class LangchainSummarizationParams(StrategyParams):
    #: When to summarize (OR over clauses, AND within one). Required: None means never, as in the
    #: source, whose default it is. Stored as a tuple of clauses.
    trigger: tuple[TriggerClause, ...] | None = Field(...)
    #: How much to keep verbatim after summarizing.
    keep: ContextSize = ("messages", DEFAULT_MESSAGES_TO_KEEP)
    #: Most tokens the summarizer sees (None: all of what is summarized).
    trim_tokens_to_summarize: NonNegativeInt | None = DEFAULT_TRIM_TOKEN_LIMIT

    @field_validator("trigger", mode="before")
    @classmethod
    def _normalize_trigger(cls, value: Any) -> tuple[TriggerClause, ...] | None:
        if value is None:
            return None
        if isinstance(value, Mapping) or _is_pair(value):
            return (_clause(value),)
        if isinstance(value, tuple | list):
            return tuple(_clause(item) for item in value)
        raise ValueError(f"Unsupported trigger type: {type(value).__name__}")

    @field_validator("keep", mode="before")
    @classmethod
    def _check_keep(cls, value: Any) -> ContextSize:
        return _context_size(value, "keep")


# LangChain's messages ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LcUnit:
    """One LangChain message of a window: which of our messages it comes from, its type, its tokens,
    and its tool ids (an AI message's call ids; a tool message's one id)."""

    message: int
    type: Literal["human", "ai", "tool"]
    tokens: int
    tool_ids: frozenset[str]
    #: The first LangChain message of its message (a cut here is a cut between our messages).
    first: bool
    #: The blocks of ours it holds.
    blocks: tuple[Any, ...]


def _block_tokens(m: Message, blocks: Sequence[Any]) -> int:
    return sum(m.meter.measure(block_text(b))[0] for b in blocks)


def lc_units(messages: Sequence[Message]) -> list[LcUnit]:
    """The LangChain messages a window converts to, in order (tool messages before a human part)."""
    units: list[LcUnit] = []
    for i, m in enumerate(messages):
        if m.role == "assistant":
            units.append(LcUnit(i, "ai", m.tokens, m.uses, True, m.blocks))
            continue
        results = [b for b in m.blocks if isinstance(b, ToolResult)]
        if not results:
            units.append(LcUnit(i, "human", m.tokens, frozenset(), True, m.blocks))
            continue
        rest = tuple(b for b in m.blocks if not isinstance(b, ToolResult))
        parts: list[tuple[Literal["human", "tool"], tuple[Any, ...]]] = [("tool", (b,)) for b in results]
        if rest:
            parts.append(("human", rest))
        for k, (kind, blocks) in enumerate(parts):
            # The message's overhead goes with its first LangChain message, so the units sum to m.tokens.
            tokens = _block_tokens(m, blocks) + (MESSAGE_OVERHEAD_TOKENS if k == 0 else 0)
            ids = frozenset(b.tool_use_id for b in blocks if isinstance(b, ToolResult))
            units.append(LcUnit(i, kind, tokens, ids, k == 0, blocks))
    return units


def find_safe_cutoff_point(units: Sequence[LcUnit], cutoff: int) -> int:
    """``_find_safe_cutoff_point``: a cut on a tool message moves back to the AI message that made
    one of the calls it answers (with those that follow it), else forward past the tool messages."""
    if cutoff >= len(units) or units[cutoff].type != "tool":
        return cutoff
    ids: set[str] = set()
    idx = cutoff
    while idx < len(units) and units[idx].type == "tool":
        ids |= units[idx].tool_ids
        idx += 1
    for i in range(cutoff - 1, -1, -1):
        if units[i].type == "ai" and units[i].tool_ids & ids:
            return i
    return idx


def find_safe_cutoff(units: Sequence[LcUnit], messages_to_keep: int) -> int:
    """``_find_safe_cutoff``: keep the last ``messages_to_keep`` LangChain messages."""
    if len(units) <= messages_to_keep:
        return 0
    return find_safe_cutoff_point(units, len(units) - messages_to_keep)


def find_token_based_cutoff(units: Sequence[LcUnit], target: int) -> int:
    """``_find_token_based_cutoff``: the earliest cut whose suffix fits ``target`` tokens (the
    source's binary search, step for step), at least the last message."""
    n = len(units)
    if n == 0:
        return 0
    target = max(target, 1)
    suffix = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + units[i].tokens
    if suffix[0] <= target:
        return 0
    left, right, candidate = 0, n, n
    for _ in range(n.bit_length() + 1):
        if left >= right:
            break
        mid = (left + right) // 2
        if suffix[mid] <= target:
            candidate, right = mid, mid
        else:
            left = mid + 1
    if candidate == n:
        candidate = left
    if candidate >= n:
        if n == 1:
            return 0
        candidate = n - 1
    return find_safe_cutoff_point(units, candidate)


def message_cut(units: Sequence[LcUnit], cutoff: int, n_messages: int) -> int:
    """Our message index for a cut before LangChain message ``cutoff``; inside a message, the next one."""
    if cutoff >= len(units):
        return n_messages
    unit = units[cutoff]
    return unit.message if unit.first else unit.message + 1


def _lines(text: str) -> list[str]:
    """langchain-core's ``_default_text_splitter``: lines, each keeping its newline."""
    splits = text.split("\n")
    return [s + "\n" for s in splits[:-1]] + splits[-1:]


def trim_for_summary(messages: Sequence[Message], max_tokens: int) -> list[Message]:
    """What the summarizer sees: ``trim_messages(strategy="last", start_on="human", allow_partial=True)``
    over ``messages``, in our tokens: the LangChain messages of the longest suffix within
    ``max_tokens``, plus the last lines of the one before when it is a human message, then dropped
    from the front until a human message leads. Messages cut in part are rebuilt from what is kept."""
    units = lc_units(messages)
    n = len(units)
    kept: list[tuple[LcUnit, tuple[Any, ...]]] = []
    if sum(u.tokens for u in units) <= max_tokens:
        kept = [(u, u.blocks) for u in units]
    else:
        # Binary search of _first_max_tokens over the reversed list: the most trailing units that fit.
        suffix_tokens = [0] * (n + 1)
        for c in range(1, n + 1):
            suffix_tokens[c] = suffix_tokens[c - 1] + units[n - c].tokens
        left, right = 0, n
        for _ in range(n.bit_length()):
            if left >= right:
                break
            mid = (left + right + 1) // 2
            if suffix_tokens[mid] <= max_tokens:
                left = mid
            else:
                right = mid - 1
        count = left
        kept = [(u, u.blocks) for u in units[n - count :]]
        over = units[n - count - 1] if count < n else None
        # allow_partial: the overflowing message's last lines; only a human one can lead the result.
        if over is not None and over.type == "human":
            m = messages[over.message]
            splits = list(reversed(_lines("\n".join(block_text(b) for b in over.blocks))))
            lo, hi = 0, len(splits)
            for _ in range(len(splits).bit_length()):
                if lo >= hi:
                    break
                mid = (lo + hi + 1) // 2
                part = "".join(reversed(splits[:mid]))
                if suffix_tokens[count] + m.meter.measure(part)[0] + MESSAGE_OVERHEAD_TOKENS <= max_tokens:
                    lo = mid
                else:
                    hi = mid - 1
            if lo > 0:
                kept.insert(0, (over, (Text("".join(reversed(splits[:lo]))),)))
    while kept and kept[0][0].type != "human":
        kept.pop(0)
    return _regroup(messages, kept)


def _regroup(messages: Sequence[Message], kept: Sequence[tuple[LcUnit, tuple[Any, ...]]]) -> list[Message]:
    """Our messages for kept LangChain messages: the original where all of it is kept, else rebuilt."""
    out: list[Message] = []
    i = 0
    while i < len(kept):
        index = kept[i][0].message
        blocks: list[Any] = []
        while i < len(kept) and kept[i][0].message == index:
            blocks.extend(kept[i][1])
            i += 1
        m = messages[index]
        whole = tuple(blocks) == tuple(sorted(m.blocks, key=lambda b: not isinstance(b, ToolResult)))
        out.append(m if whole else Message.build(m.role, blocks, kind=m.kind, step_id=m.step_id, meter=m.meter))
    return out


# The strategy ----------------------------------------------------------------------------------------


@register("langchain_summarization")
class LangchainSummarization(ContextStrategy):
    """LangChain's SummarizationMiddleware: past the trigger, summarize all but the kept messages.

    Invariants (checked by tests/properties and tests/strategies/test_langchain_summarization.py):
    - when it fires, the window becomes ``P + [S] + B[k:]``: S a human summary (role user, kind
      summary, text ``SUMMARY_PREFIX + summary``), P the protected messages of ``B[:k]``, k the
      source's cut (in LangChain messages, moved back to the AI message of a cut tool message);
      ``B[k]`` is never a tool result answering a call before the cut, so no pair is split; a call
      still open at the end is always kept;
    - it fires only when the trigger is met and k > 0; otherwise, and when the summarizer fails, the
      window and ``removed_count`` are unchanged;
    - after it fires the prompt is below the trigger, unless the kept messages, the pins and the summary
      alone reach it (``keep`` is sized apart from ``trigger`` in the source): then a later call fires
      again;
    - the summarizer sees at most ``trim_tokens_to_summarize`` tokens starting at a human message, and
      never a protected message; ``reduce`` always raises CannotReduce.
    """

    source = 'LangChain 1.5.2 SummarizationMiddleware (agents/middleware/summarization.py)'
    sdk = True

    Params = LangchainSummarizationParams
    params: LangchainSummarizationParams

    def should_summarize(self, ctx: Context, units: Sequence[LcUnit]) -> bool:
        """``_should_summarize`` on the whole prompt: any clause whose every threshold is met."""
        for clause in self.params.trigger or ():
            met = True
            for kind, value in clause.items():
                if kind == "messages":
                    met = len(units) >= value
                else:
                    threshold = value if kind == "tokens" else max(1, int(ctx.window_tokens * value))
                    met = ctx.prompt_tokens >= threshold
                if not met:
                    break
            if met:
                return True
        return False

    def cutoff(self, ctx: Context, units: Sequence[LcUnit]) -> int:
        """``_determine_cutoff_index``, in LangChain messages."""
        kind, value = self.params.keep
        if kind == "messages":
            return find_safe_cutoff(units, int(value))
        target = int(value) if kind == "tokens" else int(ctx.window_tokens * value)
        return find_token_based_cutoff(units, target)

    def _summary(self, ctx: Context, to_summarize: list[Message]) -> Message:
        limit = self.params.trim_tokens_to_summarize
        seen = to_summarize if limit is None else trim_for_summary(to_summarize, limit)
        meter = to_summarize[0].meter
        if not seen:
            text = TOO_LONG_SUMMARY
        else:
            reply = summarize_into(ctx, seen)
            text = "".join(b.text for b in reply.blocks if isinstance(b, Text)).strip()
            meter = reply.meter
        return Message.build("user", [Text(SUMMARY_PREFIX + text)], kind="summary", meter=meter)

    def before_call(self, ctx: Context) -> None:
        window = ctx.messages
        units = lc_units(window)
        if not self.should_summarize(ctx, units):
            return
        cut = message_cut(units, self.cutoff(ctx, units), len(window))
        if cut <= 0:
            return
        protected, to_summarize = partition_pinned(window, 0, cut)
        if not to_summarize:
            return  # everything before the cut is pinned: nothing to summarize
        try:
            summary = self._summary(ctx, to_summarize)
        except CannotReduce:
            return  # R3: the source lets the error end the run; here the window stays as it was
        commit(ctx, [*protected, summary, *window[cut:]])

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        raise CannotReduce("SummarizationMiddleware does not handle a context overflow") from overflow

