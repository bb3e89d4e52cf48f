"""unbounded: keeps everything and never reduces (docs/strategies.md 3.1)."""

from __future__ import annotations

import pydantic
import pytest

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message
from strategies import create
from strategies.base import CannotReduce
from strategies.testing import FakeSummarizer


def msgs() -> list[Message]:
    return [Message.user(f"user {i}") if i % 2 == 0 else Message.assistant(f"a {i}") for i in range(60)]


def test_no_params() -> None:
    with pytest.raises(pydantic.ValidationError):
        create("unbounded", window_size=3)
    assert create("unbounded").tools == ()


def test_hooks_change_nothing() -> None:
    m = msgs()
    fake = FakeSummarizer()
    ctx = Context(m, window_tokens=10, summarizer=fake)
    s = create("unbounded")
    extra = Message.user("new")
    assert s.on_append(ctx, extra) is extra
    s.before_call(ctx)
    s.apply(ctx)
    assert list(ctx.messages) == m
    assert ctx.removed_count == 0 and fake.calls == []


@pytest.mark.parametrize("reactive", [True, False])
def test_reduce_always_raises(reactive: bool) -> None:
    m = msgs()
    ctx = Context(m)
    overflow = ContextOverflow(5, 1) if reactive else None
    with pytest.raises(CannotReduce, match=r"^unbounded keeps everything$") as info:
        create("unbounded").reduce(ctx, overflow)
    assert info.value.__cause__ is overflow
    assert list(ctx.messages) == m and ctx.removed_count == 0
