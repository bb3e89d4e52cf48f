"""sliding_window: params, trim points, pins, per_turn and the spec's known examples (docs/strategies.md 3.2)."""

from __future__ import annotations

import pydantic
import pytest

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, ToolResult, ToolUse
from strategies import create
from strategies.base import CannotReduce


def u(text: str = "u") -> Message:
    return Message.user(text)


def a(text: str = "a") -> Message:
    return Message.assistant(text)


def a_use(i: str) -> Message:
    return Message.build("assistant", [ToolUse(i, "tool", {})])


def u_res(i: str, text: str = "out") -> Message:
    return Message.build("user", [ToolResult(i, "success", text)])


def conversation(n: int) -> list[Message]:
    """n alternating plain messages, user first."""
    return [u(f"user {i}") if i % 2 == 0 else a(f"assistant {i}") for i in range(n)]


# Params -----------------------------------------------------------------------------------------


def test_defaults() -> None:
    p = create("sliding_window").params
    assert (p.window_size, p.per_turn, p.pin_first, p.proactive, p.threshold) == (40, False, 0, False, 0.7)  # type: ignore[attr-defined]


def test_per_turn_one_and_true_stay_distinct() -> None:
    one = create("sliding_window", per_turn=1).params.per_turn  # type: ignore[attr-defined]
    true = create("sliding_window", per_turn=True).params.per_turn  # type: ignore[attr-defined]
    assert type(one) is int and one == 1
    assert true is True


@pytest.mark.parametrize("bad", [0, -1, 1.0, "2", None])
def test_per_turn_rejects_bad_values(bad: object) -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        create("sliding_window", per_turn=bad)
    assert all(e["loc"][0] == "per_turn" for e in info.value.errors())


@pytest.mark.parametrize("bad", [True, False, -1, 2.0, "3"])
def test_window_size_strict_int(bad: object) -> None:
    with pytest.raises(pydantic.ValidationError):
        create("sliding_window", window_size=bad)


def test_window_size_zero_allowed() -> None:
    assert create("sliding_window", window_size=0).params.window_size == 0  # type: ignore[attr-defined]


def test_pin_first_none_is_zero_and_negative_rejected() -> None:
    assert create("sliding_window", pin_first=None).params.pin_first == 0  # type: ignore[attr-defined]
    with pytest.raises(pydantic.ValidationError):
        create("sliding_window", pin_first=-1)
    with pytest.raises(pydantic.ValidationError):
        create("sliding_window", pin_first=True)


# Trimming ---------------------------------------------------------------------------------------


def test_apply_keeps_last_w_when_trim_point_is_plain_user() -> None:
    msgs = conversation(10)
    ctx = Context(msgs)
    create("sliding_window", window_size=4).apply(ctx)
    assert list(ctx.messages) == msgs[6:]
    assert ctx.removed_count == 6
    assert ctx.tokens == sum(m.tokens for m in msgs[6:])


def test_apply_does_nothing_within_window() -> None:
    msgs = conversation(4)
    ctx = Context(msgs)
    create("sliding_window", window_size=4).apply(ctx)
    assert list(ctx.messages) == msgs and ctx.removed_count == 0


def test_known_example_eight_messages_w4_leaves_two() -> None:
    msgs = [u("task"), a("1"), u("2"), a_use("t1"), u_res("t1"), a("5"), u("6"), a("7")]
    ctx = Context(msgs)
    create("sliding_window", window_size=4).apply(ctx)
    assert list(ctx.messages) == msgs[6:]
    assert ctx.removed_count == 6


def test_fallback_tool_pair_trim_point_leaves_assistant_first() -> None:
    msgs = [u("task"), a_use("t1"), u_res("t1"), a_use("t2"), u_res("t2"), a_use("t3"), u_res("t3"), a("end")]
    ctx = Context(msgs)
    create("sliding_window", window_size=4).apply(ctx)
    # start 4 is a result; no plain user message after it; the tool pair at 5 is the fallback
    assert list(ctx.messages) == msgs[5:]
    assert ctx.messages[0].role == "assistant"


def test_start_is_two_when_window_not_exceeded() -> None:
    msgs = conversation(6)
    ctx = Context(msgs)
    create("sliding_window", window_size=10).reduce(ctx)
    assert list(ctx.messages) == msgs[2:]
    assert ctx.removed_count == 2


def test_reduce_raises_when_no_trim_point_and_leaves_ctx() -> None:
    msgs = [u("task"), a_use("t1"), u_res("t1"), a("end")]
    ctx = Context(msgs)
    overflow = ContextOverflow(1, 1)
    with pytest.raises(CannotReduce, match=r"^Unable to trim conversation context!$") as info:
        create("sliding_window", window_size=2).reduce(ctx, overflow)
    assert info.value.__cause__ is overflow
    assert list(ctx.messages) == msgs and ctx.removed_count == 0


def test_apply_swallows_cannot_reduce() -> None:
    msgs = [u("task"), a_use("t1"), u_res("t1"), a("end")]
    ctx = Context(msgs)
    create("sliding_window", window_size=2).apply(ctx)
    assert list(ctx.messages) == msgs


def test_window_zero_keeps_only_protected() -> None:
    msgs = [u("task"), a_use("t1"), u_res("t1"), a("end")]
    ctx = Context(msgs)
    create("sliding_window", window_size=0, pin_first=1).reduce(ctx)
    assert [m.text for m in ctx.messages] == ["task"]
    assert ctx.messages[0].pinned
    assert ctx.removed_count == 3


def test_window_zero_with_everything_protected_raises() -> None:
    ctx = Context([u("task")])
    with pytest.raises(CannotReduce):
        create("sliding_window", window_size=0, pin_first=1).reduce(ctx)
    assert len(ctx.messages) == 1


def test_window_zero_without_pins_empties_window() -> None:
    ctx = Context(conversation(3))
    create("sliding_window", window_size=0).apply(ctx)
    assert list(ctx.messages) == [] and ctx.tokens == 0 and ctx.removed_count == 3


# Pins -------------------------------------------------------------------------------------------


def test_pinned_first_message_survives() -> None:
    msgs = conversation(10)
    ctx = Context(msgs)
    create("sliding_window", window_size=4, pin_first=1).apply(ctx)
    assert ctx.messages[0].pinned and ctx.messages[0].text == "user 0"
    assert list(ctx.messages[1:]) == msgs[6:]
    assert ctx.removed_count == 5


def test_pin_first_applied_once_per_instance() -> None:
    s = create("sliding_window", window_size=4, pin_first=1)
    ctx = Context(conversation(10))
    s.apply(ctx)
    ctx.messages.extend(conversation(10))
    s.apply(ctx)
    assert [m.pinned for m in ctx.messages] == [True] + [False] * (len(ctx.messages) - 1)


def test_pin_protects_tool_pair_partner() -> None:
    msgs = [a_use("t1"), u_res("t1"), a("2"), u("3"), a("4"), u("5"), a("6")]
    ctx = Context(msgs)
    create("sliding_window", window_size=2, pin_first=1).apply(ctx)
    assert [m.text for m in ctx.messages] == [msgs[0].text, msgs[1].text, "5", "6"]
    assert ctx.removed_count == 3


def test_small_window_with_pin_may_break_alternation() -> None:
    msgs = [u("task"), a("1"), u("2")]
    ctx = Context(msgs)
    create("sliding_window", window_size=1, pin_first=1).apply(ctx)
    assert [(m.role, m.text) for m in ctx.messages] == [("user", "task"), ("user", "2")]


# per_turn ---------------------------------------------------------------------------------------


def test_per_turn_false_before_call_never_trims() -> None:
    s = create("sliding_window", window_size=2)
    ctx = Context(conversation(8))
    for _ in range(4):
        s.before_call(ctx)
    assert len(ctx.messages) == 8


def test_per_turn_true_trims_on_every_call() -> None:
    s = create("sliding_window", window_size=2, per_turn=True)
    ctx = Context(conversation(8))
    s.before_call(ctx)
    assert len(ctx.messages) == 2
    ctx.messages.extend(conversation(4))
    s.before_call(ctx)
    assert len(ctx.messages) == 2


@pytest.mark.parametrize("per_turn", [1, 3])
def test_per_turn_int_trims_every_nth_call(per_turn: int) -> None:
    s = create("sliding_window", window_size=2, per_turn=per_turn)
    ctx = Context(conversation(4))
    trimmed_on = []
    for call in range(1, 7):
        ctx.messages.extend(conversation(4))
        before = len(ctx.messages)
        s.before_call(ctx)
        if len(ctx.messages) < before:
            trimmed_on.append(call)
    assert trimmed_on == [c for c in range(1, 7) if c % per_turn == 0]


def test_reduce_strictly_lowers_tokens() -> None:
    msgs = conversation(12)
    ctx = Context(msgs)
    before = ctx.tokens
    create("sliding_window", window_size=40).reduce(ctx, ContextOverflow(1, 1))
    assert ctx.tokens < before


def test_sliding_window_never_truncates() -> None:
    big = "x\n" * 1000
    msgs = [u("task"), a_use("t1"), u_res("t1", big), a("3"), u("4")]
    ctx = Context(msgs)
    create("sliding_window").reduce(ctx, ContextOverflow(1, 1))
    assert list(ctx.messages) == msgs[4:]
