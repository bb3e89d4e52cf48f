"""Stopping a replay between turns, saving it and restoring it (harness.sim.kernel, "Stopping and
restarting a session"): in another process, with a summary in the context, and refusing damaged state,
state of another version and state not signed with the user's key in one line, before anything of it
is unpickled."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import harness
import scenarios
import strategies
from harness.core.messages import Message
from harness.core.switches import Switches
from harness.sim.kernel import (
    REPLAY_STATE_FORMAT,
    STATE_KEY_ENV,
    Replay,
    ReplayStateError,
    SessionResult,
    state_key_path,
)
from harness.sim.profiles import profile
from strategies.base import ContextStrategy
from strategies.unbounded import Unbounded

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def own_state_key(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test signs with a key file of its own (the user's real one is left alone); a process the test
    starts inherits the same variables, so it finds the same key, as another process of the user would."""
    home = tmp_path_factory.mktemp("state-home")
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    monkeypatch.delenv(STATE_KEY_ENV, raising=False)
    yield home


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


# Signed state: nothing is unpickled unless this user's key (or the key given) signed it ----------------------


class CreatesAFile:
    """Unpickling it opens (so creates) a file: what crafted state would do with something worse."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return open, (str(self.path), "w")


def forged(payload: bytes, **header: object) -> bytes:
    """State bytes around ``payload`` with a header whose own checksum matches it, as anyone can write."""
    fields = {"format": REPLAY_STATE_FORMAT, "ctxbench": harness.__version__,
              "sha256": hashlib.sha256(payload).hexdigest()} | header
    return b"ctxbench replay state\n" + json.dumps(fields).encode() + b"\n" + payload


@pytest.mark.parametrize("signature", [None, "0" * 64, "not hex at all \u00e9", 12])
def test_crafted_state_with_a_valid_checksum_is_refused_before_it_is_unpickled(tmp_path: Path,
                                                                               signature: object) -> None:
    marker = tmp_path / "created-by-unpickling"
    payload = pickle.dumps(CreatesAFile(marker))
    data = forged(payload) if signature is None else forged(payload, hmac_sha256=signature)
    message = refusal(data)
    assert "not signed with this user's key" in message and "not loaded" in message
    assert not marker.exists()


def test_state_signed_with_another_key_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "created-by-unpickling"
    replayer = new_replay("sliding_window")
    assert replayer.run(stop_after_turns=2) is None
    theirs = replayer.save(key=b"another user's key, 32 bytes...")
    assert "not signed with this user's key" in refusal(theirs)
    # The payload of good state, its checksum fixed, under a header of another's: refused as well.
    magic, header, _ = header_of(theirs)
    evil = pickle.dumps(CreatesAFile(marker))
    header |= {"sha256": hashlib.sha256(evil).hexdigest()}
    assert "not signed" in refusal(magic + json.dumps(header).encode() + b"\n" + evil)
    assert not marker.exists()


def test_the_key_file_is_made_once_for_this_user_only(own_state_key: Path) -> None:
    path = state_key_path()
    assert path == own_state_key / "ctxbench" / "replay-state.key" and not path.exists()
    replayer = new_replay("sliding_window")
    assert replayer.run(stop_after_turns=2) is None
    data = replayer.save()
    key = path.read_bytes()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.stat().st_uid == os.getuid()
    assert len(key.strip()) >= 32
    assert Replay.restore(data).tally.turns == 2
    assert path.read_bytes() == key  # read again, never made again
    assert list(path.parent.iterdir()) == [path]  # no staging file left beside it


@pytest.mark.parametrize("damage", ["readable by others", "a directory", "a link", "too short"])
def test_a_key_file_that_cannot_be_trusted_is_refused_in_one_line(damage: str) -> None:
    replayer = new_replay("sliding_window")
    assert replayer.run(stop_after_turns=2) is None
    saved = replayer.save()
    path = state_key_path()
    original = path.read_bytes()
    path.unlink()
    if damage == "readable by others":
        path.write_bytes(original)
        path.chmod(0o644)
    elif damage == "a directory":
        path.mkdir()
    elif damage == "a link":
        (path.parent / "elsewhere.key").write_bytes(original)
        (path.parent / "elsewhere.key").chmod(0o600)
        path.symlink_to(path.parent / "elsewhere.key")
    else:
        path.write_bytes(b"short\n")
        path.chmod(0o600)
    message = refusal(saved)
    assert message.startswith(f"replay state key {path}: ")


RESTORE_ONE = """
import sys
from pathlib import Path
from harness.sim.kernel import Replay, ReplayStateError
key = sys.argv[2] if len(sys.argv) > 2 else None
try:
    print(Replay.restore(Path(sys.argv[1]).read_bytes(), key=key).run().record.outcome)
except ReplayStateError as e:
    print("refused:", e)
"""


def test_state_moves_to_another_user_or_machine_with_the_key_given(tmp_path: Path) -> None:
    """Another machine is another key file (another XDG_STATE_HOME): the user's own state is refused there,
    state saved with an explicit key restores there with that key, and with CTXBENCH_STATE_KEY."""
    replayer = new_replay("sliding_window")
    assert replayer.run(stop_after_turns=3) is None
    shared = "a key both machines were given out of band"
    (tmp_path / "own.state").write_bytes(replayer.save())
    (tmp_path / "shared.state").write_bytes(replayer.save(key=shared))
    elsewhere = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "other-machine"))

    def restore(name: str, *key: str, env: dict[str, str] = elsewhere) -> str:
        done = subprocess.run([sys.executable, "-c", RESTORE_ONE, str(tmp_path / name), *key], cwd=REPO, env=env,
                              capture_output=True, text=True, check=False, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    outcome = new_replay("sliding_window").run().record.outcome
    assert restore("own.state").startswith("refused: replay state is not signed with this user's key")
    assert restore("shared.state", shared) == outcome
    assert restore("shared.state").startswith("refused:")
    assert restore("shared.state", env=elsewhere | {STATE_KEY_ENV: shared}) == outcome
    assert restore("own.state", env=dict(os.environ)) == outcome  # this user's other process: same key file
