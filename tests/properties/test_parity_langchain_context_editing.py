"""Differential tests of `langchain_clear_tool_uses` against langchain 1.5.2's
``ContextEditingMiddleware`` + ``ClearToolUsesEdit``, run offline.

Both sides replay the same well-formed session (tests/properties/histories.py, no pins). Before each
model call ours runs ``before_call`` on its context, which has grown by the messages of the turn;
LangChain runs ``wrap_model_call`` on a ``ModelRequest`` holding the whole history so far (converted
with `to_langchain`) and a handler that records the messages it is given. The edited LangChain
messages are read back onto our messages (`from_langchain`) and must equal our window, block for
block.

Counting: with ``token_count_method="model"`` the middleware counts through the request's chat
model (`CountingModel`: the system message counts as the prompt overhead, every other message as
our exact tokens) or through a ``token_counter`` function doing the same; both equal
``Context.prompt_tokens``. With ``"approximate"`` the middleware uses its own
``count_tokens_approximately`` and ours `approximate_tokens`.

Deliberate differences, each tested as such: our default counting is ``"model"`` (LangChain's is
``"approximate"``); negative values are rejected (LangChain's dataclass takes them); protected
(pinned) messages are never cleared (LangChain has no pins).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

pytest.importorskip("langchain.agents.middleware.context_editing")

from hypothesis import event, given
from hypothesis import strategies as st
from langchain.agents.middleware.context_editing import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
)
from langchain.agents.middleware.types import ModelRequest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from pydantic import Field, ValidationError

from harness.core import Context, Message, Text, ToolResult, ToolUse, rebuild, tokens_of
from strategies import create
from strategies.clear_tool_uses import (
    LANGCHAIN_PLACEHOLDER,
    LangChainClearToolUses,
    approximate_tokens,
    call_names_of,
)
from strategies.testing import TOOL_NAMES, histories

# Converters ----------------------------------------------------------------------------------------


def to_langchain(history: Sequence[Message]) -> list[BaseMessage]:
    """Our messages as LangChain's: an assistant message is one AIMessage (its text, its calls); a
    user message is one ToolMessage per result (named after the call in the nearest assistant
    message before it), then a HumanMessage with its text if it has text or no result. Every
    LangChain message's id starts with the index of the message it came from."""
    out: list[BaseMessage] = []
    names: dict[str, str] = {}
    for i, m in enumerate(history):
        texts = [b.text for b in m.blocks if isinstance(b, Text)]
        if m.role == "assistant":
            calls = [{"name": b.name, "args": dict(b.input), "id": b.id} for b in m.blocks if isinstance(b, ToolUse)]
            out.append(AIMessage(content="\n".join(texts), tool_calls=calls, id=f"{i}.0"))
            names = call_names_of(m)
            continue
        results = [b for b in m.blocks if isinstance(b, ToolResult)]
        for k, r in enumerate(results):
            out.append(
                ToolMessage(
                    content=r.content,
                    tool_call_id=r.tool_use_id,
                    name=names.get(r.tool_use_id),
                    status=r.status,
                    id=f"{i}.{k}",
                )
            )
        if texts or not results:
            out.append(HumanMessage(content="\n".join(texts), id=f"{i}.t"))
    return out


def from_langchain(messages: Sequence[BaseMessage], history: Sequence[Message]) -> list[Message]:
    """LangChain messages read back onto the messages they came from: each call's args and each
    result's content and status from LangChain, everything else from ``history``."""
    groups: dict[int, list[BaseMessage]] = {}
    for x in messages:
        if isinstance(x, SystemMessage):
            continue
        assert x.id is not None
        groups.setdefault(int(x.id.split(".")[0]), []).append(x)
    out: list[Message] = []
    for i, xs in groups.items():
        m = history[i]
        if m.role == "assistant":
            (ai,) = xs
            assert isinstance(ai, AIMessage)
            args = iter(call["args"] for call in ai.tool_calls)
            blocks = [ToolUse(b.id, b.name, next(args)) if isinstance(b, ToolUse) else b for b in m.blocks]
        else:
            tool_messages = iter(x for x in xs if isinstance(x, ToolMessage))
            blocks = []
            for b in m.blocks:
                if isinstance(b, ToolResult):
                    t = next(tool_messages)
                    assert isinstance(t.content, str)
                    b = ToolResult(b.tool_use_id, t.status, t.content)
                blocks.append(b)
        out.append(m if tuple(blocks) == m.blocks else rebuild(m, blocks))
    return out


class CountingModel(GenericFakeChatModel):
    """A chat model whose token count is ours: the system message counts as the prompt overhead."""

    overhead: int = 0
    history: list[Any] = Field(default_factory=list)

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Sequence[Any] | None = None) -> int:
        system = self.overhead if messages and isinstance(messages[0], SystemMessage) else 0
        return system + tokens_of(from_langchain(messages, self.history))


def exact_counter(history: Sequence[Message], overhead: int) -> Callable[[Sequence[BaseMessage]], int]:
    """A ``token_counter`` for the middleware: ``Context.prompt_tokens`` of the messages it is given."""
    return lambda messages: overhead + tokens_of(from_langchain(messages, history))


def langchain_view(history: list[Message], params: dict[str, Any], overhead: int, counting: str) -> list[Message]:
    """The messages ``ContextEditingMiddleware`` hands the model for a request over ``history``."""
    edit = ClearToolUsesEdit(
        trigger=params["trigger"],
        clear_at_least=params["clear_at_least"],
        keep=params["keep"],
        clear_tool_inputs=params["clear_tool_inputs"],
        exclude_tools=params["exclude_tools"],
        placeholder=params["placeholder"],
    )
    method = params["token_count_method"]
    if method == "approximate":
        middleware = ContextEditingMiddleware(edits=[edit])  # LangChain's default: approximate
    elif counting == "token_counter":
        middleware = ContextEditingMiddleware(edits=[edit], token_counter=exact_counter(history, overhead))
    else:
        middleware = ContextEditingMiddleware(edits=[edit], token_count_method="model")
    request = ModelRequest(
        model=CountingModel(messages=iter(()), overhead=overhead, history=history),
        messages=to_langchain(history),  # type: ignore[arg-type]
        system_message=SystemMessage(content="system prompt"),
    )
    seen: list[list[BaseMessage]] = []

    def handler(r: ModelRequest[Any]) -> AIMessage:
        seen.append(list(r.messages))
        return AIMessage(content="ok")

    middleware.wrap_model_call(request, handler)  # type: ignore[arg-type]
    (messages,) = seen
    return from_langchain(messages, history)


def call_points(history: Sequence[Message]) -> list[int]:
    """Prefix lengths at which the runtime calls the model: after each user message, and at the end
    (which may be a call still waiting for its result)."""
    points = [n for n in range(1, len(history) + 1) if history[n - 1].role == "user"]
    return points if points and points[-1] == len(history) else [*points, len(history)]


# Generated sessions --------------------------------------------------------------------------------


def approximate_total(history: Sequence[Message]) -> int:
    return count_tokens_approximately(to_langchain(history))


def first_clear_frees(history: Sequence[Message], method: str, placeholder: str) -> int:
    """What clearing the session's first tool result frees, counted LangChain's way (0 if none)."""
    lc = to_langchain(history)
    for k, x in enumerate(lc):
        if isinstance(x, ToolMessage):
            cleared = [*lc[:k], x.model_copy(update={"content": placeholder}), *lc[k + 1 :]]
            if method == "approximate":
                return max(0, count_tokens_approximately(lc) - count_tokens_approximately(cleared))
            return max(0, tokens_of(from_langchain(lc, history)) - tokens_of(from_langchain(cleared, history)))
    return 0


@st.composite
def sessions(draw: st.DrawFn) -> tuple[list[Message], dict[str, Any], int, str]:
    """A session, params scaled to its size (so the trigger fires part way through), the prompt
    overhead and the middleware's counting path."""
    history = draw(histories(max_turns=8, pinned=False))
    method = draw(st.sampled_from(("model", "approximate")))
    overhead = draw(st.sampled_from((0, 0, 37, 500)))
    placeholder = draw(st.sampled_from((LANGCHAIN_PLACEHOLDER, "[gone]", "")))

    def count(prefix: Sequence[Message]) -> int:
        return overhead + tokens_of(prefix) if method == "model" else approximate_total(prefix)

    # Boundaries: a trigger equal to the count at some call (it must not fire there), and a
    # clear_at_least equal to what clearing the first result frees (clearing must stop right there).
    at_a_call = count(history[: draw(st.sampled_from(call_points(history)))])
    trigger = draw(
        st.one_of(
            st.sampled_from((at_a_call, at_a_call - 1)),
            st.sampled_from((0.0, 0.2, 0.5, 0.8, 0.95, 1.1)).map(lambda share: int(count(history) * share)),
        )
    )
    params = {
        "trigger": max(0, trigger),
        "clear_at_least": draw(
            st.sampled_from((0, 0, 1, 50, 400, 3000, first_clear_frees(history, method, placeholder)))
        ),
        "keep": draw(st.integers(0, 4)),
        "clear_tool_inputs": draw(st.booleans()),
        "exclude_tools": draw(st.lists(st.sampled_from(sorted(set(TOOL_NAMES))), max_size=2, unique=True)),
        "placeholder": placeholder,
        "token_count_method": method,
    }
    return history, params, overhead, draw(st.sampled_from(("model", "token_counter")))


def blocks_of(window: Sequence[Message]) -> list[tuple[object, ...]]:
    return [(m.role, m.blocks) for m in window]


@given(sessions())
def test_view_matches_the_middleware_at_every_call(session: tuple[list[Message], dict[str, Any], int, str]) -> None:
    """Before every model call of a session our window holds exactly the messages the middleware
    hands the model for the whole history so far; the history itself is never edited."""
    history, params, overhead, counting = session
    strategy = create("langchain_clear_tool_uses", **params)
    assert isinstance(strategy, LangChainClearToolUses)
    ctx = Context(prompt_overhead=overhead)
    appended = 0
    for point in call_points(history):
        for m in history[appended:point]:
            ctx.messages.append(strategy.on_append(ctx, m))
        appended = point
        strategy.before_call(ctx)
        expected = langchain_view(history[:point], params, overhead, counting)
        assert blocks_of(ctx.messages) == blocks_of(expected)
        assert strategy._history == history[:point]
        for ours, original in zip(ctx.messages, history, strict=False):
            if ours is not original:
                assert any(isinstance(b, ToolResult) and b.content == params["placeholder"] for b in ours.blocks) or (
                    ours.role == "assistant"
                )
        assert ctx.tokens == tokens_of(ctx.messages)
        assert ctx.removed_count == 0
    cleared = sum(1 for m in ctx.messages for b in m.blocks if isinstance(b, ToolResult) and m.kind == "placeholder")
    event(f"results cleared at the last call: {min(cleared, 3)}{'+' if cleared >= 3 else ''}")
    event(f"stopped early by clear_at_least: {strategy._stopped}")


@given(histories(max_turns=8, pinned=False))
def test_approximate_tokens_is_count_tokens_approximately(history: list[Message]) -> None:
    """Our per-message estimate sums to LangChain's count of the converted messages."""
    names: dict[str, str] = {}
    ours = 0
    for m in history:
        ours += approximate_tokens(m, names if m.role == "user" else {})
        if m.role == "assistant":
            names = call_names_of(m)
    assert ours == approximate_total(history)


# Deliberate differences ------------------------------------------------------------------------------


def test_difference_default_counting_is_the_whole_prompt() -> None:
    """LangChain counts approximately, messages only, by default; ours counts the whole prompt exactly
    (docs/sdk-strategies.md 2). The other method is one param away."""
    assert ContextEditingMiddleware().token_count_method == "approximate"
    assert create("langchain_clear_tool_uses").params.token_count_method == "model"  # type: ignore[attr-defined]
    assert create("langchain_clear_tool_uses", token_count_method="approximate") is not None


def test_difference_negative_values_are_rejected() -> None:
    """LangChain's dataclass validates nothing (a negative keep keeps all but the last -keep); we
    reject negative trigger, keep and clear_at_least."""
    ClearToolUsesEdit(keep=-1, trigger=-5, clear_at_least=-3)
    for field in ("trigger", "keep", "clear_at_least"):
        with pytest.raises(ValidationError):
            create("langchain_clear_tool_uses", **{field: -1})


def test_difference_protected_results_are_never_cleared() -> None:
    """LangChain has no pins; a pinned result message (and its call) stays whole here."""
    history = [
        Message.user("task", kind="task"),
        Message.build("assistant", [ToolUse("a", "grep", {"q": "x"})]),
        Message.build("user", [ToolResult("a", "success", "old output " * 50)], pinned=True),
        Message.build("assistant", [ToolUse("b", "grep", {"q": "y"})]),
        Message.build("user", [ToolResult("b", "success", "new output " * 50)]),
    ]
    params = {"trigger": 0, "keep": 0, "clear_tool_inputs": True}
    ctx = Context(history)
    create("langchain_clear_tool_uses", **params).before_call(ctx)
    full = {"clear_at_least": 0, "exclude_tools": [], "placeholder": LANGCHAIN_PLACEHOLDER,
            "token_count_method": "model", **params}
    theirs = langchain_view(history, full, 0, "model")
    assert theirs[2].blocks[0] == ToolResult("a", "success", LANGCHAIN_PLACEHOLDER)
    assert ctx.messages[1] is history[1] and ctx.messages[2] is history[2]
    assert ctx.messages[4].blocks == theirs[4].blocks and ctx.messages[3].blocks == theirs[3].blocks
