"""Pure split-point helpers: where a window may be cut without breaking a tool pair, and which
messages are protected by pins. Same semantics as strands-agents 1.62's ``context_compression``
and ``pin_message`` helpers (docs/strategies.md 2), except that "no trim point" is None, not ``len``.

These look only at which block types are present; tool ids are compared only by `is_pinned`.
"""

from __future__ import annotations

from collections.abc import MutableSequence, Sequence

from harness.core import Message, pin
from strategies.base import CannotReduce


def is_pinned(messages: Sequence[Message], i: int) -> bool:
    """Message i is flagged, or a flagged neighbour shares a non-empty tool id with it."""
    m = messages[i]
    if m.pinned:
        return True
    ids = m.tool_ids
    if not ids:
        return False
    for j in (i - 1, i + 1):
        if 0 <= j < len(messages):
            neighbour = messages[j]
            if neighbour.pinned and ids & neighbour.tool_ids:
                return True
    return False


def apply_pin_first(messages: MutableSequence[Message], n: int) -> None:
    """Flag the first ``min(n, len)`` messages pinned, in place (idempotent; n <= 0 does nothing)."""
    for i in range(min(n, len(messages))):
        if not messages[i].pinned:
            messages[i] = pin(messages[i])


def partition_pinned(
    messages: Sequence[Message], start: int = 0, stop: int | None = None
) -> tuple[list[Message], list[Message]]:
    """Split ``messages[start:stop]`` into (protected, unprotected), judged on the whole list."""
    stop = len(messages) if stop is None else stop
    protected: list[Message] = []
    unprotected: list[Message] = []
    for i in range(start, stop):
        (protected if is_pinned(messages, i) else unprotected).append(messages[i])
    return protected, unprotected


def find_valid_trim_point(messages: Sequence[Message], start: int) -> int | None:
    """First i >= start that is a user message without results and, if it holds a use, is followed
    by a message with a result. None when there is none (strands returns ``len``)."""
    n = len(messages)
    for i in range(max(start, 0), n):
        m = messages[i]
        if m.role != "user" or m.has_result:
            continue
        if m.has_use and not (i + 1 < n and messages[i + 1].has_result):
            continue
        return i
    return None


def find_tool_pair_trim_point(messages: Sequence[Message], start: int) -> int | None:
    """First i >= start holding a use and followed by a user message with a result (strands'
    assistant(toolUse) + user(toolResult) fallback; the role of message i is not checked)."""
    n = len(messages)
    for i in range(max(start, 0), n - 1):
        nxt = messages[i + 1]
        if messages[i].has_use and nxt.role == "user" and nxt.has_result:
            return i
    return None


def adjust_split_point_for_tool_pairs(messages: Sequence[Message], k: int) -> int:
    """Move split point k forward past orphan results and uses whose result does not follow.

    Raises CannotReduce when k exceeds the length or the walk reaches the end.
    """
    n = len(messages)
    if k > n:
        raise CannotReduce("Split point exceeds message array length")
    if k == n:
        return k
    while k < n:
        m = messages[k]
        if m.has_result or (m.has_use and k + 1 < n and not messages[k + 1].has_result):
            k += 1
        else:
            return k
    raise CannotReduce("Unable to trim conversation context!")


def assistant_indices(messages: Sequence[Message]) -> list[int]:
    """A(L): the indices of assistant messages (each starts a turn)."""
    return [i for i, m in enumerate(messages) if m.role == "assistant"]


def cut_points(messages: Sequence[Message]) -> list[bool]:
    """For each i in [0, len], whether no tool call is open at i (condense's cut points)."""
    open_uses: set[str] = set()
    answered: set[str] = set()
    points = [True]
    for m in messages:
        for i in m.uses:
            if i not in answered:
                open_uses.add(i)
        for i in m.results:
            answered.add(i)
            open_uses.discard(i)
        points.append(not open_uses)
    return points


def find_next_cut(messages: Sequence[Message], target: int) -> int | None:
    """The smallest cut point >= target, or None (also when target > len)."""
    if target > len(messages):
        return None
    points = cut_points(messages)
    for i in range(max(target, 0), len(points)):
        if points[i]:
            return i
    return None
