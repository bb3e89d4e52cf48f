"""A replay stopped at any turn, saved and restored finishes exactly as if it had never stopped
(harness.sim.kernel, "Stopping and restarting a session"): for every registered strategy, with the
params the testing kit draws for it, over a few scenario families, profiles and seeds, the session row,
every call row, the loop detector's events and every event row are those of the uninterrupted replay.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scenarios
import strategies
from harness.core.switches import Switches
from harness.sim.kernel import Replay, SessionResult
from harness.sim.profiles import profile
from scenarios.base import SessionScript
from strategies.testing import params_for

#: One single-agent family with faults, one with shortcuts and decoys, and the multi-agent hand-over chain.
FAMILIES = ["k8s_crashloop", "log_triage", "alert_chain"]
#: A roomy window and a tight one (the tight one makes every strategy compact, summarize or overflow).
PROFILES = ["frontier", "small"]
#: Examples per strategy: the file runs every registered strategy, so it keeps each one short.
EXAMPLES = 10


@functools.lru_cache(maxsize=32)
def script_of(family: str, seed: int) -> SessionScript:
    return scenarios.generate(family, seed, turns=20)


def new_replay(name: str, params: dict[str, Any], family: str, seed: int, profile_name: str) -> Replay:
    strategy = strategies.create(name, **params)
    return Replay(script_of(family, seed), strategy, profile(profile_name), Switches(),
                  events=True)


def rows(result: SessionResult) -> tuple[Any, ...]:
    return result.record, list(result.calls), list(result.loop_events), [list(row) for row in result.event_rows]


@pytest.mark.parametrize("name", strategies.names())
@settings(max_examples=EXAMPLES)
@given(data=st.data(), family=st.sampled_from(FAMILIES), seed=st.integers(0, 50),
       profile_name=st.sampled_from(PROFILES))
def test_a_replay_saved_and_restored_at_any_turn_finishes_as_if_never_stopped(
        name: str, data: st.DataObject, family: str, seed: int, profile_name: str) -> None:
    params = data.draw(params_for(name), label="params")
    whole = new_replay(name, params, family, seed, profile_name).run()
    turns = whole.record.turns
    # One or two stops, each followed by a save and a restore (the second from the restored replay).
    cuts = data.draw(st.lists(st.integers(0, turns), min_size=1, max_size=2, unique=True).map(sorted), label="cuts")
    replayer = new_replay(name, params, family, seed, profile_name)
    for cut in cuts:
        stopped = replayer.run(stop_after_turns=cut - replayer.tally.turns)
        if stopped is not None:  # the session ended with the turn at the cut
            break
        assert replayer.tally.turns == cut
        replayer = Replay.restore(replayer.save())
    finished = replayer.run()
    assert rows(finished) == rows(whole)
