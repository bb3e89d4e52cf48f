"""drop_all: keep pinned, task and the last turn (docs/strategies.md 3.9)."""

from __future__ import annotations

import pydantic
import pytest

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, ToolResult, ToolUse, as_summary
from strategies import create
from strategies.base import CannotReduce


def session(n_turns: int) -> list[Message]:
    out = [Message.user("the task", kind="task")]
    for i in range(n_turns):
        out.append(Message.build("assistant", [ToolUse(f"t{i}", "tool", {"i": i})]))
        out.append(Message.build("user", [ToolResult(f"t{i}", "success", f"output {i}")]))
    return out


def test_no_params() -> None:
    with pytest.raises(pydantic.ValidationError):
        create("drop_all", keep=1)


def test_apply_keeps_task_and_last_turn() -> None:
    msgs = session(3)
    ctx = Context(msgs)
    create("drop_all").apply(ctx)
    assert list(ctx.messages) == [msgs[0], msgs[5], msgs[6]]
    assert ctx.removed_count == 4
    assert ctx.tokens == sum(m.tokens for m in ctx.messages)


def test_keeps_pinned_and_tool_partners() -> None:
    msgs = session(3)
    msgs[1] = Message.build("assistant", [ToolUse("t0", "tool", {"i": 0})], pinned=True)
    ctx = Context(msgs)
    create("drop_all").apply(ctx)
    assert list(ctx.messages) == [msgs[0], msgs[1], msgs[2], msgs[5], msgs[6]]


def test_no_assistant_keeps_last_message_and_tasks() -> None:
    msgs = [Message.user("a"), Message.user("task", kind="task"), Message.user("b"), Message.user("c")]
    ctx = Context(msgs)
    create("drop_all").apply(ctx)
    assert list(ctx.messages) == [msgs[1], msgs[3]]
    assert ctx.removed_count == 2


def test_dropped_summaries_do_not_count() -> None:
    summary = as_summary(Message.assistant("old summary"))
    msgs = [summary, *session(2)]
    ctx = Context(msgs)
    create("drop_all").apply(ctx)
    assert list(ctx.messages) == [msgs[1], msgs[4], msgs[5]]
    assert ctx.removed_count == 2


def test_apply_with_nothing_to_drop_is_noop() -> None:
    msgs = session(1)
    ctx = Context(msgs)
    create("drop_all").apply(ctx)
    assert list(ctx.messages) == msgs and ctx.removed_count == 0


def test_reduce_drops_like_apply() -> None:
    msgs = session(3)
    ctx = Context(msgs)
    create("drop_all").reduce(ctx, ContextOverflow(1, 1))
    assert list(ctx.messages) == [msgs[0], msgs[5], msgs[6]]


def test_reduce_raises_when_nothing_drops() -> None:
    msgs = session(1)
    ctx = Context(msgs)
    overflow = ContextOverflow(1, 1)
    with pytest.raises(CannotReduce) as info:
        create("drop_all").reduce(ctx, overflow)
    assert info.value.__cause__ is overflow
    assert list(ctx.messages) == msgs
