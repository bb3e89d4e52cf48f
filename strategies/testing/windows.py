"""Predicates on a window and a compact way to print one (docs/strategies.md 1.5).

`well_formed` is W(L): every tool result answers a call of the assistant message just before it,
every call but the last message's is answered by the next message, and tool ids are unique.
`brief` renders a window on one line so that a failing example is readable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.core.messages import Block, Message, Text, ToolResult, ToolUse
from strategies.split import is_pinned


def violations(window: Sequence[Message]) -> set[tuple[str, int]]:
    """Indices breaking rule (a) (an orphan result) or (b) (an unanswered call) of W(L), as
    ``("a", index)`` and ``("b", index)``."""
    out: set[tuple[str, int]] = set()
    n = len(window)
    for j, m in enumerate(window):
        if m.has_result and not (j > 0 and window[j - 1].role == "assistant" and m.results <= window[j - 1].uses):
            out.add(("a", j))
        if m.has_use and j < n - 1 and not (window[j + 1].role == "user" and m.uses <= window[j + 1].results):
            out.add(("b", j))
    return out


def ids_unique(window: Sequence[Message]) -> bool:
    """Rule (c) of W(L): no tool id is used twice, nor answered twice."""
    use_ids = [b.id for m in window for b in m.blocks if isinstance(b, ToolUse)]
    result_ids = [b.tool_use_id for m in window for b in m.blocks if isinstance(b, ToolResult)]
    return len(use_ids) == len(set(use_ids)) and len(result_ids) == len(set(result_ids))


def well_formed(window: Sequence[Message]) -> bool:
    """W(L) of docs/strategies.md 1.5."""
    return not violations(window) and ids_unique(window)


def protected_indices(window: Sequence[Message]) -> list[int]:
    """The indices no strategy may drop or rewrite (R4: flagged, or sharing a tool id with a flagged
    neighbour)."""
    return [i for i in range(len(window)) if is_pinned(window, i)]


def protected(window: Sequence[Message]) -> list[Message]:
    """The protected messages of ``window``, in order."""
    return [window[i] for i in protected_indices(window)]


def tool_ids(window: Sequence[Message]) -> set[str]:
    """Every tool id a window's calls and results mention."""
    return {i for m in window for i in m.tool_ids}


def norm(m: Message) -> tuple[object, ...]:
    """A message without its pin flag (comparisons of A with B ignore pins set during a hook)."""
    return (m.role, m.blocks, m.kind)


def norms(window: Sequence[Message]) -> list[tuple[object, ...]]:
    """`norm` of every message of ``window``."""
    return [norm(m) for m in window]


def _brief_block(b: Block) -> str:
    if isinstance(b, Text):
        return f"T{len(b.text)}"
    if isinstance(b, ToolUse):
        return f"U{b.id}:{b.name}"
    return f"R{b.tool_use_id}:{b.status[0]}{len(b.content)}"


def brief_message(m: Message) -> str:
    """One message as ``<role initial>[*]:<kind>(<blocks>)``; ``*`` marks a pin, and blocks read
    ``T<chars>`` (text), ``U<id>:<tool>`` (call), ``R<id>:<s|e><chars>`` (result)."""
    return f"{m.role[0]}{'*' if m.pinned else ''}:{m.kind}({' '.join(_brief_block(b) for b in m.blocks)})"


def brief(window: Sequence[Message]) -> str:
    """A window on one line, for failure reports (see `brief_message`)."""
    return "[" + ", ".join(brief_message(m) for m in window) + "]"


class History(list[Message]):
    """A window as `histories` draws it: a plain list of messages that prints as `brief` does, so that
    hypothesis' "Falsifying example" is one readable line."""

    def __repr__(self) -> str:
        return f"History({brief(self)})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(brief(self))


class Shown:
    """Messages that hypothesis prints briefly (a Message's repr is long)."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(brief(self.messages))
