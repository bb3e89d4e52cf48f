"""observation_masking: the placeholder, the cut, what is never masked, and unmask (docs/strategies.md 3.6)."""

from __future__ import annotations

import pydantic
import pytest

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, Text, ToolResult, ToolUse
from strategies import create
from strategies.base import CannotReduce
from strategies.observation_masking import PLACEHOLDER_RE, placeholder


def a_use(i: str) -> Message:
    return Message.build("assistant", [Text(f"calling {i}"), ToolUse(i, "tool", {"q": i})])


def u_res(i: str, text: str, status: str = "success") -> Message:
    return Message.build("user", [ToolResult(i, status, text)])  # type: ignore[arg-type]


def output(n_lines: int, tag: str) -> str:
    return "\n".join(f"{tag} line {k} with some words in it" for k in range(n_lines))


def session(n_turns: int) -> list[Message]:
    out = [Message.user("the task", kind="task")]
    for i in range(n_turns):
        out += [a_use(f"t{i}"), u_res(f"t{i}", output(3 + i, f"out{i}"))]
    return out


def test_default_keep_turns_and_range() -> None:
    assert create("observation_masking").params.keep_turns == 10  # type: ignore[attr-defined]
    with pytest.raises(pydantic.ValidationError):
        create("observation_masking", keep_turns=-1)


def test_placeholder_text_says_lines_even_for_one() -> None:
    assert placeholder("single line") == "Old environment output: (1 lines omitted)"
    assert placeholder("a\nb\nc\n") == "Old environment output: (3 lines omitted)"
    assert placeholder("") == "Old environment output: (0 lines omitted)"
    assert PLACEHOLDER_RE.match(placeholder("x"))


def test_masks_results_before_mth_last_assistant() -> None:
    msgs = session(4)  # assistants at 1, 3, 5, 7
    ctx = Context(msgs)
    create("observation_masking", keep_turns=2).apply(ctx)
    cut = 5
    assert list(ctx.messages[cut:]) == msgs[cut:]
    for j in (2, 4):
        m = ctx.messages[j]
        assert m.kind == "placeholder" and m.role == "user"
        assert m.blocks == (ToolResult(f"t{j // 2 - 1}", "success", placeholder(msgs[j].blocks[0].content)),)  # type: ignore[union-attr]
    for j in (0, 1, 3):
        assert ctx.messages[j] == msgs[j]
    assert ctx.removed_count == 0
    assert len(ctx.messages) == len(msgs)
    assert ctx.tokens == sum(m.tokens for m in ctx.messages) < sum(m.tokens for m in msgs)


def test_one_line_output_placeholder() -> None:
    msgs = [Message.user("task", kind="task"), a_use("t0"), u_res("t0", "only one line"), a_use("t1"), u_res("t1", "x")]
    ctx = Context(msgs)
    create("observation_masking", keep_turns=1).apply(ctx)
    assert ctx.messages[2].blocks[0].content == "Old environment output: (1 lines omitted)"  # type: ignore[union-attr]


def test_nothing_happens_with_at_most_m_turns() -> None:
    msgs = session(3)
    ctx = Context(msgs)
    create("observation_masking", keep_turns=3).apply(ctx)
    assert list(ctx.messages) == msgs


def test_keep_zero_masks_everything_maskable() -> None:
    msgs = session(2)
    ctx = Context(msgs)
    create("observation_masking", keep_turns=0).apply(ctx)
    assert [m.kind for m in ctx.messages] == ["task", "action", "placeholder", "action", "placeholder"]


def test_keeps_ids_status_text_and_other_blocks() -> None:
    res = Message.build("user", [Text("note"), ToolResult("t0", "error", "e1\ne2"), ToolResult("t1", "success", "ok")])
    msgs = [Message.user("task", kind="task"), a_use("t0"), res, a_use("t9"), u_res("t9", "z")]
    ctx = Context(msgs)
    create("observation_masking", keep_turns=1).apply(ctx)
    assert ctx.messages[2].blocks == (
        Text("note"),
        ToolResult("t0", "error", "Old environment output: (2 lines omitted)"),
        ToolResult("t1", "success", "Old environment output: (1 lines omitted)"),
    )


def test_task_and_pinned_messages_never_masked() -> None:
    task_with_result = Message.build("user", [ToolResult("t0", "success", "task payload\nmore")], kind="task")
    msgs = [
        Message.build("assistant", [ToolUse("t0", "tool", {})]),
        task_with_result,
        a_use("t1"),
        Message.build("user", [ToolResult("t1", "success", "pinned out")], pinned=True),
        Message.build("assistant", [ToolUse("t2", "tool", {})], pinned=True),
        u_res("t2", "partner of a pinned call"),
        a_use("t3"),
        u_res("t3", "plain\nout"),
        a_use("t4"),
        u_res("t4", "recent"),
    ]
    ctx = Context(msgs)
    create("observation_masking", keep_turns=1).apply(ctx)
    assert [ctx.messages[j] == msgs[j] for j in range(len(msgs))] == [
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        False,
        True,
        True,
    ]
    assert ctx.messages[7].kind == "placeholder"


def test_already_masked_content_is_skipped_and_second_apply_is_noop() -> None:
    msgs = session(4)
    ctx = Context(msgs)
    s = create("observation_masking", keep_turns=2)
    s.apply(ctx)
    once = list(ctx.messages)
    tokens = ctx.tokens
    s.apply(ctx)
    assert list(ctx.messages) == once
    assert all(x is y for x, y in zip(ctx.messages, once, strict=True))
    assert ctx.tokens == tokens and ctx.removed_count == 0


def test_unmask_returns_originals() -> None:
    msgs = session(4)
    ctx = Context(msgs)
    s = create("observation_masking", keep_turns=2)
    s.apply(ctx)
    assert s.unmask(ctx.messages[2]) == msgs[2]  # type: ignore[attr-defined]
    assert s.unmask(ctx.messages[4]) == msgs[4]  # type: ignore[attr-defined]
    assert s.unmask(ctx.messages[6]) is ctx.messages[6]  # type: ignore[attr-defined]
    assert s.unmask(ctx.messages[1]) is ctx.messages[1]  # type: ignore[attr-defined]


def test_unmask_of_another_instance_is_identity() -> None:
    msgs = session(4)
    ctx = Context(msgs)
    create("observation_masking", keep_turns=2).apply(ctx)
    other = create("observation_masking", keep_turns=2)
    assert other.unmask(ctx.messages[2]) is ctx.messages[2]  # type: ignore[attr-defined]


def test_unmask_returns_first_original_after_repeated_masking() -> None:
    msgs = session(4)
    ctx = Context(msgs)
    s = create("observation_masking", keep_turns=2)
    s.apply(ctx)
    ctx.messages.extend([a_use("t8"), u_res("t8", "x"), a_use("t9"), u_res("t9", "y")])
    s.apply(ctx)
    assert s.unmask(ctx.messages[6]) == msgs[6]  # type: ignore[attr-defined]
    assert s.unmask(ctx.messages[2]) == msgs[2]  # type: ignore[attr-defined]


def test_apply_may_raise_tokens_for_tiny_outputs() -> None:
    msgs = [Message.user("task", kind="task"), a_use("t0"), u_res("t0", "ok"), a_use("t1"), u_res("t1", "ok")]
    ctx = Context(msgs)
    before = ctx.tokens
    create("observation_masking", keep_turns=1).apply(ctx)
    assert ctx.messages[2].kind == "placeholder"
    assert ctx.tokens > before


def test_reduce_commits_when_tokens_drop() -> None:
    msgs = session(4)
    ctx = Context(msgs)
    before = ctx.tokens
    create("observation_masking", keep_turns=2).reduce(ctx, ContextOverflow(1, 1))
    assert ctx.tokens < before and ctx.messages[2].kind == "placeholder"


def test_reduce_refuses_when_tokens_would_rise() -> None:
    msgs = [Message.user("task", kind="task"), a_use("t0"), u_res("t0", "ok"), a_use("t1"), u_res("t1", "ok")]
    ctx = Context(msgs)
    overflow = ContextOverflow(1, 1)
    with pytest.raises(CannotReduce) as info:
        create("observation_masking", keep_turns=1).reduce(ctx, overflow)
    assert info.value.__cause__ is overflow
    assert list(ctx.messages) == msgs


def test_reduce_with_nothing_to_mask_raises() -> None:
    msgs = session(2)
    ctx = Context(msgs)
    with pytest.raises(CannotReduce):
        create("observation_masking", keep_turns=5).reduce(ctx)
    assert list(ctx.messages) == msgs
