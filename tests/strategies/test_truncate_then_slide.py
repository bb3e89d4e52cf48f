"""truncate_then_slide: the truncation marker, which result is truncated, and when (docs/strategies.md 3.3)."""

from __future__ import annotations

import pytest

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, Text, ToolResult, ToolUse
from strategies import create
from strategies.base import CannotReduce
from strategies.truncate_then_slide import PRESERVE

OVERFLOW = ContextOverflow(1, 1)


def lines(n_chars: int, tag: str = "line") -> str:
    text = "".join(f"{tag} {i:04d} payload\n" for i in range(n_chars // 10 + 1))
    return text[:n_chars]


def marked(c: str) -> str:
    n = len(c) - 400
    return c[:200] + "...\n\n... [truncated: " + str(n) + " chars removed] ...\n\n..." + c[-200:]


def u(text: str) -> Message:
    return Message.user(text)


def a(text: str) -> Message:
    return Message.assistant(text)


def a_use(*ids: str) -> Message:
    return Message.build("assistant", [Text("calling"), *(ToolUse(i, "tool", {"q": i}) for i in ids)])


def u_res(*pairs: tuple[str, str], status: str = "success") -> Message:
    return Message.build("user", [ToolResult(i, status, c) for i, c in pairs])  # type: ignore[arg-type]


def test_preserve_constant() -> None:
    assert PRESERVE == 200


def test_reactive_reduce_truncates_exactly_with_marker() -> None:
    c = lines(5000)
    msgs = [u("task"), a_use("t1"), u_res(("t1", c)), a("done"), u("thanks")]
    ctx = Context(msgs)
    before = ctx.tokens
    create("truncate_then_slide").reduce(ctx, OVERFLOW)
    assert len(ctx.messages) == 5
    assert ctx.messages[2].blocks == (ToolResult("t1", "success", marked(c)),)
    assert "[truncated: 4600 chars removed]" in ctx.messages[2].blocks[0].content  # type: ignore[union-attr]
    assert [ctx.messages[i] for i in (0, 1, 3, 4)] == [msgs[i] for i in (0, 1, 3, 4)]
    assert ctx.tokens < before
    assert ctx.tokens == sum(m.tokens for m in ctx.messages)
    assert ctx.removed_count == 0


def test_truncation_keeps_ids_status_other_blocks_and_short_contents() -> None:
    big1, big2, small = lines(900, "x"), lines(1200, "y"), "short output"
    res = Message.build(
        "user",
        [
            Text("note"),
            ToolResult("t1", "error", big1),
            ToolResult("t2", "success", small),
            ToolResult("t3", "success", big2),
        ],
    )
    msgs = [u("task"), a_use("t1", "t2", "t3"), res, a("end")]
    ctx = Context(msgs)
    create("truncate_then_slide").reduce(ctx, OVERFLOW)
    assert ctx.messages[2].blocks == (
        Text("note"),
        ToolResult("t1", "error", marked(big1)),
        ToolResult("t2", "success", small),
        ToolResult("t3", "success", marked(big2)),
    )
    assert ctx.messages[2].kind == res.kind


def test_exactly_400_chars_not_truncated() -> None:
    c = lines(400)
    msgs = [u("task"), a_use("t1"), u_res(("t1", c)), a("3"), u("4")]
    ctx = Context(msgs)
    create("truncate_then_slide").reduce(ctx, OVERFLOW)
    # nothing truncatable: trims instead
    assert list(ctx.messages) == msgs[4:]


def test_401_to_446_char_text_grows_then_same_reduce_trims() -> None:
    c = lines(420)
    assert len(marked(c)) == 447 > len(c)
    grown = Message.build("user", [ToolResult("t1", "success", marked(c))])
    original = u_res(("t1", c))
    assert grown.tokens >= original.tokens
    msgs = [u("task"), a_use("t1"), original, a("3"), u("4"), a("5")]
    ctx = Context(msgs)
    before = ctx.tokens
    create("truncate_then_slide").reduce(ctx, OVERFLOW)
    assert list(ctx.messages) == msgs[4:]
    assert ctx.tokens < before
    assert ctx.removed_count == 4


def test_truncated_message_survives_trim_in_its_marked_form() -> None:
    c = lines(420)
    msgs = [u("0"), a("1"), u("2"), a_use("t1"), u_res(("t1", c)), a("5"), u("6")]
    ctx = Context(msgs)
    # len 7, w=5: start 2 is a plain user message, so the trim drops only messages 0 and 1
    create("truncate_then_slide", window_size=5).reduce(ctx, OVERFLOW)
    assert [m.text for m in ctx.messages[:2]] == ["2", msgs[3].text]
    assert len(ctx.messages) == 5
    assert ctx.messages[2].blocks == (ToolResult("t1", "success", marked(c)),)
    assert ctx.removed_count == 2


def test_already_marked_content_is_not_truncated_again() -> None:
    c = marked(lines(3000))
    msgs = [u("task"), a_use("t1"), u_res(("t1", c)), a("3"), u("4")]
    ctx = Context(msgs)
    create("truncate_then_slide").reduce(ctx, OVERFLOW)
    assert list(ctx.messages) == msgs[4:]


def test_non_reactive_reduce_never_truncates() -> None:
    c = lines(5000)
    msgs = [u("task"), a_use("t1"), u_res(("t1", c)), a("3"), u("4")]
    ctx = Context(msgs)
    create("truncate_then_slide").reduce(ctx)
    assert list(ctx.messages) == msgs[4:]


def test_apply_and_before_call_never_truncate() -> None:
    c = lines(5000)
    msgs = [u("task"), a_use("t1"), u_res(("t1", c)), a("3"), u("4")]
    ctx = Context(msgs)
    s = create("truncate_then_slide", window_size=3, per_turn=True, proactive=True, threshold=0.01)
    s.before_call(ctx)
    s.apply(ctx)
    assert list(ctx.messages) == msgs[4:]
    assert all("[truncated:" not in m.text for m in ctx.messages)


def test_only_first_unprotected_result_message_by_position() -> None:
    small, huge = lines(300), lines(8000)
    msgs = [u("task"), a_use("t1"), u_res(("t1", small)), a_use("t2"), u_res(("t2", huge)), a("5"), u("6")]
    ctx = Context(msgs)
    create("truncate_then_slide").reduce(ctx, OVERFLOW)
    # the first result has nothing to truncate: no fallback to the huge one, trim instead
    assert list(ctx.messages) == msgs[6:]
    assert all("[truncated:" not in m.text for m in ctx.messages)


def test_first_result_truncated_even_if_a_later_one_is_larger() -> None:
    first, huge = lines(600), lines(8000)
    msgs = [u("task"), a_use("t1"), u_res(("t1", first)), a_use("t2"), u_res(("t2", huge)), a("5")]
    ctx = Context(msgs)
    create("truncate_then_slide").reduce(ctx, OVERFLOW)
    assert ctx.messages[2].blocks == (ToolResult("t1", "success", marked(first)),)
    assert ctx.messages[4] == msgs[4]


def test_protected_result_is_skipped_for_the_next_one() -> None:
    first, second = lines(3000), lines(2000)
    msgs = [a_use("t1"), u_res(("t1", first)), a_use("t2"), u_res(("t2", second)), a("end")]
    ctx = Context(msgs)
    create("truncate_then_slide", pin_first=1).reduce(ctx, OVERFLOW)
    assert ctx.messages[1].blocks == msgs[1].blocks
    assert ctx.messages[3].blocks == (ToolResult("t2", "success", marked(second)),)
    assert ctx.messages[0].pinned


def test_cannot_reduce_leaves_window_unchanged() -> None:
    msgs = [u("task"), a_use("t1"), u_res(("t1", "tiny")), a("end")]
    ctx = Context(msgs)
    with pytest.raises(CannotReduce) as info:
        create("truncate_then_slide", window_size=2).reduce(ctx, OVERFLOW)
    assert info.value.__cause__ is OVERFLOW
    assert list(ctx.messages) == msgs
