"""clear_tool_uses (Anthropic context editing) and langchain_clear_tool_uses (LangChain's
ContextEditingMiddleware): the documented examples, the boundaries, the rejected params, and the
section-3 invariants of docs/sdk-strategies.md on replayed sessions.

Anthropic's editing runs on its server, so nothing can be run against it: every example of
https://platform.claude.com/docs/en/build-with-claude/context-editing that configures
``clear_tool_uses_20250919`` is written out below as a test (basic usage, advanced configuration,
combining strategies, the response's ``applied_edits``, token counting, the memory tool), with
sessions built so that the documented numbers come out exactly. LangChain's differential test is
tests/properties/test_parity_langchain_context_editing.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pydantic
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from harness.core import Context, ContextOverflow, Message, Text, ToolResult, ToolUse, count_tokens, tokens_of
from strategies import create
from strategies.base import CannotReduce
from strategies.clear_tool_uses import (
    ANTHROPIC_PLACEHOLDER,
    LANGCHAIN_PLACEHOLDER,
    AppliedEdit,
    ClearToolUses,
    LangChainClearToolUses,
    _ContextEditing,
)
from strategies.split import is_pinned
from strategies.testing import (
    clear_tool_uses_params,
    histories,
    langchain_clear_tool_uses_params,
    well_formed,
)

EDITOR = "str_replace_based_edit_tool"


def words(n: int) -> str:
    """A text of exactly n tokens (cl100k_base)."""
    return " ".join(["word"] * n)


def call(i: int, tool: str = EDITOR) -> Message:
    return Message.build("assistant", [Text(f"step {i}"), ToolUse(f"toolu_{i:02d}", tool, {"path": f"calc{i}.py"})])


def result(i: int, n_tokens: int) -> Message:
    return Message.build("user", [ToolResult(f"toolu_{i:02d}", "success", words(n_tokens))])


def session(
    sizes: Sequence[int], tools: Sequence[str] | None = None, task: str = "Continue our conversation..."
) -> list[Message]:
    """A task, then one call and its result per size (the i-th result has ``sizes[i]`` tokens)."""
    tools = tools or [EDITOR] * len(sizes)
    out = [Message.user(task, kind="task")]
    for i, (n, tool) in enumerate(zip(sizes, tools, strict=True)):
        out += [call(i, tool), result(i, n)]
    return out


def context_at(history: list[Message], prompt_tokens: int) -> Context:
    """A context over ``history`` whose prompt (system prompt and tools included) is exactly
    ``prompt_tokens``."""
    overhead = prompt_tokens - tokens_of(history)
    assert overhead >= 0
    return Context(history, prompt_overhead=overhead)


def cleared_ids(window: Sequence[Message], placeholder: str = ANTHROPIC_PLACEHOLDER) -> list[str]:
    return [b.tool_use_id for m in window for b in m.blocks if isinstance(b, ToolResult) and b.content == placeholder]


def frees(n_tokens: int, placeholder: str = ANTHROPIC_PLACEHOLDER) -> int:
    """What clearing a result of ``n_tokens`` tokens frees."""
    return n_tokens - count_tokens(placeholder)


def edit(ctx: Context, name: str = "clear_tool_uses", /, **params: Any) -> _ContextEditing:
    strategy = create(name, **params)
    assert isinstance(strategy, _ContextEditing)
    strategy.before_call(ctx)
    return strategy


# Anthropic: the documented examples ------------------------------------------------------------------


def test_basic_usage_takes_every_default() -> None:
    """``{"type": "clear_tool_uses_20250919"}`` alone: trigger 100,000 input tokens, keep 3 tool uses,
    no clear_at_least, no excluded tool, inputs kept (the docs' configuration table)."""
    p = create("clear_tool_uses").params
    assert p.model_dump() == {
        "trigger": {"type": "input_tokens", "value": 100_000},
        "keep": {"type": "tool_uses", "value": 3},
        "clear_at_least": None,
        "exclude_tools": (),
        "clear_tool_inputs": False,
    }


def test_basic_usage_clears_once_the_prompt_exceeds_100k_keeping_the_newest_3() -> None:
    history = session([1000] * 6)
    ctx = context_at(history, 100_000)  # not above the trigger: nothing is cleared
    edit(ctx)
    assert list(ctx.messages) == history
    ctx = context_at(history, 100_001)
    strategy = edit(ctx)
    assert cleared_ids(ctx.messages) == ["toolu_00", "toolu_01", "toolu_02"]
    assert all(ctx.messages[j] is history[j] for j in range(7, 13))  # the newest 3 tool uses untouched
    assert [m.blocks[1] for m in ctx.messages[1:7:2]] == [m.blocks[1] for m in history[1:7:2]]  # calls kept
    assert strategy.last_edit == AppliedEdit(3, 3 * frees(1000))


def test_advanced_configuration_clears_the_editor_but_never_web_search() -> None:
    """The docs' advanced example: trigger 30000, keep 3, clear_at_least 5000, exclude web_search."""
    params: dict[str, Any] = {
        "trigger": {"type": "input_tokens", "value": 30000},
        "keep": {"type": "tool_uses", "value": 3},
        "clear_at_least": {"type": "input_tokens", "value": 5000},
        "exclude_tools": ["web_search"],
    }
    tools = [EDITOR, "web_search"] * 3
    history = session([4000] * 6, tools, task="Create a simple command line calculator app using Python")
    ctx = context_at(history, 30001)
    strategy = edit(ctx, **params)
    # Tool uses 3-5 are the newest 3; of 0-2 the web_search one (1) is excluded.
    assert cleared_ids(ctx.messages) == ["toolu_00", "toolu_02"]
    assert strategy.last_edit == AppliedEdit(2, 2 * frees(4000))
    assert 2 * frees(4000) >= 5000


def test_advanced_configuration_does_not_clear_less_than_clear_at_least() -> None:
    """"If the API can't clear at least the specified amount, the strategy will not be applied":
    clearing 2 results of 2000 tokens frees 3990 < 5000, so the prompt goes out whole; one turn later
    a third editor result is due and the edit (5985 tokens) applies."""
    params: dict[str, Any] = {
        "trigger": {"type": "input_tokens", "value": 30000},
        "clear_at_least": {"type": "input_tokens", "value": 5000},
        "exclude_tools": ["web_search"],
    }
    tools = [EDITOR, "web_search"] * 4
    history = session([2000] * 8, tools)
    ctx = context_at(history[:13], 30001)  # tool uses 0-5
    strategy = edit(ctx, **params)
    assert list(ctx.messages) == history[:13] and strategy.last_edit is None
    ctx.messages.extend(history[13:])  # tool uses 6 and 7: 0, 2 and 4 are now due
    strategy.before_call(ctx)
    assert cleared_ids(ctx.messages) == ["toolu_00", "toolu_02", "toolu_04"]
    assert strategy.last_edit == AppliedEdit(3, 3 * frees(2000))


def test_combining_strategies_tool_result_part() -> None:
    """The tool-result half of the "combining strategies" example: trigger 50000, keep 5 (thinking
    block clearing is not modelled)."""
    params: dict[str, Any] = {
        "trigger": {"type": "input_tokens", "value": 50000},
        "keep": {"type": "tool_uses", "value": 5},
    }
    history = session([3000] * 8)
    ctx = context_at(history, 50000)
    edit(ctx, **params)
    assert cleared_ids(ctx.messages) == []
    ctx = context_at(history, 50001)
    edit(ctx, **params)
    assert cleared_ids(ctx.messages) == ["toolu_00", "toolu_01", "toolu_02"]


def test_response_example_eight_tool_uses_and_50000_tokens_cleared() -> None:
    """The response example's ``applied_edits``: ``cleared_tool_uses: 8, cleared_input_tokens:
    50000`` (defaults: 11 tool uses, the newest 3 kept, 8 results of 6,255 tokens cleared)."""
    history = session([6255] * 8 + [200] * 3)
    ctx = context_at(history, 120_000)
    strategy = edit(ctx)
    assert strategy.last_edit == AppliedEdit(cleared_tool_uses=8, cleared_input_tokens=50000)
    assert ctx.prompt_tokens == 120_000 - 50000


def test_token_counting_example_70000_to_25000() -> None:
    """The token-counting example: trigger 30000, keep 5; ``original_input_tokens`` 70000 and
    ``input_tokens`` 25000 after clearing."""
    params: dict[str, Any] = {
        "trigger": {"type": "input_tokens", "value": 30000},
        "keep": {"type": "tool_uses", "value": 5},
    }
    history = session([9005] * 5 + [1000] * 5)
    ctx = context_at(history, 70000)
    strategy = edit(ctx, **params)
    assert ctx.prompt_tokens == 25000
    assert strategy.last_edit is not None and strategy.last_edit.cleared_input_tokens == 70000 - 25000


def test_memory_tool_example_clears_memory_results_like_any_other() -> None:
    """The memory-tool example uses the defaults: nothing exempts the memory tool (the warning Claude
    gets near the threshold is not modelled); excluding it is up to ``exclude_tools``."""
    tools = ["memory", EDITOR, "memory", EDITOR, EDITOR]
    history = session([500] * 5, tools)
    ctx = context_at(history, 100_001)
    edit(ctx)
    assert cleared_ids(ctx.messages) == ["toolu_00", "toolu_01"]
    ctx = context_at(history, 100_001)
    edit(ctx, exclude_tools=["memory"])
    assert cleared_ids(ctx.messages) == ["toolu_01"]


# Anthropic: the configuration table, one row at a time -----------------------------------------------


def test_trigger_in_tool_uses_fires_above_the_count() -> None:
    params: dict[str, Any] = {"trigger": {"type": "tool_uses", "value": 5}, "keep": {"type": "tool_uses", "value": 1}}
    history = session([10] * 6)
    ctx = Context(history[:11])  # 5 tool uses
    strategy = edit(ctx, **params)
    assert cleared_ids(ctx.messages) == []
    ctx.messages.extend(history[11:])  # the 6th
    strategy.before_call(ctx)
    assert cleared_ids(ctx.messages) == [f"toolu_{i:02d}" for i in range(5)]


def test_keep_counts_tool_uses_not_messages() -> None:
    """Keep counts tool use/result pairs: a message answering 3 calls holds 3 of them."""
    history = [
        Message.user("task", kind="task"),
        Message.build("assistant", [ToolUse(f"t{i}", "grep", {"q": str(i)}) for i in range(3)]),
        Message.build("user", [ToolResult(f"t{i}", "success", words(50)) for i in range(3)]),
        call(3),
        result(3, 50),
    ]
    ctx = Context(history)
    edit(ctx, trigger={"type": "input_tokens", "value": 0}, keep={"type": "tool_uses", "value": 2})
    assert cleared_ids(ctx.messages) == ["t0", "t1"]
    assert ctx.messages[2].blocks[2] == history[2].blocks[2] and ctx.messages[2].kind == "placeholder"


def test_keep_zero_clears_every_answered_tool_use() -> None:
    history = session([40] * 3)
    ctx = Context(history)
    edit(ctx, trigger={"type": "input_tokens", "value": 0}, keep={"type": "tool_uses", "value": 0})
    assert cleared_ids(ctx.messages) == ["toolu_00", "toolu_01", "toolu_02"]


def test_clear_tool_inputs_false_keeps_the_calls_visible() -> None:
    history = session([40] * 4)
    ctx = Context(history)
    edit(ctx, trigger={"type": "input_tokens", "value": 0})
    assert [ctx.messages[i] for i in (1, 3, 5, 7)] == [history[i] for i in (1, 3, 5, 7)]


def test_clear_tool_inputs_true_clears_the_parameters_of_cleared_calls_only() -> None:
    history = session([40] * 4)
    ctx = Context(history)
    edit(ctx, trigger={"type": "input_tokens", "value": 0}, clear_tool_inputs=True)
    assert ctx.messages[1].blocks == (Text("step 0"), ToolUse("toolu_00", EDITOR, {}))
    assert ctx.messages[1].kind == "action"
    assert ctx.messages[3] is history[3]
    assert ctx.messages[3].blocks[1] == ToolUse("toolu_01", EDITOR, {"path": "calc1.py"})


def test_clear_tool_inputs_as_a_list_names_the_tools() -> None:
    """The SDK type takes a list too: the inputs of those tools' cleared calls are cleared."""
    history = session([40] * 4, ["grep", EDITOR, "grep", EDITOR])
    ctx = Context(history)
    edit(ctx, trigger={"type": "input_tokens", "value": 0}, keep={"type": "tool_uses", "value": 1},
         clear_tool_inputs=["grep"])
    assert cleared_ids(ctx.messages) == ["toolu_00", "toolu_01", "toolu_02"]
    assert [ctx.messages[i].blocks[1].input for i in (1, 3, 5)] == [{}, {"path": "calc1.py"}, {}]  # type: ignore[union-attr]


def test_excluded_tools_keep_uses_and_results_and_still_count_in_keep() -> None:
    """Our reading of two unstated points: an excluded tool's pair counts among the newest ``keep``."""
    history = session([40] * 4, [EDITOR, EDITOR, "web_search", "web_search"])
    ctx = Context(history)
    edit(ctx, trigger={"type": "input_tokens", "value": 0}, keep={"type": "tool_uses", "value": 2},
         exclude_tools=["web_search"], clear_tool_inputs=True)
    assert cleared_ids(ctx.messages) == ["toolu_00", "toolu_01"]


def test_placeholder_and_kind() -> None:
    history = session([40, 40])
    ctx = Context(history)
    edit(ctx, trigger={"type": "input_tokens", "value": 0}, keep={"type": "tool_uses", "value": 1})
    assert ctx.messages[2].blocks == (ToolResult("toolu_00", "success", ANTHROPIC_PLACEHOLDER),)
    assert ctx.messages[2].kind == "placeholder" and ctx.messages[2].role == "user"


def test_error_results_keep_their_status_when_cleared() -> None:
    failed = Message.build("user", [ToolResult("toolu_00", "error", "boom")])
    history = [Message.user("t", kind="task"), call(0), failed]
    ctx = Context(history)
    edit(ctx, trigger={"type": "input_tokens", "value": 0}, keep={"type": "tool_uses", "value": 0})
    assert ctx.messages[2].blocks == (ToolResult("toolu_00", "error", ANTHROPIC_PLACEHOLDER),)


@pytest.mark.parametrize(
    "bad",
    [
        {"trigger": {"type": "input_tokens", "value": -1}},
        {"trigger": {"type": "messages", "value": 3}},
        {"trigger": {"value": 3}},
        {"trigger": 100_000},
        {"keep": {"type": "input_tokens", "value": 3}},
        {"keep": {"type": "tool_uses", "value": -1}},
        {"keep": {"type": "tool_uses", "value": 2.5}},
        {"clear_at_least": {"type": "tool_uses", "value": 3}},
        {"clear_at_least": 5000},
        {"exclude_tools": "web_search"},
        {"clear_tool_inputs": 1},
        {"clear_tool_inputs": "web_search"},
        {"type": "clear_tool_uses_20250919"},
        {"placeholder": "x"},
    ],
)
def test_rejected_params(bad: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        create("clear_tool_uses", **bad)


def test_accepted_param_shapes() -> None:
    p = create(
        "clear_tool_uses",
        trigger={"type": "tool_uses", "value": 0},
        clear_at_least={"type": "input_tokens", "value": 0},
        exclude_tools=("a", "b"),
        clear_tool_inputs=["a"],
    ).params
    assert p.exclude_tools == ("a", "b") and p.clear_tool_inputs == ("a",)  # type: ignore[attr-defined]


# LangChain ---------------------------------------------------------------------------------------------


def test_langchain_defaults() -> None:
    assert create("langchain_clear_tool_uses").params.model_dump() == {
        "trigger": 100_000,
        "clear_at_least": 0,
        "keep": 3,
        "clear_tool_inputs": False,
        "exclude_tools": (),
        "placeholder": "[cleared]",
        "token_count_method": "model",
    }


def test_langchain_fires_only_when_strictly_greater() -> None:
    history = session([500] * 5)
    ctx = context_at(history, 100_000)
    edit(ctx, "langchain_clear_tool_uses")
    assert list(ctx.messages) == history
    ctx = context_at(history, 100_001)
    edit(ctx, "langchain_clear_tool_uses")
    assert cleared_ids(ctx.messages, LANGCHAIN_PLACEHOLDER) == ["toolu_00", "toolu_01"]
    assert ctx.messages[2].blocks == (ToolResult("toolu_00", "success", "[cleared]"),)


def test_langchain_clear_at_least_stops_clearing_early() -> None:
    """The opposite reading from Anthropic's: clearing stops once that many tokens are freed."""
    history = session([1000] * 6)
    ctx = Context(history)
    edit(ctx, "langchain_clear_tool_uses", trigger=0, clear_at_least=frees(1000, "[cleared]") + 1)
    assert cleared_ids(ctx.messages, LANGCHAIN_PLACEHOLDER) == ["toolu_00", "toolu_01"]
    ctx = Context(history)
    edit(ctx, "langchain_clear_tool_uses", trigger=0, clear_at_least=frees(1000, "[cleared]"))
    assert cleared_ids(ctx.messages, LANGCHAIN_PLACEHOLDER) == ["toolu_00"]


def test_langchain_clear_tool_inputs_exclusions_and_placeholder() -> None:
    history = session([40] * 5, [EDITOR, "web_search", EDITOR, EDITOR, EDITOR])
    ctx = Context(history)
    edit(ctx, "langchain_clear_tool_uses", trigger=0, keep=2, exclude_tools=["web_search"], clear_tool_inputs=True,
         placeholder="(gone)")
    assert cleared_ids(ctx.messages, "(gone)") == ["toolu_00", "toolu_02"]
    assert ctx.messages[3] is history[3] and ctx.messages[4] is history[4]
    assert [ctx.messages[i].blocks[1].input for i in (1, 5, 7)] == [{}, {}, {"path": "calc3.py"}]  # type: ignore[union-attr]


def test_langchain_approximate_counts_messages_only() -> None:
    """LangChain's default estimate ignores the system prompt and tools: a large overhead does not
    fire it."""
    history = session([40] * 4)
    ctx = Context(history, prompt_overhead=10**6)
    edit(ctx, "langchain_clear_tool_uses", trigger=10_000, token_count_method="approximate")
    assert list(ctx.messages) == history
    edit(ctx, "langchain_clear_tool_uses", trigger=10_000)
    assert cleared_ids(ctx.messages, LANGCHAIN_PLACEHOLDER) == ["toolu_00"]


@pytest.mark.parametrize(
    "bad",
    [{"trigger": -1}, {"keep": -1}, {"clear_at_least": -1}, {"trigger": "100"}, {"keep": True},
     {"token_count_method": "exact"}, {"placeholder": 3}, {"exclude_tools": "grep"}, {"clear_tool_inputs": 1}],
)
def test_langchain_rejected_params(bad: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        create("langchain_clear_tool_uses", **bad)


# Both: view versus history, caching, reduce -------------------------------------------------------------

NAMES = ("clear_tool_uses", "langchain_clear_tool_uses")
FIRE_ALWAYS: dict[str, dict[str, Any]] = {"clear_tool_uses": {"trigger": {"type": "input_tokens", "value": 0},
                                   "keep": {"type": "tool_uses", "value": 1}},
               "langchain_clear_tool_uses": {"trigger": 0, "keep": 1}}


@pytest.mark.parametrize("name", NAMES)
def test_history_stays_whole_and_the_view_is_recomputed_each_call(name: str) -> None:
    """"Your client application maintains the full, unmodified conversation history": the strategy
    keeps the originals and edits only what the window (the request) shows."""
    history = session([60] * 4)
    ctx = Context(history[:3])
    strategy = edit(ctx, name, **FIRE_ALWAYS[name])
    assert list(ctx.messages) == history[:3]  # one tool use, kept
    for n in (5, 7, 9):
        ctx.messages.extend(history[len(ctx.messages):n])
        strategy.before_call(ctx)
        assert strategy._history == history[:n]
        assert len(cleared_ids(ctx.messages, strategy.placeholder_text)) == n // 2 - 1
    assert ctx.removed_count == 0 and ctx.tokens == tokens_of(ctx.messages)


@pytest.mark.parametrize("name", NAMES)
def test_an_unchanged_prefix_stays_the_same_objects(name: str) -> None:
    """Only newly cleared messages are written, so the cached prefix before them survives."""
    history = session([60] * 4)
    ctx = Context(history[:7])
    strategy = edit(ctx, name, **FIRE_ALWAYS[name])
    before = list(ctx.messages)
    ctx.messages.take_touched()
    ctx.messages.extend(history[7:])
    strategy.before_call(ctx)
    assert ctx.messages.take_touched() == 6  # the result of tool use 2, newly cleared
    assert all(a is b for a, b in zip(before[:6], ctx.messages[:6], strict=True))


@pytest.mark.parametrize("name", NAMES)
def test_reduce_always_raises_and_leaves_the_window(name: str) -> None:
    history = session([60] * 4)
    ctx = Context(history, window_tokens=50)
    strategy = edit(ctx, name, **FIRE_ALWAYS[name])
    before, tokens = list(ctx.messages), ctx.tokens
    overflow = ContextOverflow(ctx.tokens, ctx.window_tokens)
    with pytest.raises(CannotReduce) as e:
        strategy.reduce(ctx, overflow)
    assert e.value.__cause__ is overflow
    with pytest.raises(CannotReduce):
        strategy.reduce(ctx)
    assert list(ctx.messages) == before and ctx.tokens == tokens and ctx.removed_count == 0


@pytest.mark.parametrize("name", NAMES)
def test_a_foreign_edit_is_kept_and_the_view_recomputed(name: str) -> None:
    """If another stage changes the window (here: a message replaced, then the front dropped), the
    window read back through our edits becomes the history; our edits are not undone or doubled."""
    history = session([60] * 5)
    ctx = Context(history[:7])
    strategy = edit(ctx, name, **FIRE_ALWAYS[name])
    foreign = Message.build("user", [ToolResult("toolu_02", "success", "masked elsewhere")])
    ctx.messages[6] = foreign
    ctx.messages.extend(history[7:9])
    strategy.before_call(ctx)
    assert strategy._history == [*history[:6], foreign, *history[7:9]]
    assert ctx.messages[6].blocks[0].content in ("masked elsewhere", strategy.placeholder_text)  # type: ignore[union-attr]
    assert cleared_ids(ctx.messages, strategy.placeholder_text)[:2] == ["toolu_00", "toolu_01"]
    del ctx.messages[:3]
    ctx.messages.extend(history[9:])
    strategy.before_call(ctx)
    assert strategy._history == [*history[3:6], foreign, *history[7:]]
    assert ctx.tokens == tokens_of(ctx.messages) and well_formed(ctx.messages)


# Section-3 invariants on replayed sessions ----------------------------------------------------------------


def configs() -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    return st.one_of(
        clear_tool_uses_params().map(lambda p: ("clear_tool_uses", p)),
        langchain_clear_tool_uses_params().map(lambda p: ("langchain_clear_tool_uses", p)),
    )


def call_points(history: Sequence[Message]) -> list[int]:
    points = [n for n in range(1, len(history) + 1) if history[n - 1].role == "user"]
    return points if points and points[-1] == len(history) else [*points, len(history)]


def answered(history: Sequence[Message]) -> list[tuple[int, int, str]]:
    """(message, block, tool id) of every result that answers a call, in order."""
    calls = {b.id for m in history if m.role == "assistant" for b in m.blocks if isinstance(b, ToolUse)}
    return [(j, k, b.tool_use_id) for j, m in enumerate(history) if m.role == "user"
            for k, b in enumerate(m.blocks) if isinstance(b, ToolResult) and b.tool_use_id in calls]


def tool_name(history: Sequence[Message], tool_id: str) -> str:
    return next(b.name for m in history for b in m.blocks if isinstance(b, ToolUse) and b.id == tool_id)


def nothing_more_to_clear(strategy: _ContextEditing, history: list[Message], window: Sequence[Message]) -> bool:
    """The documented reason the view may stay above the trigger: every result older than the newest
    ``keep`` is cleared, excluded or protected (LangChain: or clearing stopped at clear_at_least)."""
    p: Any = strategy.params
    keep = p.keep.value if isinstance(strategy, ClearToolUses) else p.keep
    if isinstance(strategy, LangChainClearToolUses) and strategy._stopped:
        return True
    results = answered(history)
    for j, k, tool_id in results[: max(0, len(results) - keep)]:
        shown = window[j].blocks[k]
        assert isinstance(shown, ToolResult)
        if not (shown.content == strategy.placeholder_text or tool_name(history, tool_id) in p.exclude_tools
                or is_pinned(history, j)):
            return False
    return True


def prompt_count(strategy: _ContextEditing, ctx: Context) -> int:
    """The count the trigger compares, on the view."""
    p: Any = strategy.params
    if isinstance(strategy, ClearToolUses):
        assert p.trigger.type == "input_tokens"
        return ctx.prompt_tokens
    if p.token_count_method == "model":
        return ctx.prompt_tokens
    return sum(strategy._cost(i, m) for i, m in enumerate(ctx.messages))


def trigger_value(strategy: _ContextEditing) -> int:
    p: Any = strategy.params
    return p.trigger.value if isinstance(strategy, ClearToolUses) else p.trigger


@given(configs(), histories(max_turns=8, pinned=True), st.sampled_from((0, 0, 100, 2000)))
def test_section_3_invariants_on_a_replayed_session(
    config: tuple[str, dict[str, Any]], history: list[Message], overhead: int
) -> None:
    """At every call of a session: pairs and pins intact, nothing shown that the history lacks, the
    view below the trigger after an edit or nothing left to clear, an open call never cleared, and a
    cleared result never shown whole again; reduce raises with the window unchanged."""
    name, params = config
    strategy = create(name, **params)
    assert isinstance(strategy, _ContextEditing)
    ctx = Context(prompt_overhead=overhead)
    placeholder = strategy.placeholder_text
    ever_cleared: set[str] = set()
    appended = 0
    for point in call_points(history):
        for m in history[appended:point]:
            ctx.messages.append(strategy.on_append(ctx, m))
        appended = point
        strategy.before_call(ctx)
        window, prefix = list(ctx.messages), history[:point]
        # G1, G2, G5 and the shape: same length, only results and call inputs rewritten.
        assert len(window) == point and well_formed(window)
        assert ctx.tokens == tokens_of(window) and ctx.removed_count == 0
        for i, (shown, original) in enumerate(zip(window, prefix, strict=True)):
            if is_pinned(prefix, i):
                assert shown is original
            if shown is original:
                continue
            assert shown.role == original.role and shown.pinned == original.pinned
            for x, y in zip(shown.blocks, original.blocks, strict=True):
                if isinstance(y, ToolResult):
                    assert isinstance(x, ToolResult) and (x.tool_use_id, x.status) == (y.tool_use_id, y.status)
                    assert x.content in (y.content, placeholder)
                elif isinstance(y, ToolUse):
                    assert isinstance(x, ToolUse) and (x.id, x.name) == (y.id, y.name) and x.input in (y.input, {})
                else:
                    assert x == y
        # An open call (the last message's calls, unanswered) is never cleared.
        if window[-1].role == "assistant":
            assert window[-1] is prefix[-1]
        # A cleared result is never shown whole again under its id.
        now = {b.tool_use_id for m in window for b in m.blocks
               if isinstance(b, ToolResult) and b.content == placeholder and m.kind == "placeholder"}
        assert ever_cleared <= now
        ever_cleared |= now
        # After an edit: below the trigger, or nothing more this strategy may clear.
        if strategy.last_edit is not None and not (
            isinstance(strategy, ClearToolUses) and params["trigger"]["type"] == "tool_uses"
        ):
            below = prompt_count(strategy, ctx) <= trigger_value(strategy)
            event(f"{name}: after an edit the view is {'below' if below else 'still above'} the trigger")
            assert below or nothing_more_to_clear(strategy, prefix, window)
        if isinstance(strategy, ClearToolUses) and strategy.last_edit is not None and params["clear_at_least"]:
            assert strategy.last_edit.cleared_input_tokens >= params["clear_at_least"]["value"]
    event(f"{name}: results cleared by the end: {'some' if ever_cleared else 'none'}")
    before = list(ctx.messages)
    strategy.before_call(ctx)  # G8: nothing new, nothing changes
    assert all(a is b for a, b in zip(before, ctx.messages, strict=True))
    with pytest.raises(CannotReduce):
        strategy.reduce(ctx, ContextOverflow(ctx.tokens, ctx.window_tokens))
    assert list(ctx.messages) == before


def test_clear_at_least_is_met_by_exactly_that_many_tokens() -> None:
    history = session([500] * 4)
    least = {"type": "input_tokens", "value": frees(500)}
    ctx = Context(history)
    edit(ctx, trigger={"type": "input_tokens", "value": 0}, clear_at_least=least)
    assert cleared_ids(ctx.messages) == ["toolu_00"]
    ctx = Context(history)
    edit(ctx, trigger={"type": "input_tokens", "value": 0}, clear_at_least={**least, "value": frees(500) + 1})
    assert cleared_ids(ctx.messages) == []
