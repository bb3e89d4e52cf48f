"""claude_code_compact: the documented behaviour written out as tests (there is no installable
reference): the threshold and its boundary, the newest 5 results kept, the two stages, the thrash
and failure stops, reduce, pins, and the invariants of docs/sdk-strategies.md 3."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, Text, ToolResult, ToolUse, tokens_of
from strategies import create
from strategies.base import CannotReduce
from strategies.claude_code_compact import CLEARED, ClaudeCodeCompact, cleared
from strategies.split import is_pinned
from strategies.testing import FakeSummarizer, Ids, brief, histories, new_messages, open_uses, well_formed

OUTPUT = "\n".join(f"line {i:03d}: some tool output" for i in range(40))  # ~330 tokens
OVERFLOW = ContextOverflow(1, 1)


def call(i: str) -> Message:
    return Message.build("assistant", [ToolUse(i, "read_file", {"path": i})])


def result(i: str, text: str = OUTPUT) -> Message:
    return Message.build("user", [ToolResult(i, "success", text)])


def task(pinned: bool = False) -> Message:
    return Message.build("user", [Text("the task")], kind="task", pinned=pinned)


def turns(n: int, prefix: str = "t") -> list[Message]:
    out: list[Message] = []
    for k in range(n):
        out += [call(f"{prefix}{k}"), result(f"{prefix}{k}")]
    return out


def setup(
    window: list[Message], *, room: int = 0, fake: FakeSummarizer | None = None, overhead: int = 0, **params: Any
) -> tuple[Context, ClaudeCodeCompact]:
    """A context whose threshold is the current prompt + ``room`` (reserve and buffer 0 unless given)."""
    params = {"summary_reserve_tokens": 0, "buffer_tokens": 0, **params}
    strategy = create("claude_code_compact", **params)
    assert isinstance(strategy, ClaudeCodeCompact)
    window_tokens = overhead + tokens_of(window) + room + params["summary_reserve_tokens"] + params["buffer_tokens"]
    ctx = Context(window, window_tokens=window_tokens, summarizer=fake or FakeSummarizer(), prompt_overhead=overhead)
    return ctx, strategy


def contents(window: list[Message]) -> list[str]:
    return [b.content for m in window for b in m.blocks if isinstance(b, ToolResult)]


# Params and the threshold ---------------------------------------------------------------------------


def test_defaults_and_the_threshold_of_a_200k_window() -> None:
    strategy = create("claude_code_compact")
    assert isinstance(strategy, ClaudeCodeCompact)
    p = strategy.params
    assert (p.summary_reserve_tokens, p.buffer_tokens, p.keep_tool_results) == (20_000, 13_000, 5)
    assert (p.thrash_turns, p.thrash_limit, p.max_failures) == (3, 3, 3)
    assert strategy.threshold(Context(window_tokens=200_000)) == 167_000  # the secondary sources' figure


@pytest.mark.parametrize(
    "params",
    [
        {"summary_reserve_tokens": -1},
        {"buffer_tokens": -1},
        {"keep_tool_results": -1},
        {"thrash_turns": 0},
        {"thrash_limit": 0},
        {"max_failures": 0},
        {"keep_tool_results": True},
        {"buffer_tokens": 1.5},
        {"threshold": 0.9},
    ],
)
def test_bad_params_are_rejected(params: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        create("claude_code_compact", **params)


@pytest.mark.parametrize(("room", "fires"), [(0, True), (1, False)])
def test_it_fires_when_the_whole_prompt_reaches_the_threshold(room: int, fires: bool) -> None:
    """``>=`` on the prompt's tokens, system overhead included (reserve and buffer at their defaults)."""
    window = [task(), *turns(7)]
    ctx, strategy = setup(window, room=room, overhead=500, summary_reserve_tokens=20_000, buffer_tokens=13_000)
    assert ctx.prompt_tokens == strategy.threshold(ctx) - room
    strategy.before_call(ctx)
    assert (list(ctx.messages) != window) is fires


# The two stages ---------------------------------------------------------------------------------------


def test_clearing_keeps_the_newest_5_results_and_stops_when_below() -> None:
    window = [task(), *turns(7)]
    fake = FakeSummarizer()
    ctx, strategy = setup(window, room=-1, fake=fake)  # one token over: clearing is enough
    strategy.before_call(ctx)
    assert contents(list(ctx.messages)) == [CLEARED, CLEARED] + [OUTPUT] * 5
    assert fake.calls == [] and len(ctx.messages) == len(window) and ctx.removed_count == 0
    for before, after in zip(window, ctx.messages, strict=True):
        if after is not before:  # a rewrite keeps the role, the ids, the statuses; kind placeholder
            assert after.kind == "placeholder" and after.role == before.role and after.results == before.results
    assert all(after is before for before, after in zip(window[5:], ctx.messages[5:], strict=True))


def test_still_over_after_clearing_it_summarizes_everything() -> None:
    window = [task(), *turns(7)]
    fake = FakeSummarizer()
    ctx, strategy = setup(window, room=-2000, fake=fake)
    strategy.before_call(ctx)
    assert [m.text for m in ctx.messages] == ["SUMMARY 1"] and ctx.messages[0].kind == "summary"
    assert contents(fake.calls[0]) == [CLEARED, CLEARED] + [OUTPUT] * 5  # the summarizer sees the cleared window
    assert ctx.removed_count == len(window)


def test_a_call_still_waiting_is_never_cleared_nor_summarized() -> None:
    open_call = call("open")
    window = [task(), *turns(7), open_call]
    fake = FakeSummarizer()
    ctx, strategy = setup(window, room=-2000, fake=fake)
    strategy.before_call(ctx)
    assert [m.kind for m in ctx.messages] == ["summary", "action"] and ctx.messages[-1] is open_call
    assert all(m is not open_call for m in fake.calls[0])


def test_pinned_messages_are_neither_cleared_nor_summarized() -> None:
    pinned_task = task(pinned=True)
    pinned_result = Message.build("user", [ToolResult("t0", "success", OUTPUT)], pinned=True)
    window = [pinned_task, call("t0"), pinned_result, *turns(6, "u")]
    fake = FakeSummarizer()
    ctx, strategy = setup(window, room=-2000, fake=fake)
    strategy.before_call(ctx)
    assert list(ctx.messages)[:3] == window[:3] and ctx.messages[3].kind == "summary"
    assert all(m not in window[:3] for m in fake.calls[0])


def test_keep_zero_clears_every_result() -> None:
    assert contents(cleared([task(), *turns(3)], 0)) == [CLEARED] * 3


# Thrash and failure stops ---------------------------------------------------------------------------


def refill(ctx: Context, strategy: ClaudeCodeCompact, turns_apart: int, k: int) -> None:
    """Calls with nothing new, then one that brings a result big enough to pass the threshold."""
    for _ in range(turns_apart - 1):
        strategy.before_call(ctx)
    ctx.messages.extend([call(f"r{k}"), result(f"r{k}", OUTPUT * 8)])
    strategy.before_call(ctx)


def test_three_rapid_refills_in_a_row_stop_compacting() -> None:
    """"the context refilled to the limit within 3 turns of the previous compact, 3 times in a row"."""
    window = [task(), *turns(7)]
    fake = FakeSummarizer()
    ctx, strategy = setup(window, room=-2000, fake=fake)
    strategy.before_call(ctx)  # the first compaction: not a refill
    for k in range(2):
        refill(ctx, strategy, 3, k)  # refills 1 and 2, each compacted
    assert len(fake.calls) == 3 and strategy.stopped is None
    refill(ctx, strategy, 3, 2)  # the third in a row: no compaction, stop
    assert len(fake.calls) == 3 and strategy.stopped is not None and "thrashing" in strategy.stopped
    before = list(ctx.messages)
    ctx.messages.extend(turns(4, "late"))
    strategy.before_call(ctx)
    assert list(ctx.messages) == [*before, *turns(4, "late")]  # no more compaction of any stage
    with pytest.raises(CannotReduce, match="thrashing"):
        strategy.reduce(ctx, OVERFLOW)  # overflow handling applies: the session ends


def test_a_refill_after_more_than_3_turns_resets_the_count() -> None:
    window = [task(), *turns(7)]
    fake = FakeSummarizer()
    ctx, strategy = setup(window, room=-2000, fake=fake)
    strategy.before_call(ctx)
    for k, apart in enumerate((3, 3, 4, 3, 3, 5)):
        refill(ctx, strategy, apart, k)
    assert strategy.stopped is None and len(fake.calls) == 7


def test_three_failed_summaries_in_a_row_stop_compacting() -> None:
    window = [task(), *turns(7)]
    fake = FakeSummarizer("fail")
    ctx, strategy = setup(window, room=-2000, fake=fake)
    for _ in range(5):
        strategy.before_call(ctx)
    assert len(fake.calls) == 3 and strategy.stopped is not None and "3 failed" in strategy.stopped
    assert contents(list(ctx.messages))[:2] == [CLEARED, CLEARED]  # the clearing stage still happened


# reduce -----------------------------------------------------------------------------------------------------


def test_reduce_below_the_threshold_clears_then_summarizes() -> None:
    """An overflow below the threshold (an output reserve over 33k): the first reduce clears, the
    next one has nothing left to clear and summarizes."""
    window = [task(), *turns(7)]
    ctx, strategy = setup(window, room=10_000)
    tokens = ctx.tokens
    strategy.reduce(ctx, OVERFLOW)
    assert ctx.tokens < tokens and contents(list(ctx.messages))[:2] == [CLEARED, CLEARED]
    strategy.reduce(ctx, OVERFLOW)
    assert [m.kind for m in ctx.messages] == ["summary"]


def test_reduce_stops_after_clearing_when_that_brings_the_prompt_below() -> None:
    window = [task(), *turns(7)]
    ctx, strategy = setup(window, room=-1)
    strategy.reduce(ctx, OVERFLOW)
    assert contents(list(ctx.messages))[:2] == [CLEARED, CLEARED] and len(ctx.messages) == len(window)


def test_reduce_that_cannot_lower_raises_and_undoes_the_clearing() -> None:
    tiny = [task(), *[m for k in range(7) for m in (call(f"t{k}"), result(f"t{k}", "ok"))]]
    ctx, strategy = setup(tiny, room=10_000, fake=FakeSummarizer("huge"))
    with pytest.raises(CannotReduce) as e:
        strategy.reduce(ctx, OVERFLOW)
    assert list(ctx.messages) == tiny and ctx.removed_count == 0 and e.value.__cause__ is OVERFLOW


def test_apply_does_nothing() -> None:
    window = [task(), *turns(7)]
    ctx, strategy = setup(window, room=-2000)
    strategy.apply(ctx)
    assert list(ctx.messages) == window


# Properties (docs/strategies.md G1, G2, G5, G6; docs/sdk-strategies.md 3) ------------------------------------------


def claude_code_params() -> st.SearchStrategy[dict[str, Any]]:
    """Small reserves so the hooks fire on short histories."""
    return st.fixed_dictionaries({
        "summary_reserve_tokens": st.sampled_from((0, 50, 200)),
        "buffer_tokens": st.sampled_from((0, 50, 300)),
        "keep_tool_results": st.integers(0, 6),
        "thrash_turns": st.integers(1, 3),
        "thrash_limit": st.integers(1, 3),
        "max_failures": st.integers(1, 3),
    })


@given(
    params=claude_code_params(),
    window=histories(max_turns=6),
    factor=st.sampled_from((0.3, 0.6, 1.0, 1.5)),
    steps=st.lists(st.sampled_from(("call", "reduce")), min_size=1, max_size=6),
    mode=st.sampled_from(("ok", "ok", "ok", "fail", "empty", "huge")),
    overhead=st.sampled_from((0, 100)),
    data=st.data(),
)
def test_compaction_keeps_pairs_pins_open_calls_and_never_restores_a_cleared_result(
    params: dict[str, Any], window: list[Message], factor: float, steps: list[str], mode: Any, overhead: int,
    data: st.DataObject,
) -> None:
    strategy = create("claude_code_compact", **params)
    assert isinstance(strategy, ClaudeCodeCompact)
    window_tokens = max(1, int((tokens_of(window) + overhead) * factor)) + params["summary_reserve_tokens"] + \
        params["buffer_tokens"]
    ctx = Context(window, summarizer=FakeSummarizer(mode), prompt_overhead=overhead, window_tokens=window_tokens)
    gone: set[str] = set()
    ids = Ids("n")
    for step in steps:
        before = list(ctx.messages)
        removed, tokens = ctx.removed_count, ctx.tokens
        open_call = before[-1] if open_uses(before) else None
        pinned = [m for m in before if m.pinned]
        if step == "call":
            strategy.before_call(ctx)
        else:
            try:
                strategy.reduce(ctx, OVERFLOW)
                assert ctx.tokens < tokens  # G6
            except CannotReduce:
                assert list(ctx.messages) == before and ctx.removed_count == removed  # G6
        after = list(ctx.messages)
        note = f"before={brief(before)}\nafter={brief(after)}"
        event(f"{step}: {'changed' if after != before else 'same'}")
        assert well_formed(after), note  # G1
        assert ctx.tokens == tokens_of(after) and ctx.removed_count >= removed  # G5
        assert all(any(a is m for a in after) for m in pinned), note  # G2
        if open_call is not None:  # a call still waiting is never cleared nor summarized
            assert after[-1] is open_call, note
        whole = {b.tool_use_id for m in after for b in m.blocks if isinstance(b, ToolResult) and b.content != CLEARED}
        assert not gone & whole, note  # a cleared or summarized result never comes back whole
        gone |= {b.tool_use_id for m in before for b in m.blocks if isinstance(b, ToolResult)} - whole
        fired = step == "call" and after != before and strategy.stopped is None
        if fired and ctx.prompt_tokens >= strategy.threshold(ctx):
            # Still over after firing: the summary failed (the window is the cleared one, or unchanged),
            # or what a summary cannot remove is itself over the threshold.
            kept = [m for i, m in enumerate(after) if m.kind == "summary" or is_pinned(after, i) or m is open_call]
            assert len(kept) < len(after) or ctx.prompt_overhead + tokens_of(kept) >= strategy.threshold(ctx), note
        for m in data.draw(new_messages(ctx.messages, ids)):
            ctx.messages.append(strategy.on_append(ctx, m))
