"""Tool names spelled two ways: the mock model's ``name_variant`` calls (drawn only for a tool whose
name has a variant) and the tool player's ``normalize_tool_names`` switch (strands-agents' rule: a
name written with ``_`` runs the registered hyphenated tool; without the switch it is an unknown tool)."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scenarios
from harness.core.switches import Switches
from harness.core.tools import CATALOGUE, HYPHENATED_CATALOGUE
from harness.sim.clock import SimClock
from harness.sim.kernel import replay
from harness.sim.metrics import Tally
from harness.sim.model import (
    MALFORMED_SHARES,
    NAME_VARIANT_SHARE,
    MalformedKind,
    MockModel,
    Pointer,
    ToolCall,
    concrete_args,
    name_variant,
)
from harness.sim.profiles import profile
from harness.sim.tool_player import ToolPlayer
from harness.sim.view import Plan, Reader
from scenarios.base import SessionScript, Step
from tests.harness.scripts import crashloop_script


def hyphenated_script() -> SessionScript:
    """The crash-loop script with its logs step calling ``kubectl-logs``."""
    script = crashloop_script()
    steps = [s.model_copy(update={"tool": "kubectl-logs"}) if s.tool == "kubectl_logs" else s for s in script.steps]
    return script.model_copy(update={"steps": steps})


# The model ---------------------------------------------------------------------------------------------


def test_a_name_has_a_variant_only_with_a_hyphen_or_in_a_tool_list_mixing_conventions() -> None:
    assert name_variant("kubectl-logs", mixed_conventions=False) == "kubectl_logs"
    assert name_variant("kubectl-logs", mixed_conventions=True) == "kubectl_logs"
    assert name_variant("kubectl_get", mixed_conventions=False) is None
    assert name_variant("kubectl_get", mixed_conventions=True) == "kubectl-get"
    assert name_variant("bash", mixed_conventions=True) is None


def _model(script: SessionScript) -> MockModel:
    return MockModel(Plan.of(script), Reader(script), profile("frontier"), seed=script.seed, system_tokens=0)


def _kinds(model: MockModel, tool: str, args: dict[str, Any], n: int = 600) -> Counter[MalformedKind]:
    call = ToolCall(tool, args, "step")
    return Counter(model._malformed_kind(f"s{i}", i % 3, call) for i in range(n))


def _old_kind(model: MockModel, step_id: str, attempt: int, call: ToolCall) -> MalformedKind:
    """The kind as drawn before ``name_variant`` existed (`MALFORMED_SHARES` alone)."""
    draw, acc = model.u("kind", step_id, attempt), 0.0
    kind: MalformedKind = "text_only"
    for name, share in MALFORMED_SHARES:
        acc += share
        if draw < acc:
            kind = name
            break
    if kind == "wrong_type" and all(isinstance(v, str) for v in call.args.values()):
        kind = "missing_field"
    return kind


def test_the_model_draws_name_variants_only_for_a_tool_whose_name_has_one() -> None:
    args = {"pod": "pod-q2kx", "namespace": "shop-k3vq"}
    plain = _model(crashloop_script())
    assert not plain.mixed_conventions
    kinds = _kinds(plain, "kubectl_logs", args)
    assert "name_variant" not in kinds
    call = ToolCall("kubectl_logs", args, "step")
    assert all(plain._malformed_kind(f"s{i}", 0, call) == _old_kind(plain, f"s{i}", 0, call) for i in range(300))
    mixed = _model(hyphenated_script())
    assert mixed.mixed_conventions
    share = _kinds(mixed, "kubectl-logs", args)["name_variant"] / 600
    assert abs(share - NAME_VARIANT_SHARE) < 0.06
    assert _kinds(mixed, "kubectl_get", {"resource": "pods", "namespace": "x"})["name_variant"] > 0
    assert "name_variant" not in _kinds(mixed, "bash", {"command": "ls"})


def test_a_name_variant_call_keeps_its_arguments_and_swaps_the_name() -> None:
    model = _model(hyphenated_script())
    call = ToolCall("kubectl-logs", {"pod": "pod-q2kx", "namespace": "shop-k3vq"}, "step")
    decision = model._malformed(call, "name_variant", "thought", "fresh", [], "s2", 0)
    assert decision.malformed == "name_variant" and decision.call is not None
    assert decision.call.tool == "kubectl_logs" and decision.call.args == call.args


# The tool player ---------------------------------------------------------------------------------------


def _player(script: SessionScript, **switches: Any) -> tuple[ToolPlayer, Any, Tally, Step]:
    tally = Tally()
    player = ToolPlayer(seed=script.seed, switches=Switches(**switches), truth=script.fact_values(), tally=tally,
                        clock=SimClock())
    step = script.steps[1]
    agent = SimpleNamespace(pointer=Pointer(step), contract_failures=0, valid_attempts={}, timeouts={})
    return player, cast(Any, agent), tally, step


def _call(script: SessionScript, step: Step, tool: str) -> ToolCall:
    return ToolCall(tool, concrete_args(step, script.fact_values()), "step")


def test_with_normalisation_a_name_with_underscores_runs_the_registered_hyphenated_tool() -> None:
    script = hyphenated_script()
    player, agent, tally, step = _player(script, normalize_tool_names=True)
    call = _call(script, step, "kubectl_logs")
    outcome = player.play(agent, call, ToolPlayer.check(call))
    assert outcome.status == "success" and outcome.completes and outcome.text == step.payload
    assert player.session_registry(step) is HYPHENATED_CATALOGUE
    assert (tally.name_variants, tally.tool_syntax_errors, tally.syntax_errors_reaching_tool) == (1, 0, 0)
    assert tally.normalize_tool_names


def test_without_normalisation_it_is_an_unknown_tool_reaching_the_tool_as_a_syntax_error() -> None:
    script = hyphenated_script()
    player, agent, tally, step = _player(script)
    call = _call(script, step, "kubectl_logs")
    outcome = player.play(agent, call, ToolPlayer.check(call))
    assert outcome.status == "error" and not outcome.completes
    assert outcome.text == "Error: Unknown tool: kubectl_logs"
    assert (tally.name_variants, tally.tool_syntax_errors, tally.syntax_errors_reaching_tool) == (1, 1, 1)
    assert not tally.normalize_tool_names


def test_under_contracts_the_unknown_tool_is_a_structured_contract_error_that_reaches_no_tool() -> None:
    script = hyphenated_script()
    player, agent, tally, step = _player(script, contracts=True)
    call = _call(script, step, "kubectl_logs")
    outcome = player.play(agent, call, ToolPlayer.check(call))
    assert outcome.status == "error" and '"field": "tool"' in outcome.text and "kubectl_logs" in outcome.text
    assert (tally.tool_syntax_errors, tally.syntax_errors_reaching_tool) == (1, 0)


@pytest.mark.parametrize("normalize", [False, True])
def test_the_registered_name_runs_and_a_hyphen_for_a_registered_underscore_never_does(normalize: bool) -> None:
    script = hyphenated_script()
    player, agent, tally, step = _player(script, normalize_tool_names=normalize)
    assert player.play(agent, _call(script, step, "kubectl-logs"), None).completes
    assert tally.name_variants == 0
    first = script.steps[0]
    agent.pointer = Pointer(first)
    outcome = player.play(agent, _call(script, first, "kubectl-get"), None)
    assert outcome.status == "error" and tally.name_variants == 1 and tally.tool_syntax_errors == 1


def test_a_given_registry_is_the_one_calls_resolve_against() -> None:
    script = hyphenated_script()
    tally = Tally()
    player = ToolPlayer(seed=1, switches=Switches(normalize_tool_names=True), truth=script.fact_values(),
                        tally=tally, clock=SimClock(), registry=CATALOGUE)
    step = script.steps[1]
    agent = cast(Any, SimpleNamespace(pointer=Pointer(step), contract_failures=0, valid_attempts={}, timeouts={}))
    assert player.play(agent, _call(script, step, "kubectl-logs"), None).status == "error"
    assert player.session_registry(step) is CATALOGUE


def test_a_replay_counts_name_variants_and_normalisation_saves_their_errors() -> None:
    script = hyphenated_script()
    noisy = profile("stress-2023", p_malformed_base=0.5)
    off = replay(script, "unbounded", noisy).record
    on = replay(script, "unbounded", noisy, normalize_tool_names=True).record
    assert (off.normalize_tool_names, on.normalize_tool_names) == (False, True)
    assert off.name_variants > 0 and on.name_variants > 0
    assert on.syntax_errors_reaching_tool < off.syntax_errors_reaching_tool


# Scripts without hyphenated tools ----------------------------------------------------------------------


@settings(max_examples=6)
@given(seed=st.integers(0, 10_000))
def test_without_hyphenated_tools_the_switch_and_the_new_kind_change_nothing(seed: int) -> None:
    script = scenarios.generate("mix", seed, turns=20)
    assert not any("-" in tool for tool in script.tool_names())
    noisy = profile("stress-2023")
    off = replay(script, "unbounded", noisy)
    on = replay(script, "unbounded", noisy, normalize_tool_names=True)
    row_off, row_on = off.record.as_row(), on.record.as_row()
    assert row_on.pop("normalize_tool_names") and not row_off.pop("normalize_tool_names")
    assert row_on == row_off and row_on["name_variants"] == 0
    assert [c.as_row() for c in on.calls] == [c.as_row() for c in off.calls]
    assert not any(c.malformed_kind == "name_variant" for c in off.calls)
