"""Per-strategy properties of docs/strategies.md 4 ("Per strategy")."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import replace

from hypothesis import example, given
from hypothesis import strategies as st

from harness.core.context import Context
from harness.core.messages import Message, Text, ToolResult, ToolUse, block_text, nonsummary, pin, rebuild, tokens_of
from harness.core.stubs import parse_stub, render_stub
from strategies import CannotReduce, create
from strategies.observation_masking import PLACEHOLDER_RE, placeholder
from strategies.split import apply_pin_first, find_tool_pair_trim_point, find_valid_trim_point, is_pinned
from strategies.testing import (
    HOOKS,
    RATIOS,
    Case,
    FakeSummarizer,
    cases,
    content,
    histories,
    is_new_summary,
    norm,
    norms,
    protected,
    run_hook,
    setup,
    well_formed,
)
from strategies.truncate_then_slide import truncatable, truncated
from tests.oracles import clipped_text

SLIDERS = ["sliding_window", "truncate_then_slide"]


def pinned_first(window: Sequence[Message], n: int | None) -> list[Message]:
    """B' = B after apply_pin_first(pin_first), which the hook may have done."""
    out = list(window)
    apply_pin_first(out, n or 0)
    return out


def trimmed(window: Sequence[Message], t: int) -> list[Message]:
    """The protected messages of window[:t] (judged on the whole window), then window[t:]."""
    return [m for i, m in enumerate(window[:t]) if is_pinned(window, i)] + list(window[t:])


def trim_matches(after: Sequence[Message], window: Sequence[Message]) -> bool:
    target = norms(after)
    return any(norms(trimmed(window, t)) == target for t in range(len(window) + 1))


def with_params(case: Case, **params: object) -> Case:
    return replace(case, params={**case.params, **params})


# sliding_window / truncate_then_slide --------------------------------------------------------------


def sliding_runs(case: Case, hook: str) -> bool:
    """Hooks on which the slider only slides (truncation is reactive only)."""
    return not (case.name == "truncate_then_slide" and hook == "reduce_reactive")


@given(cases(only=SLIDERS), st.sampled_from(("apply", "before_call", "reduce", "reduce_reactive")))
def test_sliding_window_keeps_protected_messages_plus_a_suffix(case: Case, hook: str) -> None:
    """G3/3.2: A is the protected messages of B[:t] then B[t:] (a plain suffix without pins); no
    content changes."""
    if not sliding_runs(case, hook):
        hook = "reduce"
    run = run_hook(case, hook)
    b1 = pinned_first(run.before, case.params["pin_first"])
    assert trim_matches(run.after, b1)
    if not any(m.pinned for m in b1):
        assert norms(run.after) == norms(run.before)[len(run.before) - len(run.after) :]


@given(cases(only=SLIDERS), st.sampled_from(("apply", "before_call", "reduce", "reduce_reactive")))
def test_sliding_window_bound_after_sliding(case: Case, hook: str) -> None:
    """3.2 window bound (checked against strands): if len(B) > w and A != B, then
    len(A) <= w + #protected(A)."""
    if not sliding_runs(case, hook):
        hook = "reduce"
    run = run_hook(case, hook)
    w = case.params["window_size"]
    if len(run.before) > w and norms(run.after) != norms(run.before):
        assert len(run.after) <= w + sum(is_pinned(run.after, i) for i in range(len(run.after)))


@given(cases(only=SLIDERS))
def test_sliding_window_unchanged_means_no_trim_point(case: Case) -> None:
    """3.2: if len(B) > w and apply leaves A == B, both trim-point helpers give None from len-w,
    or the whole trim range is protected."""
    run = run_hook(case, "apply")
    w = case.params["window_size"]
    b1 = pinned_first(run.before, case.params["pin_first"])
    n = len(b1)
    if n > w and norms(run.after) == norms(run.before):
        if w == 0:
            assert all(is_pinned(b1, i) for i in range(n))
            return
        t = find_valid_trim_point(b1, n - w)
        if t is None:
            t = find_tool_pair_trim_point(b1, n - w)
        assert t is None or all(is_pinned(b1, i) for i in range(t))


def safe_start(window: Sequence[Message], i: int) -> bool:
    """A user message with no result, or a use message followed by a user result message."""
    m = window[i]
    return (m.role == "user" and not m.has_result) or (
        m.has_use and i + 1 < len(window) and window[i + 1].role == "user" and window[i + 1].has_result
    )


@given(cases(only=SLIDERS), st.sampled_from(("apply", "reduce", "reduce_reactive")))
def test_sliding_window_kept_suffix_starts_safely(case: Case, hook: str) -> None:
    """3.2/4: after a slide (w > 0) the kept suffix B'[t:] starts with a user message with no
    result, or a use message followed by a user result message; when that first suffix message
    is unprotected it is the first unprotected message of A.

    The spec words this as "the first unprotected message of A"; that is false when B'[t] is
    itself protected: w=3, B = [task, assistant(use t1)*, user(result t1)*, assistant text],
    apply: t = 1 (tool-pair fallback), A = [use*, result*, assistant text], whose first
    unprotected message is the assistant text. So only the suffix start is asserted."""
    if not sliding_runs(case, hook):
        hook = "reduce"
    run = run_hook(case, hook)
    a, w = run.after, case.params["window_size"]
    if w == 0 or norms(a) == norms(run.before):
        return
    b1 = pinned_first(run.before, case.params["pin_first"])
    starts = [t for t in range(1, len(b1)) if norms(trimmed(b1, t)) == norms(a)]
    assert starts
    safe = [t for t in starts if safe_start(b1, t)]
    assert safe
    t = safe[-1]
    if not is_pinned(b1, t):
        first = next(i for i in range(len(a)) if not is_pinned(a, i))
        assert first == len(a) - (len(b1) - t)
        assert safe_start(a, first)


@given(cases(only=SLIDERS), st.sampled_from(("apply", "reduce")))
def test_sliding_window_size_zero_keeps_exactly_the_protected(case: Case, hook: str) -> None:
    """3.2 step 1: with w == 0, A is exactly the protected messages of B."""
    case = with_params(case, window_size=0)
    run = run_hook(case, hook)
    b1 = pinned_first(run.before, case.params["pin_first"])
    assert norms(run.after) == norms(protected(b1))


def truncate_at(window: Sequence[Message]) -> tuple[int, list[Message]] | None:
    """3.3 step 2: truncate the first unprotected result message, or None if nothing changes."""
    j = next((i for i, m in enumerate(window) if m.has_result and not is_pinned(window, i)), None)
    if j is None:
        return None
    blocks = [
        ToolResult(b.tool_use_id, b.status, truncated(b.content))
        if isinstance(b, ToolResult) and truncatable(b.content)
        else b
        for b in window[j].blocks
    ]
    if list(window[j].blocks) == blocks:
        return None
    out = list(window)
    out[j] = rebuild(window[j], blocks)
    return j, out


def marker_form(c: str) -> str:
    n = len(c) - 400
    return c[:200] + f"...\n\n... [truncated: {n} chars removed] ...\n\n..." + c[-200:]


@given(cases(only=["truncate_then_slide"]))
def test_reactive_reduce_truncates_only_or_trims_or_raises(case: Case) -> None:
    """3.3/4: a reactive reduce ends in exactly one of truncate only, trim (after at most one
    truncation) or CannotReduce."""
    run = run_hook(case, "reduce_reactive")
    b1 = pinned_first(run.before, case.params["pin_first"])
    cut = truncate_at(b1)
    if run.error is not None:
        assert norms(run.after) == norms(run.before)
    elif len(run.after) == len(run.before):
        assert cut is not None
        j, b2 = cut
        assert norms(run.after) == norms(b2)
        assert sum(x != y for x, y in zip(norms(run.after), norms(run.before), strict=True)) == 1
        for x, y in zip(run.after[j].blocks, run.before[j].blocks, strict=True):
            if isinstance(y, ToolResult):
                assert isinstance(x, ToolResult)
                assert (x.tool_use_id, x.status) == (y.tool_use_id, y.status)
                long_unmarked = len(y.content) > 400 and "... [truncated:" not in y.content
                assert x.content == (marker_form(y.content) if long_unmarked else y.content)
            else:
                assert x == y
    else:
        assert len(run.after) < len(run.before)
        assert trim_matches(run.after, b1) or (cut is not None and trim_matches(run.after, cut[1]))


@given(cases(only=["truncate_then_slide"]), st.sampled_from(("apply", "before_call", "reduce")))
def test_truncate_then_slide_never_truncates_outside_reactive_reduce(case: Case, hook: str) -> None:
    """3.3: apply, before_call (and a non-reactive reduce) never truncate: A holds only B's messages."""
    run = run_hook(case, hook)
    before = norms(run.before)
    assert all(norm(m) in before for m in run.after)


# summarize -----------------------------------------------------------------------------------------


def clamp(r: float) -> float:
    return max(0.1, min(0.8, r))


def summary_split(after: Sequence[Message], b1: Sequence[Message]) -> int | None:
    """The k with A == P + [S] + B'[k:], P the protected messages of B'[:k], S a new summary."""
    target = norms(after)
    for k in range(len(b1) + 1):
        p = [m for i, m in enumerate(b1[:k]) if is_pinned(b1, i)]
        if (
            len(after) == len(p) + 1 + len(b1) - k
            and is_new_summary(after[len(p)])
            and target == [*norms(p), norm(after[len(p)]), *norms(b1[k:])]
        ):
            return k
    return None


def _open_pinned_call_case() -> Case:
    """Found by random exploration: the turn trigger with keep_turns = 0 fires while the window ends in a
    (pinned) call whose result is not appended yet; G1 keeps that open call after the summary, so k = n-1."""
    params = {
        "summary_ratio": 0.0,
        "preserve_recent_messages": 0,
        "pin_first": 0,
        "trigger_turns": 1,
        "keep_turns": 0,
        "proactive": False,
        "threshold": 0.2,
    }
    text = "Task: fix the failing test in module alpha.\nReport the root cause when done."
    task = Message.build("user", [Text(text)], kind="task")
    call = pin(Message.build("assistant", [ToolUse("t1", "read_file", {"path": "src/app.py"})], kind="action"))
    result = Message.build("user", [ToolResult("t1", "success", "a\nb\nc")])
    return Case(name="summarize", params=params, window=[task, call], mode="ok", window_factor=0.25, appended=[result])


@given(cases(only=["summarize"]), st.sampled_from(("apply", "before_call", "reduce", "reduce_reactive")))
@example(case=_open_pinned_call_case(), hook="apply")
def test_summarize_success_is_protected_summary_and_suffix(case: Case, hook: str) -> None:
    """3.4/4: on success A = P + [S] + B[k:], k >= k0 = min(max(1, int(n*r)), n-q) (reduce) or
    the M-th last turn (apply), B[k] has no result or k == n, Δr = nonsummary(X), and X is what
    the summarizer received. Every failure leaves A == B and Δr == 0."""
    run = run_hook(case, hook)
    p = case.params
    b1 = pinned_first(run.before, p["pin_first"])
    if norms(run.after) == norms(run.before):
        assert run.delta_removed == 0
        return
    k = summary_split(run.after, b1)
    assert k is not None
    n = len(b1)
    assert k == n or not b1[k].has_result
    if hook.startswith("reduce") or hook == "before_call":
        assert k >= min(max(1, math.floor(n * clamp(p["summary_ratio"]))), n - p["preserve_recent_messages"])
    else:
        turns = [i for i, m in enumerate(b1) if m.role == "assistant"]
        expected = turns[-p["keep_turns"]] if p["keep_turns"] else n
        if expected == n and n and b1[-1].has_use:
            expected = n - 1  # G1: a call still open at the end stays after the summary (M = 0 only)
        assert k >= expected
    x = [m for i, m in enumerate(b1[:k]) if not is_pinned(b1, i)]
    assert run.delta_removed == nonsummary(x)
    assert norms(run.fake.calls[-1]) == norms(x)
    assert run.after[len(run.after) - (n - k) - 1].text == f"SUMMARY {len(run.fake.calls)}"


@given(cases(only=["summarize", "hybrid"]), st.sampled_from(("fail", "empty", "huge")))
def test_summarizer_failures_leave_window_and_counter_unchanged(case: Case, mode: str) -> None:
    """3.4/4: a summarizer exception, an empty reply or a summary that does not shrink leaves
    A == B and Δr == 0 (the strands 1.62 counter bug is not copied)."""
    case = replace(case, mode=mode)
    for hook in ("apply", "before_call", "reduce", "reduce_reactive"):
        run = run_hook(case, hook)
        if case.name == "hybrid" and hook in ("apply", "reduce", "reduce_reactive"):
            continue  # hybrid's masking stage may rewrite without the summarizer
        assert norms(run.after) == norms(run.before)
        assert run.delta_removed == 0


@given(RATIOS, st.sampled_from(("summarize", "hybrid")))
def test_summary_ratio_is_clamped(r: float, name: str) -> None:
    """3.4: summary_ratio is clamped to [0.1, 0.8] (summary_ratio=5 gives 0.8)."""
    s = create(name, summary_ratio=r)
    assert s.params.summary_ratio == clamp(r)  # type: ignore[attr-defined]


@given(cases(only=["summarize"], max_turns=10), st.integers(1, 4), st.integers(0, 4))
def test_turn_trigger_leaves_fewer_than_n_plus_m_turns(case: Case, n_turns: int, m_keep: int) -> None:
    """3.4/4: after apply with the trigger on and a successful summary, T < N + M, not counting a
    call still open at the end of the window: it stays after the summary (G1 wins over 3.4's bound;
    see the docstring of `Summarize` and the unit test of the trailing open call), which only matters
    when M = 0."""
    case = replace(with_params(case, trigger_turns=n_turns, keep_turns=m_keep), mode="ok")
    run = run_hook(case, "apply")
    assistants_after_last_summary = 0
    for m in reversed(run.after):
        if m.kind == "summary":
            break
        assistants_after_last_summary += m.role == "assistant"
    open_call_at_end = bool(run.before) and run.before[-1].role == "assistant" and run.before[-1].has_use
    if run.fake.calls and norms(run.after) != norms(run.before):
        assert assistants_after_last_summary < n_turns + m_keep + (open_call_at_end and m_keep == 0)
        if open_call_at_end:
            assert run.after[-1] == run.before[-1]


@given(cases(only=["summarize"]), st.sampled_from(("apply", "before_call", "reduce", "reduce_reactive")))
def test_summarizer_never_receives_a_protected_message(case: Case, hook: str) -> None:
    """3.4/R4: the summarizer only receives unprotected messages of the window."""
    run = run_hook(case, hook)
    b1 = pinned_first(run.before, case.params["pin_first"])
    allowed = {id(run.before[i]) for i in range(len(b1)) if not is_pinned(b1, i)}
    for call in run.fake.calls:
        assert all(id(m) in allowed for m in call)


# condense ------------------------------------------------------------------------------------------


def cut_point(window: Sequence[Message], i: int) -> bool:
    """1.5: no call open at i (uses(L[:i]) ⊆ results(L[:i]))."""
    uses = {u for m in window[:i] for u in m.uses}
    results = {r for m in window[:i] for r in m.results}
    return uses <= results


def normal_shapes(after: Sequence[Message], b: Sequence[Message]) -> list[tuple[int, int]]:
    """Every (s, e) with A == B[:s] + P + [S] + B[e:], P the protected messages of B[s:e]."""
    target = norms(after)
    n = len(b)
    out = []
    for s in range(n + 1):
        if norms(after[:s]) != norms(b[:s]):
            break
        for e in range(s + 1, n + 1):
            p = [b[i] for i in range(s, e) if is_pinned(b, i)]
            if (
                len(after) == s + len(p) + 1 + n - e
                and is_new_summary(after[s + len(p)])
                and target == [*norms(b[:s]), *norms(p), norm(after[s + len(p)]), *norms(b[e:])]
            ):
                out.append((s, e))
    return out


@given(cases(only=["condense"], max_turns=12), st.sampled_from(("before_call", "reduce", "reduce_reactive", "apply")))
def test_condense_success_is_a_normal_condensation_or_a_hard_reset(case: Case, hook: str) -> None:
    """3.5/4: a normal success is B[:s] + P + [S] + B[e:] with s >= keep_first, s and e cut
    points, len(X) >= minimum_progress * len(B), S at index s + len(P); a hard reset is
    protected(B) + [S]; at most 1 + hard_reset_retries summarizer calls per hook."""
    run = run_hook(case, hook)
    p = case.params
    b = run.before
    assert len(run.fake.calls) <= 1 + p["hard_reset_retries"]
    if hook == "apply":
        assert run.after == b and not run.fake.calls
        return
    if norms(run.after) == norms(b):
        assert run.delta_removed == 0
        return
    hard = norms(protected(b)) == norms(run.after[:-1]) and is_new_summary(run.after[-1])
    normal_ok = False
    for s, e in normal_shapes(run.after, b):
        x = [b[i] for i in range(s, e) if not is_pinned(b, i)]
        normal_ok = normal_ok or (
            s >= p["keep_first"]
            and cut_point(b, s)
            and cut_point(b, e)
            and len(x) >= p["minimum_progress"] * len(b)
            and run.delta_removed == nonsummary(x)
            and norms(run.fake.calls[-1]) == norms(x)
        )
    assert normal_ok or hard
    if hard:
        assert run.delta_removed == nonsummary([m for i, m in enumerate(b) if not is_pinned(b, i)])


@given(cases(only=["condense"], max_turns=16) | cases(only=["condense"], max_turns=16, pinned=False))
def test_condense_events_only_trigger(case: Case) -> None:
    """3.5/4: a soft (EVENTS-only) trigger makes at most one summarizer call and either leaves
    A == B or condenses normally; with s == keep_first and no pins, len(A) <= max_size // 2."""
    run = run_hook(replace(case, window_factor=3.0), "before_call")
    p = case.params
    b = run.before
    tokens_ok = p["max_tokens"] is None or tokens_of(b) <= p["max_tokens"]
    if not (len(b) > p["max_size"] and tokens_ok):
        return
    assert len(run.fake.calls) <= 1
    if norms(run.after) == norms(b):
        assert run.delta_removed == 0
        return
    shapes = normal_shapes(run.after, b)
    assert shapes
    s, _ = shapes[-1]
    if s == p["keep_first"] and not protected(b):
        assert len(run.after) <= p["max_size"] // 2


def clipped(m: Message, cap: int) -> tuple[object, ...]:
    blocks = tuple(
        Text(clipped_text(b.text, cap))
        if isinstance(b, Text)
        else ToolResult(b.tool_use_id, b.status, clipped_text(b.content, cap))
        if isinstance(b, ToolResult)
        else b
        for b in m.blocks
    )
    return (m.role, blocks)


def _unanswered_call_only_case() -> Case:
    """Found by random exploration: X (every unprotected message) is one assistant message holding only
    a ToolUse, so it has no Text or ToolResult string: L0 = 0 and there is nothing to clip."""
    params = {
        "max_size": 8,
        "keep_first": 0,
        "max_tokens": None,
        "minimum_progress": 0.05,
        "hard_reset_retries": 1,
        "hard_reset_scaling": 0.3,
    }
    text = "Task: fix the failing test in module alpha.\nReport the root cause when done."
    task = Message.build("user", [Text(text)], kind="task", pinned=True)
    call = Message.build("assistant", [ToolUse("t1", "read_file", {"path": "src/app.py"})], kind="action")
    result = Message.build("user", [ToolResult("t1", "success", "a\nb\nc")])
    return Case(name="condense", params=params, window=[task, call], mode="fail", window_factor=0.25, appended=[result])


@given(cases(only=["condense"], max_turns=10), st.sampled_from(("fail", "empty", "huge")), st.booleans())
@example(case=_unanswered_call_only_case(), mode="fail", reactive=False)
def test_condense_hard_reset_retries_with_shrinking_caps(case: Case, mode: str, reactive: bool) -> None:
    """3.5: when nothing succeeds, reduce makes at most hard_reset_retries hard-reset calls (after
    at most one normal call): the first uncapped with every unprotected message, then copies
    clipped to caps int(L0*s), int(that*s), ...; then CannotReduce with A == B."""
    run = run_hook(replace(case, mode=mode), "reduce_reactive" if reactive else "reduce")
    p = case.params
    b = run.before
    assert run.error is not None
    assert norms(run.after) == norms(b) and run.delta_removed == 0
    x = [m for i, m in enumerate(b) if not is_pinned(b, i)]
    retries = p["hard_reset_retries"]
    if not x:
        assert len(run.fake.calls) <= 1
        return
    assert len(run.fake.calls) in (retries, retries + 1)
    hard = run.fake.calls[-retries:]
    assert norms(hard[0]) == norms(x)
    # The oracle, not condense, was wrong here: X may hold no Text or ToolResult at all (only unanswered
    # calls), and then L0 is 0 (3.5: the longest such string, of which there is none), as in condense.
    longest = max(
        (
            (len(bl.text) if isinstance(bl, Text) else len(bl.content))
            for m in x
            for bl in m.blocks
            if isinstance(bl, Text | ToolResult)
        ),
        default=0,
    )
    cap = longest
    caps = []
    for sent in hard[1:]:
        cap = int(cap * p["hard_reset_scaling"])
        caps.append(cap)
        assert [(m.role, m.blocks) for m in sent] == [clipped(m, cap) for m in x]
    assert caps == sorted(caps, reverse=True)


# observation_masking -------------------------------------------------------------------------------


@given(cases(only=["observation_masking"], max_turns=10), st.sampled_from(("apply", "reduce", "reduce_reactive")))
def test_masking_keeps_length_and_masks_everything_before_the_cut(case: Case, hook: str) -> None:
    """3.6/4: len(A) == len(B); A[j] == B[j] for j >= cut; before the cut every unprotected
    non-task result message holds placeholders (kind placeholder), ids, statuses and other
    blocks kept; a second apply is a no-op."""
    run = run_hook(case, hook)
    b, a = run.before, run.after
    assert len(a) == len(b)
    if run.error is not None:
        assert norms(a) == norms(b)
        return
    m_keep = case.params["keep_turns"]
    turns = [i for i, m in enumerate(b) if m.role == "assistant"]
    if len(turns) <= m_keep:
        assert norms(a) == norms(b)
        return
    cut = turns[-m_keep] if m_keep else len(b)
    assert norms(a[cut:]) == norms(b[cut:])
    for j in range(cut):
        m = b[j]
        if m.role == "user" and m.has_result and m.kind != "task" and not is_pinned(b, j):
            assert a[j].kind == "placeholder" and a[j].role == m.role
            for x, y in zip(a[j].blocks, m.blocks, strict=True):
                if isinstance(y, ToolResult):
                    assert isinstance(x, ToolResult) and (x.tool_use_id, x.status) == (y.tool_use_id, y.status)
                    assert x.content == placeholder(y.content) and PLACEHOLDER_RE.match(x.content)
                else:
                    assert x == y
        else:
            assert norm(a[j]) == norm(m)
    snapshot = list(run.ctx.messages)
    run.strategy.apply(run.ctx)
    assert list(run.ctx.messages) == snapshot


# offload_contracts ---------------------------------------------------------------------------------

HINT = re.compile(r'\n\[\.\.\. (\d+) more chars; call retrieve_payload\(handle="(ref_[0-9a-f]{12})", offset=(\d+)\)\]$')


def read_all(strategy: object, ctx: Context, handle: str, length: int | None) -> str:
    """Join retrieve pages along their offset= hints."""
    out, offset = "", 0
    for _ in range(10_000):
        status, page = strategy.retrieve(ctx, handle, offset, length)  # type: ignore[attr-defined]
        assert status == "success"
        hint = HINT.search(page)
        if hint is None:
            return out + page
        body = page[: hint.start()]
        assert int(hint.group(3)) == offset + len(body) and hint.group(2) == handle
        out, offset = out + body, int(hint.group(3))
    raise AssertionError("retrieve never finished")


@given(cases(only=["offload_contracts"]), st.one_of(st.none(), st.integers(1, 6000)))
def test_offloaded_payload_is_stored_under_its_hash_and_pages_rebuild_it(case: Case, length: int | None) -> None:
    """3.7: store.get(handle) is the original, the handle is its sha256 prefix, and retrieve pages
    joined along the offset= hints rebuild it exactly."""
    run = run_hook(case, "append")
    new = run.after[len(case.window) :]
    for a, b in zip(new, case.appended, strict=True):
        for x, y in zip(a.blocks, b.blocks, strict=True):
            if isinstance(x, ToolResult) and isinstance(y, ToolResult) and x.content != y.content:
                stub = parse_stub(x.content)
                assert stub is not None
                assert stub.handle == "ref_" + hashlib.sha256(y.content.encode("utf-8")).hexdigest()[:12]
                assert run.ctx.store.get(stub.handle) == y.content
                assert read_all(run.strategy, run.ctx, stub.handle, length) == y.content
    assert run.strategy.retrieve(run.ctx, "ref_000000000000") == ("error", "unknown handle: ref_000000000000")  # type: ignore[attr-defined]


def retrieve_ids(window: Sequence[Message]) -> set[str]:
    return {b.id for m in window for b in m.blocks if isinstance(b, ToolUse) and b.name == "retrieve_payload"}


def call_for(window: Sequence[Message], tool_use_id: str) -> str:
    """The call a result answers, as its stub names it ("" when the window holds no such call)."""
    for m in reversed(window):
        for b in m.blocks:
            if isinstance(b, ToolUse) and b.id == tool_use_id:
                return block_text(b)
    return ""


@given(cases(only=["offload_contracts"]), st.booleans())
def test_append_offloads_exactly_the_large_results(case: Case, with_stub: bool) -> None:
    """3.7: on_append offloads a result iff its message is unpinned and it is over the threshold,
    not a stub, not a retrieve_payload result, and its stub is shorter; stubs, retrieve results
    and small results are never offloaded."""
    appended = list(case.appended)
    if with_stub:
        big = content(5000, 1)
        stub = render_stub(big, 'read_file {}', 400)
        use = ToolUse("s1", "read_file", {})
        appended = [Message.build("assistant", [use]), Message.build("user", [ToolResult("s1", "success", stub)])]
        case = replace(case, appended=appended)
    run = run_hook(case, "append")
    p = case.params
    window = list(case.window)
    for a, b in zip(run.after[len(case.window) :], appended, strict=True):
        window.append(b)
        if b.pinned or not b.has_result:
            assert a == b
            continue
        for x, y in zip(a.blocks, b.blocks, strict=True):
            if not isinstance(y, ToolResult):
                assert x == y
                continue
            assert isinstance(x, ToolResult) and (x.tool_use_id, x.status) == (y.tool_use_id, y.status)
            stub = render_stub(y.content, call_for(window, y.tool_use_id), p["preview_chars"])
            expect = (
                len(y.content.encode("utf-8")) > p["offload_threshold_bytes"]
                and parse_stub(y.content) is None
                and len(stub) < len(y.content)
                and y.tool_use_id not in retrieve_ids(window)
            )
            assert x.content == (stub if expect else y.content)


@given(cases(only=["offload_contracts"]), st.booleans())
def test_offload_reduce_offloads_every_unprotected_output_or_raises(case: Case, reactive: bool) -> None:
    """3.7: reduce offloads every unprotected result that passes the conditions but the threshold
    (retrieve results included); the length is kept and the store holds the payloads; when tokens
    would not drop it raises and changes nothing, store included."""
    run = run_hook(case, "reduce_reactive" if reactive else "reduce")
    b, a = run.before, run.after
    assert len(a) == len(b)
    if run.error is not None:
        assert norms(a) == norms(b) and len(run.ctx.store) == 0
        return
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if is_pinned(b, i) or y.pinned or not y.has_result:
            assert norm(x) == norm(y)
            continue
        for xb, yb in zip(x.blocks, y.blocks, strict=True):
            if isinstance(yb, ToolResult):
                stub = render_stub(yb.content, call_for(b, yb.tool_use_id), case.params["preview_chars"])
                assert isinstance(xb, ToolResult)
                assert xb.content == (stub if len(stub) < len(yb.content) else yb.content)
                if xb.content != yb.content:
                    assert run.ctx.store.get(parse_stub(stub).handle) == yb.content  # type: ignore[union-attr]


@given(cases(only=["offload_contracts"]), st.integers(-5, 6000))
def test_retrieve_rejects_offsets_out_of_range(case: Case, offset: int) -> None:
    """3.7: offset < 0 or > len(payload) is an error naming the range."""
    run = run_hook(case, "reduce")
    for handle_text in {parse_stub(bl.content) for m in run.after for bl in m.blocks if isinstance(bl, ToolResult)}:
        if handle_text is None:
            continue
        payload = run.ctx.store.get(handle_text.handle)
        status, text = run.strategy.retrieve(run.ctx, handle_text.handle, offset)  # type: ignore[attr-defined]
        if 0 <= offset <= len(payload):
            assert status == "success" and text.startswith(payload[offset : offset + 1])
        else:
            assert (status, text) == ("error", f"offset out of range 0..{len(payload)}")


# pipeline and hybrid -------------------------------------------------------------------------------


@given(cases(only=["pipeline", "hybrid"]), st.sampled_from(HOOKS))
def test_pipeline_hooks_compose_their_stages(case: Case, hook: str) -> None:
    """3.8: on_append threads the message through the stages, apply and before_call call every
    stage in order, reduce stops at the first stage that succeeds."""
    run = run_hook(case, hook)
    twin, ctx, fake = setup(case)
    stages = twin.stages  # type: ignore[attr-defined]
    error: CannotReduce | None = None
    if hook == "append":
        for m in case.appended:
            for stage in stages:
                m = stage.on_append(ctx, m)
            ctx.messages.append(m)
    elif hook in ("apply", "before_call"):
        for stage in stages:
            getattr(stage, hook)(ctx)
    else:
        overflow = Exception("overflow") if hook == "reduce_reactive" else None
        for stage in stages:
            try:
                stage.reduce(ctx, overflow)
                break
            except CannotReduce as e:
                error = e
        else:
            assert run.error is not None
        if run.error is None:
            error = None
    assert list(ctx.messages) == run.after
    assert [m.pinned for m in ctx.messages] == [m.pinned for m in run.after]
    assert ctx.removed_count == run.delta_removed
    assert (error is None) == (run.error is None)
    assert [norms(c) for c in fake.calls] == [norms(c) for c in run.fake.calls]
    assert len(ctx.store) == len(run.ctx.store)


@given(
    histories(min_turns=4, max_turns=10),
    st.integers(0, 2),
    st.integers(1, 3),
    st.integers(0, 2),
    st.integers(0, 3),
)
def test_hybrid_summarizer_sees_originals_never_placeholders(
    window: list[Message], mask_turns: int, summary_turns: int, keep_turns: int, q: int
) -> None:
    """3.8: with summarize_unmasked, a recording summarizer receives the original outputs, never a
    masking placeholder, while the window keeps the placeholders."""
    fake = FakeSummarizer()
    ctx = Context(window, summarizer=fake)
    hybrid = create(
        "hybrid",
        mask_turns=mask_turns,
        summary_turns=summary_turns,
        keep_turns=keep_turns,
        pin_first=0,
        preserve_recent_messages=q,
        summarize_unmasked=True,
    )
    hybrid.apply(ctx)
    try:
        hybrid.stages[1].reduce(ctx)  # type: ignore[attr-defined]
    except CannotReduce:
        pass
    originals = norms(window)
    for call in fake.calls:
        for m in call:
            assert not any(isinstance(b, ToolResult) and PLACEHOLDER_RE.match(b.content) for b in m.blocks)
            assert norm(m) in originals or m.kind == "summary"
    assert well_formed(ctx.messages)


# drop_all, unbounded -------------------------------------------------------------------------------


@given(cases(only=["drop_all"]), st.sampled_from(("apply", "reduce", "reduce_reactive")))
def test_drop_all_keeps_exactly_the_kept_set(case: Case, hook: str) -> None:
    """3.9: A is exactly the protected messages, the task messages and everything from the last
    assistant message on; reduce raises when nothing drops."""
    run = run_hook(case, hook)
    b = run.before
    a_idx = next((i for i in range(len(b) - 1, -1, -1) if b[i].role == "assistant"), len(b) - 1)
    keep = [m for i, m in enumerate(b) if is_pinned(b, i) or m.kind == "task" or i >= a_idx]
    assert run.after == keep
    assert (run.error is not None) == (hook != "apply" and len(keep) == len(b))


@given(cases(only=["unbounded"]), st.sampled_from(HOOKS))
def test_unbounded_changes_nothing_and_cannot_reduce(case: Case, hook: str) -> None:
    """3.1/4: A == B always, reduce raises CannotReduce (from the overflow), Δr == 0."""
    run = run_hook(case, hook)
    assert run.after == run.before and run.delta_removed == 0
    assert (run.error is not None) == hook.startswith("reduce")
    if hook == "reduce_reactive":
        assert isinstance(run.error, CannotReduce) and run.error.__cause__ is not None
