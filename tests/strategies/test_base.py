"""The strategy registry, params validation, CannotReduce causes and the R7 proactive trigger."""

from __future__ import annotations

import pydantic
import pytest

import strategies
from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, ToolResult, ToolUse
from strategies import base
from strategies.base import CannotReduce, ContextStrategy, ProactiveParams, StrategyParams, create, names, register
from strategies.testing import FakeSummarizer, SummarizerFailed
from tests.oracles import BUILTIN_STRATEGIES

ALL_NAMES = BUILTIN_STRATEGIES


def window(n_turns: int = 4, size: int = 200) -> list[Message]:
    out = [Message.user("the task", kind="task")]
    for i in range(n_turns):
        out.append(Message.build("assistant", [ToolUse(f"t{i}", "tool", {"i": i})]))
        out.append(Message.build("user", [ToolResult(f"t{i}", "success", f"output {i} " * size)]))
    return out


# Registry ---------------------------------------------------------------------------------------


def test_names_are_the_ten_builtins_sorted() -> None:
    assert names() == ALL_NAMES
    assert strategies.names() == ALL_NAMES


@pytest.mark.parametrize("name", ALL_NAMES)
def test_registered_class_name_matches(name: str) -> None:
    cls = strategies.get(name)
    assert cls.name == name
    assert issubclass(cls, ContextStrategy)


def test_create_returns_fresh_instances_with_params() -> None:
    a = create("sliding_window", window_size=7)
    b = create("sliding_window", window_size=7)
    assert a is not b
    assert a.params.window_size == 7  # type: ignore[attr-defined]
    assert type(a.params).__name__ == "SlidingWindowParams"


def test_create_unknown_name_raises_key_error_listing_names() -> None:
    with pytest.raises(KeyError) as info:
        create("no_such_strategy")
    msg = str(info.value)
    assert "no_such_strategy" in msg
    assert ", ".join(ALL_NAMES) in msg


def test_create_unknown_param_raises_validation_error_naming_field() -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        create("sliding_window", window_sizes=3)
    assert [e["loc"] for e in info.value.errors()] == [("window_sizes",)]
    assert info.value.errors()[0]["type"] == "extra_forbidden"


def test_create_bad_param_value_raises_validation_error_naming_field() -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        create("summarize", preserve_recent_messages=-1)
    assert [e["loc"] for e in info.value.errors()] == [("preserve_recent_messages",)]


@pytest.mark.parametrize("name", ["unbounded", "drop_all"])
def test_strategies_without_params_reject_any_param(name: str) -> None:
    with pytest.raises(pydantic.ValidationError):
        create(name, anything=1)


def test_params_are_frozen() -> None:
    s = create("sliding_window")
    with pytest.raises(pydantic.ValidationError):
        s.params.window_size = 3  # type: ignore[attr-defined]


def test_register_name_twice_raises_value_error() -> None:
    before = dict(base._REGISTRY._classes)

    class Again(ContextStrategy):
        def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
            raise CannotReduce("x")

    with pytest.raises(ValueError, match="sliding_window"):
        register("sliding_window")(Again)
    assert dict(base._REGISTRY._classes) == before
    assert Again.name == ""


def test_register_sets_name_and_create_uses_params(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base._REGISTRY, "_classes", dict(base._REGISTRY._classes))

    class MyParams(StrategyParams):
        level: int = 1

    @register("my_test_strategy")
    class Mine(ContextStrategy):
        Params = MyParams

        def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
            raise CannotReduce("never")

    assert Mine.name == "my_test_strategy"
    s = create("my_test_strategy", level=3)
    assert isinstance(s, Mine) and s.params == MyParams(level=3)
    with pytest.raises(pydantic.ValidationError):
        create("my_test_strategy", other=1)


def test_constructor_rejects_params_of_another_strategy() -> None:
    cls = strategies.get("sliding_window")
    with pytest.raises(TypeError):
        cls(strategies.get("summarize").Params())


def test_default_hooks_change_nothing() -> None:
    s = create("unbounded")
    ctx = Context(window())
    before = list(ctx.messages)
    m = Message.user("next")
    assert s.on_append(ctx, m) is m
    s.apply(ctx)
    s.before_call(ctx)
    assert list(ctx.messages) == before and ctx.removed_count == 0
    assert s.tools == ()


# CannotReduce causes ----------------------------------------------------------------------------


def test_cannot_reduce_caused_by_overflow_when_no_underlying_error() -> None:
    ctx = Context(window())
    overflow = ContextOverflow(10, 5)
    with pytest.raises(CannotReduce) as info:
        create("unbounded").reduce(ctx, overflow)
    assert info.value.__cause__ is overflow
    assert str(info.value) == "unbounded keeps everything"


def test_cannot_reduce_caused_by_overflow_for_sliding_window() -> None:
    ctx = Context([Message.user("only")])
    overflow = ContextOverflow(10, 5)
    with pytest.raises(CannotReduce) as info:
        create("sliding_window", window_size=0, pin_first=1).reduce(ctx, overflow)
    assert info.value.__cause__ is overflow


def test_cannot_reduce_caused_by_summarizer_error() -> None:
    ctx = Context(window(), summarizer=FakeSummarizer(mode="fail"))
    overflow = ContextOverflow(10, 5)
    with pytest.raises(CannotReduce) as info:
        create("summarize", preserve_recent_messages=0).reduce(ctx, overflow)
    assert isinstance(info.value.__cause__, SummarizerFailed)


def test_cannot_reduce_without_overflow_has_no_cause_for_plain_failures() -> None:
    with pytest.raises(CannotReduce) as info:
        create("unbounded").reduce(Context(window()))
    assert info.value.__cause__ is None


# R7 proactive -----------------------------------------------------------------------------------


class Recorder(ContextStrategy):
    Params = ProactiveParams

    def __init__(self, params: ProactiveParams, error: Exception | None = None) -> None:
        super().__init__(params)
        self.calls: list[BaseException | None] = []
        self.error = error

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        self.calls.append(overflow)
        if self.error is not None:
            raise self.error


def test_proactive_params_defaults_and_ranges() -> None:
    p = ProactiveParams()
    assert (p.proactive, p.threshold) == (False, 0.7)
    assert ProactiveParams(threshold=1).threshold == 1
    for bad in (0, -0.1, 1.01, float("nan"), float("inf")):
        with pytest.raises(pydantic.ValidationError):
            ProactiveParams(threshold=bad)
    with pytest.raises(pydantic.ValidationError):
        ProactiveParams(proactive=1)


def test_r7_reduces_once_at_threshold() -> None:
    s = Recorder(ProactiveParams(proactive=True, threshold=0.5))
    ctx = Context([Message.user("x")], window_tokens=10)  # 5 tokens: utilization 0.5
    assert ctx.utilization() == 0.5
    s.before_call(ctx)
    assert s.calls == [None]


def test_r7_no_reduce_below_threshold() -> None:
    s = Recorder(ProactiveParams(proactive=True, threshold=0.6))
    s.before_call(Context([Message.user("x")], window_tokens=10))
    assert s.calls == []


def test_r7_no_reduce_when_not_proactive() -> None:
    s = Recorder(ProactiveParams(proactive=False, threshold=0.1))
    s.before_call(Context([Message.user("x")], window_tokens=10))
    assert s.calls == []


@pytest.mark.parametrize("error", [CannotReduce("no"), RuntimeError("boom"), SummarizerFailed("s")])
def test_r7_swallows_errors_and_calls_once(error: Exception) -> None:
    s = Recorder(ProactiveParams(proactive=True, threshold=0.1), error=error)
    ctx = Context([Message.user("x")], window_tokens=10)
    s.before_call(ctx)
    assert s.calls == [None]


def test_r7_proactive_sliding_window_trims_before_call() -> None:
    s = create("sliding_window", window_size=2, proactive=True, threshold=0.5)
    msgs = window(3)
    ctx = Context(msgs, window_tokens=msgs[0].tokens + 10)
    s.before_call(ctx)
    assert len(ctx.messages) < len(msgs)
    assert ctx.removed_count == len(msgs) - len(ctx.messages)
