"""The per-turn event log of a session replay, the rows of ``events.parquet``: at each model call what
the context held by kind of message, each tool result, each compaction a strategy made, and where
each needed fact was lost. Ints and short strings only, never a message's text; the decision and its
trace are the call's row in ``calls.parquet`` (``call_index``), not repeated here.

`EventRecord` has the table's columns (`harness.core.tables.EVENT_COLUMNS`: names, types, defaults) as
its fields; `EventLog` records one replay, each row the list of the columns' values (what a part stores,
`harness.run.parts`, and the cheapest to build).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any, Literal

from mypy_extensions import mypyc_attr

from harness.build import pickle_frozen_by_fields
from harness.core.context import Window
from harness.core.messages import Message
from harness.core.tables import EVENT_ROW_KEY

__all__ = ["COMPOSITION", "DEFAULTS", "EVENT_COLUMNS", "EVENT_KEY", "EventKind", "EventLog", "EventRecord"]

EventKind = Literal["call", "compaction", "lost"]


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One event of a session replay: one row of ``events.parquet``, every column with its meaning."""

    scenario: str
    session_index: int
    strategy: str
    #: Order of the event within its session replay, from 0.
    seq: int
    #: The turn (1-based, as ``turns`` counts them) the event belongs to: a compaction before the
    #: model call and the tool result after it share the call's turn.
    turn: int
    agent: str
    #: call (a model call, with the tool result it led to) | compaction | lost.
    event: str
    #: call: its row in calls.parquet (same session and strategy); compaction: the summary call it
    #: made; else -1.
    call_index: int = -1
    # call: the prompt by kind of message (the non-system columns add up to the call's context_tokens).
    messages: int = 0
    system_tokens: int = 0
    task_tokens: int = 0
    #: The agent's own messages: tool calls, prose, final answers.
    assistant_tokens: int = 0
    #: Tool results as the tool returned them (successful ones).
    tool_tokens: int = 0
    #: Error results (failed tools, refused calls).
    error_tokens: int = 0
    summary_tokens: int = 0
    #: Stubs of offloaded payloads (``handle`` messages).
    stub_tokens: int = 0
    #: Placeholders of masked observations.
    masked_tokens: int = 0
    nudge_tokens: int = 0
    # call, when it led to a tool result (or to a refusal of a call that was prose): the result as it
    # came back, before the strategy's on_append.
    tool: str = ""
    #: success | error.
    status: str = ""
    output_chars: int = 0
    output_tokens: int = 0
    #: contract | engineering | fatal for a structured error, plain for an unstructured one, "" on success.
    error_class: str = ""
    # compaction: a hook that changed the window.
    #: before_call | reduce (on overflow) | apply (after the turn) | on_append (a result rewritten).
    hook: str = ""
    #: What it did, "+"-joined: summarized, masked, offloaded, truncated, dropped.
    how: str = ""
    messages_before: int = 0
    messages_after: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    #: Fact keys whose last copy in this agent's context it removed, comma-joined, sorted.
    facts_dropped: str = ""
    # lost: the first turn a needed fact was not in the context (facts_lost counts these).
    fact: str = ""
    #: compaction (``dropped_seq`` removed it) | output_cap (cut before it reached the context) |
    #: handover (another agent saw it) | unseen.
    cause: str = ""
    #: seq of the compaction that last removed the fact from this agent's context; -1 for none.
    dropped_seq: int = -1


#: The table's columns, in order: a row is the list of their values (`EventLog.rows`).
EVENT_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(EventRecord))
#: The columns a row is sorted by in the table (the first three lead every row).
EVENT_KEY = EVENT_ROW_KEY
#: Column -> default.
DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(EventRecord) if f.default is not MISSING}
#: The message kinds of a window, each counted in one composition column.
COMPOSITION: dict[str, str] = {
    "task": "task_tokens", "action": "assistant_tokens", "text": "assistant_tokens", "final": "assistant_tokens",
    "observation": "tool_tokens", "error": "error_tokens", "summary": "summary_tokens", "handle": "stub_tokens",
    "placeholder": "masked_tokens", "nudge": "nudge_tokens",
}
_AT = {name: i for i, name in enumerate(EVENT_COLUMNS)}
#: The values after the ones every row sets (the key, seq, turn, agent and event): the defaults.
_REST = [DEFAULTS[name] for name in EVENT_COLUMNS[_AT["event"] + 1:]]
#: The composition columns in table order (next to each other), and each message kind's place among them.
_PARTS = tuple(dict.fromkeys(c for c in EVENT_COLUMNS if c in COMPOSITION.values()))
_SLOT = {kind: _PARTS.index(column) for kind, column in COMPOSITION.items()}
_FIRST_PART = _AT[_PARTS[0]]
#: What a new message of a kind says a compaction did (`EventLog.changed`).
_NEW_KIND_HOW = {"summary": "summarized", "placeholder": "masked", "handle": "offloaded"}
_HOW_ORDER = ("summarized", "masked", "offloaded", "truncated", "dropped")


def _parts(messages: Iterable[Message]) -> list[int]:
    """Tokens of ``messages`` per composition column (`_PARTS` order)."""
    totals = [0] * len(_PARTS)
    for m in messages:
        totals[_SLOT[m.kind]] += m.tokens
    return totals


@mypyc_attr(native_class=False)  # pickled whole (`Replay.save`): see harness/build.py
class EventLog:
    """The events of one session replay, in the order they happened, each row the values of
    `EVENT_COLUMNS` (``EventRecord(*row)`` reads one). The kernel sets ``turn`` as each turn starts and
    reports each event, every message it appends (`appended`) and every change a hook made (`changed`).

    The composition of each agent's window is kept as running totals, so a call costs no pass over the
    window (docs/design.md, "Scale"); a change costs a pass at C speed to find the messages that changed.
    """

    __slots__ = ("_call", "_dropped", "_key", "_totals", "rows", "turn")

    def __init__(self, *, scenario: str, session_index: int, strategy: str) -> None:
        self._key = [scenario, session_index, strategy]
        self.rows: list[list[Any]] = []
        self.turn = 1
        #: (agent, fact key) -> seq of the compaction that last removed the fact from that agent's context.
        self._dropped: dict[tuple[str, str], int] = {}
        #: The row of the latest model call, which the tool result of its turn completes.
        self._call: list[Any] = []
        #: agent -> tokens of its window per composition column.
        self._totals: dict[str, list[int]] = {}

    def _row(self, agent: str, event: EventKind) -> list[Any]:
        row = [*self._key, len(self.rows), self.turn, agent, event, *_REST]
        self.rows.append(row)
        return row

    def appended(self, agent: str, message: Message) -> None:
        """The runtime appended ``message`` to the agent's window."""
        totals = self._totals.setdefault(agent, [0] * len(_PARTS))
        totals[_SLOT[message.kind]] += message.tokens

    def call(self, agent: str, call_index: int, window: Window, system_tokens: int) -> None:
        """A model call (agent turn or hand-over) and the context it was sent."""
        totals = self._totals.get(agent)
        if totals is None or sum(totals) != window.tokens:  # a change no hook reported: count again
            totals = self._totals[agent] = _parts(window)
        row = self._row(agent, "call")
        row[_FIRST_PART:_FIRST_PART + len(totals)] = totals
        row[_AT["call_index"]] = call_index
        row[_AT["messages"]] = len(window)
        row[_AT["system_tokens"]] = system_tokens
        self._call = row

    def tool(self, tool: str, result: Message, output_chars: int) -> None:
        """The tool result (or the refusal) the latest call led to, as it came back, before the
        strategy's ``on_append``: recorded on that call's row."""
        row = self._call
        row[_AT["tool"]] = tool
        row[_AT["status"]] = "error" if result.error is not None or result.kind == "error" else "success"
        row[_AT["output_chars"]] = output_chars
        row[_AT["output_tokens"]] = result.tokens
        if result.error is not None:
            error = result.error
            row[_AT["error_class"]] = (error.error_class or "structured") if error.structured else "plain"
        elif result.kind == "error":
            row[_AT["error_class"]] = "contract"

    def changed(self, agent: str, hook: str, before: Sequence[Message], tokens_before: int, after: Window,
                summary_call: int) -> None:
        """A hook changed the agent's window from ``before`` (``tokens_before`` tokens) to ``after``;
        ``summary_call`` is the index of the summary call it made (-1: none). A compaction event unless
        it only re-pinned messages."""
        # The changed middle: what lies between the longest common prefix and suffix (by identity).
        head = list(map(operator.is_, before, after))
        i = head.index(False) if False in head else len(head)
        tail = list(map(operator.is_, reversed(before), reversed(after)))
        j = min(tail.index(False) if False in tail else len(tail), len(before) - i, len(after) - i)
        old, new = before[i:len(before) - j], after[i:len(after) - j]
        totals = self._totals.setdefault(agent, [0] * len(_PARTS))
        for m in old:
            totals[_SLOT[m.kind]] -= m.tokens
        for m in new:
            totals[_SLOT[m.kind]] += m.tokens
        # Pinning copies a message and keeps its blocks: not a change of what the model sees.
        old_blocks, new_blocks = {id(m.blocks) for m in old}, {id(m.blocks) for m in new}
        removed = [m for m in old if id(m.blocks) not in new_blocks]
        added = [m for m in new if id(m.blocks) not in old_blocks]
        if removed or added:
            self._compaction(agent, hook, len(before), tokens_before, removed, added, after, summary_call)

    def rewritten(self, agent: str, message: Message, appended: Message, after: Window) -> None:
        """``on_append`` rewrote ``message`` (offloaded its payload) as ``appended``, now last of ``after``
        (and reported as `appended`)."""
        self._compaction(agent, "on_append", len(after), after.tokens - appended.tokens + message.tokens, [message],
                         [appended], after, -1)

    def _compaction(self, agent: str, hook: str, messages_before: int, tokens_before: int, removed: list[Message],
                    added: list[Message], after: Window, summary_call: int) -> None:
        how = {_NEW_KIND_HOW.get(m.kind, "truncated") for m in added}
        if len(removed) > len(added) and "summarized" not in how:
            how.add("dropped")
        # A fact leaves the context with the last message that held it.
        dropped = sorted({k for m in removed for k in m.facts if k not in after.fact_counts})
        row = self._row(agent, "compaction")
        row[_AT["call_index"]] = summary_call
        row[_AT["hook"]] = hook
        row[_AT["how"]] = "+".join(h for h in _HOW_ORDER if h in how)
        row[_AT["messages_before"]] = messages_before
        row[_AT["messages_after"]] = len(after)
        row[_AT["tokens_before"]] = tokens_before
        row[_AT["tokens_after"]] = after.tokens
        row[_AT["facts_dropped"]] = ",".join(dropped)
        seq = row[_AT["seq"]]
        for key in dropped:
            self._dropped[(agent, key)] = seq

    def lost(self, agent: str, fact: str, *, cut: bool, handover: bool) -> None:
        """A needed fact first found missing from the context: ``cut`` when the output cap cut it,
        ``handover`` when another agent's context held it."""
        dropped = self._dropped.get((agent, fact), -1)
        row = self._row(agent, "lost")
        row[_AT["fact"]] = fact
        row[_AT["cause"]] = "compaction" if dropped >= 0 else "output_cap" if cut else "handover" if handover \
            else "unseen"
        row[_AT["dropped_seq"]] = dropped


# Compiled (setup.py), a frozen dataclass cannot restore itself from a pickle: see `harness.build`.
pickle_frozen_by_fields(globals())
