"""hybrid: observation masking plus the summarize turn trigger (docs/strategies.md 3.8)."""

from __future__ import annotations

import pydantic
import pytest

from harness.core.context import Context
from harness.core.messages import Message, ToolResult, ToolUse
from strategies import create
from strategies.observation_masking import ObservationMasking
from strategies.pipeline import Hybrid, Pipeline
from strategies.summarize import Summarize
from strategies.testing import FakeSummarizer


def session(n_turns: int) -> list[Message]:
    out = [Message.user("the task", kind="task")]
    for i in range(n_turns):
        out.append(Message.build("assistant", [ToolUse(f"t{i}", "tool", {"i": i})]))
        out.append(Message.build("user", [ToolResult(f"t{i}", "success", f"output {i}\n" * 30)]))
    return out


def stages(h: object) -> tuple[ObservationMasking, Summarize]:
    assert isinstance(h, Hybrid)
    m, s = h.stages
    assert isinstance(m, ObservationMasking) and isinstance(s, Summarize)
    return m, s


def test_defaults() -> None:
    h = create("hybrid")
    p = h.params
    assert (p.mask_turns, p.summary_turns, p.keep_turns, p.pin_first) == (10, 43, 10, 1)  # type: ignore[attr-defined]
    assert (p.summary_ratio, p.preserve_recent_messages, p.proactive, p.threshold, p.summarize_unmasked) == (  # type: ignore[attr-defined]
        0.3,
        10,
        False,
        0.7,
        True,
    )
    assert isinstance(h, Pipeline)


def test_stages_get_the_params() -> None:
    h = create(
        "hybrid",
        mask_turns=3,
        summary_turns=5,
        keep_turns=2,
        pin_first=0,
        summary_ratio=0.5,
        preserve_recent_messages=4,
        proactive=True,
        threshold=0.9,
    )
    m, s = stages(h)
    assert m.params.keep_turns == 3
    sp = s.params
    assert (
        sp.trigger_turns,
        sp.keep_turns,
        sp.pin_first,
        sp.summary_ratio,
        sp.preserve_recent_messages,
        sp.proactive,
        sp.threshold,
    ) == (5, 2, 0, 0.5, 4, True, 0.9)


def test_default_stage_params() -> None:
    m, s = stages(create("hybrid"))
    assert m.params.keep_turns == 10
    assert (s.params.trigger_turns, s.params.keep_turns, s.params.pin_first) == (43, 10, 1)


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("mask_turns", -1),
        ("summary_turns", 0),
        ("keep_turns", -1),
        ("pin_first", -1),
        ("summarize_unmasked", "yes"),
        ("nope", 1),
    ],
)
def test_params_validated(field: str, bad: object) -> None:
    with pytest.raises(pydantic.ValidationError):
        create("hybrid", **{field: bad})


def test_summary_ratio_clamped() -> None:
    assert create("hybrid", summary_ratio=5).params.summary_ratio == 0.8  # type: ignore[attr-defined]
    assert create("hybrid", summary_ratio=0).params.summary_ratio == 0.1  # type: ignore[attr-defined]


def run_apply(unmasked: bool) -> tuple[list[Message], Context, FakeSummarizer]:
    msgs = session(3)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("hybrid", mask_turns=1, summary_turns=1, keep_turns=1, pin_first=0, summarize_unmasked=unmasked).apply(ctx)
    return msgs, ctx, fake


def test_summarize_unmasked_summarizer_sees_originals() -> None:
    msgs, ctx, fake = run_apply(True)
    assert len(fake.calls) == 1
    assert fake.calls[0] == msgs[:5]
    assert all(m.kind != "placeholder" for m in fake.calls[0])
    assert ctx.messages[0].kind == "summary"
    assert list(ctx.messages[1:]) == msgs[5:]


def test_summarize_masked_summarizer_sees_placeholders() -> None:
    msgs, ctx, fake = run_apply(False)
    sent = fake.calls[0]
    assert [m.kind for m in sent] == ["task", "action", "placeholder", "action", "placeholder"]
    assert sent[2].blocks == (ToolResult("t0", "success", "Old environment output: (30 lines omitted)"),)
    assert list(ctx.messages[1:]) == msgs[5:]


def test_window_keeps_placeholders_when_summary_does_not_fire() -> None:
    msgs = session(3)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("hybrid", mask_turns=1, summary_turns=5, keep_turns=1).apply(ctx)
    assert fake.calls == []
    assert [m.kind for m in ctx.messages] == [
        "task",
        "action",
        "placeholder",
        "action",
        "placeholder",
        "action",
        "observation",
    ]


def test_pin_first_one_keeps_task_through_summary() -> None:
    msgs = session(3)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("hybrid", mask_turns=1, summary_turns=1, keep_turns=1).apply(ctx)
    assert ctx.messages[0].text == "the task" and ctx.messages[0].pinned
    assert ctx.messages[1].kind == "summary"
    assert all(m.kind != "task" for m in fake.calls[0])


def test_reduce_masks_first() -> None:
    msgs = session(12)
    fake = FakeSummarizer()
    ctx = Context(msgs, summarizer=fake)
    create("hybrid").reduce(ctx)
    assert fake.calls == []
    assert ctx.messages[2].kind == "placeholder"
    assert len(ctx.messages) == len(msgs)
