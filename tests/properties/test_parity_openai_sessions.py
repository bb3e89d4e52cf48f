"""Differential tests of `openai_trimming` and `openai_compaction` against openai-agents 0.24.0, offline.

What runs locally in the SDK, and is driven here on the same histories as ours (converted to
Responses items, no network, no API key):

- ``SessionSettings.limit``: ``prepare_input_with_session`` over an in-memory ``SQLiteSession``
  holding the history, with the run's new user message: the last ``limit`` items, then the outputs
  whose calls the limit cut are dropped. Ours: `openai_trimming` with ``max_turns=None`` and the same
  limit, ``before_call`` at the run's start. The deliberate difference: a limit inside one of our
  messages drops it whole, where the SDK keeps the later calls of an assistant message and their
  outputs; so the SDK's kept items are compared with ours after removing the messages it kept in part,
  and those may only lead the kept history.
- ``OpenAIResponsesCompactionSession``: its candidate selection (``select_compaction_candidate_items``)
  against ``candidate_items``, and its trigger and deferral through ``_apply_post_write_compaction``
  (the Runner's call after each saved turn: defer while the turn has tool outputs, compact at the next
  turn without, or when 10+ candidates are stored), over an in-memory ``SQLiteSession`` and a fake
  client whose ``responses.compact`` returns the input's user messages and one compaction item (the
  documented output of ``/responses/compact``; what the real item holds is not public). Ours:
  `openai_compaction`'s ``apply`` after each turn. The stored history and the deferred flag must
  match after every turn.

The cookbook's TrimmingSession and SummarizingSession are notebook code, not a package: their
documented behaviour is written out as tests in tests/strategies/test_openai_sessions.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

logging.disable(logging.CRITICAL)
pytest.importorskip("agents")

from agents import SQLiteSession  # noqa: E402
from agents.memory import SessionSettings  # noqa: E402
from agents.memory.openai_responses_compaction_session import (  # noqa: E402
    OpenAIResponsesCompactionSession,
    select_compaction_candidate_items,
)
from agents.run_internal.session_persistence import (  # noqa: E402
    _apply_post_write_compaction,
    prepare_input_with_session,
)
from hypothesis import event, given, note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from harness.core import Context, Message, Text, ToolResult, ToolUse, from_converse  # noqa: E402
from strategies.openai_sessions import (  # noqa: E402
    DEFAULT_COMPACTION_CANDIDATES,
    OpenAICompaction,
    OpenAICompactionParams,
    OpenAITrimming,
    OpenAITrimmingParams,
    candidate_items,
    current_run_start,
    item_count,
)
from strategies.testing import (  # noqa: E402
    FINALS,
    FOLLOWUPS,
    FakeSummarizer,
    Ids,
    brief,
    histories,
    tool_turn,
)
from tests.properties.converse_histories import well_formed_histories  # noqa: E402

#: A Responses item: a dict here (the SDK's types are TypedDicts of many shapes).
Item = Any

# Converters ------------------------------------------------------------------------------------------


def to_items(window: Sequence[Message], offset: int = 0) -> list[Item]:
    """Responses items of a window. Each item names its message: user text starts ``<index>|``, the
    assistant message's id is ``msg_<index>``, calls and outputs carry unique call ids."""
    items: list[Item] = []
    for i, m in enumerate(window, start=offset):
        texts = "\n".join(b.text for b in m.blocks if isinstance(b, Text))
        if m.role == "assistant":
            if texts or not m.has_use:
                items.append({"type": "message", "role": "assistant", "id": f"msg_{i}", "status": "completed",
                              "content": [{"type": "output_text", "text": texts, "annotations": []}]})
            items += [{"type": "function_call", "call_id": b.id, "name": b.name,
                       "arguments": json.dumps(dict(b.input), sort_keys=True)}
                      for b in m.blocks if isinstance(b, ToolUse)]
            continue
        items += [{"type": "function_call_output", "call_id": b.tool_use_id, "output": b.content}
                  for b in m.blocks if isinstance(b, ToolResult)]
        if texts or not m.has_result:
            items.append({"role": "user", "content": f"{i}|{texts}"})
    assert len(items) == sum(item_count(m) for m in window)
    return items


def item_owner(item: Item, owners: dict[str, int]) -> int | str:
    """The index of the message an item came from, or "compaction" for a compaction item."""
    if item.get("type") == "compaction":
        return "compaction"
    if item.get("type") == "function_call":
        return owners[item["call_id"]]
    if item.get("type") == "function_call_output":
        return owners["out:" + item["call_id"]]
    if item.get("role") == "assistant":
        return int(item["id"].removeprefix("msg_"))
    content = item["content"]
    return int((content if isinstance(content, str) else content[0]["text"]).split("|", 1)[0])


def call_owners(window: Sequence[Message]) -> dict[str, int]:
    """Call id -> the message of the call; ``out:`` + call id -> the message of its output."""
    owners = {i: k for k, m in enumerate(window) for i in m.uses}
    owners.update({"out:" + i: k for k, m in enumerate(window) for i in m.results})
    return owners


def run(coro: Any) -> Any:
    return asyncio.run(coro)


class Shown:
    """Messages that hypothesis prints briefly (a Message's repr is long)."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(brief(self.messages))


@st.composite
def windows(draw: st.DrawFn) -> list[Message]:
    """Hypothesis histories of tests/properties (no pins), or the strands parity tests' Converse ones
    (which have text exchanges, so several user turns)."""
    if draw(st.booleans()):
        window = draw(histories(max_turns=8, pinned=False, open_end=False))
    else:
        window = [from_converse(d) for d in draw(well_formed_histories(max_turns=8, allow_pins=False))]
    if window and window[-1].role == "assistant" and window[-1].has_use:
        window = window[:-1]  # a stored history never ends with a call waiting for its outputs
    return window


# SessionSettings.limit ----------------------------------------------------------------------------------


async def sdk_read(history: list[Item], new: list[Item], limit: int) -> list[Item]:
    session = SQLiteSession("parity")
    if history:
        await session.add_items(history)
    prepared, _ = await prepare_input_with_session(new, session, None, SessionSettings(limit=limit))
    return list(prepared)


@given(data=st.data())
def test_limit_keeps_the_same_whole_messages_as_session_settings_limit(data: st.DataObject) -> None:
    """At a run's start, ``SessionSettings(limit=N)`` and ``openai_trimming(max_turns=None, limit=N)``
    keep the same whole messages of the history (less the outputs of calls the SDK keeps in part, which
    would be orphans); messages the SDK keeps in part lead its history."""
    history = data.draw(windows().map(lambda w: Shown(w)), label="history").messages
    followup = Message.build("user", [Text(data.draw(st.sampled_from(FOLLOWUPS)))])
    limit = data.draw(st.integers(1, 14), label="limit")
    window = [*history, followup]
    prepared = run(sdk_read(to_items(history), to_items([followup], offset=len(history)), limit))
    owners = call_owners(window)
    kept_items = [item_owner(item, owners) for item in prepared]
    assert kept_items[-1] == len(history)  # the run's new input is always sent

    ctx = Context(window, summarizer=FakeSummarizer("fixed"))
    OpenAITrimming(OpenAITrimmingParams(max_turns=None, limit=limit)).before_call(ctx)
    ours = [next(k for k, m in enumerate(window) if m is kept) for kept in ctx.messages]
    note(f"SDK kept items of messages {kept_items}; ours kept messages {ours}")

    counts: dict[int | str, int] = {}
    for owner in kept_items:
        counts[owner] = counts.get(owner, 0) + 1
    whole: list[int] = [
        k for k in dict.fromkeys(kept_items) if isinstance(k, int) and counts[k] == item_count(window[k])]
    partial = [k for k in dict.fromkeys(kept_items) if k not in whole]
    # Without the messages the SDK keeps in part, their outputs are orphans: ours drops them too.
    whole_uses = {i for k in whole for i in window[k].uses}
    expected = [k for k in whole if window[k].results <= whole_uses]
    assert ours == expected
    assert all(isinstance(k, int) and k < min(expected) for k in partial)
    event("partial message in the SDK" if partial else "same items")
    event("trimmed" if len(ours) < len(window) else "unchanged")


# Candidate items ------------------------------------------------------------------------------------------


@given(data=st.data())
def test_candidate_items_count_as_the_sdk_selects_them(data: st.DataObject) -> None:
    """``candidate_items`` counts what ``select_compaction_candidate_items`` selects: every item but
    user messages and compaction items."""
    window = data.draw(windows().map(lambda w: Shown(w)), label="window").messages
    assert candidate_items(window) == len(select_compaction_candidate_items(to_items(window)))


# OpenAIResponsesCompactionSession --------------------------------------------------------------------------


class FakeResponses:
    """``client.responses`` whose ``compact`` returns the input's user messages and one compaction item."""

    def __init__(self) -> None:
        self.calls = 0

    async def compact(self, **kwargs: Any) -> SimpleNamespace:
        self.calls += 1
        users = [i for i in kwargs.get("input", []) if isinstance(i, dict) and i.get("role") == "user"]
        item = {"type": "compaction", "encrypted_content": f"opaque {self.calls}", "id": f"cmp_{self.calls}"}
        return SimpleNamespace(output=[*users, item], usage=None)


@st.composite
def turns(draw: st.DrawFn) -> list[list[Message]]:
    """A run of turns after the task: tool turns, prose replies (no tool outputs: an SDK run ends),
    and follow-up user messages that open the next turn."""
    ids = Ids("c")
    out: list[list[Message]] = [[Message.build("user", [Text("Task: fix the failing test.")], kind="task")]]
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(("tool", "tool", "tool", "prose", "followup")))
        turn: list[Message] = []
        if kind == "followup":
            turn.append(Message.build("user", [Text(draw(st.sampled_from(FOLLOWUPS)))]))
            kind = draw(st.sampled_from(("tool", "prose")))
        if kind == "tool":
            turn += draw(tool_turn(ids))
        else:
            turn.append(Message.build("assistant", [Text(draw(st.sampled_from(FINALS)))]))
        out[-1] += turn
        out.append([])
    return [t for t in out if t]


def stored_view(items: Sequence[Item], messages: Sequence[Message]) -> list[int | str]:
    owners = call_owners(messages)
    return list(dict.fromkeys(item_owner(i, owners) for i in items)) if items else []


def our_view(window: Sequence[Message], messages: Sequence[Message]) -> list[int | str]:
    return [next((k for k, m in enumerate(messages) if m is w), "compaction") for w in window]


@given(data=st.data())
def test_compaction_session_triggers_defers_and_keeps_as_the_sdk(data: st.DataObject) -> None:
    """Turn by turn, the SDK's compaction session and `openai_compaction` (session trigger only)
    defer, compact and keep the same: the stored history equals our window after every turn."""
    script = data.draw(turns(), label="turns")
    threshold = data.draw(st.sampled_from((None, 1, 2, 4, 6, 8)), label="candidate threshold")
    note("turns: " + " | ".join(brief(t) for t in script))
    messages = [m for t in script for m in t]

    async def drive() -> None:
        decide = None if threshold is None else (lambda c: len(c["compaction_candidate_items"]) >= threshold)
        session = OpenAIResponsesCompactionSession(
            "parity", SQLiteSession("parity"), client=SimpleNamespace(responses=FakeResponses()),  # type: ignore[arg-type]
            should_trigger_compaction=decide,
        )
        ours = OpenAICompaction(OpenAICompactionParams(
            candidate_threshold=threshold or DEFAULT_COMPACTION_CANDIDATES))
        ctx = Context([], summarizer=FakeSummarizer("fixed", fixed_text=""))
        offset = 0
        for k, turn in enumerate(script):
            await session.add_items(to_items(turn, offset=offset))
            offset += len(turn)
            tool_outputs = turn[-1].has_result
            await _apply_post_write_compaction(session, response_id=f"resp_{k}", store=False,
                                               has_local_tool_outputs=tool_outputs)
            for m in turn:
                ctx.messages.append(ours.on_append(ctx, m))
            ours.apply(ctx)
            stored = stored_view(await session.get_items(), messages)
            assert our_view(ctx.messages, messages) == stored, f"after turn {k}"
            assert ours.deferred == (session._deferred_response_id is not None), f"after turn {k}"
            event("compacted" if "compaction" in stored else "not compacted")

    run(drive())


def test_the_default_trigger_is_ten_candidate_items() -> None:
    """The SDK's default decision, read through its session: 9 candidates do not compact, 10 do."""
    for n, expected in ((9, False), (10, True)):
        messages = [Message.build("user", [Text("Task: go.")], kind="task")]
        messages += [Message.build("assistant", [Text(f"step {i}")]) for i in range(n)]

        async def drive(messages: list[Message] = messages) -> bool:
            responses = FakeResponses()
            session = OpenAIResponsesCompactionSession("d", SQLiteSession("d"),
                                                       client=SimpleNamespace(responses=responses))  # type: ignore[arg-type]
            await session.add_items(to_items(messages))
            await _apply_post_write_compaction(session, response_id="r", store=False, has_local_tool_outputs=False)
            return responses.calls == 1

        assert run(drive()) is expected
        ctx = Context(messages, summarizer=FakeSummarizer("fixed", fixed_text=""))
        strategy = OpenAICompaction()
        strategy.apply(ctx)
        assert (ctx.messages[-1].kind == "summary") is expected
        assert current_run_start(ctx.messages) == 0
