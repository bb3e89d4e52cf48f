"""G1-G8 of strategies.md 4 for every registered strategy, every hook and generated params."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.messages import ToolResult, nonsummary, tokens_of
from strategies import CannotReduce, names
from strategies.drop_all import kept
from strategies.observation_masking import PLACEHOLDER_RE
from strategies.split import assistant_indices, is_pinned
from strategies.summarize import turns_since_summary
from tests.fakes import FakeSummarizer
from tests.oracles import BUILTIN_STRATEGIES
from tests.properties.histories import (
    HOOKS,
    Case,
    Rewrite,
    Run,
    cases,
    is_new_summary,
    is_rewrite,
    is_subsequence,
    norm,
    norms,
    rewrites_of,
    run_hook,
    setup,
    well_formed,
)

hooks = st.sampled_from(HOOKS)


def previews(run: Run) -> tuple[Rewrite, ...]:
    return tuple(sorted(rewrites_of(run.case.name, run.case.params)))


def test_every_registered_strategy_has_a_generator() -> None:
    """1.3: names() lists the ten built-in strategies, all covered by the generators below."""
    assert names() == BUILTIN_STRATEGIES


@given(cases(), hooks)
def test_hooks_keep_a_well_formed_window_well_formed(case: Case, hook: str) -> None:
    """G1: W(B) => W(A): no orphan toolResult, no toolUse without its results in the next message."""
    run = run_hook(case, hook)
    assert well_formed(run.before)
    assert well_formed(run.after)


@given(cases(), hooks)
def test_pinned_messages_survive_unchanged_and_in_order(case: Case, hook: str) -> None:
    """G2/R4: every message flagged in B is in A, unchanged and in the same relative order; a
    fully flagged prefix B[:p] is A[:p]."""
    run = run_hook(case, hook)
    flagged = [m for m in run.before if m.pinned]
    it = iter(run.after)
    assert all(any(norm(a) == norm(f) and a.pinned for a in it) for f in flagged)
    p = next((i for i, m in enumerate(run.before) if not m.pinned), len(run.before))
    assert norms(run.after[:p]) == norms(run.before[:p])


@given(cases(), hooks)
def test_window_after_a_hook_is_a_subsequence_of_the_window_before(case: Case, hook: str) -> None:
    """G3: A without its summaries, rewrites undone, is a subsequence of B."""
    run = run_hook(case, hook)
    rest = [m for m in run.after if m.kind != "summary"]
    assert is_subsequence(rest, run.before, previews(run))


@given(cases(), hooks)
def test_hooks_add_no_content_but_summaries_and_allowed_rewrites(case: Case, hook: str) -> None:
    """G4/R6: every message of A is a message of B, a new summary, or an allowed rewrite of a
    message of B (truncation marker, placeholder or stub; ids, statuses, other blocks kept)."""
    run = run_hook(case, hook)
    before = norms(run.before)
    pv = previews(run)
    for a in run.after:
        assert norm(a) in before or is_new_summary(a) or any(is_rewrite(a, b, pv) for b in run.before), a


@given(cases(), hooks)
def test_token_total_and_removed_count_stay_consistent(case: Case, hook: str) -> None:
    """G5/R5: ctx.tokens == tok(A) and delta removed_count == nonsummary(B) - nonsummary(A) >= 0."""
    run = run_hook(case, hook)
    assert run.ctx.tokens == tokens_of(run.ctx.messages)
    assert run.delta_removed == nonsummary(run.before) - nonsummary(run.after) >= 0


@given(cases(), st.booleans())
def test_reduce_lowers_tokens_or_raises_with_window_unchanged(case: Case, reactive: bool) -> None:
    """G6/R2: reduce gives tok(A) < tok(B), or raises CannotReduce with A == B (pins aside) and
    no change to removed_count."""
    run = run_hook(case, "reduce_reactive" if reactive else "reduce")
    if run.error is None:
        assert tokens_of(run.after) < tokens_of(run.before)
    else:
        assert norms(run.after) == norms(run.before)
        assert run.delta_removed == 0
        assert run.ctx.tokens == tokens_of(run.before)


@given(cases(), st.booleans())
def test_reactive_cannot_reduce_carries_a_cause(case: Case, reactive: bool) -> None:
    """1.3: CannotReduce's __cause__ is the underlying error if any, else the overflow; so a
    reactive failure always has a cause, and a summarizer failure is chained."""
    run = run_hook(case, "reduce_reactive" if reactive else "reduce")
    if run.error is not None and reactive:
        assert run.error.__cause__ is not None
    assert run.error is None or str(run.error)


@given(cases(only=[n for n in names() if n not in ("summarize", "condense", "hybrid")]) | cases(max_turns=5))
def test_repeated_reduce_reaches_cannot_reduce(case: Case) -> None:
    """G6: repeated reduce calls lower tokens every time and reach CannotReduce within tok(B) calls."""
    strategy, ctx, _ = setup(case)
    budget = ctx.tokens
    for _ in range(budget + 1):
        tokens = ctx.tokens
        try:
            strategy.reduce(ctx)
        except CannotReduce:
            assert ctx.tokens == tokens
            return
        assert ctx.tokens < tokens
        assert well_formed(ctx.messages)
    pytest.fail(f"reduce succeeded more than tok(B) = {budget} times")


@given(cases(), st.sampled_from(("fail", "empty", "huge", "ok")))
def test_runtime_hooks_never_raise_even_if_the_summarizer_fails(case: Case, mode: str) -> None:
    """G7/R3: on_append, apply and before_call never raise, whatever the summarizer does; a turn
    run in the runtime's order keeps G1 and G5."""
    strategy, ctx, _ = setup(case, FakeSummarizer(mode=mode))  # type: ignore[arg-type]
    removed = ctx.removed_count
    strategy.before_call(ctx)
    for m in case.appended:
        ctx.messages.append(strategy.on_append(ctx, m))
    strategy.apply(ctx)
    strategy.before_call(ctx)
    assert well_formed(ctx.messages)
    assert ctx.tokens == tokens_of(ctx.messages)
    assert ctx.removed_count >= removed


@given(cases(), st.sampled_from(("apply", "append")))
def test_apply_is_idempotent(case: Case, first: str) -> None:
    """G8: running apply twice gives the same window, tokens and removed_count as running it once."""
    strategy, ctx, _ = setup(case)
    if first == "append":
        for m in case.appended:
            ctx.messages.append(strategy.on_append(ctx, m))
    strategy.apply(ctx)
    once = (list(ctx.messages), ctx.tokens, ctx.removed_count)
    strategy.apply(ctx)
    assert (list(ctx.messages), ctx.tokens, ctx.removed_count) == once


@given(cases(), hooks)
def test_hooks_are_deterministic(case: Case, hook: str) -> None:
    """G8/R8: the same input, params and fake always give the same output."""
    one, two = run_hook(case, hook), run_hook(case, hook)
    assert one.after == two.after
    assert [m.pinned for m in one.after] == [m.pinned for m in two.after]
    assert (one.delta_removed, one.ctx.tokens) == (two.delta_removed, two.ctx.tokens)
    assert len(one.ctx.store) == len(two.ctx.store)
    assert (one.error is None) == (two.error is None)
    assert str(one.error) == str(two.error)
    assert [norms(c) for c in one.fake.calls] == [norms(c) for c in two.fake.calls]


def nothing_to_do(case: Case, hook: str) -> bool:
    """G8's "nothing to do" cases, per strategy."""
    name, p, window = case.name, case.params, case.window
    if name == "unbounded":
        return hook != "reduce"
    if name in ("sliding_window", "truncate_then_slide"):
        return hook == "apply" and len(window) <= p["window_size"]
    if name == "summarize":
        trig = p["trigger_turns"]
        return hook == "apply" and (trig is None or turns_since_summary(window) < trig + p["keep_turns"])
    if name == "condense":
        limit = p["max_tokens"] or 10**12
        window_tokens = max(1, int(tokens_of(window) * case.window_factor))
        return (
            hook == "before_call"
            and len(window) <= p["max_size"]
            and tokens_of(window) <= min(limit, window_tokens)
        )
    if name == "observation_masking":
        turns = assistant_indices(window)
        m_keep = p["keep_turns"]
        if hook != "apply":
            return False
        if len(turns) <= m_keep:
            return True
        cut = turns[-m_keep] if m_keep else len(window)
        return not any(
            window[j].role == "user"
            and window[j].has_result
            and window[j].kind != "task"
            and not is_pinned(window, j)
            and any(isinstance(b, ToolResult) and not PLACEHOLDER_RE.match(b.content) for b in window[j].blocks)
            for j in range(cut)
        )
    if name == "offload_contracts":
        limit = p["offload_threshold_bytes"]
        return hook == "append" and all(
            len(b.content.encode()) <= limit for m in case.appended for b in m.blocks if isinstance(b, ToolResult)
        )
    if name == "drop_all":
        return hook == "apply" and len(kept(window)) == len(window)
    if name in ("adk_compaction", "claude_code_compact", "clear_tool_uses", "langchain_clear_tool_uses"):
        if hook in ("apply", "append"):  # they act before a call (and on overflow) only
            return True
        if name == "claude_code_compact":  # below its threshold (setup() sends no prompt overhead)
            return hook == "before_call" and (case_window_tokens(case) - p["summary_reserve_tokens"]
                                              - p["buffer_tokens"] > tokens_of(window))
        return False
    if name == "strands_context_offloader":
        return hook in ("apply", "before_call")  # it offloads as results arrive; before_call only ages references
    if name in ("openai_trimming", "openai_summarizing", "langchain_summarization"):
        return hook in ("apply", "append")  # they act before a call only
    return False


def case_window_tokens(case: Case) -> int:
    """The model window `setup` gives the case's context."""
    return max(1, int(tokens_of(case.window) * case.window_factor))


@given(cases(), st.sampled_from(("append", "apply", "before_call")))
def test_hooks_with_nothing_to_do_change_nothing(case: Case, hook: str) -> None:
    """G8: with nothing to do, a hook leaves messages, tokens and removed_count unchanged."""
    run = run_hook(case, hook)
    if nothing_to_do(case, hook):
        assert run.after == run.before
        assert [m.pinned for m in run.after] == [m.pinned for m in run.before]
        assert run.ctx.tokens == tokens_of(run.before)
        assert run.delta_removed == 0
        assert run.fake.calls == []
