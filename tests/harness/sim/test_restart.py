"""Stopping a replay between turns, saving it and restoring it (harness.sim.kernel, "Stopping and
restarting a session"): in another process, with a summary in the context, and refusing damaged state
or state of another version in one line."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import harness
import scenarios
import strategies
from harness.core.messages import Message
from harness.core.switches import Switches
from harness.sim.kernel import REPLAY_STATE_FORMAT, Replay, ReplayStateError, SessionResult
from harness.sim.profiles import profile
from strategies.base import ContextStrategy
from strategies.unbounded import Unbounded

REPO = Path(__file__).resolve().parents[3]


def new_replay(strategy: ContextStrategy | str, *, family: str = "k8s_crashloop", seed: int = 7,
               profile_name: str = "small", turns: int = 20) -> Replay:
    instance = strategies.create(strategy) if isinstance(strategy, str) else strategy
    script = scenarios.generate(family, seed, turns=turns)
    return Replay(script, instance, profile(profile_name), Switches(), events=True)


def as_json(result: SessionResult) -> dict[str, Any]:
    """The rows of a finished replay as plain JSON values (what another process can print)."""
    return {
        "record": dataclasses.asdict(result.record),
        "calls": [dataclasses.asdict(c) for c in result.calls],
        "event_rows": result.event_rows,
    }


def header_of(data: bytes) -> tuple[bytes, dict[str, Any], bytes]:
    """(magic, header, payload) of saved state: a line naming the format, a JSON line, the payload."""
    magic, rest = data.split(b"\n", 1)
    line, payload = rest.split(b"\n", 1)
    return magic + b"\n", json.loads(line), payload


# Stopping ---------------------------------------------------------------------------------------------------


def test_run_stops_at_the_turn_asked_and_goes_on_from_there() -> None:
    whole = new_replay("sliding_window").run()
    replayer = new_replay("sliding_window")
    assert replayer.run(stop_after_turns=0) is None and replayer.tally.turns == 0
    with pytest.raises(ValueError, match="stop_after_turns"):
        replayer.run(stop_after_turns=-1)
    assert replayer.run(stop_after_turns=3) is None and replayer.tally.turns == 3
    assert replayer.run(stop_after_turns=4) is None and replayer.tally.turns == 7
    assert not replayer.finished
    finished = replayer.run()
    assert replayer.finished and finished.record == whole.record and finished.calls == whole.calls
    assert replayer.run() is finished and replayer.run(stop_after_turns=1) is finished


def test_a_finished_replay_saves_and_restores_to_its_result() -> None:
    replayer = new_replay("observation_masking")
    result = replayer.run()
    restored = Replay.restore(replayer.save())
    assert restored.finished and as_json(restored.run()) == as_json(result)


# Another process --------------------------------------------------------------------------------------------

RESTORE_AND_FINISH = """
import dataclasses, json, sys
from pathlib import Path
from harness.sim.kernel import Replay
out = {}
for path in sys.argv[1:]:
    result = Replay.restore(Path(path).read_bytes()).run()
    out[Path(path).stem] = {"record": dataclasses.asdict(result.record),
                            "calls": [dataclasses.asdict(c) for c in result.calls], "event_rows": result.event_rows}
print(json.dumps(out))
"""


def test_a_replay_restored_in_a_new_process_finishes_with_the_same_rows(tmp_path: Path) -> None:
    cases: dict[str, tuple[str, int, dict[str, Any]]] = {
        "offload_contracts": ("k8s_crashloop", 9, {}),
        "condense": ("log_triage", 3, {"max_size": 12}),
        "pipeline": ("alert_chain", 4, {"stages": [{"name": "observation_masking"}, {"name": "condense"}]}),
    }
    expected: dict[str, Any] = {}
    paths: list[str] = []
    for name, (family, cut, params) in cases.items():
        strategy = strategies.create(name, **params)
        expected[name] = as_json(new_replay(strategy, family=family).run())
        replayer = new_replay(strategy, family=family)
        assert replayer.run(stop_after_turns=cut) is None
        path = tmp_path / f"{name}.state"
        path.write_bytes(replayer.save())
        paths.append(str(path))
    done = subprocess.run([sys.executable, "-c", RESTORE_AND_FINISH, *paths], cwd=REPO, capture_output=True,
                          text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    # JSON both ways: the other process's floats and tuples read back as this one's would.
    assert json.loads(done.stdout) == json.loads(json.dumps(expected))


# Summaries --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "params"), [
    ("condense", {"max_size": 12}),
    ("summarize", {"trigger_turns": 3, "keep_turns": 1}),
])
def test_a_restored_session_carries_its_summary_not_the_history_it_replaced(name: str, params: dict[str, Any]
                                                                             ) -> None:
    strategy = strategies.create(name, **params)
    whole = new_replay(strategy, profile_name="frontier").run()
    assert whole.record.summary_calls > 0
    replayer = new_replay(strategy, profile_name="frontier")
    seen: list[Message] = []
    while replayer.tally.summary_calls == 0:  # one turn at a time until the first summary
        assert replayer.run(stop_after_turns=1) is None
        seen += [m for ctx in replayer.contexts.values() for m in ctx.messages if not any(m is s for s in seen)]
    window = list(replayer.contexts["agent"].messages)
    dropped = [m for m in seen if not any(m is w for w in window)]
    assert dropped

    restored = Replay.restore(replayer.save())
    ctx = restored.contexts["agent"]
    assert list(ctx.messages) == window
    assert [m.kind for m in ctx.messages].count("summary") == 1
    assert not any(m == d for m in ctx.messages for d in dropped)
    assert ctx.removed_count == replayer.contexts["agent"].removed_count > 0
    # The running totals came back as they were, and match the restored messages.
    assert ctx.tokens == sum(m.tokens for m in ctx.messages) == replayer.contexts["agent"].tokens
    assert as_json(restored.run()) == as_json(whole)


def test_context_editing_maps_its_edits_back_to_the_history_after_a_restore() -> None:
    strategy = strategies.create("clear_tool_uses", trigger={"type": "input_tokens", "value": 1500},
                                 keep={"type": "tool_uses", "value": 1})
    replayer = new_replay(strategy, profile_name="frontier")
    agent_strategy: Any = None
    while replayer.run(stop_after_turns=1) is None:
        agent_strategy = replayer._agent.strategy if replayer._agent is not None else None
        if agent_strategy is not None and agent_strategy._originals:
            break
    assert agent_strategy is not None and agent_strategy._originals, "no edit was made: raise the session's size"
    restored_replay: Any = Replay.restore(replayer.save())
    restored = restored_replay._agent.strategy
    for edited, original in restored._originals.values():
        assert restored._original(edited) is original


# Refused state ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved() -> bytes:
    replayer = new_replay("sliding_window")
    assert replayer.run(stop_after_turns=5) is None
    return replayer.save()


def refusal(data: Any) -> str:
    with pytest.raises(ReplayStateError) as caught:
        Replay.restore(data)
    message = str(caught.value)
    assert message and "\n" not in message and "Traceback" not in message
    return message


def test_saved_state_names_its_format_and_version(saved: bytes) -> None:
    _, header, _ = header_of(saved)
    assert header["format"] == REPLAY_STATE_FORMAT and header["ctxbench"] == harness.__version__


def test_damaged_state_is_refused_in_one_line(saved: bytes) -> None:
    magic, _, payload = header_of(saved)
    flipped = bytearray(saved)
    flipped[len(saved) // 2] ^= 0xFF
    assert "damaged" in refusal(bytes(flipped))
    assert "damaged" in refusal(saved[: len(saved) - 100])
    assert "damaged" in refusal(magic + b"{not json\n" + payload)
    assert "not a ctxbench replay state" in refusal(b"\x80\x05garbage")
    assert "not a ctxbench replay state" in refusal(b"")
    assert "must be bytes" in refusal("a string")


@pytest.mark.parametrize(("field", "value"), [("ctxbench", "0.0.1"), ("format", REPLAY_STATE_FORMAT + 1)])
def test_state_of_another_version_is_refused_in_one_line(saved: bytes, field: str, value: object) -> None:
    magic, header, payload = header_of(saved)
    header[field] = value
    message = refusal(magic + json.dumps(header).encode() + b"\n" + payload)
    assert f"saved by ctxbench {header['ctxbench']} (state format {header['format']})" in message
    assert harness.__version__ in message


class KeepsALambda(Unbounded):
    """A strategy whose state cannot be pickled."""

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self.hook = lambda m: m


def test_state_that_cannot_be_pickled_is_refused_in_one_line() -> None:
    replayer = new_replay(KeepsALambda())
    assert replayer.run(stop_after_turns=2) is None
    with pytest.raises(ReplayStateError, match=r"^replay state cannot be saved: ") as caught:
        replayer.save()
    assert "\n" not in str(caught.value)
