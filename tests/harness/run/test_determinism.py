"""Determinism and common random numbers (docs/model.md 8, M3): draws are keyed by (session seed,
purpose, step, attempt), never by turn or strategy, so two strategies replaying one session see the
same draws, and the same calls and events, until their contexts first differ."""

from __future__ import annotations

import hashlib
import inspect
import json
from dataclasses import replace
from statistics import NormalDist
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import scenarios
import strategies
from harness.core import crn
from harness.run.config import RunConfig
from harness.run.plan import make_task, plan
from harness.run.worker import replay_batch
from harness.sim.kernel import SessionResult, replay
from harness.sim.loops import LoopEvent
from harness.sim.metrics import CallRecord

#: Switches shared by both sides of a pair, so only the context strategy differs.
SAME_SWITCHES: dict[str, Any] = {"contracts": False, "errors": "plain", "breaker": False}
SCRIPTS = [("log_triage", 0), ("k8s_crashloop", 2), ("db_slow_query", 4)]


def spec_u(seed: int, purpose: str, step_id: str, attempt: int, *sub: str) -> float:
    """docs/model.md 8, written out independently of harness.core.crn."""
    text = f"{seed}|{purpose}|{step_id}|{attempt}|{'|'.join(sub)}"
    return (int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") + 0.5) / 2**64


def unlabelled(calls: list[CallRecord]) -> list[CallRecord]:
    return [replace(c, strategy="") for c in calls]


def first_token_difference(a: SessionResult, b: SessionResult) -> int | None:
    """Index of the first call whose prompt size differs (the contexts differ from there on)."""
    return next((i for i, (x, y) in enumerate(zip(a.calls, b.calls, strict=False))
                 if x.input_tokens != y.input_tokens), None)


def common_prefix(a: list[LoopEvent], b: list[LoopEvent]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def agent_events(events: list[LoopEvent]) -> int:
    """Turns represented in an event log: each agent turn logs one action or one agent message."""
    return sum(e.kind == "action" or (e.kind == "message" and e.source == "agent") for e in events)


def pair(family: str, seed: int, name: str, **params: Any) -> tuple[SessionResult, SessionResult]:
    script = scenarios.generate(family, seed, turns=30)
    a = replay(script, "unbounded", "frontier", **SAME_SWITCHES)
    b = replay(script, strategies.create(name, **params), "frontier", **SAME_SWITCHES)
    return a, b


# 1. Two strategies agree until their contexts differ -------------------------------------------------


@pytest.mark.parametrize(("family", "seed"), SCRIPTS)
@pytest.mark.parametrize(("name", "params"), [
    ("sliding_window", {"window_size": 20}),
    ("observation_masking", {"keep_turns": 3}),
    ("drop_all", {}),
    ("offload_contracts", {}),
])
def test_two_strategies_see_identical_calls_and_events_until_contexts_differ(
        family: str, seed: int, name: str, params: dict[str, Any]) -> None:
    a, b = pair(family, seed, name, **params)
    first = first_token_difference(a, b)
    assert first is not None, "the strategy never changed the context: the pair tests nothing"
    assert first >= 1
    assert unlabelled(a.calls[:first]) == unlabelled(b.calls[:first])
    # The event logs agree at least over every turn before the first differing call.
    shared = common_prefix(a.loop_events, b.loop_events)
    assert agent_events(a.loop_events[:shared]) >= first


@pytest.mark.parametrize(("family", "seed"), SCRIPTS)
def test_sliding_window_agrees_with_unbounded_before_its_first_slide(family: str, seed: int) -> None:
    window = 20
    a, b = pair(family, seed, "sliding_window", window_size=window)
    first = first_token_difference(a, b)
    assert first is not None
    # The window first slides once it holds more than `window` messages: task + two per turn.
    assert first >= (window - 1) // 2
    assert unlabelled(a.calls[:first]) == unlabelled(b.calls[:first])


@pytest.mark.parametrize(("family", "seed"), SCRIPTS)
def test_sliding_window_larger_than_the_session_is_identical_to_unbounded(family: str, seed: int) -> None:
    a, b = pair(family, seed, "sliding_window", window_size=100_000)
    assert len(a.calls) > 5
    assert first_token_difference(a, b) is None
    assert unlabelled(a.calls) == unlabelled(b.calls)
    assert a.loop_events == b.loop_events
    assert replace(a.record, strategy="") == replace(b.record, strategy="")


@pytest.mark.parametrize(("family", "seed"), SCRIPTS)
@pytest.mark.parametrize("name", ["unbounded", "sliding_window", "drop_all", "summarize", "offload_contracts"])
def test_every_recall_draw_is_keyed_by_step_attempt_and_key_only(family: str, seed: int, name: str) -> None:
    """Whatever the turn on which a step is tried, its recall draw is u(seed, "recall", step, attempt, key)."""
    script = scenarios.generate(family, seed, turns=30)
    result = replay(script, name, "small")
    draws = 0
    for c in result.calls:
        if c.call_kind != "agent":
            continue
        for entry in json.loads(c.trace):
            if "u" in entry:
                assert entry["u"] == round(crn.u(script.seed, "recall", c.step_id, c.attempt, entry["key"]), 4)
                draws += 1
    # drop_all leaves the agent almost no sign of its work (docs/model.md v3 change 1): it may cycle through
    # steps whose needs are never visible, and then draws no recall at all.
    entries = [e for c in result.calls if c.call_kind == "agent" for e in json.loads(c.trace) if "key" in e]
    assert draws > 0 or (name == "drop_all" and not any(e["visible"] for e in entries))


# 2. Common random numbers -------------------------------------------------------------------------------


def test_u_matches_pinned_values() -> None:
    assert crn.u(12345, "recall", "s003", 2, "bad_pod") == 0.44958684083424544
    assert crn.u(0, "malformed", "final", 0) == 0.38529603411710134
    assert crn.z(12345, "lat", "s001", 0, "agent") == -0.10691843704383343


@given(seed=st.integers(0, 2**64 - 1), purpose=st.text(max_size=12), step=st.text(max_size=12),
       attempt=st.integers(0, 50), sub=st.lists(st.text(max_size=8), max_size=3))
def test_u_is_the_spec_formula_and_strictly_inside_0_1(
        seed: int, purpose: str, step: str, attempt: int, sub: list[str]) -> None:
    value = crn.u(seed, purpose, step, attempt, *sub)
    assert 0.0 < value < 1.0
    assert value == spec_u(seed, purpose, step, attempt, *sub)
    assert crn.z(seed, purpose, step, attempt, *sub) == NormalDist().inv_cdf(value)


def test_u_changes_with_each_part_of_its_key() -> None:
    base = crn.u(7, "recall", "s004", 1, "namespace")
    variants = [
        crn.u(8, "recall", "s004", 1, "namespace"),
        crn.u(7, "refetch", "s004", 1, "namespace"),
        crn.u(7, "recall", "s005", 1, "namespace"),
        crn.u(7, "recall", "s004", 2, "namespace"),
        crn.u(7, "recall", "s004", 1, "bad_pod"),
    ]
    assert all(v != base for v in variants)
    assert len(set(variants)) == len(variants)
    assert crn.u(7, "recall", "s004", 1, "namespace") == base


def test_draw_keys_have_no_turn_or_strategy() -> None:
    assert list(inspect.signature(crn.u).parameters) == ["seed", "purpose", "step_id", "attempt", "sub"]
    assert list(inspect.signature(crn.z).parameters) == ["seed", "purpose", "step_id", "attempt", "sub"]


# 3. The session seed ------------------------------------------------------------------------------------


def test_session_seed_is_the_spec_hash_of_root_scenario_and_index() -> None:
    assert list(inspect.signature(crn.session_seed).parameters) == ["root_seed", "scenario", "session_index"]
    assert crn.session_seed(7, "mix", 0) == 6927218429795646612
    assert crn.session_seed(0, "k8s_crashloop", 3) == 3854693695302694232
    digest = hashlib.blake2b(b"3|log_triage|11", digest_size=8).digest()
    assert crn.session_seed(3, "log_triage", 11) == int.from_bytes(digest, "big")


def _rows(names: list[str]) -> dict[tuple[int, str], dict[str, Any]]:
    config = RunConfig(sessions=3, seed=5, executor="serial", jobs=1,
                       scenarios=[{"name": "k8s_crashloop", "turns": 20}],
                       strategies=[{"name": n} for n in names])
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    for batch in plan(config):
        session_rows = replay_batch(make_task(config, batch), events=False).session_rows
        rows |= {(r["session_index"], r["strategy"]): r for r in session_rows}
    return rows


def test_runner_gives_every_strategy_the_same_session_seed_and_rows_independent_of_the_others() -> None:
    together = _rows(["unbounded", "drop_all"])
    alone = _rows(["drop_all"])
    reversed_order = _rows(["drop_all", "unbounded"])
    for index in range(3):
        expected = crn.session_seed(5, "k8s_crashloop", index)
        assert together[(index, "unbounded")]["seed"] == together[(index, "drop_all")]["seed"] == expected
        assert alone[(index, "drop_all")] == together[(index, "drop_all")]
        assert reversed_order[(index, "unbounded")] == together[(index, "unbounded")]
