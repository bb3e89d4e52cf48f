"""openai_trimming, openai_summarizing, openai_compaction: the cookbook's documented examples
(session_memory.ipynb: TrimmingSession, SummarizingSession), openai-agents 0.24's SessionSettings.limit
and compaction session, the Responses compaction guide; params; and the section-3 invariants of
docs/sdk-strategies.md on generated histories."""

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
from strategies.base import CannotReduce, ContextStrategy
from strategies.openai_sessions import (
    SHADOW_PROMPT,
    OpenAICompaction,
    _Appended,
    candidate_items,
    current_run_start,
    is_user_message,
    item_count,
)
from strategies.split import is_pinned
from strategies.testing import (
    FOLLOWUPS,
    FakeSummarizer,
    Ids,
    Shown,
    brief,
    histories,
    new_messages,
    tool_ids,
    well_formed,
)


def user(text: str, kind: Any = None) -> Message:
    return Message.build("user", [Text(text)], kind=kind)


def assistant(text: str) -> Message:
    return Message.assistant(text)


def call(*ids: str, text: str | None = None) -> Message:
    blocks: list[Any] = [Text(text)] if text else []
    return Message.build("assistant", [*blocks, *(ToolUse(i, "lookup", {"q": i}) for i in ids)])


def results(*ids: str, text: str = "result line\n" * 40) -> Message:
    return Message.build("user", [ToolResult(i, "success", text) for i in ids])


def context(window: list[Message], fake: FakeSummarizer | None = None, overhead: int = 0) -> Context:
    return Context(window, summarizer=fake or FakeSummarizer(), prompt_overhead=overhead)


def before_call(name: str, window: list[Message], fake: FakeSummarizer | None = None, **params: Any) -> Context:
    ctx = context(window, fake)
    create(name, **params).before_call(ctx)
    return ctx


def agentic_run(n_turns: int, prefix: str = "t") -> list[Message]:
    """One task and n tool turns: a single SDK run."""
    out = [user("Task: fix the failing test.", kind="task")]
    for t in range(n_turns):
        out += [call(f"{prefix}{t}"), results(f"{prefix}{t}")]
    return out


# Params ----------------------------------------------------------------------------------------------------


def test_defaults_are_the_sources() -> None:
    assert create("openai_trimming").params.model_dump() == {"max_turns": 8, "limit": None}
    assert create("openai_summarizing").params.model_dump() == {"context_limit": 3, "keep_last_n_turns": 3}
    assert create("openai_compaction").params.model_dump() == {"compact_threshold": None, "candidate_threshold": 10}


@pytest.mark.parametrize(("name", "bad"), [
    ("openai_trimming", {"max_turns": 0}),  # the cookbook clamps to 1; a config typo here
    ("openai_trimming", {"max_turns": -3}),
    ("openai_trimming", {"limit": 0}),  # "nothing" for SQLiteSession, "everything" for TrimmingSession
    ("openai_trimming", {"max_turns": True}),
    ("openai_trimming", {"max_turns": "8"}),
    ("openai_summarizing", {"context_limit": 0}),  # assert context_limit >= 1
    ("openai_summarizing", {"keep_last_n_turns": -1}),  # assert keep_last_n_turns >= 0
    ("openai_summarizing", {"keep_last_n_turns": 4}),  # assert keep_last_n_turns <= context_limit
    ("openai_summarizing", {"keep_last_n_turns": 2, "context_limit": 1}),
    ("openai_compaction", {"compact_threshold": 0}),
    ("openai_compaction", {"candidate_threshold": 0}),
    ("openai_compaction", {"compact_threshold": 1.5}),
    ("openai_compaction", {"model": "gpt-4.1"}),
])
def test_rejected_params(name: str, bad: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        create(name, **bad)


# What is a user message, and Responses items -------------------------------------------------------------


def test_a_tool_result_is_not_a_user_message_though_its_role_is_user() -> None:
    assert is_user_message(user("Hi")) and is_user_message(user("Task", kind="task"))
    assert is_user_message(user("Stop repeating yourself.", kind="nudge"))
    assert not is_user_message(results("a"))
    assert not is_user_message(assistant("Hello!"))
    assert not is_user_message(Message.build("user", [Text("SUMMARY 1")], kind="summary"))


def test_item_counts() -> None:
    assert item_count(call("a", "b", text="Let me look.")) == 3  # a message item and two function calls
    assert item_count(call("a")) == 1
    assert item_count(results("a", "b", "c")) == 3  # one function call output each
    assert item_count(user("Hi")) == item_count(assistant("Hello!")) == 1
    assert candidate_items([user("Hi"), call("a", text="x"), results("a"), assistant("Done.")]) == 4


# openai_trimming ------------------------------------------------------------------------------------------


def notebook_history() -> list[Message]:
    """The cookbook's tiny example: 0 user Hi, 1 assistant Hello!, 2 tool_call lookup, 3 tool_result,
    4 user It didn't work, 5 assistant Try rebooting, 6 user Rebooted, now error 42, 7 assistant On it.
    (Items 1-2 are one assistant message here, a text and a call.)"""
    return [user("Hi"), call("lookup", text="Hello!"), results("lookup", text="..."), user("It didn't work"),
            assistant("Try rebooting"), user("Rebooted, now error 42"), assistant("On it")]


def test_trimming_keeps_the_last_turns_of_the_notebooks_example() -> None:
    """With max_turns=2 the notebook keeps items 4..7; the next run's model call sends them plus its
    own new user message."""
    history = notebook_history()
    window = [*history, user("Still broken.")]
    ctx = before_call("openai_trimming", window, max_turns=2)
    assert list(ctx.messages) == window[3:]
    assert ctx.removed_count == 3


def test_trimming_keeps_the_notebooks_three_turns() -> None:
    """The notebook's flow with max_turns=3: five exchanges leave the last three (6 items)."""
    exchanges = [("I am using a macbook pro and it has some overheating issues too.", "I see."),
                 ("Firmware v1.0.3; still failing.", "Could you please try a factory reset?"),
                 ("Reset done; error 42 now.", "Leave it on charge for 30 minutes."),
                 ("Yes, I see error 404 now.", "Do you see it on the browser while accessing a website?")]
    history = [user("There is a red light blinking on my laptop."), assistant("What is the model?")]
    for asked, answered in exchanges:
        history += [user(asked), assistant(answered)]
    window = [*history, user("Yes, in the browser.")]
    ctx = before_call("openai_trimming", window, max_turns=3)
    assert list(ctx.messages) == [*history[-6:], window[-1]]
    assert ctx.messages[0].text == "Firmware v1.0.3; still failing."


def test_the_current_run_is_never_trimmed() -> None:
    """The Runner reads the session once per run: a single task with many tool turns is never trimmed."""
    window = agentic_run(30)
    ctx = before_call("openai_trimming", window, max_turns=1)
    assert list(ctx.messages) == window


def test_a_run_sees_max_turns_earlier_turns_plus_its_own() -> None:
    window = [*agentic_run(3), user("Also update the changelog."), *agentic_run(2, "s")[1:],
              user("And bump the version."), call("v")]
    ctx = before_call("openai_trimming", window, max_turns=1)
    # The run of "And bump the version." sees one earlier turn ("Also update...") and its own.
    assert list(ctx.messages) == window[7:]
    assert sum(map(is_user_message, ctx.messages)) == 2


def test_fewer_user_turns_than_max_turns_keeps_everything() -> None:
    window = [*notebook_history(), user("Next.")]
    assert list(before_call("openai_trimming", window).messages) == window


def test_limit_keeps_the_last_items_in_whole_messages_without_orphan_outputs() -> None:
    history = [user("Task", kind="task"), call("a", "b", text="Looking."), results("a", "b"), user("More?")]
    window = [*history, user("Go on.")]
    # 3 items fit: the outputs (2) and "More?" (1); the outputs' calls are cut, so they go too.
    ctx = before_call("openai_trimming", window, max_turns=None, limit=3)
    assert list(ctx.messages) == window[3:]
    # 6 items fit the history but the first message: the assistant message (3 items) and its outputs stay.
    ctx = before_call("openai_trimming", window, max_turns=None, limit=6)
    assert list(ctx.messages) == window[1:]
    # A limit inside the assistant message drops it whole (the SDK keeps its later calls).
    ctx = before_call("openai_trimming", window, max_turns=None, limit=5)
    assert list(ctx.messages) == window[3:]


def test_limit_and_max_turns_together() -> None:
    window = [*notebook_history(), user("Next.")]
    ctx = before_call("openai_trimming", window, max_turns=3, limit=2)
    assert list(ctx.messages) == window[-3:]


def test_trimming_keeps_pinned_messages() -> None:
    window = [*notebook_history(), user("Next.")]
    window[0] = Message.build("user", [Text("Hi")], pinned=True)
    ctx = before_call("openai_trimming", window, max_turns=1)
    assert list(ctx.messages) == [window[0], *window[5:]]


# openai_summarizing ---------------------------------------------------------------------------------------


def router_exchanges() -> list[Message]:
    """The notebook's SummarizingSession example: five user turns, each answered once."""
    return [
        user("Hi, my router won't connect. by the way, I am using Windows 10."),
        assistant("Let's check your firmware version."),
        user("Firmware v1.0.3; still failing."), assistant("Try a factory reset."),
        user("Reset done; error 42 now."), assistant("Try to install a new firmware."),
        user("I tried but I got another error now."), assistant("Can you please provide me with the error code?"),
        user("It says 404 not found when I try to access the page."), assistant("Are you connected to the internet?"),
    ]


def test_summarizing_the_notebooks_example() -> None:
    """keep_last_n_turns=2, context_limit=4: five turns leave the synthetic pair and the last two turns."""
    history = router_exchanges()
    window = [*history, user("Yes, I am connected.")]
    fake = FakeSummarizer()
    ctx = before_call("openai_summarizing", window, fake, keep_last_n_turns=2, context_limit=4)
    shadow, summary, *rest = ctx.messages
    assert (shadow.role, shadow.kind, shadow.text) == ("user", "summary", "Summarize the conversation we had so far.")
    assert shadow.text == SHADOW_PROMPT
    assert (summary.role, summary.kind, summary.text) == ("assistant", "summary", "SUMMARY 1")
    assert rest == [*history[6:], window[-1]]
    assert fake.calls == [history[:6]]
    assert ctx.removed_count == 6


def test_summarizing_waits_for_more_than_context_limit_turns_before_the_run() -> None:
    """Four turns before the run are within context_limit=4: the run of the fifth sends them whole."""
    window = router_exchanges()[:9]  # four exchanges, then the fifth user message starts a run
    ctx = before_call("openai_summarizing", window, keep_last_n_turns=2, context_limit=4)
    assert list(ctx.messages) == window


def test_summarizing_keep_zero_summarizes_everything_before_the_run() -> None:
    window = [*router_exchanges(), user("Yes.")]
    ctx = before_call("openai_summarizing", window, keep_last_n_turns=0, context_limit=1)
    assert [m.kind for m in ctx.messages] == ["summary", "summary", "text"]
    assert ctx.messages[-1] is window[-1]


def test_summarizing_defaults_three_and_three() -> None:
    four_turns = router_exchanges()[:8]
    window = [*four_turns, user("Next.")]
    fake = FakeSummarizer()
    ctx = before_call("openai_summarizing", window, fake)
    assert fake.calls == [four_turns[:2]]
    assert list(ctx.messages[2:]) == window[2:]


def test_tool_results_do_not_count_as_user_turns() -> None:
    window = agentic_run(20)
    assert list(before_call("openai_summarizing", window, context_limit=1, keep_last_n_turns=1).messages) == window


def test_summarizing_again_replaces_the_pair() -> None:
    window = [*router_exchanges(), user("Yes.")]
    s = create("openai_summarizing", keep_last_n_turns=1, context_limit=1)
    fake = FakeSummarizer()
    ctx = context(window, fake)
    s.before_call(ctx)
    ctx.messages.extend([assistant("Then restart it."), user("Done; it works.")])
    s.before_call(ctx)
    assert [m.text for m in ctx.messages] == [SHADOW_PROMPT, "SUMMARY 2", "Yes.", "Then restart it.",
                                              "Done; it works."]
    assert fake.calls[1][:2] == [m for m in fake.calls[1][:2] if m.kind == "summary"]  # the old pair goes in


@pytest.mark.parametrize("mode", ["fail", "empty"])
def test_a_failed_summary_leaves_the_window_unchanged(mode: str) -> None:
    window = [*router_exchanges(), user("Yes.")]
    ctx = before_call("openai_summarizing", window, FakeSummarizer(mode), keep_last_n_turns=1)  # type: ignore[arg-type]
    assert list(ctx.messages) == window and ctx.removed_count == 0


# openai_compaction ----------------------------------------------------------------------------------------


def test_server_side_compaction_keeps_user_messages_then_one_compaction_item() -> None:
    window = [*agentic_run(6), user("Also check the docs.", kind="nudge"), call("x"), results("x")]
    fake = FakeSummarizer()
    threshold = sum(m.tokens for m in window) - 1
    ctx = before_call("openai_compaction", window, fake, compact_threshold=threshold)
    assert list(ctx.messages[:-1]) == [window[0], window[13]]
    item = ctx.messages[-1]
    assert (item.role, item.kind, item.text) == ("user", "summary", "SUMMARY 1")
    assert fake.calls == [[m for m in window if m.role == "assistant" or m.has_result]]
    assert ctx.prompt_tokens <= threshold


def test_server_side_compaction_fires_only_past_the_threshold_on_the_whole_prompt() -> None:
    window = agentic_run(6)
    prompt = sum(m.tokens for m in window) + 300
    for threshold, expected in ((prompt, False), (prompt - 1, True)):
        ctx = context(window, overhead=300)
        create("openai_compaction", compact_threshold=threshold).before_call(ctx)
        assert (ctx.messages[-1].kind == "summary") is expected


def test_the_previous_compaction_item_is_compacted_again() -> None:
    s = create("openai_compaction", compact_threshold=100)
    ctx = context(agentic_run(4))
    s.before_call(ctx)
    ctx.messages.extend(agentic_run(4, "s")[1:])
    s.before_call(ctx)
    assert [m.kind for m in ctx.messages] == ["task", "summary"] and ctx.messages[-1].text == "SUMMARY 2"


def test_no_compaction_while_a_call_waits_for_its_result_or_when_it_would_not_shrink() -> None:
    window = [*agentic_run(6), call("open")]
    assert list(before_call("openai_compaction", window, compact_threshold=10).messages) == window
    window = [user("Task", kind="task"), assistant("ok")]
    huge = FakeSummarizer("huge")
    assert list(before_call("openai_compaction", window, huge, compact_threshold=1).messages) == window


def test_the_session_defers_while_turns_have_tool_outputs_and_compacts_after_a_reply_without() -> None:
    s = create("openai_compaction", candidate_threshold=4)
    assert isinstance(s, OpenAICompaction)
    ctx = context([user("Task", kind="task")])
    for t in range(3):  # 6 candidates; each turn has tool outputs
        ctx.messages.extend([call(f"t{t}"), results(f"t{t}")])
        s.apply(ctx)
        assert s.deferred == (t >= 1) and ctx.messages[-1].has_result
    ctx.messages.append(assistant("Done: fixed."))
    s.apply(ctx)
    assert [m.kind for m in ctx.messages] == ["task", "summary"] and not s.deferred


def test_a_deferred_compaction_is_forced_even_below_the_threshold() -> None:
    s = create("openai_compaction", candidate_threshold=2)
    assert isinstance(s, OpenAICompaction)
    ctx = context([user("Task", kind="task"), call("a"), results("a")])
    s.apply(ctx)
    assert s.deferred
    s.compact(ctx)  # compacted meanwhile (no candidates left)
    ctx.messages.append(assistant("Done."))
    s.apply(ctx)  # 1 candidate: below 2, but still deferred, so forced
    assert ctx.messages[-1].kind == "summary" and not s.deferred


def test_a_failed_compaction_stays_due() -> None:
    s = create("openai_compaction", candidate_threshold=1)
    assert isinstance(s, OpenAICompaction)
    ctx = context([user("Task", kind="task"), call("a"), results("a")], fake=FakeSummarizer("fail"))
    s.apply(ctx)
    ctx.messages.append(assistant("Done."))
    s.apply(ctx)
    assert s.deferred and ctx.messages[-1].text == "Done."


def test_a_single_run_with_the_sdk_defaults_compacts_only_at_its_end() -> None:
    window = agentic_run(20)
    s = create("openai_compaction")
    ctx = context(window[:1])
    for m in window[1:]:
        ctx.messages.append(m)
        if m.has_result:
            s.apply(ctx)
    assert list(ctx.messages) == window
    ctx.messages.append(assistant("Done."))
    s.apply(ctx)
    assert [m.kind for m in ctx.messages] == ["task", "summary"]


# reduce ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["openai_trimming", "openai_summarizing", "openai_compaction"])
def test_reduce_always_raises_and_changes_nothing(name: str) -> None:
    window = [*router_exchanges(), *agentic_run(5)]
    ctx = context(window)
    s = create(name)
    for overflow in (None, ContextOverflow(10, 5)):
        with pytest.raises(CannotReduce) as info:
            s.reduce(ctx, overflow)
        assert info.value.__cause__ is overflow
    assert list(ctx.messages) == window and ctx.removed_count == 0


# Section-3 and common invariants, on generated histories ---------------------------------------------------

CONFIGS = st.one_of(
    st.tuples(st.just("openai_trimming"), st.fixed_dictionaries({
        "max_turns": st.one_of(st.none(), st.integers(1, 4)), "limit": st.one_of(st.none(), st.integers(1, 12))})),
    st.integers(0, 3).flatmap(lambda k: st.tuples(st.just("openai_summarizing"), st.fixed_dictionaries({
        "keep_last_n_turns": st.just(k), "context_limit": st.integers(max(k, 1), 4)}))),
    st.tuples(st.just("openai_compaction"), st.fixed_dictionaries({
        "compact_threshold": st.one_of(st.none(), st.integers(50, 6000)),
        "candidate_threshold": st.one_of(st.none(), st.integers(1, 12))})),
)




def changed(before: Sequence[Message], after: Sequence[Message]) -> bool:
    return len(before) != len(after) or any(a is not b for a, b in zip(before, after, strict=True))


def check_step(name: str, params: dict[str, Any], s: ContextStrategy, before: list[Message],
               after: list[Message], ctx: Context, removed: int) -> None:
    """The invariants of one hook call."""
    assert well_formed(after), brief(after)
    assert [m for m in after if m.pinned] == [m for m in before if m.pinned]
    if before and before[-1].role == "assistant" and before[-1].has_use:
        assert after[-1] is before[-1]  # an open call is never trimmed, summarized or compacted
    new = [m for m in after if not any(m is b for b in before)]
    kept = [m for m in after if any(m is b for b in before)]
    assert kept == [b for b in before if any(b is m for m in kept)]  # a subsequence, in order
    assert all(m.kind == "summary" and all(isinstance(b, Text) for b in m.blocks) for m in new)
    assert ctx.removed_count - removed == sum(m.kind != "summary" for m in before) - sum(
        m.kind != "summary" for m in after)
    if not changed(before, after):
        return
    event(f"{name} fired")
    run = current_run_start(before)
    dropped = [i for i, b in enumerate(before) if not any(b is m for m in after)]
    assert all(not is_pinned(before, i) for i in dropped)
    if name == "openai_trimming":
        assert not new and run is not None and all(i < run for i in dropped)
        start = next(i for i, m in enumerate(after) if m is before[run])
        unprotected = [m for m in after[:start] if not m.pinned and not any(
            m is before[i] and is_pinned(before, i) for i in range(len(before)))]
        if params["max_turns"] is not None:
            assert sum(map(is_user_message, unprotected)) <= params["max_turns"]
        if params["limit"] is not None:
            assert sum(map(item_count, unprotected)) <= params["limit"]
    elif name == "openai_summarizing":
        assert run is not None and all(i < run for i in dropped)
        assert [(m.role, m.text) for m in new][:1] == [("user", SHADOW_PROMPT)] and new[1].role == "assistant"
        start = next(i for i, m in enumerate(after) if m is before[run])
        assert sum(map(is_user_message, after[:start])) <= params["keep_last_n_turns"] + sum(
            1 for m in after[:start] if m.pinned and is_user_message(m))
    else:
        assert len(new) == 1 and after[-1] is new[0] and ctx.tokens < sum(m.tokens for m in before)
        assert all(is_user_message(m) or is_pinned(before, i) for i, m in enumerate(before) if m in kept)
        threshold = params["compact_threshold"]
        if threshold is not None and ctx.prompt_tokens > threshold:
            # Documented reason: the user messages, the pins and the item alone pass the threshold.
            assert after == [*kept, new[0]]


@given(config=CONFIGS, data=st.data(), mode=st.sampled_from(("ok", "ok", "fail", "empty", "huge")))
def test_invariants_on_generated_histories(config: tuple[str, dict[str, Any]], data: st.DataObject, mode: str) -> None:
    """Over six steps (before_call, appends, apply): W(B) => W(A); pins kept; an open call kept; only
    summaries are new and the rest is a subsequence; ``removed_count`` counts what left; a result that
    left never comes back; after a server-side compaction the prompt is at or below the threshold
    unless the kept messages and the item alone pass it; hooks never raise; reduce raises, unchanged."""
    name, params = config
    s = create(name, **params)
    window = data.draw(histories(max_turns=6).map(lambda w: Shown(w)), label="window").messages
    ctx = Context(window, summarizer=FakeSummarizer(mode))  # type: ignore[arg-type]
    gone: set[str] = set()
    ids = Ids("n")
    for _ in range(6):
        for hook in ("before_call", "apply"):
            before, removed = list(ctx.messages), ctx.removed_count
            getattr(s, hook)(ctx)
            after = list(ctx.messages)
            check_step(name, params, s, before, after, ctx, removed)
            gone |= tool_ids(before) - tool_ids(after)
            assert not gone & tool_ids(after)
        if name != "openai_compaction":
            again = list(ctx.messages)
            s.before_call(ctx)
            assert not changed(again, ctx.messages)  # idempotent
        with pytest.raises(CannotReduce):
            s.reduce(ctx, ContextOverflow(ctx.tokens, 1))
        appended = data.draw(new_messages(ctx.messages, ids).map(lambda w: Shown(w)), label="appended").messages
        if data.draw(st.integers(0, 2), label="user message") > 0:
            appended = [*appended, Message.build("user", [Text(data.draw(st.sampled_from(FOLLOWUPS)))])] \
                if not appended[-1].has_use else appended
        for m in appended:
            ctx.messages.append(s.on_append(ctx, m))


@given(histories(max_turns=6), st.lists(st.integers(0, 12), max_size=4))
def test_what_is_seen_by_appending_equals_a_scan_of_the_whole_window(window: list[Message], cuts: list[int]) -> None:
    # The strategies look only at what was appended since their last look; after every append, and after
    # the window was cut (as a commit cuts it), that equals scanning the whole window.
    seen = _Appended()
    current: list[Message] = []
    for m in window:
        current.append(m)
        seen.update(current)
        assert seen.user_indices == [i for i, x in enumerate(current) if is_user_message(x)]
        assert seen.candidates == candidate_items(current)
        assert (seen.user_indices or [None])[-1] == current_run_start(current)
    for cut in cuts:
        current = current[cut:]
        seen.update(current)
        assert seen.user_indices == [i for i, x in enumerate(current) if is_user_message(x)]
        assert seen.candidates == candidate_items(current)
