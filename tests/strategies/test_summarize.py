"""summarize: ratio clamping, the split point k, soft q, failures and the turn trigger (docs/strategies.md 3.4)."""

from __future__ import annotations

import math

import pydantic
import pytest

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, Text, ToolResult, ToolUse
from strategies import create
from strategies.base import CannotReduce
from strategies.testing import FakeSummarizer, SummarizerFailed

OVERFLOW = ContextOverflow(1, 1)


def u(text: str, **kw: object) -> Message:
    return Message.user(text, **kw)  # type: ignore[arg-type]


def a(text: str) -> Message:
    return Message.assistant(text)


def a_use(i: str) -> Message:
    return Message.build("assistant", [ToolUse(i, "tool", {"q": i})])


def u_res(i: str, text: str = "output " * 40) -> Message:
    return Message.build("user", [ToolResult(i, "success", text)])


def conversation(n: int, size: int = 30) -> list[Message]:
    return [u(f"user {i} " + "w " * size) if i % 2 == 0 else a(f"assistant {i} " + "w " * size) for i in range(n)]


def turns(n: int) -> list[Message]:
    out = [u("the task " * 20, kind="task")]
    for i in range(n):
        out += [a_use(f"t{i}"), u_res(f"t{i}")]
    return out


# Params -----------------------------------------------------------------------------------------


def test_defaults() -> None:
    p = create("summarize").params
    assert (
        p.summary_ratio,
        p.preserve_recent_messages,
        p.pin_first,
        p.proactive,
        p.threshold,  # type: ignore[attr-defined]
        p.trigger_turns,
        p.keep_turns,
    ) == (0.3, 10, 0, False, 0.7, None, 10)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("given", "clamped"), [(5, 0.8), (0.01, 0.1), (0.8, 0.8), (0.1, 0.1), (0.5, 0.5), (-3, 0.1)])
def test_summary_ratio_clamped(given: float, clamped: float) -> None:
    assert create("summarize", summary_ratio=given).params.summary_ratio == clamped  # type: ignore[attr-defined]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_summary_ratio_rejects_non_finite(bad: float) -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        create("summarize", summary_ratio=bad)
    assert info.value.errors()[0]["loc"] == ("summary_ratio",)


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("preserve_recent_messages", -1),
        ("pin_first", -1),
        ("trigger_turns", 0),
        ("keep_turns", -1),
        ("trigger_turns", True),
    ],
)
def test_int_params_validated(field: str, bad: object) -> None:
    with pytest.raises(pydantic.ValidationError):
        create("summarize", **{field: bad})


def test_pin_first_none_is_zero() -> None:
    assert create("summarize", pin_first=None).params.pin_first == 0  # type: ignore[attr-defined]


# k computation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "r", "q", "k"),
    [(20, 0.3, 10, 6), (12, 0.3, 10, 2), (20, 0.8, 0, 16), (3, 0.1, 0, 1), (20, 0.5, 15, 5)],
)
def test_k_is_min_of_ratio_share_and_n_minus_q(n: int, r: float, q: int, k: int) -> None:
    msgs = conversation(n)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("summarize", summary_ratio=r, preserve_recent_messages=q).reduce(ctx, OVERFLOW)
    assert fake.calls == [msgs[:k]]
    assert list(ctx.messages[1:]) == msgs[k:]
    s = ctx.messages[0]
    assert (s.role, s.kind, s.pinned, s.text) == ("user", "summary", False, "SUMMARY 1")
    assert ctx.removed_count == k


def test_insufficient_messages_raises_without_pinning() -> None:
    msgs = conversation(10)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    with pytest.raises(CannotReduce, match=r"^Cannot summarize: insufficient messages for summarization$") as info:
        create("summarize", preserve_recent_messages=10, pin_first=2).reduce(ctx, OVERFLOW)
    assert info.value.__cause__ is OVERFLOW
    assert list(ctx.messages) == msgs
    assert not any(m.pinned for m in ctx.messages)
    assert fake.calls == []


def test_q_is_soft_result_at_split_moves_k_forward() -> None:
    msgs = [u("task " * 20), a_use("t1"), u_res("t1"), a_use("t2"), u_res("t2"), a("five " * 10), u("six " * 10)]
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("summarize", preserve_recent_messages=5).reduce(ctx, OVERFLOW)
    assert fake.calls == [msgs[:3]]
    assert list(ctx.messages[1:]) == msgs[3:]
    assert len(ctx.messages) == 5  # only 4 of the last 5 survive
    assert ctx.removed_count == 3


def test_split_moves_past_use_not_followed_by_result() -> None:
    msgs = [u("task " * 20), a("1 " * 20), Message.build("assistant", [ToolUse("t1", "x", {})]), a("3"), u("4")]
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("summarize", summary_ratio=0.5, preserve_recent_messages=0).reduce(ctx)
    assert fake.calls == [msgs[:3]]


def test_pinned_messages_stay_in_front_and_are_not_summarized() -> None:
    msgs = conversation(20)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("summarize", pin_first=2).reduce(ctx, OVERFLOW)
    assert fake.calls == [msgs[2:6]]
    assert [m.text for m in ctx.messages[:2]] == [msgs[0].text, msgs[1].text]
    assert all(m.pinned for m in ctx.messages[:2])
    assert ctx.messages[2].kind == "summary"
    assert list(ctx.messages[3:]) == msgs[6:]
    assert ctx.removed_count == 4


def test_all_pinned_in_range_raises() -> None:
    msgs = conversation(20)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    with pytest.raises(CannotReduce, match="all messages in summarize range are pinned"):
        create("summarize", pin_first=6).reduce(ctx)
    assert fake.calls == []
    assert ctx.removed_count == 0


def test_old_summary_is_rolled_up_without_counting() -> None:
    msgs = conversation(20)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    s = create("summarize")
    s.reduce(ctx, OVERFLOW)
    assert ctx.removed_count == 6
    n = len(ctx.messages)  # 15 -> k = 4, the old summary is first
    s.reduce(ctx, OVERFLOW)
    assert fake.calls[1][0].kind == "summary"
    assert len(fake.calls[1]) == int(n * 0.3)
    assert ctx.removed_count == 6 + int(n * 0.3) - 1
    assert ctx.messages[0].text == "SUMMARY 2"


# Failures ---------------------------------------------------------------------------------------


def test_summarizer_failure_leaves_window_and_counter_unchanged() -> None:
    msgs = conversation(20)
    ctx = Context(msgs, summarizer=FakeSummarizer(mode="fail"))
    with pytest.raises(CannotReduce) as info:
        create("summarize").reduce(ctx, OVERFLOW)
    assert isinstance(info.value.__cause__, SummarizerFailed)
    assert list(ctx.messages) == msgs
    assert ctx.removed_count == 0
    assert ctx.tokens == sum(m.tokens for m in msgs)


def test_reply_without_text_is_a_failure() -> None:
    msgs = conversation(20)
    ctx = Context(msgs, summarizer=FakeSummarizer(mode="empty"))
    with pytest.raises(CannotReduce):
        create("summarize").reduce(ctx)
    assert list(ctx.messages) == msgs and ctx.removed_count == 0


def test_summary_that_does_not_shrink_is_rolled_back() -> None:
    msgs = conversation(20)
    ctx = Context(msgs, summarizer=FakeSummarizer(mode="huge"))
    with pytest.raises(CannotReduce, match=r"^summary did not shrink the context$") as info:
        create("summarize").reduce(ctx, OVERFLOW)
    assert info.value.__cause__ is OVERFLOW
    assert list(ctx.messages) == msgs and ctx.removed_count == 0


def test_no_summarizer_is_a_failure() -> None:
    msgs = conversation(20)
    ctx = Context(msgs)
    with pytest.raises(CannotReduce):
        create("summarize").reduce(ctx)
    assert list(ctx.messages) == msgs


def test_pins_stay_after_failure() -> None:
    msgs = conversation(20)
    ctx = Context(msgs, summarizer=FakeSummarizer(mode="fail"))
    with pytest.raises(CannotReduce):
        create("summarize", pin_first=1).reduce(ctx)
    assert ctx.messages[0].pinned
    assert list(ctx.messages[1:]) == msgs[1:]
    assert ctx.removed_count == 0


def test_hooks_never_raise_when_summarizer_fails() -> None:
    msgs = turns(5)
    ctx = Context(msgs, summarizer=FakeSummarizer(mode="fail"), window_tokens=10)
    s = create("summarize", trigger_turns=1, keep_turns=1, proactive=True, threshold=0.5)
    s.before_call(ctx)
    s.apply(ctx)
    assert list(ctx.messages) == msgs and ctx.removed_count == 0


# Turn trigger -----------------------------------------------------------------------------------


def test_trigger_off_by_default() -> None:
    fake = FakeSummarizer()
    ctx = Context(turns(30), summarizer=fake)
    create("summarize").apply(ctx)
    assert fake.calls == []


def test_turn_trigger_waits_for_n_plus_m_turns() -> None:
    fake = FakeSummarizer()
    ctx = Context(turns(4), summarizer=fake)
    s = create("summarize", trigger_turns=3, keep_turns=2)
    s.apply(ctx)
    assert fake.calls == [] and len(ctx.messages) == 9


def test_turn_trigger_keeps_last_m_turns() -> None:
    msgs = turns(5)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("summarize", trigger_turns=3, keep_turns=2).apply(ctx)
    k = 7  # A = [1, 3, 5, 7, 9]; A[-2] = 7
    assert fake.calls == [msgs[:k]]
    assert ctx.messages[0].kind == "summary"
    assert list(ctx.messages[1:]) == msgs[k:]
    assert ctx.removed_count == k


def test_turn_trigger_counts_turns_after_last_summary() -> None:
    fake = FakeSummarizer()
    ctx = Context(turns(5), summarizer=fake)
    s = create("summarize", trigger_turns=3, keep_turns=2)
    s.apply(ctx)
    assert len(fake.calls) == 1
    s.apply(ctx)  # 2 turns after the summary
    assert len(fake.calls) == 1
    for i in range(3):
        ctx.messages.extend([a_use(f"n{i}"), u_res(f"n{i}")])
    s.apply(ctx)  # 5 turns after the summary
    assert len(fake.calls) == 2
    assert ctx.messages[0].text == "SUMMARY 2"


def test_turn_trigger_keep_zero_summarizes_everything() -> None:
    msgs = turns(2)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("summarize", trigger_turns=1, keep_turns=0).apply(ctx)
    assert fake.calls == [msgs]
    assert [m.kind for m in ctx.messages] == ["summary"]


def test_unmask_hook_changes_what_summarizer_sees() -> None:
    msgs = conversation(20)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    s = create("summarize")
    s.unmask = lambda m: Message.user("UNMASKED")  # type: ignore[attr-defined]
    s.reduce(ctx)
    assert [m.text for m in fake.calls[0]] == ["UNMASKED"] * 6
    assert list(ctx.messages[1:]) == msgs[6:]


def test_summary_has_text_blocks_only() -> None:
    ctx = Context(conversation(20), summarizer=FakeSummarizer())
    create("summarize").reduce(ctx)
    assert all(isinstance(b, Text) for b in ctx.messages[0].blocks)


def test_turn_trigger_keeps_a_trailing_open_call_after_the_summary() -> None:
    """G1 with keep_turns=0: k would be len(window); a call still open at the end must not be
    followed by the (user) summary, so it stays after it."""
    msgs = [
        Message.user("task", kind="task"),
        Message.build("assistant", [ToolUse("t1", "read_file", {"path": "a"})]),
        Message.build("user", [ToolResult("t1", "success", "a\nb")]),
        Message.build("assistant", [ToolUse("t2", "read_file", {"path": "b"})], pinned=True),
    ]
    ctx = Context(msgs, summarizer=FakeSummarizer())
    create("summarize", trigger_turns=1, keep_turns=0).apply(ctx)
    kinds = [m.kind for m in ctx.messages]
    assert kinds[-2:] == ["summary", "action"]
    assert ctx.messages[-1].uses == {"t2"}
