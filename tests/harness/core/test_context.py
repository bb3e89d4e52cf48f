"""Context and its Window: running totals under every list mutation, and the runtime seams."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from harness.core.context import Context, ContextOverflow, NoSummarizer, PayloadStore, Window
from harness.core.messages import Message, Text, TextMeter, ToolResult, ToolUse, as_summary, to_converse

FACTS = {"pod": "api-7f9c-q2kx", "trace": "trc-zz91-mmp3", "node": "node-b4k2-77aa"}
#: A decoy (a wrong value of a fact's shape) and a step's call, so that the window's decoy and record counts
#: are checked under every mutation too.
DECOYS = ("api-7f9c-zz00",)
CALLS = {'logs {"pod":"api-7f9c-q2kx"}': "s1"}
METER = TextMeter.for_facts(FACTS, decoys=DECOYS, calls=CALLS)


def obs(i: int, text: str) -> Message:
    # Two steps share the results: the step index (`Window.step_kinds`) is checked under every mutation.
    return Message.build("user", [ToolResult(f"t{i}", "success", text)], step_id=f"s{i % 2}", meter=METER)


def msgs() -> list[Message]:
    return [
        Message.build("user", [Text("find pod api-7f9c-q2kx")], kind="task", meter=METER),
        Message.build("assistant", [ToolUse("t1", "logs", {"pod": "api-7f9c-q2kx"})], step_id="s1", meter=METER),
        obs(1, "trace trc-zz91-mmp3 on node-b4k2-77aa\n" * 5),
        Message.build("assistant", [Text("and the node node-b4k2-77aa")], meter=METER),
        obs(2, "plain output with nothing, not pod api-7f9c-zz00"),
        Message.build("user", [Text("hint: trc-zz91-mmp3")], meter=METER),
    ]


def extra() -> list[Message]:
    return [obs(7, "extra api-7f9c-q2kx output"), Message.assistant("short", meter=METER)]


def check_totals(w: Window) -> None:
    assert w.tokens == sum(m.tokens for m in w)
    assert w.raw_tokens == sum(m.raw_tokens for m in w)
    expected: Counter[str] = Counter()
    for m in w:
        expected.update(m.facts)
    assert dict(w.fact_counts) == dict(expected)
    assert all(v > 0 for v in w.fact_counts.values())
    assert dict(w.record_counts) == dict(Counter(step for m in w for step in m.records))
    assert dict(w.decoy_counts) == dict(Counter(decoy for m in w for decoy in m.decoys))
    assert all(v > 0 for v in (*w.record_counts.values(), *w.decoy_counts.values()))
    steps = Counter((m.role, m.step_id, m.kind) for m in w if m.step_id is not None)
    assert dict(w.step_kinds) == dict(steps)
    for role, step, kind in [*steps, ("user", "s9", "observation"), ("assistant", "s0", "action")]:
        assert w.holds(role, step, [kind, "nudge"]) is ((role, step, kind) in steps)


def _iadd(w: Window) -> None:
    w += extra()


def _slice_assign_grow(w: Window) -> None:
    w[1:3] = extra() + extra()


def _slice_assign_all(w: Window) -> None:
    w[:] = extra()


def _extended_slice(w: Window) -> None:
    w[::2] = [obs(9 + i, "y api-7f9c-q2kx" if i % 2 else "x") for i in range(len(w[::2]))]


MUTATIONS: dict[str, Callable[[Window], object]] = {
    "append": lambda w: w.append(extra()[0]),
    "extend": lambda w: w.extend(extra()),
    "insert": lambda w: w.insert(2, extra()[0]),
    "insert_negative": lambda w: w.insert(-1, extra()[1]),
    "pop_last": lambda w: w.pop(),
    "pop_index": lambda w: w.pop(2),
    "remove": lambda w: w.remove(w[2]),
    "del_item": lambda w: w.__delitem__(0),
    "del_slice": lambda w: w.__delitem__(slice(1, 4)),
    "del_extended_slice": lambda w: w.__delitem__(slice(None, None, 2)),
    "slice_assign": _slice_assign_grow,
    "slice_assign_all": _slice_assign_all,
    "slice_assign_empty": lambda w: w.__setitem__(slice(2, 5), []),
    # What strategies do: the whole window rewritten, most of it the same objects (a kept head and
    # tail), or the same object twice, or the window reversed (same objects, other places).
    "slice_assign_keep_head_and_tail": lambda w: w.__setitem__(slice(None), [*w[:1], *extra(), *w[3:]]),
    "slice_assign_drop_front": lambda w: w.__setitem__(slice(None), [w[0], *w[3:]]),
    "slice_assign_repeat": lambda w: w.__setitem__(slice(None), [*w, w[-1], w[-1]]),
    "slice_assign_reordered": lambda w: w.__setitem__(slice(None), list(reversed(w))),
    "slice_assign_middle": lambda w: w.__setitem__(slice(1, 5), [w[1], *extra(), w[4]]),
    "extended_slice_assign": _extended_slice,
    "item_assign": lambda w: w.__setitem__(2, obs(8, "replaced api-7f9c-q2kx")),
    "item_assign_negative": lambda w: w.__setitem__(-1, obs(8, "tail")),
    "clear": lambda w: w.clear(),
    "iadd": _iadd,
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_totals_stay_exact_after_mutation(name: str) -> None:
    ctx = Context(msgs())
    check_totals(ctx.messages)
    before = list(ctx.messages)
    MUTATIONS[name](ctx.messages)
    check_totals(ctx.messages)
    assert ctx.tokens == sum(m.tokens for m in ctx.messages)
    assert list(ctx.messages) != before


def test_totals_after_a_sequence_of_mutations() -> None:
    w = Window(msgs())
    for name in sorted(MUTATIONS):
        if name == "clear":
            continue
        if len(w) < 6:
            w.extend(msgs())
        MUTATIONS[name](w)
        check_totals(w)


def test_the_test_messages_hold_records_and_decoys() -> None:
    # Else the record and decoy checks of `check_totals` would compare empty counts.
    w = Window(msgs())
    assert w.record_counts == Counter({"s1": 1}) and w.decoy_counts == Counter({"api-7f9c-zz00": 1})


def test_fact_counts_track_presence() -> None:
    w = Window(msgs())
    assert w.fact_counts == Counter({"pod": 2, "trace": 2, "node": 2})
    w.pop(0)
    w.pop(0)
    assert "pod" not in w.fact_counts
    w.clear()
    assert w.fact_counts == Counter() and w.tokens == 0 and w.raw_tokens == 0


def test_failed_mutations_leave_totals_unchanged() -> None:
    w = Window(msgs())
    tokens = w.tokens
    with pytest.raises(TypeError):
        w.append("not a message")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        w[0] = "nope"  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        w[0:1] = ["nope"]  # type: ignore[list-item]
    with pytest.raises(ValueError):
        w[::2] = [obs(1, "only one")]
    with pytest.raises(IndexError):
        w.pop(99)
    with pytest.raises(ValueError):
        w.remove(obs(99, "absent"))
    assert w.tokens == tokens and len(w) == 6
    check_totals(w)


@pytest.mark.parametrize("op", ["sort", "reverse"])
def test_sort_and_reverse_refused(op: str) -> None:
    w = Window(msgs())
    before = list(w)
    with pytest.raises(TypeError, match="order"):
        getattr(w, op)()
    assert list(w) == before


def test_in_place_repeat_refused() -> None:
    w = Window(msgs())
    with pytest.raises(TypeError):
        w *= 2
    assert len(w) == 6


def test_utilization_is_tokens_over_window() -> None:
    ctx = Context(msgs(), window_tokens=1000)
    assert ctx.utilization() == ctx.tokens / 1000
    ctx.messages.clear()
    assert ctx.utilization() == 0


def test_window_tokens_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Context(window_tokens=0)


def test_removed_count_starts_at_zero() -> None:
    assert Context(msgs()).removed_count == 0


def test_summarize_without_summarizer_raises() -> None:
    with pytest.raises(NoSummarizer):
        Context(msgs()).summarize(msgs())


def test_summarize_passes_a_list_copy_and_returns_reply() -> None:
    seen: list[list[Message]] = []

    def summarizer(ms: list[Message]) -> Message:
        seen.append(ms)
        return Message.assistant(f"SUMMARY of {len(ms)}")

    ctx = Context(msgs(), summarizer=summarizer)
    reply = ctx.summarize(ctx.messages[:2])
    assert reply.text == "SUMMARY of 2"
    assert seen[0] == list(ctx.messages[:2])
    assert as_summary(reply).kind == "summary"


def test_from_messages_accepts_converse_dicts_and_messages() -> None:
    m = Message.assistant("hello")
    d = {"role": "user", "content": [{"text": "pinned task"}], "metadata": {"custom": {"pinned": True}}}
    ctx = Context.from_messages([d, m], window_tokens=500)
    assert ctx.window_tokens == 500
    assert ctx.messages[1] is m
    assert ctx.messages[0].pinned is True
    assert to_converse(ctx.messages[0]) == d
    assert ctx.tokens == ctx.messages[0].tokens + m.tokens


def test_from_messages_passes_summarizer() -> None:
    ctx = Context.from_messages([], summarizer=lambda ms: Message.assistant("S"))
    assert ctx.summarize([]).text == "S"


def test_context_overflow_carries_tokens_and_window() -> None:
    e = ContextOverflow(1500, 1000)
    assert (e.tokens, e.window) == (1500, 1000)
    assert "1500" in str(e) and "1000" in str(e)
    assert isinstance(e, Exception)


def test_payload_store_put_twice_is_noop() -> None:
    store = PayloadStore()
    store.put("ref_000000000000", "first")
    store.put("ref_000000000000", "second")
    assert store.get("ref_000000000000") == "first"
    assert len(store) == 1
    assert "ref_000000000000" in store


def test_payload_store_unknown_handle_raises_key_error() -> None:
    with pytest.raises(KeyError):
        PayloadStore().get("ref_ffffffffffff")


def test_context_has_its_own_store_by_default() -> None:
    a, b = Context(), Context()
    a.store.put("h", "p")
    assert "h" not in b.store
    shared = PayloadStore()
    assert Context(store=shared).store is shared


def test_iadd_on_a_window_alias_keeps_totals() -> None:
    ctx = Context(msgs())
    w = ctx.messages
    w += extra()
    assert len(ctx.messages) == 8
    check_totals(ctx.messages)


def test_iadd_on_context_messages_extends_in_place() -> None:
    ctx = Context(msgs())
    window = ctx.messages
    ctx.messages += extra()
    assert ctx.messages is window
    assert len(ctx.messages) == 8
    check_totals(ctx.messages)


def test_replacing_the_window_object_is_refused() -> None:
    ctx = Context(msgs())
    with pytest.raises(AttributeError, match=r"ctx.messages\[:\] = new"):
        ctx.messages = Window(extra())  # type: ignore[misc]
    assert len(ctx.messages) == 6
