"""langchain_summarization: LangChain v1's SummarizationMiddleware (langchain 1.5.2), from its source:
trigger forms and boundaries, keep, the tool-pair cut, the summary message, trimming for the
summarizer, failures, and the section-3 invariants of docs/sdk-strategies.md."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pydantic
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, Text, ToolResult, ToolUse
from strategies import create
from strategies.base import CannotReduce
from strategies.langchain_summarization import (
    SUMMARY_PREFIX,
    TOO_LONG_SUMMARY,
    LangchainSummarization,
    lc_units,
    message_cut,
    trim_for_summary,
)
from strategies.split import is_pinned
from strategies.testing import (
    FakeSummarizer,
    Ids,
    Shown,
    brief,
    histories,
    new_messages,
    tool_ids,
    well_formed,
)


def task(text: str = "Task: fix the failing test in module alpha.") -> Message:
    return Message.build("user", [Text(text)], kind="task")


def call(*ids: str) -> Message:
    return Message.build("assistant", [ToolUse(i, "grep", {"q": i}) for i in ids])


def results(*ids: str, text: str = "output line\n" * 30) -> Message:
    return Message.build("user", [ToolResult(i, "success", text) for i in ids])


def turns(n: int, per_call: int = 1, lines: int = 30, prefix: str = "t") -> list[Message]:
    out = [task()]
    for t in range(n):
        ids = [f"{prefix}{t}_{k}" for k in range(per_call)]
        out += [call(*ids), results(*ids, text="output line\n" * lines)]
    return out


def strategy(**params: Any) -> LangchainSummarization:
    s = create("langchain_summarization", **params)
    assert isinstance(s, LangchainSummarization)
    return s


def run(window: list[Message], fake: FakeSummarizer | None = None, overhead: int = 0,
        window_tokens: int = 200_000, **params: Any) -> Context:
    ctx = Context(window, window_tokens=window_tokens, summarizer=fake or FakeSummarizer(), prompt_overhead=overhead)
    strategy(**params).before_call(ctx)
    return ctx


def fired(ctx: Context, window: Sequence[Message]) -> bool:
    return len(ctx.messages) != len(window) or any(a is not b for a, b in zip(ctx.messages, window, strict=True))


# Params ---------------------------------------------------------------------------------------------------


def test_trigger_is_required_and_the_other_defaults_are_the_sources() -> None:
    with pytest.raises(pydantic.ValidationError, match="trigger"):
        create("langchain_summarization")
    p = strategy(trigger=("tokens", 3000)).params
    assert (p.keep, p.trim_tokens_to_summarize) == (("messages", 20), 4000)


@pytest.mark.parametrize(("given_trigger", "clauses"), [
    (("tokens", 3000), ({"tokens": 3000},)),
    (["messages", 50], ({"messages": 50},)),  # a TOML array
    ({"tokens": 4000, "messages": 10}, ({"tokens": 4000, "messages": 10},)),
    ([("fraction", 0.8), ("messages", 100)], ({"fraction": 0.8}, {"messages": 100})),
    ([{"tokens": 5000, "messages": 3}, {"tokens": 3000, "messages": 6}],
     ({"tokens": 5000, "messages": 3}, {"tokens": 3000, "messages": 6})),
    (None, None),
])
def test_the_trigger_forms_of_the_docstring(given_trigger: Any, clauses: Any) -> None:
    p = strategy(trigger=given_trigger).params
    assert p.trigger == clauses
    # A dumped config validates back to the same params.
    assert create("langchain_summarization", **p.model_dump()).params == p


@pytest.mark.parametrize("bad", [
    {"trigger": ("tokens", 0)},
    {"trigger": ("messages", -1)},
    {"trigger": ("fraction", 0)},
    {"trigger": ("fraction", 1.5)},
    {"trigger": ("seconds", 5)},
    {"trigger": {}},
    {"trigger": {"tokens": 100, "turns": 2}},
    {"trigger": {"messages": True}},
    {"trigger": {"tokens": "4000"}},
    {"trigger": {"tokens": 3.5}},
    {"trigger": ("tokens", 3.5)},  # the source's tuple form lets a float through; we do not
    {"trigger": "tokens"},
    {"trigger": ("tokens", 10), "keep": ("messages", 0)},
    {"trigger": ("tokens", 10), "keep": ("fraction", 2.0)},
    {"trigger": ("tokens", 10), "keep": [("messages", 2), ("tokens", 5)]},  # keep takes one value
    {"trigger": ("tokens", 10), "trim_tokens_to_summarize": -1},
    {"trigger": ("tokens", 10), "summary_prompt": "x"},
])
def test_rejected_params(bad: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        create("langchain_summarization", **bad)


# The trigger ---------------------------------------------------------------------------------------------


def test_tokens_fire_at_the_threshold_on_the_whole_prompt() -> None:
    window = turns(25)
    prompt = sum(m.tokens for m in window) + 500
    assert not fired(run(window, overhead=500, trigger=("tokens", prompt + 1)), window)
    assert fired(run(window, overhead=500, trigger=("tokens", prompt)), window)
    # The system prompt and tool schemas count: without them the window alone is below the threshold.
    assert not fired(run(window, overhead=0, trigger=("tokens", prompt)), window)


def test_messages_count_langchain_messages_one_per_tool_result() -> None:
    window = turns(3, per_call=3)  # 1 + 3 * (1 AI + 3 tool messages) = 13 LangChain messages
    assert len(window) == 7 and len(lc_units(window)) == 13
    assert not fired(run(window, trigger=("messages", 14), keep=("messages", 2)), window)
    assert fired(run(window, trigger=("messages", 13), keep=("messages", 2)), window)


def test_fraction_is_of_the_window() -> None:
    window = turns(10)
    prompt = sum(m.tokens for m in window)
    assert fired(run(window, window_tokens=prompt * 2, trigger=("fraction", 0.5)), window)
    assert not fired(run(window, window_tokens=prompt * 2 + 2, trigger=("fraction", 0.5)), window)


def test_a_clause_needs_all_its_thresholds_and_a_list_any_clause() -> None:
    window = turns(25)
    prompt = sum(m.tokens for m in window)
    assert not fired(run(window, trigger={"tokens": prompt, "messages": 1000}), window)
    assert fired(run(window, trigger={"tokens": prompt, "messages": 51}), window)
    assert fired(run(window, trigger=[{"tokens": prompt, "messages": 1000}, ("messages", 51)]), window)


def test_no_trigger_never_summarizes() -> None:
    window = turns(40)
    assert not fired(run(window, trigger=None), window)
    assert not fired(run(window, trigger=[]), window)


# keep and the cut ----------------------------------------------------------------------------------------


def test_keep_the_last_20_messages_by_default() -> None:
    window = turns(15)  # 31 messages, results-only user messages: one LangChain message each
    ctx = run(window, trigger=("messages", 31))
    assert ctx.messages[1:] == window[-20:] == window[11:]
    # Fewer than keep + 1 messages: the cut is 0, nothing happens.
    assert not fired(run(window[:20], trigger=("messages", 1)), window[:20])


def test_a_cut_on_a_tool_message_moves_back_to_its_ai_message() -> None:
    window = turns(10)
    # keep 2: the cut would fall on the last tool message; it moves back to the call.
    ctx = run(window, trigger=("messages", 1), keep=("messages", 2))
    assert list(ctx.messages[1:]) == window[-2:]
    # keep 1 on a message answering three calls at once: the cut falls inside our results message
    # (its third tool message) and moves back to the AI message that made the calls.
    window = turns(3, per_call=3)
    ctx = run(window, trigger=("messages", 1), keep=("messages", 1))
    assert list(ctx.messages[1:]) == window[-2:]


def test_keep_tokens_keeps_the_shortest_fitting_suffix() -> None:
    window = turns(10)
    last_pair = window[-2].tokens + window[-1].tokens
    ctx = run(window, trigger=("messages", 1), keep=("tokens", last_pair))
    assert list(ctx.messages[1:]) == window[-2:]
    # A budget smaller than the last message still keeps it (with its call).
    ctx = run(window, trigger=("messages", 1), keep=("tokens", 1))
    assert list(ctx.messages[1:]) == window[-2:]


def test_keep_fraction_is_of_the_window() -> None:
    window = turns(10)
    last_pair = window[-2].tokens + window[-1].tokens
    ctx = run(window, window_tokens=last_pair * 10, trigger=("messages", 1), keep=("fraction", 0.1))
    assert list(ctx.messages[1:]) == window[-2:]


def test_an_orphan_tool_message_at_the_cut_is_summarized_with_what_precedes_it() -> None:
    """No AI message made the call: the cut advances past the tool messages (the source's fallback)."""
    window = [task(), results("zz"), Message.assistant("Done."), Message.user("Thanks.")]
    assert message_cut(lc_units(window), 1, len(window)) == 1
    ctx = run(window, trigger=("messages", 1), keep=("messages", 3))
    assert list(ctx.messages[1:]) == window[2:]


# The summary ----------------------------------------------------------------------------------------------


def test_the_summary_is_one_human_message_with_the_sources_prefix() -> None:
    window = turns(25)
    ctx = run(window, fake=FakeSummarizer("fixed", fixed_text="  the gist  "), trigger=("messages", 10),
              keep=("messages", 4))
    summary = ctx.messages[0]
    assert (summary.role, summary.kind, summary.pinned) == ("user", "summary", False)
    assert summary.text == "Here is a summary of the conversation to date:\n\nthe gist" == SUMMARY_PREFIX + "the gist"
    assert ctx.removed_count == len(window) - 4


def test_pinned_messages_stay_ahead_of_the_summary_and_are_never_summarized() -> None:
    window = turns(12)
    window[0] = Message.build("user", [Text("Task: pinned.")], kind="task", pinned=True)
    fake = FakeSummarizer()
    ctx = run(window, fake=fake, trigger=("messages", 10), keep=("messages", 4), trim_tokens_to_summarize=None)
    assert ctx.messages[0] is window[0] and ctx.messages[1].kind == "summary"
    assert all(m is not window[0] for m in fake.calls[0])


def test_trimming_starts_the_summarizers_input_at_a_human_message() -> None:
    window = [*turns(3), Message.assistant("Half way."), Message.user("Go on, please."), *turns(3, prefix="s")[1:]]
    fake = FakeSummarizer()
    # keep 1 cuts before the last call (index 13); what fits is the follow-up and the two turns after it.
    limit = sum(m.tokens for m in window[8:13])
    run(window, fake=fake, trigger=("messages", 1), keep=("messages", 1), trim_tokens_to_summarize=limit)
    (seen,) = fake.calls
    assert seen[0].text == "Go on, please." and seen[0].role == "user"


def test_when_no_human_message_fits_the_summary_says_so_without_a_call() -> None:
    fake = FakeSummarizer()
    window = turns(20, lines=300)  # only the task is a human message, and it is the oldest
    ctx = run(window, fake=fake, trigger=("messages", 1), keep=("messages", 2))
    assert fake.calls == []
    assert ctx.messages[0].text == SUMMARY_PREFIX + TOO_LONG_SUMMARY == (
        "Here is a summary of the conversation to date:\n\nPrevious conversation was too long to summarize.")


def test_the_last_lines_of_an_overflowing_human_message_are_kept() -> None:
    long_task = Message.build("user", [Text("\n".join(f"requirement {i}" for i in range(200)))], kind="task")
    messages = [long_task, call("a"), results("a", text="ok")]
    budget = messages[1].tokens + messages[2].tokens + 30
    seen = trim_for_summary(messages, budget)
    assert seen[1:] == messages[1:]
    assert seen[0].role == "user" and seen[0] is not long_task
    assert long_task.text.endswith(seen[0].text) and "requirement 199" in seen[0].text
    assert sum(m.tokens for m in seen) <= budget


def test_no_trimming_shows_everything_summarized() -> None:
    fake = FakeSummarizer()
    window = turns(20)
    run(window, fake=fake, trigger=("messages", 1), keep=("messages", 2), trim_tokens_to_summarize=None)
    assert fake.calls == [window[:-2]]


# Failures and reduce -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["fail", "empty"])
def test_a_failed_summary_leaves_the_window_unchanged(mode: str) -> None:
    window = turns(25)
    ctx = run(window, fake=FakeSummarizer(mode), trigger=("messages", 10))  # type: ignore[arg-type]
    assert not fired(ctx, window) and ctx.removed_count == 0


def test_reduce_always_raises_and_changes_nothing() -> None:
    window = turns(25)
    ctx = Context(window, summarizer=FakeSummarizer())
    s = strategy(trigger=("messages", 1))
    for overflow in (None, ContextOverflow(10, 5)):
        with pytest.raises(CannotReduce) as info:
            s.reduce(ctx, overflow)
        assert info.value.__cause__ is overflow
    assert list(ctx.messages) == window and ctx.removed_count == 0


def test_after_firing_the_prompt_is_below_the_trigger_when_keep_and_summary_fit_under_it() -> None:
    window = turns(30)
    threshold = sum(m.tokens for m in window) // 2
    ctx = run(window, trigger=("tokens", threshold), keep=("tokens", threshold // 4))
    assert fired(ctx, window) and ctx.prompt_tokens < threshold


def test_keep_can_leave_the_prompt_above_the_trigger_and_it_fires_again() -> None:
    """The source sizes keep apart from trigger: 20 kept messages may alone pass the threshold."""
    window = turns(30)
    threshold = sum(m.tokens for m in window[-20:]) - 1
    ctx = run(window, trigger=("tokens", threshold))
    assert fired(ctx, window) and ctx.prompt_tokens >= threshold
    assert list(ctx.messages[1:]) == window[-20:]


# Section-3 and common invariants, on generated histories -------------------------------------------------

PARAMS = st.fixed_dictionaries({
    "trigger": st.one_of(
        st.tuples(st.just("tokens"), st.integers(100, 8000)),
        st.tuples(st.just("messages"), st.integers(1, 12)),
        st.tuples(st.just("fraction"), st.sampled_from((0.1, 0.5, 0.9))),
    ),
    "keep": st.one_of(st.tuples(st.just("messages"), st.integers(1, 8)),
                      st.tuples(st.just("tokens"), st.integers(50, 3000))),
    "trim_tokens_to_summarize": st.sampled_from((None, 100, 4000)),
})




@given(params=PARAMS, data=st.data(), mode=st.sampled_from(("ok", "ok", "fail", "empty", "huge")))
def test_invariants_on_generated_histories(params: dict[str, Any], data: st.DataObject, mode: str) -> None:
    """Over three calls with appends between them: W(B) => W(A); pinned messages kept in order; an open
    call at the end kept; the window is ``P + [S] + B[k:]`` with the source's k; a result that left
    never comes back; hooks never raise; reduce raises with the window unchanged."""
    window: list[Message] = data.draw(histories(max_turns=8).map(lambda w: Shown(w)), label="window").messages
    s = strategy(**params)
    ctx = Context(window, window_tokens=max(1, sum(m.tokens for m in window)),
                  summarizer=FakeSummarizer(mode))  # type: ignore[arg-type]
    gone: set[str] = set()
    ids = Ids("n")  # fresh ids across the appends
    for _ in range(3):
        before = list(ctx.messages)
        units = lc_units(before)
        should = s.should_summarize(ctx, units)
        k = message_cut(units, s.cutoff(ctx, units), len(before))
        removed = ctx.removed_count
        s.before_call(ctx)
        after = list(ctx.messages)
        assert well_formed(after), brief(after)
        assert [m for m in after if m.pinned] == [m for m in before if m.pinned]
        if before and before[-1].role == "assistant" and before[-1].has_use:
            assert after[-1] is before[-1]
        event("fired" if fired(ctx, before) else "did not fire")
        if fired(ctx, before):
            assert should and k > 0
            protected = [m for i, m in enumerate(before[:k]) if is_pinned(before, i)]
            assert after == [*protected, after[len(protected)], *before[k:]]
            summary = after[len(protected)]
            assert summary.kind == "summary" and summary.role == "user" and summary.text.startswith(SUMMARY_PREFIX)
            assert not (before[k].has_result and before[k].results & {i for m in before[:k] for i in m.uses}) \
                if k < len(before) else True
            assert ctx.removed_count - removed == sum(1 for m in before[:k] if m.kind != "summary") - sum(
                1 for m in protected if m.kind != "summary")
        else:
            assert ctx.removed_count == removed
        gone |= tool_ids(before) - tool_ids(after)
        assert not gone & tool_ids(after)
        with pytest.raises(CannotReduce):
            s.reduce(ctx, ContextOverflow(ctx.tokens, 1))
        assert list(ctx.messages) == after
        appended = data.draw(new_messages(after, ids).map(lambda w: Shown(w)), label="appended").messages
        assert not gone & tool_ids(appended)
        for m in appended:
            ctx.messages.append(s.on_append(ctx, m))
