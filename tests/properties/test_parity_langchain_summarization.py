"""Differential test of `langchain_summarization` against langchain 1.5.2's SummarizationMiddleware.

The real middleware runs offline: ``before_model({"messages": ...}, runtime=None)`` with a
GenericFakeChatModel that always replies "SUMMARY" (profile ``max_input_tokens`` = the context's
window) and a token counter that counts our tokens: a LangChain message converted from ours carries
its tokens (``lc_units``), and a human message is counted from its text, so LangChain's partial
trimming of a human message measures what ours does. Ours runs on the same window with a summarizer
that also replies "SUMMARY", ``prompt_overhead`` 0 (the source counts the state's messages only).

Both sides get the same windows: the hypothesis histories of tests/properties (with what the runtime
appends next) and the Converse histories of the strands parity tests, without pins (LangChain has
none). Multi-step scripts append and call again on the window ours left. Asserted on every step:
LangChain summarizes <=> ours does; then the same kept messages (LangChain's preserved messages are
exactly the LangChain messages of our kept suffix), the summary first with role human/user, and the
same summary text (the fake's, or "Previous conversation was too long to summarize." when trimming
leaves no human message, in which case neither calls its model).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Sequence
from typing import Any

import pytest

logging.disable(logging.CRITICAL)
pytest.importorskip("langchain")

from hypothesis import event, given, note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from langchain.agents.middleware.summarization import SummarizationMiddleware  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage  # noqa: E402

from harness.core import Context, Message, from_converse  # noqa: E402
from harness.core.messages import default_meter  # noqa: E402
from harness.core.tokens import MESSAGE_OVERHEAD_TOKENS  # noqa: E402
from strategies.langchain_summarization import (  # noqa: E402
    SUMMARY_PREFIX,
    LangchainSummarization,
    LangchainSummarizationParams,
    lc_units,
)
from strategies.testing import (  # noqa: E402
    FakeSummarizer,
    Ids,
    brief,
    histories,
    new_messages,
)
from tests.properties.converse_histories import well_formed_histories  # noqa: E402

# Converters ----------------------------------------------------------------------------------------


def to_langchain(window: Sequence[Message]) -> tuple[list[BaseMessage], dict[str, int]]:
    """LangChain's messages for a window (one per `lc_units` unit, id ``u<k>``), and id -> unit index."""
    out: list[BaseMessage] = []
    index: dict[str, int] = {}
    for k, unit in enumerate(lc_units(window)):
        uid = f"u{k}"
        index[uid] = k
        extra = {"ctx_tokens": unit.tokens}
        text = "\n".join(getattr(b, "text", "") for b in unit.blocks if hasattr(b, "text"))
        if unit.type == "ai":
            calls = [{"name": b.name, "args": dict(b.input), "id": b.id} for b in unit.blocks if hasattr(b, "input")]
            out.append(AIMessage(content=text, tool_calls=calls, id=uid, additional_kwargs=extra))
        elif unit.type == "tool":
            (result,) = unit.blocks
            out.append(ToolMessage(content=result.content, tool_call_id=result.tool_use_id, id=uid,
                                   additional_kwargs=extra))
        else:
            out.append(HumanMessage(content=text, id=uid, additional_kwargs=extra))
    return out, index


def count_tokens(messages: Any) -> int:
    """Our tokens: a human message from its text (so a partial one is measured), others as converted."""
    total = 0
    for m in messages:
        if isinstance(m, HumanMessage) and isinstance(m.content, str):
            total += default_meter().measure(m.content)[0] + MESSAGE_OVERHEAD_TOKENS
        else:
            total += int(m.additional_kwargs.get("ctx_tokens", 1))
    return total


def middleware(params: LangchainSummarizationParams, window_tokens: int) -> SummarizationMiddleware:
    model = GenericFakeChatModel(messages=itertools.cycle([AIMessage("SUMMARY")]),
                                 profile={"max_input_tokens": window_tokens})
    trigger: Any = None if params.trigger is None else [dict(c) for c in params.trigger]
    keep: Any = params.keep
    return SummarizationMiddleware(model, trigger=trigger, keep=keep, token_counter=count_tokens,
                                   trim_tokens_to_summarize=params.trim_tokens_to_summarize)


# Generators ----------------------------------------------------------------------------------------

SIZES = ("tokens", "messages", "fraction")


def _size(kind: str, parameter: str) -> st.SearchStrategy[tuple[str, int | float]]:
    if kind == "messages":
        return st.tuples(st.just(kind), st.integers(1, 12))
    if kind == "tokens":
        low = 50 if parameter == "keep" else 200
        return st.tuples(st.just(kind), st.integers(low, 6000))
    return st.tuples(st.just(kind), st.sampled_from((0.05, 0.2, 0.5, 0.9, 1.0)))


def _trigger() -> st.SearchStrategy[Any]:
    pair = st.sampled_from(SIZES).flatmap(lambda k: _size(k, "trigger"))
    clause = st.lists(pair, min_size=1, max_size=2).map(dict)
    return st.one_of(pair, clause, st.lists(st.one_of(pair, clause), min_size=1, max_size=3))


PARAMS = st.fixed_dictionaries({
    "trigger": _trigger(),
    "keep": st.sampled_from(SIZES).flatmap(lambda k: _size(k, "keep")),
    "trim_tokens_to_summarize": st.sampled_from((None, 0, 30, 300, 1500, 4000)),
})


@st.composite
def windows(draw: st.DrawFn) -> list[Message]:
    if draw(st.booleans()):
        return draw(histories(max_turns=8, pinned=False))
    return [from_converse(d) for d in draw(well_formed_histories(max_turns=8, allow_pins=False))]


class Shown:
    """Messages that hypothesis prints briefly (a Message's repr is long)."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    def __repr__(self) -> str:
        return brief(self.messages)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(brief(self.messages))


# The comparison -------------------------------------------------------------------------------------


def compare_one_call(
    params: LangchainSummarizationParams, window: list[Message], window_tokens: int,
    explain: Callable[[str], None] = note,
) -> Context:
    """One before_model and one before_call on the same window; asserts they agree; returns ours."""
    theirs, index = to_langchain(window)
    state: Any = {"messages": theirs}
    update = middleware(params, window_tokens).before_model(state, None)  # type: ignore[arg-type]
    ctx = Context(window, window_tokens=window_tokens, summarizer=FakeSummarizer("fixed"))
    LangchainSummarization(params).before_call(ctx)
    ours = list(ctx.messages)
    explain(f"window={brief(window)}\nours={brief(ours)}")
    # Identity, not equality: a summary of a lone summary can equal it.
    fired = len(ours) != len(window) or any(a is not b for a, b in zip(ours, window, strict=True))
    explain(f"event: {'summarized' if update is not None else 'not summarized'}")
    if update is None:
        assert not fired, "LangChain did not summarize, ours did"
        return ctx
    remove, summary, *preserved = update["messages"]
    assert isinstance(remove, RemoveMessage) and isinstance(summary, HumanMessage)
    assert fired, "LangChain summarized, ours did not"
    # Ours: [S] + window[cut:] (no pins here).
    assert ours[0].kind == "summary" and ours[0].role == "user"
    kept = ours[1:]
    cut = len(window) - len(kept)
    assert kept == window[cut:]
    units = lc_units(window)
    first_kept_unit = next((k for k, u in enumerate(units) if u.message >= cut), len(units))
    assert [index[str(m.id)] for m in preserved] == list(range(first_kept_unit, len(units)))
    explain(f"event: summary text {summary.content[len(SUMMARY_PREFIX):]!r}")
    assert ours[0].text == summary.content
    assert ours[0].text.startswith(SUMMARY_PREFIX)
    return ctx


def explain(text: str) -> None:
    """Counts "event: ..." lines (hypothesis statistics), notes the others (failure reports)."""
    if text.startswith("event"):
        event(text)
    else:
        note(text)


@given(data=st.data())
def test_same_cut_same_kept_messages_as_langchain(data: st.DataObject) -> None:
    """On the same window, LangChain's before_model and our before_call agree on whether to summarize,
    on the cut (the kept messages) and on the summary message; then again after the runtime appends
    the next messages to the window ours left (three steps)."""
    params = data.draw(PARAMS, label="params")
    window = data.draw(windows().map(lambda w: Shown(w)), label="window").messages
    factor = data.draw(st.sampled_from((0.5, 1.0, 2.0, 8.0)), label="window factor")
    p = LangchainSummarizationParams(**params)
    window_tokens = max(1, int(sum(m.tokens for m in window) * factor))
    ids = Ids("n")  # fresh ids across the appends
    for _ in range(3):
        ctx = compare_one_call(p, window, window_tokens, explain=explain)
        appended = data.draw(new_messages(ctx.messages, ids).map(lambda w: Shown(w)), label="appended")
        window = list(ctx.messages) + appended.messages


def test_the_open_call_at_the_end_is_kept_by_both() -> None:
    """A window ending with an unanswered call, keep 1: both keep exactly that call."""
    from harness.core import Text, ToolResult, ToolUse

    window = [
        Message.build("user", [Text("Task: find it.")], kind="task"),
        Message.build("assistant", [ToolUse("a", "grep", {})]),
        Message.build("user", [ToolResult("a", "success", "x\n" * 300)]),
        Message.build("assistant", [ToolUse("b", "grep", {})]),
    ]
    p = LangchainSummarizationParams.model_validate({"trigger": ("messages", 2), "keep": ("messages", 1)})
    ctx = compare_one_call(p, window, 10_000, explain=print)
    assert ctx.messages[-1] is window[-1] and len(ctx.messages) == 2
