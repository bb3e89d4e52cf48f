"""`adk_compaction`: Google ADK's event compaction (``EventsCompactionConfig``). Older session events
are summarized into compaction events; the contents sent to the model show each summary in place of
the range it covers, while the session keeps every event.

Primary source, google-adk 2.13.0 (the pinned dev dependency): ``google/adk/apps/_configs.py``
(``EventsCompactionConfig``: the params and their validation), ``google/adk/apps/compaction.py``
(both triggers and the choice of the range), ``google/adk/apps/llm_event_summarizer.py`` (a compaction
event covers ``[first event's timestamp, last event's timestamp]``),
``google/adk/flows/llm_flows/context/_compaction.py`` (``CompactionRequestProcessor``, the check before
each model call; ``_process_compaction_events``, how the contents are built), ``google/adk/runners.py``
(``_run_post_invocation_compaction``); docs: https://google.github.io/adk-docs/context/compaction/
(adk-docs ``docs/context/compaction.md``).

Params, as ADK has them: ``compaction_interval`` (> 0) with ``overlap_size`` (>= 0), and
``token_threshold`` (> 0) with ``event_retention_size`` (>= 0). All default to None; each pair is set
together or not at all, and at least one pair must be set, so the defaults alone are rejected as ADK
rejects them. The docs' examples: ``compaction_interval=3, overlap_size=1``;
``token_threshold=4000, event_retention_size=5``. ``token_measure`` is a ctxbench addition (below).

How ADK's terms map onto ctxbench messages:
- **Event**: one message of the session is one event; its timestamp is its index in the session's
  history. A message with tool results is the one function-response event of its calls (ADK merges
  parallel responses into one event). A result maps to ``{"result": content}`` (``{"error": content}``
  for an error status): ADK wraps a tool's non-dict return value that way.
- **Invocation**: one user message and the agent's whole response to it (all events of one
  invocation_id). A user message without tool results of kind ``task`` or ``text`` starts one; the
  assistant replies, tool results, nudges and contract errors after it belong to it. An invocation
  is complete when the next one starts: ADK's post-invocation compaction for it runs at the next
  ``before_call``, ahead of that call's own check. A session with one task is one invocation, so the
  sliding window never fires in it: in ADK, too, it only summarizes completed invocations.

Sliding window (after each invocation): once ``compaction_interval`` invocations have an event past
the end of the last compaction event, summarize the events from the first of the ``overlap_size``
invocations before them to the last of them, cut back to the longest prefix with no call left open.
Token threshold (before every model call, and after each invocation ahead of the sliding window,
which it then pre-empts): when the measure is at least ``token_threshold``, summarize the events after
the last summary's range except the last ``event_retention_size`` (the split moves earlier until every
kept result keeps its call), again cut back to no open call; the previous summary goes to the
summarizer first and the new range starts where its range started, so the new summary supersedes it.
Both skip a range unless an empty summary of it would remove more characters of the request than the
previous summary has (``_is_range_worth_compacting``, measured in JSON characters as ADK does).

The measure ("fires too late"): ADK does not size the prompt it is about to send. It reads the
``usage_metadata.prompt_token_count`` of the latest model response, i.e. the whole prompt (system
instruction and tools included) of the previous call, which lacks that call's reply and the tool
results since; a compaction event after that response hides it, and then ADK estimates chars/4 over
the contents (no system instruction or tools). A large tool result can therefore overflow the call
before the threshold check sees it. ``token_measure="prompt"`` (not ADK) measures the prompt about to
be sent instead, to show the difference.

The view, not the history: this instance keeps every message it saw (the session's events) and
the compactions, and commits to the window what ADK sends: every event outside the union of the
summaries' ranges, plus each summary that no other range contains, placed at its range's end. Two
overlapping sliding summaries are therefore both shown. ADK sends a summary as the agent's own
(model) turn; here it is the usual user message of kind ``summary`` (docs/strategies.md R9). Summaries
are never rewritten; a later token summary supersedes the previous one by containing its range.

Not modelled: rewinds, branches and isolation scopes, other agents' events, long-running and
human-in-the-loop calls, confirmations and auth requests (so ADK's second pass over "provably dead"
calls never applies: only the last message may hold an unanswered call, and it belongs to the newest
invocation), the stale-session discard, and the summarizer's prompt template and its 2,000-character
cap per tool payload (the mock model decides what a summary keeps). A summarizer failure leaves the
events uncompacted, as in ADK (which logs it and retries at the next trigger); a summary larger than
its range is kept, as in ADK (which only logs it).
ctxbench pins have no ADK counterpart: a protected message is never sent to the summarizer and
stays in the view at its place, inside a summarized range too.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import model_validator

from harness.core import Context, Message, Text, ToolResult, ToolUse, tokens_of
from strategies.base import CannotReduce, ContextStrategy, StrategyParams, commit, register
from strategies.params import NonNegativeInt, PositiveInt
from strategies.split import is_pinned
from strategies.summarize import summarize_into


class AdkCompactionParams(StrategyParams):
    #: New completed invocations that trigger a sliding-window summary (ADK: gt=0).
    compaction_interval: PositiveInt | None = None
    #: Invocations before the new ones that the next summary covers again (ADK: ge=0).
    overlap_size: NonNegativeInt | None = None
    #: Prompt tokens at which the token-threshold summary fires (ADK: gt=0; ``>=``).
    token_threshold: PositiveInt | None = None
    #: Newest events a token-threshold summary leaves raw (ADK: ge=0).
    event_retention_size: NonNegativeInt | None = None
    #: ctxbench addition: "last_call" is ADK (the previous call's prompt tokens, else chars/4);
    #: "prompt" measures the prompt about to be sent.
    token_measure: Literal["last_call", "prompt"] = "last_call"

    @model_validator(mode="after")
    def _pairs(self) -> AdkCompactionParams:
        # The same three rules, in the same order, as EventsCompactionConfig._validate_trigger_params.
        token_pair = self.token_threshold is not None
        if token_pair != (self.event_retention_size is not None):
            raise ValueError("token_threshold and event_retention_size must be set together")
        sliding_pair = self.compaction_interval is not None
        if sliding_pair != (self.overlap_size is not None):
            raise ValueError("compaction_interval and overlap_size must be set together")
        if not (token_pair or sliding_pair):
            raise ValueError(
                "at least one compaction trigger must be configured: "
                "token_threshold with event_retention_size, or compaction_interval with overlap_size"
            )
        return self


@dataclass(frozen=True, slots=True)
class Compaction:
    """One compaction event: it covers history[start..end] (both included) and sits in the event
    stream after the first ``after`` messages of the history. ``summary`` None is the empty summary
    ADK prices a range with before paying for the real one."""

    start: int
    end: int
    summary: Message | None
    after: int


#: The JSON of a compaction with no summary text, ``{"parts":[],"role":"model"}``: what ADK prices a
#: range against before paying for its summary (``_removable_prompt_chars``).
EMPTY_SUMMARY_JSON_CHARS = 27


def starts_invocation(m: Message) -> bool:
    """A user's new message: user role, no tool result, kind task or text (not a nudge, an error,
    a summary)."""
    return m.role == "user" and not m.has_result and m.kind in ("task", "text")


def _response(block: ToolResult) -> dict[str, str]:
    return {"result" if block.status == "success" else "error": block.content}


def request_json_chars(m: Message, tool_names: dict[str, str], *, summary: bool = False) -> int:
    """Characters of the message as the request content ADK serializes (``_serialized_size``: the
    compact JSON of ``{"parts": [...], "role": ...}``); a summary is a model-role content."""
    parts: list[dict[str, Any]] = []
    for b in m.blocks:
        if isinstance(b, Text):
            parts.append({"text": b.text})
        elif isinstance(b, ToolUse):
            parts.append({"function_call": {"id": b.id, "args": dict(b.input), "name": b.name}})
        else:
            name = tool_names.get(b.tool_use_id, "")
            parts.append({"function_response": {"id": b.tool_use_id, "name": name, "response": _response(b)}})
    role = "model" if summary or m.role == "assistant" else "user"
    return len(json.dumps({"parts": parts, "role": role}, separators=(",", ":"), ensure_ascii=False))


def estimate_chars(m: Message, tool_names: dict[str, str]) -> int:
    """Characters ADK's chars/4 estimate counts for a content (``_count_chars_in_content``): texts,
    and a call's or a response's name plus its JSON (default ``json.dumps``) when not empty."""
    total = 0
    for b in m.blocks:
        if isinstance(b, Text):
            total += len(b.text)
        elif isinstance(b, ToolUse):
            total += len(b.name) + (len(json.dumps(dict(b.input))) if b.input else 0)
        else:
            total += len(tool_names.get(b.tool_use_id, "")) + len(json.dumps(_response(b)))
    return total


def retained(compactions: Sequence[Compaction]) -> list[Compaction]:
    """The compactions no other range contains, in stream order (``_get_compaction_ranges``): of two
    identical ranges the later one stays."""
    order = sorted(range(len(compactions)), key=lambda i: (compactions[i].start, -compactions[i].end, -i))
    keep: set[int] = set()
    max_end: int | None = None
    for i in order:
        if max_end is None or compactions[i].end > max_end:
            keep.add(i)
            max_end = compactions[i].end
    return [c for i, c in enumerate(compactions) if i in keep]


def self_contained_prefix(messages: Sequence[Message]) -> int:
    """Length of the longest prefix in which every call is answered (``_longest_self_contained_prefix``,
    its strict pass: results close calls before the message's own calls open)."""
    open_ids: set[str] = set()
    safe = 0
    for i, m in enumerate(messages):
        open_ids -= m.results
        open_ids |= m.uses
        if not open_ids:
            safe = i + 1
    return safe


def safe_split(candidates: Sequence[Message], retention: int) -> int:
    """``_safe_token_compaction_split_index``: the latest index at or before ``len - retention`` from
    which every kept result still has its call among the kept events (0 if none)."""
    initial = len(candidates) - retention
    if initial <= 0:
        return 0
    unmatched: set[str] = set()
    for i in range(len(candidates) - 1, -1, -1):
        unmatched |= candidates[i].results
        unmatched -= candidates[i].uses
        if not unmatched and i <= initial:
            return i
    return 0


@register("adk_compaction")
class AdkCompaction(ContextStrategy):
    """Google ADK's sliding-window and token-threshold event compaction, over the view.

    Invariants (checked by tests/properties and tests/strategies/test_adk_compaction.py):
    - at every model call the window maps to the contents google-adk 2.13.0 sends for the same
      session, with the same compaction ranges and the same summarizer inputs (no pins);
    - the window stays well-formed and its token total exact; ``removed_count`` never decreases;
    - every pinned message stays, the same object; the summarizer never receives a protected message;
    - a call still waiting for its result stays the window's last message and is never summarized;
    - a tool result that left the window (summarized) never comes back;
    - after a token-threshold summary at most ``event_retention_size`` + 1 raw events follow it (the
      prompt may still be over the threshold: ADK does not check);
    - ``reduce`` always raises CannotReduce and leaves the window as it was; ``apply`` does nothing.
    """

    source = 'Google ADK 2.13.0 EventsCompactionConfig (apps/compaction.py)'
    sdk = True

    Params = AdkCompactionParams
    params: AdkCompactionParams

    def __init__(self, params: AdkCompactionParams | None = None) -> None:
        super().__init__(params)
        self._reset()

    def _reset(self) -> None:
        #: Every message of the session, in order (ADK's session events, compactions aside).
        self._history: list[Message] = []
        #: Invocation number of each history message.
        self._invocation: list[int] = []
        self._current_invocation = 0
        self._invocation_started = False
        #: History indices where an invocation started whose predecessor's post-invocation
        #: compaction has not run yet.
        self._completed_at: list[int] = []
        self._compactions: list[Compaction] = []
        #: Prompt tokens of the call that produced each assistant message (usage_metadata), by index.
        self._usage_at: list[int] = []
        self._usage: dict[int, int] = {}
        self._tool_names: dict[str, str] = {}
        #: request_json_chars of each history message (messages are immutable).
        self._json_chars: list[int] = []
        #: What the window held after this instance last looked at it.
        self._view: list[Message] = []
        #: Replies on_append saw that the window has not shown yet, with the prompt tokens of the
        #: call that produced each.
        self._replies: list[tuple[Message, int]] = []

    # The history -----------------------------------------------------------------------------------
    def on_append(self, ctx: Context, msg: Message) -> Message:
        if msg.role == "assistant":
            # The window is exactly what the call that produced this reply was sent.
            self._replies.append((msg, ctx.prompt_tokens))
        return msg

    def _record(self, m: Message) -> None:
        i = len(self._history)
        if starts_invocation(m):
            if self._invocation_started:
                self._completed_at.append(i)
                self._current_invocation += 1
            self._invocation_started = True
        self._invocation.append(self._current_invocation)
        self._history.append(m)
        for b in m.blocks:
            if isinstance(b, ToolUse):
                self._tool_names[b.id] = b.name
        self._json_chars.append(request_json_chars(m, self._tool_names))
        for k, (reply, prompt_tokens) in enumerate(self._replies):
            if reply is m:
                self._usage_at.append(i)
                self._usage[i] = prompt_tokens
                del self._replies[: k + 1]
                break

    def _sync(self, ctx: Context) -> None:
        """Record what the runtime appended since this instance last looked at the window."""
        window = ctx.messages
        seen = len(self._view)
        if len(window) < seen or (seen and window[seen - 1] is not self._view[-1]):
            # Something else rewrote the window: start over from it as the session's history.
            self._reset()
            seen = 0
        for m in window[seen:]:
            self._record(m)
            self._view.append(m)

    # The view --------------------------------------------------------------------------------------
    def _protected(self, i: int) -> bool:
        return is_pinned(self._history, i)

    def _build_view(self, limit: int, compactions: Sequence[Compaction]) -> list[Message]:
        """What ADK sends for history[:limit] and these compactions (``_process_compaction_events``)."""
        kept = retained(compactions)
        covered = [False] * limit
        for c in kept:
            for i in range(c.start, min(c.end, limit - 1) + 1):
                covered[i] = True
        summaries = sorted(
            ((c.end, n, c.summary) for n, c in enumerate(kept) if c.summary is not None), key=lambda t: (t[0], t[1])
        )
        out: list[Message] = []
        s = 0
        for i in range(limit):
            while s < len(summaries) and summaries[s][0] < i:
                out.append(summaries[s][2])
                s += 1
            if not covered[i] or self._protected(i):
                out.append(self._history[i])
        out.extend(t[2] for t in summaries[s:])
        return out

    def _request_chars(self, limit: int, compactions: Sequence[Compaction]) -> int:
        kept = retained(compactions)
        covered = [False] * limit
        total = 0
        for c in kept:
            for i in range(c.start, min(c.end, limit - 1) + 1):
                covered[i] = True
            total += self._summary_chars(c)
        for i in range(limit):
            if not covered[i] or self._protected(i):
                total += self._json_chars[i]
        return total

    def _summary_chars(self, c: Compaction) -> int:
        if c.summary is None:
            return EMPTY_SUMMARY_JSON_CHARS
        return request_json_chars(c.summary, self._tool_names, summary=True)

    def _worth(self, limit: int, start: int, end: int) -> bool:
        """``_is_range_worth_compacting``: an empty summary of start..end would remove more request
        characters than the latest retained summary holds."""
        empty = Compaction(start, end, None, limit)
        removable = self._request_chars(limit, self._compactions) - self._request_chars(
            limit, [*self._compactions, empty]
        )
        kept = retained(self._compactions)
        return removable > (self._summary_chars(kept[-1]) if kept else 0)

    # The measure -----------------------------------------------------------------------------------
    def _measure(self, ctx: Context, limit: int) -> int | None:
        if self.params.token_measure == "prompt":
            return ctx.prompt_overhead + tokens_of(self._build_view(limit, self._compactions))
        # _latest_prompt_token_count: the newest model response's prompt tokens, unless a
        # compaction event came after it.
        k = bisect.bisect_left(self._usage_at, limit) - 1
        if k >= 0:
            at = self._usage_at[k]
            if not any(c.after > at for c in self._compactions):
                return self._usage[at]
        chars = sum(estimate_chars(m, self._tool_names) for m in self._build_view(limit, self._compactions))
        return chars // 4 if chars > 0 else None

    # The two triggers ------------------------------------------------------------------------------
    def _summarize(self, ctx: Context, seed: Compaction | None, first: int, end: int, limit: int) -> bool:
        """Summarize ``seed``'s summary and history[first..end] into a compaction covering them
        (from the seed's start); False if the summarizer failed."""
        chosen = [self._history[i] for i in range(first, end + 1) if not self._protected(i)]
        try:
            summary = summarize_into(ctx, [seed.summary, *chosen] if seed is not None and seed.summary else chosen)
        except CannotReduce:
            return False  # ADK: "continuing with the uncompacted history"
        self._compactions.append(Compaction(seed.start if seed is not None else first, end, summary, limit))
        return True

    def _token_threshold(self, ctx: Context, limit: int) -> bool:
        threshold, retention = self.params.token_threshold, self.params.event_retention_size
        if threshold is None or retention is None:
            return False
        measure = self._measure(ctx, limit)
        if measure is None or measure < threshold:
            return False
        kept = retained(self._compactions)
        first = kept[-1].end + 1 if kept else 0
        candidates = self._history[first:limit]
        if len(candidates) <= retention:
            return False
        stop = len(candidates) if retention == 0 else safe_split(candidates, retention)
        stop = self_contained_prefix(candidates[:stop])
        if stop == 0:
            return False
        seed = kept[-1] if kept else None
        end = first + stop - 1
        if not self._worth(limit, seed.start if seed is not None else first, end):
            return False
        return self._summarize(ctx, seed, first, end, limit)

    def _sliding_window(self, ctx: Context, limit: int) -> None:
        interval, overlap = self.params.compaction_interval, self.params.overlap_size
        if interval is None or overlap is None or limit == 0:
            return
        last_end = self._compactions[-1].end if self._compactions else -1
        invocations = self._invocation[:limit]
        latest: dict[int, int] = {}
        for i, inv in enumerate(invocations):
            latest[inv] = i
        order = list(latest)
        new = [inv for inv in order if latest[inv] > last_end]
        if len(new) < interval:
            return
        start_inv = order[max(0, order.index(new[0]) - overlap)]
        start = invocations.index(start_inv)
        end = latest[new[-1]]
        stop = self_contained_prefix(self._history[start : end + 1])
        if stop == 0 or not self._worth(limit, start, start + stop - 1):
            return
        self._summarize(ctx, None, start, start + stop - 1, limit)

    # Hooks -----------------------------------------------------------------------------------------
    def before_call(self, ctx: Context) -> None:
        self._sync(ctx)
        before = len(self._compactions)
        for limit in self._completed_at:
            # ADK's post-invocation compaction of the invocation that ended at ``limit``.
            if not self._token_threshold(ctx, limit):
                self._sliding_window(ctx, limit)
        self._completed_at.clear()
        self._token_threshold(ctx, len(self._history))  # CompactionRequestProcessor
        if len(self._compactions) != before:
            view = self._build_view(len(self._history), self._compactions)
            commit(ctx, view)
            self._view = view

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        raise CannotReduce("ADK has no reactive compaction: a prompt over the model's window fails the call") \
            from overflow
