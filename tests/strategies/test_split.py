"""The split-point helpers of strategies.split on small hand-built lists (docs/strategies.md 2)."""

from __future__ import annotations

import pytest

from harness.core.messages import Message, Text, ToolResult, ToolUse, pin
from strategies.base import CannotReduce
from strategies.split import (
    adjust_split_point_for_tool_pairs,
    apply_pin_first,
    assistant_indices,
    cut_points,
    find_next_cut,
    find_tool_pair_trim_point,
    find_valid_trim_point,
    is_pinned,
    partition_pinned,
)


def u(text: str = "u") -> Message:
    return Message.user(text)


def a(text: str = "a") -> Message:
    return Message.assistant(text)


def a_use(*ids: str) -> Message:
    return Message.build("assistant", [ToolUse(i, "tool", {}) for i in ids])


def u_res(*ids: str) -> Message:
    return Message.build("user", [ToolResult(i, "success", "out") for i in ids])


def u_use(i: str) -> Message:
    return Message.build("user", [ToolUse(i, "tool", {})])


# is_pinned --------------------------------------------------------------------------------------


def test_is_pinned_flagged_message() -> None:
    L = [pin(u()), a()]
    assert is_pinned(L, 0) and not is_pinned(L, 1)


def test_is_pinned_through_shared_tool_id_with_either_neighbour() -> None:
    L = [pin(a_use("t1")), u_res("t1"), a_use("t2"), pin(u_res("t2"))]
    assert [is_pinned(L, i) for i in range(4)] == [True, True, True, True]


def test_is_pinned_needs_shared_id_not_adjacency() -> None:
    L = [pin(a_use("t1")), u_res("t9"), a()]
    assert [is_pinned(L, i) for i in range(3)] == [True, False, False]


def test_is_pinned_is_not_transitive() -> None:
    L = [
        pin(a_use("t1")),
        Message.build("user", [ToolResult("t1", "success", "x"), ToolUse("t2", "x", {})]),
        Message.build("assistant", [ToolResult("t2", "success", "y")]),
    ]
    assert [is_pinned(L, i) for i in range(3)] == [True, True, False]


def test_is_pinned_ignores_empty_ids() -> None:
    L = [pin(a_use("")), u_res("")]
    assert not is_pinned(L, 1)


# apply_pin_first --------------------------------------------------------------------------------


def test_apply_pin_first_pins_prefix_in_place() -> None:
    L = [u("1"), a("2"), u("3")]
    orig = list(L)
    apply_pin_first(L, 2)
    assert [m.pinned for m in L] == [True, True, False]
    assert L[2] is orig[2]
    assert [m.tokens for m in L] == [m.tokens for m in orig]


@pytest.mark.parametrize("n", [0, -3])
def test_apply_pin_first_nonpositive_does_nothing(n: int) -> None:
    L = [u(), a()]
    apply_pin_first(L, n)
    assert not any(m.pinned for m in L)


def test_apply_pin_first_larger_than_list_and_idempotent() -> None:
    L = [u(), a()]
    apply_pin_first(L, 5)
    once = list(L)
    apply_pin_first(L, 5)
    assert all(m.pinned for m in L)
    assert all(x is y for x, y in zip(L, once, strict=True))


# partition_pinned -------------------------------------------------------------------------------


def test_partition_pinned_keeps_order_within_parts() -> None:
    L = [pin(u("0")), a("1"), pin(u("2")), a("3"), u("4")]
    p, x = partition_pinned(L)
    assert p == [L[0], L[2]] and x == [L[1], L[3], L[4]]


def test_partition_pinned_judges_on_the_whole_list() -> None:
    L = [pin(a_use("t1")), u_res("t1"), a("2"), u("3")]
    p, x = partition_pinned(L, 1, 3)
    assert p == [L[1]] and x == [L[2]]


def test_partition_pinned_empty_range() -> None:
    assert partition_pinned([u(), a()], 1, 1) == ([], [])


# find_valid_trim_point --------------------------------------------------------------------------


def test_valid_trim_point_first_plain_user_at_or_after_start() -> None:
    L = [u("0"), a_use("t1"), u_res("t1"), a("3"), u("4"), a("5")]
    assert find_valid_trim_point(L, 0) == 0
    assert find_valid_trim_point(L, 1) == 4


def test_valid_trim_point_skips_user_use_without_following_result() -> None:
    L = [a("0"), u_use("t1"), a("2"), u_use("t2"), u_res("t2")]
    assert find_valid_trim_point(L, 0) == 3


def test_valid_trim_point_skips_use_in_last_position() -> None:
    assert find_valid_trim_point([a("0"), u_use("t1")], 0) is None


def test_valid_trim_point_none_where_strands_returns_len() -> None:
    L = [u("0"), a("1")]
    assert find_valid_trim_point(L, 2) is None
    assert find_valid_trim_point(L, 5) is None
    assert find_valid_trim_point([a(), u_res("t")], 0) is None


# find_tool_pair_trim_point ----------------------------------------------------------------------


def test_tool_pair_trim_point_finds_use_followed_by_user_result() -> None:
    L = [u("0"), a_use("t1"), u_res("t1"), a_use("t2"), u_res("t2")]
    assert find_tool_pair_trim_point(L, 0) == 1
    assert find_tool_pair_trim_point(L, 2) == 3


def test_tool_pair_trim_point_does_not_check_role_of_use_message() -> None:
    L = [u("0"), u_use("t1"), u_res("t1")]
    assert find_tool_pair_trim_point(L, 0) == 1


def test_tool_pair_trim_point_needs_user_result_next() -> None:
    L = [a_use("t1"), Message.build("assistant", [ToolResult("t1", "success", "x")]), a_use("t2")]
    assert find_tool_pair_trim_point(L, 0) is None
    assert find_tool_pair_trim_point([u(), a_use("t1")], 0) is None


# adjust_split_point_for_tool_pairs --------------------------------------------------------------


def test_adjust_k_beyond_len_raises() -> None:
    with pytest.raises(CannotReduce, match=r"^Split point exceeds message array length$"):
        adjust_split_point_for_tool_pairs([u(), a()], 3)


def test_adjust_k_equal_len_returned() -> None:
    assert adjust_split_point_for_tool_pairs([u(), a_use("t1")], 2) == 2


def test_adjust_moves_past_results_and_open_uses() -> None:
    L = [u("0"), a_use("t1"), u_res("t1"), a_use("t2"), a("4"), u("5")]
    assert adjust_split_point_for_tool_pairs(L, 0) == 0
    assert adjust_split_point_for_tool_pairs(L, 1) == 1
    # 2 has a result; 3 is a use not followed by a result; 4 is fine
    assert adjust_split_point_for_tool_pairs(L, 2) == 4


def test_adjust_accepts_use_in_last_position() -> None:
    L = [u("0"), u_res("t0"), a_use("t1")]
    assert adjust_split_point_for_tool_pairs(L, 1) == 2


def test_adjust_walk_to_end_raises() -> None:
    with pytest.raises(CannotReduce, match=r"^Unable to trim conversation context!$"):
        adjust_split_point_for_tool_pairs([u(), u_res("t1"), u_res("t2")], 1)


# assistant indices, cut points ------------------------------------------------------------------


def test_assistant_indices() -> None:
    assert assistant_indices([u(), a(), u(), a_use("t"), u_res("t")]) == [1, 3]


def test_cut_points_track_open_calls() -> None:
    L = [u("0"), a_use("t1", "t2"), u_res("t1"), u_res("t2"), a_use("t3")]
    assert cut_points(L) == [True, True, False, False, True, False]


def test_find_next_cut() -> None:
    L = [u("0"), a_use("t1"), u_res("t1"), a("3")]
    assert find_next_cut(L, 2) == 3
    assert find_next_cut(L, 4) == 4
    assert find_next_cut(L, 5) is None
    assert find_next_cut([u(), a_use("t1")], 2) is None


def test_text_only_message_has_no_ids() -> None:
    m = Message.build("assistant", [Text("x")])
    assert m.tool_ids == frozenset() and not m.has_use and not m.has_result
