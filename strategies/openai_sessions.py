"""The OpenAI Agents SDK's session memory: `openai_trimming` and `openai_summarizing` (the cookbook's
TrimmingSession and SummarizingSession, with ``SessionSettings.limit``) and `openai_compaction`
(Responses compaction, server-side and through ``OpenAIResponsesCompactionSession``).

Primary sources:
- the OpenAI cookbook notebook ``examples/agents_sdk/session_memory.ipynb`` (openai/openai-cookbook):
  ``TrimmingSession`` (``max_turns=8``) and ``SummarizingSession`` (``keep_last_n_turns=3``,
  ``context_limit=3``); notebook code, not a package;
- openai-agents 0.24.0: ``agents/memory/session_settings.py`` (``SessionSettings.limit``, default None),
  ``agents/run_internal/session_persistence.py`` (``prepare_input_with_session``: the history is read
  once per run, ``get_items(limit)``, then calls and outputs orphaned by the limit are dropped;
  ``_apply_post_write_compaction``) and ``agents/memory/openai_responses_compaction_session.py``
  (``select_compaction_candidate_items``, ``default_should_trigger_compaction``: 10 candidates);
- the Responses compaction guide, https://developers.openai.com/api/docs/guides/compaction
  (``context_management=[{"type": "compaction", "compact_threshold": N}]``; ``/responses/compact``),
  and the ``/responses/compact`` API reference example (its output: the user messages, then one
  ``compaction`` item).

How the SDK's items map to ours. A Responses history is a list of items: user and assistant messages,
``function_call`` items and ``function_call_output`` items. Our assistant message is one message item
(if it has text) plus one function call per ToolUse; our user message holding tool results is one
function call output per result: **a tool result is not a user message**, though it has role "user"
here. A *user message* (what the sources call one, and what starts a *turn*) is a user-role message
with no tool result that is not a summary: the task, a hand-over, a follow-up, a nudge, a harness
refusal. TrimmingSession's ``_is_user_msg`` tests ``role == "user"``, which function call outputs do
not have, so this is the same set.

When the sessions act. The Runner reads the session once per run (``prepare_input_with_session``),
before it appends the run's new input, and builds every model call of the run from that read plus the
items the run produced: a session's trimming or summarizing reaches the model only at the next run.
Here a run starts at each user message, so in ``before_call`` the strategies rewrite the history
*before the last user message* and keep the current run whole. With one task and no follow-ups,
trimming and summarizing never fire, as in the SDK.

Not modelled, or different:
- the SummarizingSession's code gives role "user" to items without a role (function calls, outputs,
  reasoning: ``msg.setdefault("role", "user")``), so with tools it counts each as a user turn and
  replays it as user text; we follow its documented behaviour (a turn starts at a real user message);
- the SummarizingSession summarizes at the first save of a run, which the SDK makes after each turn;
  with ``keep_last_n_turns=0`` that keeps the previous run's later turns verbatim (a timing artefact);
  here the whole history before the current run is summarized. The summary call happens one run later;
- ``SessionSettings.limit`` counts items; a limit that falls inside one of our messages drops that
  whole message (the SDK keeps the later calls of an assistant message and their outputs);
- reasoning items do not exist here; the LLMSummarizer's prompt, tool-output trim (600 characters)
  and ``max_tokens=400`` are the mock's business;
- the compaction item's content is not public (it is encrypted and "not intended to be
  human-interpretable"): it is modelled as a summary (``ctx.summarize``) whose keep rule is the
  mock's. What the server still renders after a server-side compaction is not public either; both
  modes are modelled as the standalone endpoint's documented output: every user message verbatim,
  then one compaction item replacing everything else (assistant messages, calls, outputs and the
  previous compaction item). A compaction that would not shrink the window is not applied;
- pins are a ctxbench notion: protected messages are never trimmed, summarized or compacted, and keep
  their order ahead of what follows; summarizing does not count a protected user message as a turn;
- none of them reacts to an overflow of the main call: ``reduce`` always raises CannotReduce. A
  summarizer failure leaves the window unchanged (in the SDK the error surfaces to the caller).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import model_validator

from harness.core import Context, Message, Text, ToolResult, ToolUse, tokens_of
from strategies.base import CannotReduce, ContextStrategy, StrategyParams, commit, register
from strategies.params import NonNegativeInt, PositiveInt
from strategies.split import is_pinned, partition_pinned
from strategies.summarize import summarize_into

#: SummarizingSession's synthetic user message ("shadow prompt") ahead of the summary.
SHADOW_PROMPT = "Summarize the conversation we had so far."
#: ``agents.memory.openai_responses_compaction_session.DEFAULT_COMPACTION_THRESHOLD``.
DEFAULT_COMPACTION_CANDIDATES = 10


def is_user_message(m: Message) -> bool:
    """A Responses user message (a turn start): role user, no tool result, not a summary."""
    return m.role == "user" and m.kind != "summary" and not any(isinstance(b, ToolResult) for b in m.blocks)


def item_count(m: Message) -> int:
    """How many Responses items a message is: a message item for its text (or for a message with
    neither text nor tools), one function call per use, one function call output per result."""
    uses = sum(isinstance(b, ToolUse) for b in m.blocks)
    results = sum(isinstance(b, ToolResult) for b in m.blocks)
    other = len(m.blocks) - uses - results
    return uses + results + (1 if other or not (uses or results) else 0)


def current_run_start(window: Sequence[Message]) -> int | None:
    """Index of the last user message: the start of the current run (None when there is none)."""
    for i in range(len(window) - 1, -1, -1):
        if is_user_message(window[i]):
            return i
    return None


def last_items_start(history: Sequence[Message], start: int, limit: int) -> int:
    """``history[start:]`` cut to its last ``limit`` items in whole messages, then without the
    results whose calls were cut (``drop_orphan_function_calls`` on the read history)."""
    total = 0
    cut = len(history)
    while cut > start and total + item_count(history[cut - 1]) <= limit:
        cut -= 1
        total += item_count(history[cut])
    kept_uses = {i for m in history[cut:] for i in m.uses}
    while cut < len(history) and history[cut].results and not history[cut].results <= kept_uses:
        cut += 1
    return cut


def _keep_from(ctx: Context, start: int) -> list[Message]:
    """The window without its unprotected messages before ``start``."""
    window = ctx.messages
    protected, _ = partition_pinned(window, 0, start)
    return [*protected, *window[start:]]


class _Appended:
    """What a window holds, kept up to date by looking only at the messages appended since the last look:
    a session appends one message at a time, and scanning the whole window before every call made long
    sessions quadratic. A window changed other than by appending (a commit, another pipeline stage) is
    scanned again from the start."""

    def __init__(self) -> None:
        self._seen = 0
        self._last: Message | None = None
        #: Indices of the user messages (turn starts) seen so far.
        self.user_indices: list[int] = []
        #: Compaction candidates (items of assistant messages and results) seen so far.
        self.candidates = 0

    def update(self, window: Sequence[Message]) -> None:
        start = self._seen
        if start > len(window) or (start and window[start - 1] is not self._last):
            start, self.user_indices, self.candidates = 0, [], 0
        for i in range(start, len(window)):
            m = window[i]
            if is_user_message(m):
                self.user_indices.append(i)
            elif m.role == "assistant" or m.has_result:
                self.candidates += item_count(m)
        self._seen = len(window)
        self._last = window[-1] if window else None


# openai_trimming -----------------------------------------------------------------------------------


class OpenAITrimmingParams(StrategyParams):
    #: User turns kept (TrimmingSession's ``max_turns``, default 8; the cookbook clamps values below
    #: 1 to 1, here they are rejected). None: a plain session, no turn trimming.
    max_turns: PositiveInt | None = 8
    #: ``SessionSettings.limit``: the most items read from the session per run (None: all). The SDK
    #: does not check it; 0 means "nothing" for SQLiteSession but "everything" for TrimmingSession
    #: (``items[-0:]``), so values below 1 are rejected.
    limit: PositiveInt | None = None


@register("openai_trimming")
class OpenAITrimming(ContextStrategy):
    """TrimmingSession (and ``SessionSettings.limit``): each run sees the last ``max_turns`` user
    turns before it, plus its own turn.

    Invariants (checked by tests/strategies/test_openai_sessions.py and tests/properties):
    - the messages from the last user message on (the current run) are never changed; before it, the
      window keeps a suffix that starts at a user message (or a whole message within the item limit)
      plus the protected messages; nothing is rewritten and no summary is added;
    - after ``before_call``, at most ``max_turns`` user messages precede the last one, and the
      messages before it count at most ``limit`` items (pins aside);
    - no result is kept without its call; an open call at the end is never touched; a second
      ``before_call`` is a no-op; ``reduce`` always raises CannotReduce.
    """

    source = 'OpenAI cookbook TrimmingSession; openai-agents 0.24.0 SessionSettings.limit'
    sdk = True

    Params = OpenAITrimmingParams
    params: OpenAITrimmingParams

    def __init__(self, params: OpenAITrimmingParams | None = None) -> None:
        super().__init__(params)
        self._seen = _Appended()

    def before_call(self, ctx: Context) -> None:
        window = ctx.messages
        self._seen.update(window)
        users = self._seen.user_indices
        run = users[-1] if users else None
        if not run:
            return
        before = users[:-1]  # the user messages of the history before the current run
        max_turns = self.params.max_turns
        start = 0 if max_turns is None or len(before) < max_turns else before[-max_turns]
        if self.params.limit is not None:
            start = last_items_start(window[:run], start, self.params.limit)
        if start > 0 and len(new := _keep_from(ctx, start)) < len(window):
            commit(ctx, new)

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        raise CannotReduce("a trimming session does not handle a context overflow") from overflow


# openai_summarizing ---------------------------------------------------------------------------------


class OpenAISummarizingParams(StrategyParams):
    #: Most user turns in the history before it is summarized (the notebook asserts >= 1).
    context_limit: PositiveInt = 3
    #: User turns kept verbatim when it is (the notebook asserts 0 <= it <= context_limit).
    keep_last_n_turns: NonNegativeInt = 3

    @model_validator(mode="after")
    def _keep_within_limit(self) -> OpenAISummarizingParams:
        if self.keep_last_n_turns > self.context_limit:
            raise ValueError("keep_last_n_turns should not be greater than context_limit")
        return self


@register("openai_summarizing")
class OpenAISummarizing(ContextStrategy):
    """SummarizingSession: once the history before a run holds more than ``context_limit`` user
    turns, everything before the earliest of its last ``keep_last_n_turns`` turns becomes a
    synthetic user/assistant pair: the shadow prompt and the summary.

    Invariants (checked by tests/strategies/test_openai_sessions.py and tests/properties):
    - on success the window is ``P + [U, S] + B[b:]``: U the user message ``SHADOW_PROMPT``, S an
      assistant message holding the summary (both kind summary), P the protected messages of
      ``B[:b]``, b the earliest of the last ``keep_last_n_turns`` user messages before the current
      run (the current run's start when 0); B[b] is a user message or the current run, so no tool
      pair is split and an open call at the end is kept;
    - afterwards at most ``keep_last_n_turns`` unprotected user turns precede the current run (pinned
      user messages are not counted: they are never summarized); ``removed_count``
      grows by the non-summary messages summarized; the summarizer never sees a protected message;
    - a summarizer failure leaves the window unchanged; a second ``before_call`` is a no-op;
      ``reduce`` always raises CannotReduce.
    """

    source = 'OpenAI cookbook SummarizingSession (agents_sdk/session_memory.ipynb)'
    sdk = True

    Params = OpenAISummarizingParams
    params: OpenAISummarizingParams

    def __init__(self, params: OpenAISummarizingParams | None = None) -> None:
        super().__init__(params)
        self._seen = _Appended()

    def boundary(self, window: Sequence[Message]) -> int | None:
        """``_summarize_decision_locked`` on the history before the current run: the index before
        which everything is summarized, or None."""
        self._seen.update(window)
        users = self._seen.user_indices
        run = users[-1] if users else None
        if not run:
            return None
        # A protected user message is never summarized: counting it would summarize on every call.
        starts = [i for i in users[:-1] if not is_pinned(window, i)]
        if len(starts) <= self.params.context_limit:
            return None
        keep = self.params.keep_last_n_turns
        boundary = run if keep == 0 else starts[-keep]
        return boundary if boundary > 0 else None

    def before_call(self, ctx: Context) -> None:
        window = ctx.messages
        boundary = self.boundary(window)
        if boundary is None:
            return
        protected, prefix = partition_pinned(window, 0, boundary)
        if not prefix:
            return  # everything before the boundary is pinned: nothing to summarize
        try:
            reply = summarize_into(ctx, prefix)
        except CannotReduce:
            return  # R3: the window stays as it was
        meter = reply.meter
        shadow = Message.build("user", [Text(SHADOW_PROMPT)], kind="summary", meter=meter)
        summary = Message.build("assistant", reply.blocks, kind="summary", meter=meter)
        commit(ctx, [*protected, shadow, summary, *window[boundary:]])

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        raise CannotReduce("a summarizing session does not handle a context overflow") from overflow


# openai_compaction ----------------------------------------------------------------------------------


class OpenAICompactionParams(StrategyParams):
    #: Server-side compaction: compact before a call whose whole prompt crosses this many tokens
    #: (``context_management``'s ``compact_threshold``; the API documents no default). None: off.
    compact_threshold: PositiveInt | None = None
    #: OpenAIResponsesCompactionSession's default decision: compact after a run once this many
    #: candidate items (everything but user messages and compaction items) are stored. None: off.
    candidate_threshold: PositiveInt | None = DEFAULT_COMPACTION_CANDIDATES


def candidate_items(window: Sequence[Message]) -> int:
    """``select_compaction_candidate_items``: items other than user messages and compaction items
    (our summaries), i.e. assistant messages, function calls and function call outputs."""
    return sum(item_count(m) for m in window if m.role == "assistant" or m.has_result)


@register("openai_compaction")
class OpenAICompaction(ContextStrategy):
    """Responses compaction: the user messages stay, everything else becomes one compaction item.

    Two triggers, either or both: server-side, before a call whose prompt exceeds
    ``compact_threshold``; and the Agents SDK session's, after a turn: a turn that produced tool
    outputs only records that compaction is due (10+ candidate items), and the next turn without tool
    outputs (a reply without a call: the end of an SDK run) compacts when it was due or is due now.

    Invariants (checked by tests/strategies/test_openai_sessions.py and tests/properties):
    - a compaction makes the window ``K + [S]``: K the user messages and protected messages of B in
      order, S a summary (role user, kind summary) standing for the compaction item; it is applied
      only when it lowers the tokens, and never while the last message is a call without results;
    - after a server-side compaction the prompt is at or below ``compact_threshold`` unless K and S
      alone exceed it; after a session compaction no candidate item is left;
    - ``removed_count`` grows by the non-summary messages compacted; a failed summary leaves the
      window unchanged (and the session's compaction still due); ``reduce`` always raises.
    """

    source = 'OpenAI Responses compaction; openai-agents 0.24.0 OpenAIResponsesCompactionSession'
    sdk = True

    Params = OpenAICompactionParams
    params: OpenAICompactionParams

    def __init__(self, params: OpenAICompactionParams | None = None) -> None:
        super().__init__(params)
        #: The session's deferred compaction (``_deferred_response_id`` is set).
        self.deferred = False
        self._seen = _Appended()

    def compact(self, ctx: Context) -> None:
        """Replace everything but the user and protected messages by one compaction item, or raise
        CannotReduce leaving the window unchanged."""
        window = ctx.messages
        if window and window[-1].role == "assistant" and window[-1].has_use:
            # The SDK waits for a call's outputs rather than compacting it away.
            raise CannotReduce("a tool call is waiting for its result")
        kept = [m for i, m in enumerate(window) if is_user_message(m) or is_pinned(window, i)]
        compacted = [m for i, m in enumerate(window) if not (is_user_message(m) or is_pinned(window, i))]
        if not compacted:
            raise CannotReduce("nothing to compact")
        item = summarize_into(ctx, compacted)
        new = [*kept, item]
        if tokens_of(new) >= ctx.tokens:
            raise CannotReduce("the compaction would not shrink the window")
        commit(ctx, new)

    def before_call(self, ctx: Context) -> None:
        threshold = self.params.compact_threshold
        if threshold is None or ctx.prompt_tokens <= threshold:
            return
        try:
            self.compact(ctx)
        except CannotReduce:
            pass  # R3: the next call over the threshold tries again

    def apply(self, ctx: Context) -> None:
        threshold = self.params.candidate_threshold
        window = ctx.messages
        if threshold is None or not window:
            return
        self._seen.update(window)
        due = self._seen.candidates >= threshold
        if window[-1].has_result:
            # _apply_post_write_compaction defers while the turn has local tool outputs.
            self.deferred = self.deferred or due
            return
        if not (self.deferred or due):
            return
        try:
            self.compact(ctx)
        except CannotReduce:
            return  # the deferred marker is cleared only once a compaction has settled
        self.deferred = False

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        raise CannotReduce("Responses compaction does not handle a context overflow") from overflow
