"""Accounting replay: a recorded session's own calls and outputs under a context strategy, with no
mock decisions.

A transcript fixes what the agent did: every assistant message is one model call and every user
message after it is what came back. Replaying it under a strategy asks only what that strategy would
have *sent* at each call: the strategy's hooks run exactly where the runtime runs them
(``on_append`` on every message, ``before_call`` and fitting the window before each call, ``apply``
after each user message), and each call is billed from the window the strategy left. The transcript
goes on as recorded whatever the strategy hid, so nothing here says whether the agent would still have
succeeded: the behavioural metrics (success, errors, loops, latency) have no value in this mode.

Exact: the tokens of every prompt (the real tokenizer over the messages and the system prompt), their
cost at the profile's prices, cache hits and writes under the profile's prefix-cache rules, the
compactions and the tokens they freed, and which recorded tool outputs each call could not see whole
(removed from the window or replaced by a placeholder, stub or summary), with their sizes.

Not exact, and said so wherever it is reported: what a summarizing strategy's summary says. A
transcript holds no summaries, so `extract_summary` writes a stand-in from the summarized messages
(the task, then one line per tool call with its status and the first line of its output), capped at
the profile's summary size; the summary call's input is exact, its output is the stand-in's tokens.
The clock that decides cache freshness advances by the profile's model seconds per call (a recorded
session's real pauses are not in most formats).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.core.context import ContextOverflow
from harness.core.messages import Message, Text, ToolResult, ToolUse
from harness.core.tokens import MESSAGE_OVERHEAD_TOKENS
from harness.sim.billing import Billing, ModelCall
from harness.sim.clock import SimClock
from harness.sim.metrics import CallRecord, Tally
from harness.sim.needed import NeededValue
from harness.sim.profiles import Profile
from harness.sim.window import AgentWindow
from strategies.base import ContextStrategy

__all__ = ["CALL_FIELDS", "SESSION_FIELDS", "AccountedSession", "HiddenOutput", "account", "extract_summary"]


@dataclass(frozen=True, slots=True)
class HiddenOutput:
    """A recorded tool output that some call could not see whole."""

    tool_use_id: str
    tool: str
    #: Tokens of the output as recorded (its ToolResult block's text).
    tokens: int
    #: The first agent call (0-based, agent calls only) that was sent without it whole.
    first_hidden_call: int
    #: ``removed`` (no block of that id in the window) or ``replaced`` (a block of that id with other text).
    how: str


@dataclass(slots=True)
class AccountedSession:
    """One recorded session under one strategy: its row, one row per model call, its hidden outputs."""

    row: dict[str, Any]
    calls: list[dict[str, Any]]
    hidden: list[HiddenOutput]


#: The columns of an accounting replay's session row (`AccountedSession.row`), in order.
SESSION_FIELDS = ("scenario", "session_index", "strategy", "recorded_calls", "calls_not_sent", "model_calls",
                  "summary_calls", "input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens",
                  "context_tokens_mean", "context_tokens_peak", "cost_usd", "summary_cost_usd", "overflow_events",
                  "compactions", "tokens_freed", "cache_breaking_edits", "thrash", "tool_outputs",
                  "tool_output_tokens", "hidden_outputs", "hidden_output_tokens", "hidden_at_last_call",
                  "needed_values", "needed_hidden")

#: The calls-table columns of an accounting run (what `CallRecord` has that is exact here, plus the
#: hidden outputs per call).
CALL_FIELDS = ("call_index", "call_kind", "input_tokens", "cached_input_tokens", "cache_write_tokens",
               "output_tokens", "context_tokens", "cost_usd", "tokens_freed")


def extract_summary(messages: Sequence[Message], budget_tokens: int, count: Callable[[str], int]) -> str:
    """A stand-in summary of ``messages`` (a recorded session has none): the task's first line, then one
    line per tool call (name, arguments, status, the first line of its output), within ``budget_tokens``."""
    results: dict[str, ToolResult] = {b.tool_use_id: b for m in messages for b in m.blocks
                                      if isinstance(b, ToolResult)}
    lines = ["## Conversation Summary"]
    task = next((m for m in messages if m.kind == "task"), None)
    if task is not None:
        lines.append(f"- task: {task.text.splitlines()[0][:300] if task.text else ''}")
    lines.append("## Tools Executed")
    used = count("\n".join(lines))
    for m in messages:
        for b in m.blocks:
            if not isinstance(b, ToolUse):
                continue
            result = results.get(b.id)
            outcome = "no result" if result is None else (
                f"{result.status}: {result.content.strip().splitlines()[0][:160] if result.content.strip() else ''}")
            line = f"- {b.name}({json.dumps(dict(b.input), sort_keys=True)[:160]}) -> {outcome}"
            cost = count(line) + 1
            if used + cost > budget_tokens:
                return "\n".join(lines)
            lines.append(line)
            used += cost
    return "\n".join(lines)


class _Accounting:
    """The state of one accounting replay (one agent: a transcript is one conversation), around the one
    window engine the simulated replay drives too (`AgentWindow`)."""

    def __init__(self, strategy: ContextStrategy, profile: Profile, *, system_tokens: int, scenario: str,
                 session_index: int, label: str, system: str = "",
                 needed: Sequence[NeededValue] = ()) -> None:
        self.strategy = strategy
        self.profile = profile
        self.clock = SimClock()
        self.tally = Tally()
        self.billing = Billing(profile, 0, self.clock, self.tally, scenario=scenario, session_index=session_index,
                               strategy=label)
        self.window = AgentWindow.open(strategy, profile, system_tokens=system_tokens, summarizer=self._summarize,
                                       tally=self.tally, clock=self.clock)
        self.ctx = self.window.ctx
        self.agent_calls = 0
        self.summary_n = 0
        #: tool_use_id -> (tool name, the recorded result block), in the order the results came.
        self.outputs: dict[str, tuple[str, ToolResult, int]] = {}
        self.tool_names: dict[str, str] = {}
        self.hidden: dict[str, HiddenOutput] = {}
        self.hidden_per_call: list[tuple[int, int]] = []
        self.system = system
        self.needed: dict[int, list[str]] = {}
        for value in needed:
            self.needed.setdefault(value.call, []).append(value.value)
        #: Needed values not visible at the call that used them, per agent call.
        self.needed_hidden_per_call: list[int] = []
        #: Per message of the window (by identity, the message held so that its id is not reused): its text
        #: and its tool results as (tool_use_id, content). Messages are immutable and every call looks at the
        #: whole window, so each is read once instead of once per call.
        self._texts: dict[int, tuple[Message, str]] = {}
        self._results: dict[int, tuple[Message, tuple[tuple[str, str], ...]]] = {}

    def append(self, message: Message) -> None:
        for block in message.blocks:
            if isinstance(block, ToolUse):
                self.tool_names[block.id] = block.name
            elif isinstance(block, ToolResult):
                tokens = message.meter.tokenizer.count(block.content)
                self.outputs[block.tool_use_id] = (self.tool_names.get(block.tool_use_id, ""), block, tokens)
        self.window.append(message)

    def _summarize(self, messages: list[Message]) -> Message:
        p = self.profile
        tokens_in = sum(m.tokens for m in messages) + p.summarizer_prompt_tokens
        if tokens_in + p.max_output_reserve > p.window_tokens:
            raise ContextOverflow(tokens_in, p.window_tokens)
        self.summary_n += 1
        meter = messages[0].meter if messages else None
        count = (meter.tokenizer.count if meter is not None else len)
        reply = Message.build("assistant", [Text(extract_summary(messages, p.max_summary_tokens, count))],
                              meter=meter)
        self.billing.bill(ModelCall(agent="agent", kind="summary", window=messages, touched=0, prompt_tokens=tokens_in,
                                    output_tokens=reply.tokens - MESSAGE_OVERHEAD_TOKENS, step_id="summary",
                                    attempt=self.summary_n, action="summary"), self.window.summary_cache)
        return reply

    # One recorded call -------------------------------------------------------------------------------
    def call(self, reply: Message) -> bool:
        """Bill the call that produced ``reply``; False when the strategy cannot fit the window."""
        self.window.hook(self.strategy.before_call)
        prompt = self.window.fit()
        if prompt is None:
            return False
        touched, freed = self.window.sending()
        self.tally.turns += 1
        self.billing.bill(ModelCall(agent="agent", kind="agent", window=self.ctx.messages, touched=touched,
                                    prompt_tokens=prompt, output_tokens=reply.tokens - MESSAGE_OVERHEAD_TOKENS,
                                    step_id=str(self.agent_calls), attempt=0, action="call", tokens_freed=freed),
                          self.window.agent_cache)
        self.hidden_per_call.append(self._note_hidden())
        self.needed_hidden_per_call.append(self._needed_hidden())
        self.agent_calls += 1
        return True

    def _needed_hidden(self) -> int:
        """How many of the values this call's recorded reply needed are visible nowhere in its window."""
        wanted = self.needed.get(self.agent_calls)
        if not wanted:
            return 0
        shown = [self.system, *(self._text(m) for m in self.ctx.messages)]
        return sum(1 for value in wanted if not any(value in text for text in shown))

    def _text(self, message: Message) -> str:
        """``message.text``, read once per message."""
        hit = self._texts.get(id(message))
        if hit is None or hit[0] is not message:
            hit = self._texts[id(message)] = (message, message.text)
        return hit[1]

    def _results_of(self, message: Message) -> tuple[tuple[str, str], ...]:
        """``message``'s tool results as (tool_use_id, content), in block order, read once per message."""
        hit = self._results.get(id(message))
        if hit is None or hit[0] is not message:
            found = tuple((b.tool_use_id, b.content) for b in message.blocks if isinstance(b, ToolResult))
            hit = self._results[id(message)] = (message, found)
        return hit[1]

    def _note_hidden(self) -> tuple[int, int]:
        """(count, tokens) of the recorded outputs this call cannot see whole; the first call of each is kept."""
        shown: dict[str, str] = {}
        for m in self.ctx.messages:
            for use_id, content in self._results_of(m):
                shown[use_id] = content
        count = tokens = 0
        for use_id, (tool, block, size) in self.outputs.items():
            seen = shown.get(use_id)
            if seen == block.content:
                continue
            count += 1
            tokens += size
            if use_id not in self.hidden:
                self.hidden[use_id] = HiddenOutput(use_id, tool, size, self.agent_calls,
                                                   "removed" if seen is None else "replaced")
        return count, tokens


def account(messages: Sequence[Message], strategy: ContextStrategy, profile: Profile, *, system_tokens: int = 0,
            scenario: str = "trace", session_index: int = 0, label: str | None = None, system: str = "",
            needed: Sequence[NeededValue] = ()) -> AccountedSession:
    """Replay a recorded session (``messages``: the task first, then assistant and user messages in turn)
    under ``strategy`` (a fresh instance: strategies keep per-session state) and account every call.

    ``system_tokens`` is the recorded system prompt's size, sent before the window with every call. A
    strategy that cannot fit a call into the profile's window ends the replay there: the calls after it
    are counted in ``calls_not_sent``, not billed. ``needed`` (`harness.sim.needed.needed_values` of the
    session, whose system prompt is ``system``) are checked against each call's window: ``needed_hidden``
    counts those visible nowhere in it (a call not sent hides all of its own)."""
    name = label or strategy.name
    state = _Accounting(strategy, profile, system_tokens=system_tokens, scenario=scenario,
                        session_index=session_index, label=name, system=system, needed=needed)
    recorded_calls = sum(1 for m in messages[1:] if m.role == "assistant")
    if messages:
        state.append(messages[0])
    not_sent = 0
    for message in messages[1:]:
        if message.role == "assistant":
            if not state.call(message):
                not_sent = recorded_calls - state.agent_calls
                break
            state.append(message)
        else:
            state.append(message)
            state.window.hook(strategy.apply)
    t = state.tally
    outputs = state.outputs.values()
    calls = [_call_row(c, hidden, needed_hidden) for c, hidden, needed_hidden in zip(
        state.billing.calls, _hidden_columns(state.billing.calls, state.hidden_per_call),
        _agent_only(state.billing.calls, state.needed_hidden_per_call), strict=True)]
    agent_prompts = [c.input_tokens for c in state.billing.calls if c.call_kind == "agent"]
    row: dict[str, Any] = {
        "scenario": scenario, "session_index": session_index, "strategy": name,
        "recorded_calls": recorded_calls, "calls_not_sent": not_sent,
        "model_calls": t.model_calls, "summary_calls": t.summary_calls,
        "input_tokens": t.input_tokens, "output_tokens": t.output_tokens,
        "cached_input_tokens": t.cached_input_tokens,
        "cache_write_tokens": sum(c.cache_write_tokens for c in state.billing.calls),
        "context_tokens_mean": (sum(agent_prompts) / len(agent_prompts)) if agent_prompts else 0.0,
        "context_tokens_peak": max(agent_prompts, default=0),
        "cost_usd": t.cost_usd, "summary_cost_usd": t.summary_cost_usd,
        "overflow_events": t.overflow_events, "compactions": t.compactions, "tokens_freed": t.tokens_freed,
        "cache_breaking_edits": t.cache_breaking_edits, "thrash": t.thrash,
        "tool_outputs": len(state.outputs), "tool_output_tokens": sum(size for _, _, size in outputs),
        "hidden_outputs": len(state.hidden), "hidden_output_tokens": sum(h.tokens for h in state.hidden.values()),
        "hidden_at_last_call": state.hidden_per_call[-1][0] if state.hidden_per_call else 0,
        "needed_values": len(needed),
        "needed_hidden": sum(state.needed_hidden_per_call) + sum(
            1 for value in needed if value.call >= state.agent_calls),
    }
    return AccountedSession(row=row, calls=calls, hidden=sorted(state.hidden.values(),
                                                                 key=lambda h: (h.first_hidden_call, h.tool_use_id)))


def _hidden_columns(calls: list[CallRecord], hidden: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Each call's (hidden outputs, their tokens): an agent call's own, a summary call's none."""
    out: list[tuple[int, int]] = []
    agent = iter(hidden)
    for c in calls:
        out.append(next(agent) if c.call_kind == "agent" else (0, 0))
    return out


def _agent_only(calls: list[CallRecord], values: list[int]) -> list[int]:
    """Each call's value: an agent call's own (in order), a summary call's 0."""
    agent = iter(values)
    return [next(agent) if c.call_kind == "agent" else 0 for c in calls]


def _call_row(call: CallRecord, hidden: tuple[int, int], needed_hidden: int) -> dict[str, Any]:
    row = {"scenario": call.scenario, "session_index": call.session_index, "strategy": call.strategy}
    row.update({name: getattr(call, name) for name in CALL_FIELDS})
    row["hidden_outputs"], row["hidden_output_tokens"] = hidden
    row["needed_hidden"] = needed_hidden
    return row
