"""adk_compaction: params as EventsCompactionConfig validates them, the docs' and the source's
examples of the sliding window, the token threshold (its boundary, its lagging measure, retention,
the rolling summary), the view, failures, and the invariants of docs/sdk-strategies.md 3."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, Text, ToolResult, ToolUse, tokens_of
from strategies import create
from strategies.adk_compaction import (
    AdkCompaction,
    AdkCompactionParams,
    estimate_chars,
    request_json_chars,
    retained,
    safe_split,
    self_contained_prefix,
)
from strategies.base import CannotReduce
from strategies.testing import FakeSummarizer, Ids, adk_params, brief, histories, new_messages, open_uses, well_formed

BIG = "\n".join(f"line {i:04d}: a long tool output line" for i in range(300))  # ~3,000 tokens


def user(text: str, kind: Any = None) -> Message:
    return Message.build("user", [Text(text)], kind=kind)


def call(i: str) -> Message:
    return Message.build("assistant", [Text("calling"), ToolUse(i, "read_file", {"path": i})])


def result(i: str, text: str = "ok") -> Message:
    return Message.build("user", [ToolResult(i, "success", text)])


def final(text: str = "done") -> Message:
    return Message.build("assistant", [Text(text)], kind="final")


class Session:
    """The runtime's order: on_append then append; before_call before every assistant message."""

    def __init__(self, fake: FakeSummarizer | None = None, overhead: int = 0, **params: Any) -> None:
        self.fake = fake or FakeSummarizer()
        self.ctx = Context(summarizer=self.fake, prompt_overhead=overhead, window_tokens=10**9)
        strategy = create("adk_compaction", **params)
        assert isinstance(strategy, AdkCompaction)
        self.strategy = strategy

    def add(self, *messages: Message) -> None:
        for m in messages:
            if m.role == "assistant":
                self.strategy.before_call(self.ctx)
            self.ctx.messages.append(self.strategy.on_append(self.ctx, m))

    def next_call(self) -> None:
        self.strategy.before_call(self.ctx)

    @property
    def ranges(self) -> list[tuple[int, int]]:
        return [(c.start, c.end) for c in self.strategy._compactions]

    @property
    def texts(self) -> list[str]:
        return [m.text for m in self.ctx.messages]


def chat(s: Session, n: int) -> None:
    """n invocations of a user message and an answer (events 2k, 2k+1)."""
    for k in range(n):
        s.add(user(f"question {k}", kind="task" if k == 0 else None), final(f"answer {k}"))


# Params ---------------------------------------------------------------------------------------------


def test_the_defaults_alone_are_rejected_as_in_adk() -> None:
    with pytest.raises(pydantic.ValidationError, match="at least one compaction trigger"):
        create("adk_compaction")


@pytest.mark.parametrize(
    "params",
    [
        {"compaction_interval": 3},
        {"overlap_size": 1},
        {"token_threshold": 4000},
        {"event_retention_size": 5},
        {"compaction_interval": 0, "overlap_size": 1},
        {"compaction_interval": 3, "overlap_size": -1},
        {"token_threshold": 0, "event_retention_size": 5},
        {"token_threshold": 4000, "event_retention_size": -1},
        {"compaction_interval": True, "overlap_size": 1},
        {"compaction_interval": "3", "overlap_size": 1},
        {"token_threshold": 4000, "event_retention_size": 5, "token_measure": "sum"},
        {"token_threshold": 4000, "event_retention_size": 5, "summarizer": "x"},
    ],
)
def test_values_adk_rejects_are_rejected(params: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        create("adk_compaction", **params)


def test_the_docs_examples_are_accepted() -> None:
    sliding = create("adk_compaction", compaction_interval=3, overlap_size=1).params
    token = create("adk_compaction", token_threshold=4000, event_retention_size=5).params
    both = create("adk_compaction", compaction_interval=1, overlap_size=0, token_threshold=1, event_retention_size=0)
    assert sliding.token_threshold is None and token.compaction_interval is None  # type: ignore[attr-defined]
    assert token.token_measure == "last_call"  # type: ignore[attr-defined]
    assert both.params.overlap_size == 0  # type: ignore[attr-defined]


# Sliding window ---------------------------------------------------------------------------------------


def test_the_docs_example_interval_3_overlap_1() -> None:
    """adk-docs: "Event 3 completes: all 3 compressed; event 6 completes: 3 to 6, with the overlap"."""
    s = Session(compaction_interval=3, overlap_size=1)
    chat(s, 7)
    assert s.ranges == [(0, 5), (4, 11)]
    # The two ranges overlap and neither contains the other: ADK sends both summaries.
    assert s.texts == ["SUMMARY 1", "SUMMARY 2", "question 6", "answer 6"]
    # The second summary was written from the raw events, overlap included.
    assert [m.text for m in s.fake.calls[1]] == [f"{w} {k}" for k in range(2, 6) for w in ("question", "answer")]


def test_the_source_example_interval_2_overlap_1() -> None:
    """compaction.py: invocations 1 and 2 together, 3 alone nothing, after 4 the summary covers 2..4."""
    s = Session(compaction_interval=2, overlap_size=1)
    chat(s, 3)
    assert s.ranges == [(0, 3)]
    s.add(user("question 3"))
    s.next_call()
    assert s.ranges == [(0, 3)]  # invocation 3 alone triggers nothing
    s.add(final("answer 3"), user("question 4"))
    s.next_call()
    assert s.ranges == [(0, 3), (2, 7)]


def test_an_invocation_completes_only_when_the_next_one_starts() -> None:
    """A one-task session is one invocation: however many turns, the sliding window never fires."""
    s = Session(compaction_interval=1, overlap_size=0)
    s.add(user("the task", kind="task"))
    for k in range(6):
        s.add(call(f"t{k}"), result(f"t{k}", BIG))
        s.add(user("Keep going.", kind="nudge"))  # environment feedback, not a new invocation
    s.add(final())
    assert s.ranges == [] and s.fake.calls == []


# Token threshold ---------------------------------------------------------------------------------------


def test_the_threshold_fires_at_equality_on_the_prompt_measure() -> None:
    for offset, fires in ((0, True), (1, False)):
        s = Session(token_threshold=1, event_retention_size=1, token_measure="prompt", overhead=50)
        s.add(user("the task", kind="task"), call("t1"), result("t1", BIG))
        s.strategy.params = AdkCompactionParams(
            token_threshold=s.ctx.prompt_tokens + offset, event_retention_size=1, token_measure="prompt")
        s.next_call()
        assert bool(s.ranges) is fires


def test_adk_measures_the_previous_calls_prompt_so_it_fires_a_call_late() -> None:
    """The big result is in the prompt of call 2, but ADK reads call 1's usage: it fires at call 3."""
    events = [user("the task", kind="task"), call("t1"), result("t1", BIG), call("t2"), result("t2"), call("t3")]
    fired_at = {}
    for measure in ("last_call", "prompt"):
        s = Session(token_threshold=2000, event_retention_size=2, token_measure=measure)
        for n, m in enumerate(events):
            s.add(m)
            if s.ranges and measure not in fired_at:
                fired_at[measure] = n
    assert fired_at == {"prompt": 3, "last_call": 5}


def test_after_a_compaction_adk_estimates_chars_over_4() -> None:
    """Post-invocation, the last answer's usage passes the threshold: one summary. The check before
    the next call must not read that stale usage (a compaction event hides it) but estimate."""
    s = Session(token_threshold=1000, event_retention_size=1)
    s.add(user("q", kind="task"), call("t1"), result("t1", BIG), final())
    assert s.ranges == []  # before the answer ADK read call t1's prompt, without the big result
    s.add(user("next question"))
    s.next_call()
    # After invocation 1 the answer's prompt held the big result: events 0..2 summarized. Before the
    # next call that usage still reads over 1000, but it predates the compaction event.
    assert s.ranges == [(0, 2)] and len(s.fake.calls) == 1
    assert s.texts == ["SUMMARY 1", "done", "next question"]
    names = {"t1": "read_file"}
    assert estimate_chars(call("t1"), names) == len("calling") + len("read_file") + len('{"path": "t1"}')
    assert estimate_chars(result("t1", "ok"), names) == len("read_file") + len('{"result": "ok"}')


def test_retention_moves_the_split_earlier_to_keep_a_tool_pair() -> None:
    events = [user("q", kind="task"), call("t1"), result("t1"), call("t2"), result("t2")]
    assert safe_split(events, 1) == 3  # keeping only result t2 would orphan it: keep call t2 too
    assert safe_split(events, 2) == 3
    assert safe_split(events, 3) == 1
    assert safe_split(events, 5) == 0
    assert self_contained_prefix([*events, call("t3")]) == 5


def test_retention_zero_summarizes_all_but_a_call_still_open() -> None:
    s = Session(token_threshold=1, event_retention_size=0, token_measure="prompt")
    s.add(user("q", kind="task"), call("t1"), result("t1", BIG))
    s.ctx.messages.append(call("t2"))  # a call still waiting for its result
    s.next_call()
    assert [m.kind for m in s.ctx.messages] == ["summary", "action"]
    assert s.ctx.messages[-1].uses == {"t2"}
    assert all("t2" not in m.text for m in s.fake.calls[0])


def test_the_next_token_summary_supersedes_the_previous_one() -> None:
    s = Session(token_threshold=1500, event_retention_size=2)
    s.add(user("q", kind="task"), call("t1"), result("t1", BIG), call("t2"), result("t2", BIG), call("t3"))
    s.add(result("t3", BIG), call("t4"), result("t4", BIG), call("t5"))
    assert len(s.ranges) >= 2 and all(start == 0 for start, _ in s.ranges)  # each starts where the last did
    for n, received in enumerate(s.fake.calls[1:], start=1):
        assert received[0].text == f"SUMMARY {n}"  # the previous summary goes first
    assert s.texts[0] == f"SUMMARY {len(s.ranges)}" and [m.kind for m in s.ctx.messages].count("summary") == 1
    assert [c.summary.text for c in retained(s.strategy._compactions) if c.summary] == [s.texts[0]]


def test_a_range_is_priced_in_request_json_characters() -> None:
    names = {"t1": "read_file"}
    assert request_json_chars(user("hi"), names) == len('{"parts":[{"text":"hi"}],"role":"user"}')
    summary = Message.build("user", [Text("S")], kind="summary")
    assert request_json_chars(summary, names, summary=True) == len('{"parts":[{"text":"S"}],"role":"model"}')


# Failures, reduce, apply, pins ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["fail", "empty"])
def test_a_summarizer_failure_leaves_the_window_and_is_retried(mode: Any) -> None:
    s = Session(FakeSummarizer(mode), token_threshold=1, event_retention_size=1, token_measure="prompt")
    s.add(user("q", kind="task"), call("t1"), result("t1", BIG))
    before = list(s.ctx.messages)
    s.next_call()
    s.next_call()
    assert s.ctx.messages == before and s.ranges == [] and len(s.fake.calls) == 2


def test_reduce_always_raises_and_changes_nothing() -> None:
    s = Session(token_threshold=1, event_retention_size=0, token_measure="prompt")
    s.add(user("q", kind="task"), call("t1"), result("t1", BIG))
    before, removed, overflow = list(s.ctx.messages), s.ctx.removed_count, ContextOverflow(10, 5)
    with pytest.raises(CannotReduce) as e:
        s.strategy.reduce(s.ctx, overflow)
    assert e.value.__cause__ is overflow and s.ctx.messages == before and s.ctx.removed_count == removed


def test_apply_does_nothing() -> None:
    s = Session(token_threshold=1, event_retention_size=0, token_measure="prompt")
    s.add(user("q", kind="task"), call("t1"), result("t1", BIG))
    before = list(s.ctx.messages)
    s.strategy.apply(s.ctx)
    assert s.ctx.messages == before


def test_a_pinned_message_is_not_summarized_and_stays() -> None:
    s = Session(token_threshold=1, event_retention_size=1, token_measure="prompt")
    task = Message.build("user", [Text("the task")], kind="task", pinned=True)
    s.add(task, call("t1"), result("t1", BIG), call("t2"), result("t2"))
    s.next_call()
    assert s.ctx.messages[0] is task and s.ctx.messages[1].kind == "summary"
    assert all(m is not task for m in s.fake.calls[0])


# Properties (docs/strategies.md G1, G2, G5, G6; docs/sdk-strategies.md 3) ------------------------------------------


def result_contents(window: list[Message]) -> dict[str, str]:
    return {b.tool_use_id: b.content for m in window for b in m.blocks if isinstance(b, ToolResult)}


@given(
    params=adk_params(),
    window=histories(max_turns=5),
    rounds=st.lists(st.integers(0, 3), min_size=1, max_size=4),
    mode=st.sampled_from(("ok", "ok", "ok", "fail", "empty", "huge")),
    overhead=st.sampled_from((0, 100)),
    data=st.data(),
)
def test_the_view_keeps_pairs_pins_and_never_brings_back_a_summarized_result(
    params: dict[str, Any], window: list[Message], rounds: list[int], mode: Any, overhead: int, data: st.DataObject
) -> None:
    ctx = Context(window, summarizer=FakeSummarizer(mode), prompt_overhead=overhead, window_tokens=10**9)
    strategy = create("adk_compaction", **params)
    assert isinstance(strategy, AdkCompaction)
    gone: set[str] = set()
    ids = Ids("n")
    for followups in rounds:
        before = list(ctx.messages)
        removed = ctx.removed_count
        open_call = before[-1] if open_uses(before) else None
        strategy.before_call(ctx)
        after = list(ctx.messages)
        event(f"compactions: {min(len(strategy._compactions), 2)}")
        note = f"before={brief(before)}\nafter={brief(after)}"
        assert well_formed(after), note
        assert ctx.tokens == tokens_of(after) and ctx.removed_count >= removed
        assert all(any(a is m for a in after) for m in before if m.pinned), note
        if open_call is not None:  # a call still waiting for its result is never summarized
            assert after[-1] is open_call, note
        seen = result_contents(after)
        gone |= result_contents(before).keys() - seen.keys()
        assert not gone & seen.keys(), note  # a summarized result never comes back
        with pytest.raises(CannotReduce):
            strategy.reduce(ctx, ContextOverflow(1, 1))
        assert list(ctx.messages) == after
        for m in data.draw(new_messages(ctx.messages, ids)):
            ctx.messages.append(strategy.on_append(ctx, m))
        for _ in range(followups):  # user follow-ups end invocations
            ctx.messages.append(strategy.on_append(ctx, Message.build("user", [Text("Another question?")])))
            ctx.messages.append(strategy.on_append(ctx, Message.build("assistant", [Text("An answer.")])))


@given(window=histories(max_turns=6, pinned=False, open_end=False), retention=st.integers(0, 4))
def test_after_a_token_summary_at_most_retention_plus_one_events_stay_raw(
    window: list[Message], retention: int
) -> None:
    """The prompt may stay over the threshold (ADK does not check): what stays raw after a token
    summary is at most event_retention_size events, plus the call of a kept result."""
    ctx = Context(window, summarizer=FakeSummarizer(), window_tokens=10**9)
    strategy = create("adk_compaction", token_threshold=1, event_retention_size=retention, token_measure="prompt")
    assert isinstance(strategy, AdkCompaction)
    strategy.before_call(ctx)
    event(f"compacted: {bool(strategy._compactions)}")
    if strategy._compactions:
        summary = strategy._compactions[-1].summary
        at = next(i for i, m in enumerate(ctx.messages) if m is summary)
        assert len(ctx.messages) - at - 1 <= retention + 1, brief(list(ctx.messages))
