"""condense: params, normal condensation, hard reset caps and NOTICE clipping, hooks (docs/strategies.md 3.5)."""

from __future__ import annotations

import math

import pydantic
import pytest

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, Text, ToolResult, ToolUse
from strategies import create
from strategies.base import CannotReduce
from strategies.condense import NOTICE, clip, token_tail
from strategies.testing import FakeSummarizer, SummarizerFailed
from tests.oracles import clipped_text

OVERFLOW = ContextOverflow(1, 1)


def u(text: str) -> Message:
    return Message.user(text)


def a(text: str) -> Message:
    return Message.assistant(text)


def conversation(n: int, size: int = 20) -> list[Message]:
    return [u(f"user {i} " + "w " * size) if i % 2 == 0 else a(f"assistant {i} " + "w " * size) for i in range(n)]


def cause_chain(e: BaseException) -> list[BaseException]:
    out = []
    cur: BaseException | None = e.__cause__
    while cur is not None:
        out.append(cur)
        cur = cur.__cause__
    return out


# Params -----------------------------------------------------------------------------------------


def test_defaults() -> None:
    p = create("condense").params
    assert (
        p.max_size,
        p.keep_first,
        p.max_tokens,
        p.minimum_progress,
        p.hard_reset_retries,  # type: ignore[attr-defined]
        p.hard_reset_scaling,
    ) == (240, 1, None, 0.1, 5, 0.8)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("max_size", "keep_first", "ok"),
    [
        (4, 1, False),
        (5, 1, False),
        (6, 1, True),
        (3, 0, False),
        (4, 0, True),
        (80, 4, True),
        (10, 4, False),
        (12, 4, True),
    ],
)
def test_validator_needs_room_for_a_tail(max_size: int, keep_first: int, ok: bool) -> None:
    if ok:
        p = create("condense", max_size=max_size, keep_first=keep_first).params
        assert p.max_size // 2 - p.keep_first - 1 > 0  # type: ignore[attr-defined]
    else:
        with pytest.raises(pydantic.ValidationError, match="max_size//2 - keep_first - 1"):
            create("condense", max_size=max_size, keep_first=keep_first)


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("max_size", 0),
        ("keep_first", -1),
        ("max_tokens", 0),
        ("minimum_progress", 0),
        ("minimum_progress", 1),
        ("hard_reset_retries", 0),
        ("hard_reset_scaling", 0),
        ("hard_reset_scaling", 1),
    ],
)
def test_param_ranges(field: str, bad: object) -> None:
    with pytest.raises(pydantic.ValidationError):
        create("condense", **{field: bad})


# Helpers ----------------------------------------------------------------------------------------


def test_token_tail() -> None:
    E = conversation(5)
    t = [m.tokens for m in E]
    assert token_tail([], 10) == 0
    assert token_tail(E, 0) == 5
    assert token_tail(E, -3) == 5
    assert token_tail(E, t[0] - 1) == 4
    assert token_tail(E, t[0]) == 3
    assert token_tail(E, sum(t)) == 0


def test_clip_keeps_head_and_tail_around_notice() -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(100))
    out = clip(text, 80)
    room = 80 - len(NOTICE)
    assert len(out) == 80
    assert out == text[: math.ceil(room / 2)] + NOTICE + text[-(room // 2) :]
    assert clip(text, 100) == text
    assert clip(text, 11) == NOTICE
    assert clip(text, 5) == NOTICE[:5]
    assert clip(text, 12) == text[:1] + NOTICE


# Normal condensation ----------------------------------------------------------------------------


def test_reduce_normal_condensation_shape() -> None:
    msgs = conversation(10)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("condense").reduce(ctx, OVERFLOW)
    # REQUEST: tail = 10//2 - 1 - 1 = 3; s = 1, e = 7
    assert fake.calls == [msgs[1:7]]
    assert ctx.messages[0] == msgs[0]
    assert ctx.messages[1].kind == "summary" and ctx.messages[1].text == "SUMMARY 1"
    assert list(ctx.messages[2:]) == msgs[7:]
    assert ctx.removed_count == 6
    assert ctx.tokens == sum(m.tokens for m in ctx.messages)


def test_cut_points_move_the_range_past_open_calls() -> None:
    msgs = conversation(10)
    msgs[6] = Message.build("assistant", [ToolUse("t2", "tool", {})])
    msgs[7] = Message.build("user", [ToolResult("t2", "success", "y " * 20)])
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("condense").reduce(ctx)
    # target e = 7 falls inside the t2 call (opened at 6, answered at 7); the next cut point is 8
    assert fake.calls == [msgs[1:8]]
    assert list(ctx.messages[2:]) == msgs[8:]


def test_protected_messages_in_range_are_kept_before_summary() -> None:
    msgs = conversation(10)
    msgs[3] = Message.build("assistant", [Text("keep me")], pinned=True)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("condense").reduce(ctx)
    assert fake.calls == [[msgs[1], msgs[2], msgs[4], msgs[5], msgs[6]]]
    assert [ctx.messages[0], ctx.messages[1]] == [msgs[0], msgs[3]]
    assert ctx.messages[2].kind == "summary"
    assert list(ctx.messages[3:]) == msgs[7:]
    assert ctx.removed_count == 5


def test_keep_first_zero_summarizes_from_the_start() -> None:
    msgs = conversation(10)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("condense", keep_first=0).reduce(ctx)
    assert fake.calls == [msgs[0:6]]
    assert ctx.messages[0].kind == "summary"


def test_events_only_before_call_halves_window() -> None:
    msgs = conversation(8)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("condense", max_size=6).before_call(ctx)
    assert fake.calls == [msgs[1:7]]
    assert len(ctx.messages) <= 3
    assert [ctx.messages[0], ctx.messages[2]] == [msgs[0], msgs[7]]


def test_before_call_without_reason_does_nothing() -> None:
    msgs = conversation(8)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    s = create("condense", max_size=8)
    s.before_call(ctx)
    s.apply(ctx)
    assert fake.calls == [] and list(ctx.messages) == msgs


def test_tokens_reason_uses_token_tail() -> None:
    msgs = conversation(10)
    fake = FakeSummarizer()
    total = sum(m.tokens for m in msgs)
    eff = total - 1
    ctx = Context(msgs, summarizer=fake)
    create("condense", max_tokens=eff).before_call(ctx)
    tail = token_tail(msgs[1:], total - eff // 2)
    e = 10 - tail
    assert fake.calls == [msgs[1:e]]
    assert list(ctx.messages[2:]) == msgs[e:]


def test_minimum_progress_blocks_small_condensation() -> None:
    msgs = conversation(8)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("condense", max_size=6, minimum_progress=0.9).before_call(ctx)
    assert fake.calls == [] and list(ctx.messages) == msgs


# Soft trigger with nothing available ------------------------------------------------------------


def test_soft_trigger_with_no_cut_point_changes_nothing() -> None:
    msgs = [u("task"), Message.build("assistant", [ToolUse("open", "tool", {})]), *conversation(7)]
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("condense", max_size=6).before_call(ctx)
    assert fake.calls == []
    assert list(ctx.messages) == msgs and ctx.removed_count == 0


def test_soft_trigger_with_failing_summarizer_no_hard_reset() -> None:
    msgs = conversation(8)
    fake = FakeSummarizer(mode="fail")
    ctx = Context(msgs, summarizer=fake)
    create("condense", max_size=6).before_call(ctx)
    assert len(fake.calls) == 1
    assert list(ctx.messages) == msgs and ctx.removed_count == 0


def test_soft_trigger_summary_not_smaller_changes_nothing() -> None:
    msgs = conversation(8)
    fake = FakeSummarizer(mode="huge")
    ctx = Context(msgs, summarizer=fake)
    create("condense", max_size=6).before_call(ctx)
    assert len(fake.calls) == 1 and list(ctx.messages) == msgs


# Hard reset -------------------------------------------------------------------------------------


def hard_reset_window() -> list[Message]:
    """Four messages; with keep_first=2 the REQUEST tail is negative so no normal condensation."""
    longest = "".join(chr(ord("a") + i % 26) for i in range(100))
    return [
        u("T" * 60),
        Message.build("assistant", [Text("A" * 30), ToolUse("t1", "tool", {"x": 1})]),
        Message.build("user", [ToolResult("t1", "success", longest)]),
        a("B" * 70),
    ]


def test_hard_reset_caps_shrink_from_longest_text() -> None:
    msgs = hard_reset_window()
    fake = FakeSummarizer(fail_first=3)
    ctx = Context(msgs, summarizer=fake)
    create("condense", keep_first=2, max_size=240).reduce(ctx, OVERFLOW)
    assert len(fake.calls) == 4
    assert fake.calls[0] == msgs
    caps = [80, 64, 51]
    for sent, cap in zip(fake.calls[1:], caps, strict=True):
        assert sent[0].text == clipped_text("T" * 60, cap)
        assert sent[1].blocks[0] == Text(clipped_text("A" * 30, cap))
        assert sent[1].blocks[1] == msgs[1].blocks[1]
        assert sent[2].blocks == (ToolResult("t1", "success", clipped_text(msgs[2].blocks[0].content, cap)),)  # type: ignore[union-attr]
        assert sent[3].text == clipped_text("B" * 70, cap)
        assert (
            max(
                len(b.text) if isinstance(b, Text) else len(b.content)
                for m in sent
                for b in m.blocks  # type: ignore[union-attr]
                if not isinstance(b, ToolUse)
            )
            <= cap
        )
    assert [m.kind for m in ctx.messages] == ["summary"]
    assert ctx.messages[0].text == "SUMMARY 4"
    assert ctx.removed_count == 4


def test_hard_reset_only_clips_copies_sent() -> None:
    msgs = hard_reset_window()
    ctx = Context(msgs, summarizer=FakeSummarizer(mode="fail"))
    with pytest.raises(CannotReduce):
        create("condense", keep_first=2).reduce(ctx)
    assert list(ctx.messages) == msgs


def test_hard_reset_notice_clipping_for_tiny_caps() -> None:
    msgs = hard_reset_window()
    fake = FakeSummarizer(fail_first=2)
    ctx = Context(msgs, summarizer=fake)
    create("condense", keep_first=2, hard_reset_scaling=0.1).reduce(ctx)
    # caps: uncapped, int(100 * 0.1) = 10, int(10 * 0.1) = 1
    assert fake.calls[1][0].text == NOTICE[:10]
    assert fake.calls[1][2].blocks[0].content == NOTICE[:10]  # type: ignore[union-attr]
    assert fake.calls[2][0].text == NOTICE[:1]
    assert len(fake.calls) == 3


def test_hard_reset_keeps_protected_and_drops_keep_first() -> None:
    msgs = hard_reset_window()
    msgs[3] = Message.build("assistant", [Text("pinned " * 5)], pinned=True)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("condense", keep_first=2).reduce(ctx)
    assert fake.calls == [msgs[:3]]
    assert ctx.messages[0] == msgs[3]
    assert ctx.messages[1].kind == "summary"
    assert len(ctx.messages) == 2
    assert ctx.removed_count == 3


def test_hard_reset_gives_up_after_retries() -> None:
    msgs = hard_reset_window()
    fake = FakeSummarizer(mode="fail")
    ctx = Context(msgs, summarizer=fake)
    with pytest.raises(CannotReduce, match="hard reset failed") as info:
        create("condense", keep_first=2, hard_reset_retries=3).reduce(ctx, OVERFLOW)
    assert len(fake.calls) == 3
    assert any(isinstance(c, SummarizerFailed) for c in cause_chain(info.value))
    assert list(ctx.messages) == msgs and ctx.removed_count == 0


def test_reduce_at_most_one_plus_retries_calls() -> None:
    msgs = conversation(10)
    fake = FakeSummarizer(mode="fail")
    ctx = Context(msgs, summarizer=fake)
    with pytest.raises(CannotReduce):
        create("condense", hard_reset_retries=2).reduce(ctx)
    assert len(fake.calls) == 3
    assert list(ctx.messages) == msgs


def test_hard_reset_everything_protected_raises() -> None:
    msgs = [Message.build("user", [Text("p")], pinned=True), Message.build("assistant", [Text("q")], pinned=True)]
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    with pytest.raises(CannotReduce) as info:
        create("condense").reduce(ctx, OVERFLOW)
    assert info.value.__cause__ is OVERFLOW
    assert fake.calls == [] and list(ctx.messages) == msgs


def test_before_call_tokens_trigger_falls_back_to_hard_reset() -> None:
    msgs = conversation(10)
    fake = FakeSummarizer(fail_first=1)
    ctx = Context(msgs, summarizer=fake, window_tokens=sum(m.tokens for m in msgs) - 1)
    create("condense").before_call(ctx)
    assert len(fake.calls) == 2
    assert fake.calls[1] == msgs
    assert [m.kind for m in ctx.messages] == ["summary"]
    assert ctx.removed_count == 10


def test_before_call_swallows_failed_hard_reset() -> None:
    msgs = conversation(10)
    fake = FakeSummarizer(mode="fail")
    ctx = Context(msgs, summarizer=fake, window_tokens=10)
    create("condense", hard_reset_retries=2).before_call(ctx)
    assert len(fake.calls) == 3
    assert list(ctx.messages) == msgs


def test_hard_reset_keeps_a_protected_open_call_after_the_summary() -> None:
    """G1: a hard reset puts a protected call that is still open at the end after the summary."""
    msgs = [
        Message.user("task " + "w " * 50, kind="task"),
        Message.build("assistant", [ToolUse("t1", "read_file", {"path": "a"})]),
        Message.build("user", [ToolResult("t1", "success", "line\n" * 200)]),
        Message.build("assistant", [ToolUse("t2", "read_file", {"path": "b"})], pinned=True),
    ]
    ctx = Context(msgs, summarizer=FakeSummarizer())
    create("condense").reduce(ctx, OVERFLOW)
    assert [m.kind for m in ctx.messages][-2:] == ["summary", "action"]
    assert ctx.messages[-1].uses == {"t2"}
