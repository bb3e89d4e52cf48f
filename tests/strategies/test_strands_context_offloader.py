"""strands_context_offloader: the documented behaviour of strands-agents 1.62's ContextOffloader
(plugin.py, storage.py, search.py), the mock's paging, and the section-3 invariants of
docs/sdk-strategies.md that apply to an offloader."""

from __future__ import annotations

import math
from typing import Any

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core import block_text, handle_for, parse_stub
from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, Text, TextMeter, ToolResult, ToolUse, default_meter, pin
from strategies import create
from strategies.base import CannotReduce
from strategies.strands_context_offloader import (
    RETRIEVE_TOOL,
    RUNTIME_RETRIEVE_TOOL,
    StrandsContextOffloader,
    StrandsContextOffloaderParams,
    is_offloaded,
    notice_text,
    source_text,
    stub_for,
)
from strategies.testing import histories, open_uses, well_formed

NAME = "strands_context_offloader"
FACTS = {"bad_pod": "api-7f9c-q2kx", "trace": "trc-zz91-mmp3"}
METER = TextMeter.for_facts(FACTS)


def offloader(**params: Any) -> StrandsContextOffloader:
    s = create(NAME, **params)
    assert isinstance(s, StrandsContextOffloader)
    return s


def call(*ids: str, name: str = "logs") -> Message:
    return Message.build("assistant", [ToolUse(i, name, {}) for i in ids], meter=METER)


def results(*pairs: tuple[str, str], status: str = "success") -> Message:
    return Message.build("user", [ToolResult(i, status, c) for i, c in pairs], meter=METER)  # type: ignore[arg-type]


def session(*ids: str, name: str = "logs") -> Context:
    return Context([Message.user("task", kind="task", meter=METER), call(*ids, name=name)])


def call_text(history: list[Message], tool_use_id: str) -> str:
    """The call a result answers, as its stub names it."""
    return next(block_text(b) for m in history for b in m.blocks if isinstance(b, ToolUse) and b.id == tool_use_id)


def rows(n: int, tag: str = "row") -> str:
    return "\n".join(f"{tag} {k:04d} status=ok" for k in range(n))


def append(s: StrandsContextOffloader, ctx: Context, m: Message) -> Message:
    out = s.on_append(ctx, m)
    ctx.messages.append(out)
    return out


def content_of(m: Message, i: int = 0) -> str:
    b = m.blocks[i]
    assert isinstance(b, ToolResult)
    return b.content


# Params ---------------------------------------------------------------------------------------------


def test_defaults_are_the_sources() -> None:
    s = offloader()
    p = s.params
    assert (p.max_result_tokens, p.preview_tokens, p.evict_after_cycles) == (2_500, 1_000, 20)
    assert (p.include_retrieval_tool, p.token_estimate) == (True, "exact")
    assert s.tools == (RETRIEVE_TOOL,) == ("retrieve_offloaded_content",)
    assert not hasattr(s, "runtime_defaults")  # a strategy brings no runtime of its own


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        ({"max_result_tokens": 0}, False),  # "max_result_tokens must be positive"
        ({"max_result_tokens": -5}, False),
        ({"max_result_tokens": 1, "preview_tokens": 0}, True),
        ({"preview_tokens": -1}, False),  # "preview_tokens must be non-negative"
        ({"preview_tokens": 0}, True),
        ({"preview_tokens": 2_499}, True),
        ({"preview_tokens": 2_500}, False),  # "preview_tokens must be less than max_result_tokens"
        ({"max_result_tokens": 100, "preview_tokens": 100}, False),
        ({"evict_after_cycles": 0}, False),  # "evict_after_cycles must be a positive integer or None"
        ({"evict_after_cycles": 1}, True),
        ({"evict_after_cycles": None}, True),
        ({"evict_after_cycles": True}, False),
        ({"evict_after_cycles": 2.0}, False),
        ({"max_result_tokens": "2500"}, False),
        ({"include_retrieval_tool": 1}, False),
        ({"token_estimate": "tiktoken"}, False),
        ({"token_estimate": "heuristic"}, True),
        ({"should_offload": None}, False),  # a callback: not modelled
    ],
)
def test_param_validation(params: dict[str, Any], ok: bool) -> None:
    if ok:
        assert offloader(**params).params == StrandsContextOffloaderParams(**params)
    else:
        with pytest.raises(pydantic.ValidationError):
            create(NAME, **params)


# The offload decision ---------------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [0, 1])
def test_heuristic_threshold_is_strictly_greater_than_ceil_chars_over_4(extra: int) -> None:
    """The source's fallback counts ceil(chars / 4) and offloads above max_result_tokens only."""
    c = "x" * (4 * 50 + extra)
    assert math.ceil(len(c) / 4) == 50 + extra
    ctx = session("t1")
    s = offloader(max_result_tokens=50, preview_tokens=10, token_estimate="heuristic")
    out = append(s, ctx, results(("t1", c)))
    assert (content_of(out) != c) == bool(extra)


def test_exact_threshold_uses_the_sessions_tokenizer() -> None:
    c = rows(40)
    n = METER.tokenizer.count(c)
    assert n != math.ceil(len(c) / 4)
    kept = offloader(max_result_tokens=n, preview_tokens=1).on_append(session("t1"), results(("t1", c)))
    assert content_of(kept) == c
    gone = offloader(max_result_tokens=n - 1, preview_tokens=1).on_append(session("t1"), results(("t1", c)))
    assert content_of(gone).splitlines()[2] == f"[Offloaded: 1 blocks, ~{n:,} tokens]"


def test_the_notice_guidance_preview_and_reference_exactly() -> None:
    c = "alpha\nbeta api-7f9c-q2kx\n" + "gamma " * 2_000
    ctx = session("t1")
    s = offloader(token_estimate="heuristic")
    out = append(s, ctx, results(("t1", c)))
    ref = handle_for(c)
    tokens = math.ceil(len(c) / 4)
    strands_text = (
        f"[Offloaded: 1 blocks, ~{tokens:,} tokens]\n"
        "Tool result was offloaded to external storage due to size.\n"
        "Use the preview below if it answers your question.\n"
        "If you need more detail, use retrieve_offloaded_content with a reference and:\n"
        "  - pattern: regex or keyword to find matching lines with context\n"
        "  - line_range: { start, end } to read a specific span of lines\n"
        "Retrieve full content (omit pattern/line_range) as a last resort.\n"
        "\n"
        f"{c[:4_000]}\n"
        "\n"
        "[Stored references:]\n"
        f"  {ref} (text, {len(c):,} chars)"
    )
    stub = content_of(out)
    assert source_text(stub) == strands_text == notice_text(c, tokens, ref, 1_000, with_tool=True)
    marked = f"\n\n--- preview head ---\n{c[:4_000]}\n--- preview tail ---\n\n"
    assert stub == (
        f"[offloaded tool output {ref}: {len(c.encode())} bytes, {len(c.splitlines())} lines]\n"
        "call: logs {}\n" + strands_text.replace(f"\n\n{c[:4_000]}\n\n", marked)
    )
    # The stub names the call it answers, never a fact key; the preview holds the fact it shows.
    assert out.kind == "handle" and out.facts == frozenset({"bad_pod"})
    assert parse_stub(stub) is not None and parse_stub(stub).handle == ref  # type: ignore[union-attr]
    assert ctx.store.get(ref) == c and s.is_live(ref)


def test_without_the_retrieval_tool_the_stub_is_the_sources_text_and_names_no_handle() -> None:
    c = rows(400)
    s = offloader(include_retrieval_tool=False, max_result_tokens=100, preview_tokens=5)
    stub = content_of(s.on_append(session("t1"), results(("t1", c))))
    tokens = METER.tokenizer.count(c)
    assert stub == notice_text(c, tokens, handle_for(c), 5, with_tool=False)
    assert "If you need more detail, use your available tools to access specific data.\n\n" in stub
    assert parse_stub(stub) is None
    assert s.retrieve(Context(), handle_for(c)) == ("error", "Unknown tool: retrieve_offloaded_content")


def test_preview_is_cut_by_characters_even_for_dense_text() -> None:
    c = "漢字🙂" * 3_000
    stub = content_of(offloader(max_result_tokens=100, preview_tokens=7).on_append(session("t1"), results(("t1", c))))
    assert f"\n--- preview head ---\n{c[:28]}\n--- preview tail ---\n" in stub


def test_each_result_is_judged_alone_and_ids_statuses_kept() -> None:
    small, big_one, other = "ok", rows(300, "a"), rows(300, "b") + " trc-zz91-mmp3"
    ctx = session("t1", "t2", "t3")
    out = append(offloader(max_result_tokens=200, preview_tokens=10), ctx,
                 results(("t1", small), ("t2", big_one), ("t3", other), status="error"))
    assert [b.tool_use_id for b in out.blocks] == ["t1", "t2", "t3"]  # type: ignore[union-attr]
    assert [b.status for b in out.blocks] == ["error"] * 3  # type: ignore[union-attr]
    assert content_of(out, 0) == small
    assert parse_stub(content_of(out, 1)).call == "logs {}"  # type: ignore[union-attr]
    assert parse_stub(content_of(out, 2)).call == "logs {}"  # type: ignore[union-attr]
    assert ctx.store.get(handle_for(other)) == other


@pytest.mark.parametrize("tool", [RETRIEVE_TOOL, RUNTIME_RETRIEVE_TOOL])
def test_retrieve_results_are_never_offloaded(tool: str) -> None:
    c = rows(500)
    out = offloader(max_result_tokens=50, preview_tokens=5).on_append(session("t1", name=tool), results(("t1", c)))
    assert content_of(out) == c


def test_a_tool_named_like_the_retrieve_tool_is_offloaded_when_the_tool_is_not_included() -> None:
    c = rows(500)
    s = offloader(max_result_tokens=50, preview_tokens=5, include_retrieval_tool=False)
    assert content_of(s.on_append(session("t1", name=RETRIEVE_TOOL), results(("t1", c)))) != c


def test_pinned_results_and_results_of_a_pinned_call_stay_whole() -> None:
    c = rows(500)
    s = offloader(max_result_tokens=50, preview_tokens=5)
    m = pin(results(("t1", c)))
    assert s.on_append(session("t1"), m) is m
    ctx = Context([Message.user("task", kind="task"), pin(call("t2"))])
    m2 = results(("t2", c))
    assert s.on_append(ctx, m2) is m2


def test_a_stub_appended_again_is_left_alone() -> None:
    s = offloader(max_result_tokens=50, preview_tokens=5)
    ctx = session("t1")
    stub_msg = append(s, ctx, results(("t1", rows(500))))
    ctx.messages.append(call("t2"))
    again = results(("t2", content_of(stub_msg)))
    assert s.on_append(ctx, again) is again


# Retrieve (the tool) -----------------------------------------------------------------------------------


def stored(content: str, **params: Any) -> tuple[StrandsContextOffloader, Context, str]:
    s = offloader(**({"max_result_tokens": 20, "preview_tokens": 2} | params))
    ctx = session("t1")
    append(s, ctx, results(("t1", content)))
    ref = handle_for(content)
    assert s.is_live(ref)
    return s, ctx, ref


def test_retrieve_whole_pattern_range_and_context() -> None:
    c = "\n".join(["start"] + [f"line {k}" for k in range(2, 30)] + ["ERROR disk full", "end"])
    s, ctx, ref = stored(c, max_result_tokens=50)
    assert s.retrieve(ctx, ref) == ("success", c)
    assert s.retrieve(ctx, ref, pattern="ERROR") == (
        "success",
        "[1 match for /ERROR/]\n\n  25| line 25\n  26| line 26\n  27| line 27\n  28| line 28\n  29| line 29\n"
        "> 30| ERROR disk full\n  31| end",
    )
    assert s.retrieve(ctx, ref, pattern="line 1[01]|start", context_lines=0) == (
        "success",
        "[3 matches for /line 1[01 |start/]\n\n>  1| start\n---\n> 10| line 10\n> 11| line 11",
    )
    assert s.retrieve(ctx, ref, line_range=(2, 3)) == ("success", "[Lines 2-3 of 31]\n\n  2| line 2\n  3| line 3")
    assert s.retrieve(ctx, ref, pattern="line 2", line_range=(1, 3), context_lines=0) == (
        "success",
        "[1 match for /line 2/ in lines 1-3]\n\n> 2| line 2",
    )
    assert s.retrieve(ctx, ref, context_lines=2) == ("success", "[Lines 1-2 of 31]\n\n  1| start\n  2| line 2")
    assert s.retrieve(ctx, ref, pattern="nothing") == (
        "success",
        "No matches found for pattern 'nothing' (searched 31 lines).",
    )


def test_retrieve_errors_read_as_the_tools_errors() -> None:
    s, ctx, ref = stored(rows(200))
    assert s.retrieve(ctx, "ref_0123456789ab") == ("error", "Error: reference not found: ref_0123456789ab")
    assert s.retrieve(ctx, ref, line_range=(0, 3)) == ("error", "Error: line_range.start (0) must be >= 1.")
    assert s.retrieve(ctx, ref, line_range=(5, 3)) == (
        "error",
        "Error: line_range.start (5) must be <= line_range.end (3).",
    )
    assert s.retrieve(ctx, ref, line_range=(201, 300)) == (
        "error",
        "Error: line_range.start (201) is beyond content length (200 lines).",
    )


def test_retrieve_output_is_cut_at_max_result_tokens_times_4_chars() -> None:
    s, ctx, ref = stored(rows(200), max_result_tokens=25)
    status, text = s.retrieve(ctx, ref, line_range=(1, 200))
    head, body = text.split("\n\n", 1)
    assert status == "success" and head == "[Lines 1-200 of 200]"
    assert body.endswith("\n\n[output truncated, narrow your range]")
    assert len(body) <= 100 + len("\n\n[output truncated, narrow your range]")


def test_mock_paging_reads_lines_from_the_offset_on() -> None:
    """tool_player._retrieve turns a fact key into the offset of its line; the page holds the value."""
    c = rows(60) + "\npod api-7f9c-q2kx crashed\n" + rows(60, "tail")
    s, ctx, ref = stored(c, max_result_tokens=100)
    at = c.find("api-7f9c-q2kx")
    offset = c.rfind("\n", 0, at) + 1  # as harness/sim/tool_player.py computes it
    status, page = s.retrieve(ctx, ref, offset, None)
    assert status == "success" and page.startswith("[Lines 61-121 of 121]\n\n   61| pod api-7f9c-q2kx crashed\n")
    assert page.endswith("[output truncated, narrow your range]")
    assert s.retrieve(ctx, ref, 0, None) == ("success", c)
    assert s.retrieve(ctx, ref, offset, 5) == ("success", "[Lines 61-61 of 121]\n\n  61| pod api-7f9c-q2kx crashed")
    assert s.retrieve(ctx, ref, len(c) + 1, None)[0] == "error"


def test_a_retrieved_result_comes_back_under_a_new_id_and_stays_whole() -> None:
    s, ctx, ref = stored(rows(300))
    ctx.messages.append(call("r1", name=RUNTIME_RETRIEVE_TOOL))
    _, whole = s.retrieve(ctx, ref)
    back = append(s, ctx, results(("r1", whole)))
    assert content_of(back) == rows(300)
    holders = [m for m in ctx.messages for b in m.blocks if isinstance(b, ToolResult) and b.content == rows(300)]
    assert [next(iter(m.results)) for m in holders] == ["r1"]


# Eviction --------------------------------------------------------------------------------------------


def test_eviction_after_evict_after_cycles_counting_retrieves_as_use() -> None:
    s = offloader(max_result_tokens=20, preview_tokens=2, evict_after_cycles=2)
    ctx = Context([Message.user("task", kind="task", meter=METER)])
    s.before_call(ctx)  # cycle 1: the call, then its tool result is stored at cycle 1
    ctx.messages.append(call("t1"))
    append(s, ctx, results(("t1", rows(100))))
    ref = handle_for(rows(100))
    window = list(ctx.messages)
    s.before_call(ctx)  # cycle 2
    s.before_call(ctx)  # cycle 3: 1 < 3 - 2 is false, still live
    assert s.is_live(ref) and s.retrieve(ctx, ref)[0] == "success"  # refreshed at cycle 3
    for _ in range(2):
        s.before_call(ctx)  # cycles 4, 5
    assert s.is_live(ref)
    s.before_call(ctx)  # cycle 6: 3 < 6 - 2
    assert not s.is_live(ref)
    assert s.retrieve(ctx, ref) == ("error", f"Error: reference not found: {ref}")
    assert list(ctx.messages) == window and all(a is b for a, b in zip(ctx.messages, window, strict=True))


def test_no_eviction_with_none() -> None:
    s, ctx, ref = stored(rows(100), evict_after_cycles=None)
    for _ in range(1_000):
        s.before_call(ctx)
    assert s.retrieve(ctx, ref) == ("success", rows(100))


def test_default_eviction_is_after_twenty_idle_cycles() -> None:
    s, ctx, ref = stored(rows(100))
    for _ in range(20):
        s.before_call(ctx)
    assert s.is_live(ref)
    s.before_call(ctx)
    assert not s.is_live(ref)


def test_difference_the_same_output_twice_shares_one_reference_and_age() -> None:
    """Deliberate difference: strands stores two references (e.g. mem_1_t1_0, mem_2_t2_0) with their
    own ages; the content handle names one payload, and storing it again refreshes its age."""
    c = rows(100)
    s = offloader(max_result_tokens=20, preview_tokens=2, evict_after_cycles=1)
    ctx = session("t1")
    first = append(s, ctx, results(("t1", c)))
    s.before_call(ctx)
    ctx.messages.append(call("t2"))
    second = append(s, ctx, results(("t2", c)))
    assert parse_stub(content_of(first)).handle == parse_stub(content_of(second)).handle  # type: ignore[union-attr]
    s.before_call(ctx)
    assert s.is_live(handle_for(c))  # strands would have evicted the first reference here


# reduce, apply ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("reactive", [False, True])
def test_reduce_always_raises_and_leaves_the_window(reactive: bool) -> None:
    s = offloader(max_result_tokens=20, preview_tokens=2)
    ctx = session("t1")
    append(s, ctx, results(("t1", "small")))
    before, tokens = list(ctx.messages), ctx.tokens
    overflow = ContextOverflow(ctx.tokens, 10) if reactive else None
    with pytest.raises(CannotReduce):
        s.reduce(ctx, overflow)
    s.apply(ctx)
    assert list(ctx.messages) == before and ctx.tokens == tokens and ctx.removed_count == 0


# Section-3 and common invariants on generated histories ------------------------------------------------


@st.composite
def replays(draw: st.DrawFn) -> tuple[StrandsContextOffloaderParams, list[Message]]:
    limit = draw(st.integers(20, 400))
    p = StrandsContextOffloaderParams(
        max_result_tokens=limit,
        preview_tokens=draw(st.integers(0, limit - 1)),
        evict_after_cycles=draw(st.one_of(st.none(), st.integers(1, 4))),
        include_retrieval_tool=draw(st.booleans()),
        token_estimate=draw(st.sampled_from(("exact", "heuristic"))),
    )
    return p, draw(histories(max_turns=6))


@given(replays())
def test_replayed_history_keeps_pairs_pins_open_calls_and_hides_offloaded_originals(
    case: tuple[StrandsContextOffloaderParams, list[Message]],
) -> None:
    """Appending a history message by message (a model call before each assistant message): only
    result contents change, each into its stub; pairs, pins and open calls are untouched; an offloaded
    original never appears whole under its id; the store holds it; reduce raises."""
    p, history = case
    s = StrandsContextOffloader(p)
    ctx = Context()
    for m in history:
        if m.role == "assistant":
            s.before_call(ctx)
        append(s, ctx, m)
    window = list(ctx.messages)
    assert len(window) == len(history) and ctx.removed_count == 0
    assert ctx.tokens == sum(m.tokens for m in window)
    assert well_formed(window)
    open_ids = {u.id for u in open_uses(history)}
    for before, after in zip(history, window, strict=True):
        if before.role == "assistant" or before.pinned or not before.has_result:
            assert after is before  # an open call, any call, a pinned message: never altered
            continue
        assert after.role == before.role and after.pinned == before.pinned
        for b, a in zip(before.blocks, after.blocks, strict=True):
            if not isinstance(b, ToolResult):
                assert a == b
                continue
            assert isinstance(a, ToolResult) and (a.tool_use_id, a.status) == (b.tool_use_id, b.status)
            assert a.tool_use_id not in open_ids
            if a.content != b.content:
                assert a.content == stub_for(b.content, call_text(history, b.tool_use_id), before.meter, p)
                assert after.kind == "handle"
                assert ctx.store.get(handle_for(b.content)) == b.content
                shown_whole = [
                    m for m in window for x in m.blocks
                    if isinstance(x, ToolResult) and x.tool_use_id == b.tool_use_id and x.content == b.content
                ]
                assert not shown_whole
    with pytest.raises(CannotReduce):
        s.reduce(ctx)
    assert list(ctx.messages) == window


def test_a_default_stub_of_ascii_output_is_below_the_threshold() -> None:
    """After an offload the result's tokens are below max_result_tokens for ordinary output..."""
    c = rows(3_000)
    out = offloader().on_append(session("t1"), results(("t1", c)))
    assert default_meter().tokenizer.count(content_of(out)) < 2_500 < METER.tokenizer.count(c)


def test_known_non_invariant_a_dense_preview_can_exceed_the_threshold() -> None:
    """...but not always: the source cuts the preview at preview_tokens * 4 characters, so 4,000
    characters of CJK or emoji text hold more than 2,500 tokens. Documented, not asserted away."""
    c = "漢字🙂" * 3_000
    out = offloader().on_append(session("t1"), results(("t1", c)))
    assert METER.tokenizer.count(content_of(out)) > 2_500



def test_a_second_offloader_leaves_the_first_ones_notice_alone() -> None:
    """Found by the property tests (G3 on a pipeline of two offloader stages without the retrieval tool):
    the source's notice is no `parse_stub` stub, and a second stage offloaded the notice itself, storing the
    notice and losing the reference to the original. An offloaded result is now recognised whatever its form."""
    params = {"max_result_tokens": 20, "preview_tokens": 0, "evict_after_cycles": None,
              "include_retrieval_tool": False, "token_estimate": "exact"}
    task = Message.build("user", [Text("Fix the failing test in module alpha.")], kind="task", meter=METER)
    call = Message.build("assistant", [ToolUse("n1", "read_file", {"path": "src/app.py"})], meter=METER)
    result = Message.build("user", [ToolResult("n1", "success", "line of a long file\n" * 40)], meter=METER)
    texts = []
    for strategy in (create(NAME, **params), create("pipeline", stages=[{"name": NAME, "params": params}] * 2)):
        ctx = Context(window_tokens=10_000)
        for message in (task, call):
            ctx.messages.append(strategy.on_append(ctx, message))
        block = strategy.on_append(ctx, result).blocks[0]
        assert isinstance(block, ToolResult)
        texts.append(block.content)
    assert is_offloaded(texts[0]) and parse_stub(texts[0]) is None
    assert texts[1] == texts[0]
