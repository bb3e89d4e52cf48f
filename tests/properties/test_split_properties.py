"""Properties of the split helpers (docs/strategies.md 2 and 4, "split functions")."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.messages import Message
from strategies.base import CannotReduce
from strategies.split import (
    adjust_split_point_for_tool_pairs,
    apply_pin_first,
    find_tool_pair_trim_point,
    find_valid_trim_point,
    is_pinned,
    partition_pinned,
)
from strategies.testing import histories, malformed_lists, violations, well_formed

any_lists = st.one_of(histories(max_turns=6), malformed_lists())


def moves_split(m: list[Message], k: int) -> bool:
    """The rule adjust walks past: a result, or a use whose next message holds no result."""
    return m[k].has_result or (m[k].has_use and k + 1 < len(m) and not m[k + 1].has_result)


def valid_trim(m: list[Message], i: int) -> bool:
    return (
        m[i].role == "user"
        and not m[i].has_result
        and (not m[i].has_use or (i + 1 < len(m) and m[i + 1].has_result))
    )


def tool_pair(m: list[Message], i: int) -> bool:
    return m[i].has_use and i + 1 < len(m) and m[i + 1].role == "user" and m[i + 1].has_result


def reference_is_pinned(m: list[Message], i: int) -> bool:
    ids = m[i].tool_ids
    return m[i].pinned or any(
        0 <= j < len(m) and m[j].pinned and bool(ids & m[j].tool_ids) for j in (i - 1, i + 1)
    )


@st.composite
def list_and_index(draw: st.DrawFn, extra: int = 1) -> tuple[list[Message], int]:
    m = draw(any_lists)
    return m, draw(st.integers(0, len(m) + extra))


@given(list_and_index())
def test_adjust_moves_forward_past_exactly_the_failing_indices(case: tuple[list[Message], int]) -> None:
    """2: adjust(m, k) >= k, every index in [k, result) fails the rule, the result passes it."""
    m, k = case
    n = len(m)
    if k > n:
        with pytest.raises(CannotReduce, match="Split point exceeds message array length"):
            adjust_split_point_for_tool_pairs(m, k)
        return
    try:
        r = adjust_split_point_for_tool_pairs(m, k)
    except CannotReduce as e:
        assert str(e) == "Unable to trim conversation context!"
        assert k < n and all(moves_split(m, i) for i in range(k, n))
        return
    assert k <= r <= n
    assert all(moves_split(m, i) for i in range(k, r))
    assert r == n or not moves_split(m, r)
    if k == n:
        assert r == n


@given(list_and_index())
def test_valid_trim_point_is_the_first_passing_index(case: tuple[list[Message], int]) -> None:
    """2: a returned trim point passes the rule and every index scanned before it fails; None means
    every index from start on fails (start >= len gives None)."""
    m, start = case
    t = find_valid_trim_point(m, start)
    if t is None:
        assert all(not valid_trim(m, i) for i in range(start, len(m)))
    else:
        assert start <= t < len(m)
        assert valid_trim(m, t)
        assert all(not valid_trim(m, i) for i in range(start, t))


@given(list_and_index())
def test_tool_pair_trim_point_is_the_first_passing_index(case: tuple[list[Message], int]) -> None:
    """2: find_tool_pair_trim_point returns the first i >= start with a use followed by a user
    result message (role of i unchecked), else None."""
    m, start = case
    t = find_tool_pair_trim_point(m, start)
    if t is None:
        assert all(not tool_pair(m, i) for i in range(start, len(m)))
    else:
        assert start <= t < len(m) - 1
        assert tool_pair(m, t)
        assert all(not tool_pair(m, i) for i in range(start, t))


@given(any_lists)
def test_is_pinned_matches_its_definition(m: list[Message]) -> None:
    """2: is_pinned(m, i) is m[i].pinned or a flagged neighbour sharing a non-empty tool id."""
    assert [is_pinned(m, i) for i in range(len(m))] == [reference_is_pinned(m, i) for i in range(len(m))]


@given(list_and_index(extra=2), st.integers(0, 12))
def test_partition_pinned_splits_the_slice_in_order(case: tuple[list[Message], int], width: int) -> None:
    """2: partition_pinned splits messages[start:stop] keeping the order in each part, judging
    each message with is_pinned on the whole list."""
    m, start = case
    stop = min(start + width, len(m))
    pinned, unpinned = partition_pinned(m, start, stop)
    idx = range(start, stop)
    assert pinned == [m[i] for i in idx if is_pinned(m, i)]
    assert unpinned == [m[i] for i in idx if not is_pinned(m, i)]
    whole_p, whole_u = partition_pinned(m)
    assert len(whole_p) + len(whole_u) == len(m)


@given(any_lists, st.integers(-2, 14))
def test_apply_pin_first_pins_the_prefix_and_is_idempotent(m: list[Message], n: int) -> None:
    """2: apply_pin_first pins the first min(n, len) messages in place, n <= 0 does nothing, and
    it is idempotent; tokens are unchanged (1.1)."""
    once = list(m)
    apply_pin_first(once, n)
    p = max(0, min(n, len(m)))
    assert all(x.pinned for x in once[:p])
    assert once[p:] == m[p:]
    assert [(x.role, x.blocks, x.kind, x.tokens) for x in once] == [(x.role, x.blocks, x.kind, x.tokens) for x in m]
    twice = list(once)
    apply_pin_first(twice, n)
    assert twice == once


def _suffix_violations(m: list[Message], t: int) -> set[tuple[str, int]]:
    return {(rule, i + t) for rule, i in violations(m[t:])}


@given(list_and_index())
def test_trimming_at_a_returned_point_never_makes_a_history_worse(case: tuple[list[Message], int]) -> None:
    """2/G1: dropping the messages before a valid trim point or an adjusted split point adds no
    W violation (a well-formed list stays well-formed, a malformed one gets no new defect)."""
    m, start = case
    points = [find_valid_trim_point(m, start)]
    if start <= len(m):
        try:
            points.append(adjust_split_point_for_tool_pairs(m, start))
        except CannotReduce:
            pass
    for t in points:
        if t is None:
            continue
        assert _suffix_violations(m, t) <= violations(m)
        if well_formed(m):
            assert well_formed(m[t:])


@given(histories(max_turns=6), st.integers(0, 14))
def test_keeping_protected_messages_before_a_trim_point_keeps_well_formed(m: list[Message], start: int) -> None:
    """2/G1/R4: on a well-formed list, the protected messages before either trim point plus the
    suffix from it is well-formed (pins keep tool pairs whole)."""
    assert well_formed(m)
    for t in (find_valid_trim_point(m, start), find_tool_pair_trim_point(m, start)):
        if t is not None:
            kept = [m[i] for i in range(t) if is_pinned(m, i)] + m[t:]
            assert well_formed(kept)


@given(histories(min_turns=1, max_turns=6))
def test_well_formed_detects_a_missing_result_message(m: list[Message]) -> None:
    """1.5: W(L) is the check the other properties rely on: a generated window satisfies it, and
    deleting a result message that is not last breaks it (its call is then unanswered)."""
    assert well_formed(m)
    j = next(i for i, x in enumerate(m) if x.has_result)
    if j == len(m) - 1:
        m = [*m, Message.user("next")]
    broken = m[:j] + m[j + 1 :]
    assert not well_formed(broken)
