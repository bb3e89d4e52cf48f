"""The public property-test kit `strategies.testing` on context managers written the way a user would:
plain classes with the four hooks, no ctxbench base class."""

from __future__ import annotations

import pytest
from hypothesis import find, given

from harness.core.context import Context
from harness.core.messages import Message, Text, TextMeter, ToolResult, ToolUse
from strategies import CannotReduce, create
from strategies.split import is_pinned
from strategies.testing import (
    FakeSummarizer,
    InvariantViolation,
    Rewrite,
    StrategyLike,
    check_invariants,
    content,
    histories,
)


class DropOldestTurn:
    """A user's manager: ``reduce`` drops the oldest tool turn (a call and its results) that nothing
    pins; the other hooks leave the window alone."""

    def on_append(self, ctx: Context, msg: Message) -> Message:
        return msg

    def apply(self, ctx: Context) -> None:
        pass

    def before_call(self, ctx: Context) -> None:
        pass

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        window = list(ctx.messages)
        for i in range(len(window) - 1):
            call, answer = window[i], window[i + 1]
            if (call.role == "assistant" and call.has_use and answer.has_result
                    and not is_pinned(window, i) and not is_pinned(window, i + 1)):
                ctx.messages[:] = window[:i] + window[i + 2 :]
                ctx.removed_count += 2
                return
        raise CannotReduce("no unpinned tool turn left") from overflow


class DropOldestCall(DropOldestTurn):
    """Broken: drops the oldest unpinned tool call but keeps its results (an orphan result)."""

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        window = list(ctx.messages)
        for i, m in enumerate(window):
            if m.role == "assistant" and m.has_use and not is_pinned(window, i):
                ctx.messages[:] = window[:i] + window[i + 1 :]
                ctx.removed_count += 1
                return
        raise CannotReduce("no call left") from overflow


class DropFirstMessage(DropOldestTurn):
    """Broken: ``apply`` drops the first message even when it is pinned."""

    def apply(self, ctx: Context) -> None:
        if len(ctx.messages) > 1:
            ctx.messages[:] = list(ctx.messages)[1:]
            ctx.removed_count += 1


class ReduceThatDoesNothing(DropOldestTurn):
    """Broken: ``reduce`` returns without lowering the tokens."""

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        pass


class ClearOldOutputs(DropOldestTurn):
    """Replaces every tool output but the last with ``[cleared]`` (a content rewrite to declare)."""

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        window = list(ctx.messages)
        answers = [i for i, m in enumerate(window) if m.has_result and not is_pinned(window, i)][:-1]
        new = [
            Message.build(m.role, [ToolResult(b.tool_use_id, b.status, "[cleared]") if isinstance(b, ToolResult)
                                   else b for b in m.blocks], kind="placeholder") if i in answers else m
            for i, m in enumerate(window)
        ]
        if sum(m.tokens for m in new) >= ctx.tokens:
            raise CannotReduce("nothing to clear") from overflow
        ctx.messages[:] = new


def task() -> Message:
    return Message.build("user", [Text("Task: fix the failing test in module alpha.")], kind="task")


def turn(tool_id: str, size: int = 1200) -> list[Message]:
    call = Message.build("assistant", [Text("Running the tests now."), ToolUse(tool_id, "run_tests", {})])
    return [call, Message.build("user", [ToolResult(tool_id, "success", content(size, 0))])]


def tool_turns(history: list[Message]) -> int:
    return sum(1 for m in history if m.role == "assistant" and m.has_use)


# The README's example ------------------------------------------------------------------------------


@given(histories())
def test_my_manager_keeps_the_invariants(history: list[Message]) -> None:
    check_invariants(DropOldestTurn, history)


def test_a_plain_class_is_a_strategy_like() -> None:
    assert isinstance(DropOldestTurn(), StrategyLike)


def test_an_instance_is_copied_for_every_run() -> None:
    """An instance passes as well: each run gets its own deep copy, so runs do not share state."""
    manager = DropOldestTurn()
    check_invariants(manager, [task(), *turn("a"), *turn("b")])


# Broken managers fail, naming the invariant ---------------------------------------------------------


def test_a_manager_that_orphans_a_tool_result_fails_on_tool_pairs_with_a_small_example() -> None:
    """Dropping a call but keeping its results breaks G1; hypothesis shrinks to a short history."""
    seen: list[list[Message]] = []

    @given(histories())
    def test_broken_manager(history: list[Message]) -> None:
        seen.append(history)
        check_invariants(DropOldestCall, history)

    with pytest.raises(InvariantViolation) as failure:
        test_broken_manager()
    assert str(failure.value).startswith("G1 tool pairs: orphan result")
    assert failure.value.invariant == "G1 tool pairs"
    # hypothesis runs the shrunk counterexample last, before it re-raises
    assert tool_turns(seen[-1]) <= 2
    assert len(seen[-1]) <= 4


def test_find_gives_the_minimal_history_that_breaks_tool_pairs() -> None:
    def breaks_tool_pairs(history: list[Message]) -> bool:
        try:
            check_invariants(DropOldestCall, history, hooks=["reduce"])
        except InvariantViolation as e:
            return e.invariant == "G1 tool pairs"
        return False

    smallest = find(histories(), breaks_tool_pairs)
    assert tool_turns(smallest) == 1
    assert len(smallest) == 3  # the task, one call, its results


def test_a_manager_that_drops_a_pinned_message_fails_on_pins() -> None:
    pinned_task = Message.build("user", [Text("Task: keep me.")], kind="task", pinned=True)
    with pytest.raises(InvariantViolation, match=r"^G2 pins: the pinned message 0 is gone"):
        check_invariants(DropFirstMessage, [pinned_task, *turn("a"), *turn("b")])


def test_a_reduce_that_does_not_lower_the_tokens_fails_on_reduce() -> None:
    with pytest.raises(InvariantViolation, match=r"^G6 reduce: returned but tokens went (\d+) -> \1"):
        check_invariants(ReduceThatDoesNothing, [task(), *turn("a")])


def test_the_violation_shows_the_windows_compactly() -> None:
    with pytest.raises(InvariantViolation) as failure:
        check_invariants(DropOldestCall, [task(), *turn("a")], hooks=["reduce"])
    assert str(failure.value).splitlines()[1:] == [
        "  hook:   reduce",
        "  before: [u:task(T43), a:action(T22 Ua:run_tests), u:observation(Ra:s1200)]",
        "  after:  [u:task(T43), u:observation(Ra:s1200)]",
    ]


# Allowed rewrites -------------------------------------------------------------------------------------


def test_an_undeclared_placeholder_is_new_content_and_a_declared_one_is_allowed() -> None:
    history = [task(), *turn("a"), *turn("b"), *turn("c")]
    with pytest.raises(InvariantViolation, match=r"^G3 shape"):
        check_invariants(ClearOldOutputs, history)
    check_invariants(ClearOldOutputs, history, rewrites=[Rewrite.placeholder("[cleared]")])


def test_registered_strategies_bring_their_own_rewrites() -> None:
    """offload_contracts leaves stubs with its own preview length: found from its params."""
    history = [task(), *turn("a", 5000), *turn("b", 5000)]
    check_invariants(lambda: create("offload_contracts", preview_chars=40, offload_threshold_bytes=256), history)


def test_the_summarizer_may_fail_without_breaking_the_hooks() -> None:
    history = [task(), *turn("a"), *turn("b"), *turn("c")]
    for mode in ("ok", "fail", "empty", "huge"):
        fake = FakeSummarizer(mode=mode)  # type: ignore[arg-type]
        check_invariants(lambda: create("summarize", preserve_recent_messages=1, trigger_turns=1, keep_turns=1),
                         history, summarizer=fake)


def test_hooks_with_nothing_to_do_must_change_nothing() -> None:
    history = [task(), *turn("a"), *turn("b"), *turn("c")]
    check_invariants(lambda: create("sliding_window", window_size=40), history, idle=["apply"])
    with pytest.raises(InvariantViolation, match=r"^G8 nothing to do"):
        check_invariants(lambda: create("sliding_window", window_size=2), history, idle=["apply"])


def test_a_strands_manager_keeps_the_invariants() -> None:
    strands_managers = pytest.importorskip("strands.agent.conversation_manager")
    from strategies.testing import from_strands

    manager = strands_managers.SlidingWindowConversationManager(window_size=3, should_truncate_results=False)
    check_invariants(from_strands(manager), [task(), *turn("a"), *turn("b"), *turn("c")])


def test_a_stub_whose_call_names_a_fact_its_output_lacks_is_no_new_content() -> None:
    # The stub names the call it answers (docs/strategies.md 3.7); the call's argument holds a fact value the
    # output itself does not, and G4 takes that as the call's, not as new content.
    meter = TextMeter.for_facts({"bad_pod": "pod-q2kx"})
    history = [Message.build("user", [Text("find the bad pod")], kind="task", meter=meter),
               Message.build("assistant", [ToolUse("t1", "kubectl_logs", {"pod": "pod-q2kx"})], meter=meter),
               Message.build("user", [ToolResult("t1", "success", "INFO all good\n" * 400)], meter=meter)]
    check_invariants(create("offload_contracts"), history)
