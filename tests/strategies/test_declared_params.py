"""The property-test kit on a strategy it has no hand-written generator for: `params_for` derives one
from the strategy's declared ``Params`` model, and the kit's generated cases and invariant checks run
on it like on a built-in strategy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

import annotated_types
import pytest
from hypothesis import HealthCheck, find, given, settings
from pydantic import Field, StrictBool, StrictInt

from harness.core.context import Context
from harness.core.messages import Message
from strategies import base
from strategies.base import CannotReduce, ContextStrategy, StrategyParams, commit, create, register
from strategies.params import PositiveInt
from strategies.split import is_pinned
from strategies.testing import (
    Case,
    cases,
    check_case,
    check_invariants,
    configs,
    generated_names,
    histories,
    params_for,
)
from strategies.testing.params import FLAT_NAMES, Bounds, declared_params, derived_value

NAME = "declared_params_test_strategy"


class DropTurnsParams(StrategyParams):
    """One field of each kind the derivation reads, and one (a str) it leaves to its default."""

    turns: StrictInt = Field(1, ge=1, le=4)
    early: StrictBool = False
    threshold: float = Field(0.7, gt=0, le=1, allow_inf_nan=False)
    mode: Literal["drop", "refuse"] = "drop"
    min_messages: PositiveInt | None = None
    note: str = "left to its default"


class DropTurns(ContextStrategy):
    """``reduce`` drops up to ``turns`` of the oldest unpinned tool turns (a call and its results), or
    refuses in mode ``refuse`` or at ``min_messages`` messages or fewer; with ``early``, ``before_call``
    reduces once the window is ``threshold`` full."""

    Params = DropTurnsParams
    params: DropTurnsParams

    def before_call(self, ctx: Context) -> None:
        if self.params.early and ctx.utilization() >= self.params.threshold:
            try:
                self.reduce(ctx)
            except CannotReduce:  # proactive reduction is best effort
                pass

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        p = self.params
        if p.mode == "refuse" or (p.min_messages is not None and len(ctx.messages) <= p.min_messages):
            raise CannotReduce(f"refused ({p.mode}, min_messages={p.min_messages})") from overflow
        window = list(ctx.messages)
        for _ in range(p.turns):
            window, dropped = _without_oldest_tool_turn(window)
            if not dropped:
                break
        if len(window) == len(ctx.messages):
            raise CannotReduce("no unpinned tool turn left") from overflow
        commit(ctx, window)


def _without_oldest_tool_turn(window: list[Message]) -> tuple[list[Message], bool]:
    for i in range(len(window) - 1):
        call, answer = window[i], window[i + 1]
        if (call.role == "assistant" and call.has_use and answer.has_result
                and not is_pinned(window, i) and not is_pinned(window, i + 1)):
            return window[:i] + window[i + 2 :], True
    return window, False


class NeedsAPath(StrategyParams):
    """A required field of a type the derivation cannot draw."""

    path: str


class NeedsAPathStrategy(ContextStrategy):
    """Refuses every reduce; only its params matter here."""

    Params = NeedsAPath

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        raise CannotReduce("never") from overflow


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """`DropTurns` registered as `NAME` for one test (the registry is restored afterwards)."""
    monkeypatch.setattr(base._REGISTRY, "_classes", dict(base._REGISTRY._classes))
    monkeypatch.setattr(DropTurns, "name", DropTurns.name)
    register(NAME)(DropTurns)
    yield NAME


def test_a_registered_strategy_without_a_generator_is_generated(registered: str) -> None:
    assert registered in generated_names()
    assert registered not in FLAT_NAMES


def test_derived_params_validate_and_cover_each_field(registered: str) -> None:
    drawn = params_for(registered)

    @settings(max_examples=60, database=None)
    @given(drawn)
    def validates(params: dict[str, object]) -> None:
        parsed = DropTurnsParams.model_validate(params)
        assert 1 <= parsed.turns <= 4 and 0 < parsed.threshold <= 1
        assert parsed.min_messages is None or 1 <= parsed.min_messages <= 13
        assert "note" not in params

    validates()
    find(drawn, lambda p: p["mode"] == "refuse" and p["early"] and p["turns"] == 4)
    find(drawn, lambda p: p["mode"] == "drop" and p["min_messages"] is None)
    find(drawn, lambda p: isinstance(p["min_messages"], int) and not p["early"])


def test_the_kit_checks_the_invariants_on_its_generated_cases(registered: str) -> None:
    @settings(max_examples=40, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(cases(only=[registered]))
    def keeps_the_invariants(case: Case) -> None:
        assert case.name == registered
        check_case(case)

    keeps_the_invariants()


def test_an_instance_with_derived_params_passes_check_invariants(registered: str) -> None:
    @settings(max_examples=25, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(params_for(registered), histories(max_turns=5))
    def keeps_the_invariants(params: dict[str, object], history: list[Message]) -> None:
        check_invariants(create(registered, **params), history)

    keeps_the_invariants()


def test_configs_draws_it_among_the_built_in_strategies(registered: str) -> None:
    find(configs(), lambda config: config[0] == registered)


def test_a_required_field_it_cannot_derive_leaves_the_strategy_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base._REGISTRY, "_classes", dict(base._REGISTRY._classes))
    monkeypatch.setattr(NeedsAPathStrategy, "name", NeedsAPathStrategy.name)
    register("needs_a_path_test_strategy")(NeedsAPathStrategy)
    assert declared_params(NeedsAPath) is None
    assert "needs_a_path_test_strategy" not in generated_names()
    with pytest.raises(KeyError, match="needs_a_path_test_strategy"):
        params_for("needs_a_path_test_strategy")


def test_bounds_read_open_and_closed_constraints_nested_in_annotations() -> None:
    assert Bounds.of([annotated_types.Gt(2), annotated_types.Lt(5)]) == Bounds(2.0, True, 5.0, True)
    assert Bounds.of([Field(ge=1)]) == Bounds(1.0, False, None, False)
    assert Bounds.of([annotated_types.Interval(ge=0, le=3)]) == Bounds(0.0, False, 3.0, False)
    small = derived_value(Annotated[int, annotated_types.Gt(2), annotated_types.Lt(5)])
    assert small is not None
    assert find(small, lambda v: True) == 3 and find(small, lambda v: v >= 4) == 4
    assert derived_value(Annotated[int, annotated_types.Gt(2), annotated_types.Lt(3)]) is None
    assert derived_value(list[int]) is None
    assert derived_value(str | None) is None
