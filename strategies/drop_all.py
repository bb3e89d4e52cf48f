"""`drop_all`: the sanity baseline that forgets everything but the task and the current turn."""

from __future__ import annotations

from harness.core import Context, Message
from strategies.base import CannotReduce, ContextStrategy, commit, register
from strategies.split import is_pinned


def kept(window: list[Message]) -> list[Message]:
    """Protected messages, task messages, and everything from the last assistant message on."""
    last = next((i for i in range(len(window) - 1, -1, -1) if window[i].role == "assistant"), len(window) - 1)
    return [m for i, m in enumerate(window) if i >= last or m.kind == "task" or is_pinned(window, i)]


@register("drop_all")
class DropAll(ContextStrategy):
    """Keep only the task, pinned messages and the last turn (a control: few tokens, no memory).

    Invariants: after ``apply`` or a successful ``reduce`` the window is exactly the kept set, in
    order; ``removed_count`` grows by the non-summary messages dropped; ``reduce`` raises
    CannotReduce, changing nothing, when nothing can be dropped.
    """

    source = 'control: drops every finished tool turn (docs/strategies.md 3.9)'

    def apply(self, ctx: Context) -> None:
        new = kept(ctx.messages)
        if len(new) < len(ctx.messages):
            commit(ctx, new)

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        new = kept(ctx.messages)
        if len(new) == len(ctx.messages):
            raise CannotReduce("nothing left to drop") from overflow
        commit(ctx, new)
