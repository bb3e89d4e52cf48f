"""The run machinery (docs/design.md, "Data flow of one run", "Determinism", "Run directory"): allocation
and batching, shards, the run directory and its manifest, resume, refusing another config's
directory, byte-identical tables whatever the executor, job count or shard split, and error rows."""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import harness.run.config as config_module
import harness.run.worker
import harness.sim.profiles as profiles_module
import scenarios
from harness.cli import main as cli_main
from harness.core.rundir import CALLS_TABLE, EVENTS_TABLE, SESSIONS_TABLE
from harness.core.rundir import MANIFEST_FILE as MANIFEST
from harness.core.shard import Shard
from harness.run.config import RunConfig
from harness.run.directory import RunError, config_from_dir, read_parts
from harness.run.merge import merge
from harness.run.plan import SIMULATED_SESSION_COLUMNS, Batch, allocate, plan, shard_of
from harness.run.runner import run
from harness.sim.metrics import CallRecord, SessionRecord

KEY = ["scenario", "session_index", "strategy"]
TABLES = (SESSIONS_TABLE, CALLS_TABLE)

TINY: dict[str, Any] = {
    "sessions": 10,
    "seed": 5,
    "batch_size": 3,
    "executor": "serial",
    "scenarios": [{"name": "mix", "turns": 20, "weight": 2}, {"name": "k8s_crashloop", "turns": 20}],
    "strategies": [
        {"name": "sliding_window", "label": "sw20", "window_size": 20},
        {"name": "unbounded"},
        {"name": "offload_contracts"},
    ],
}
LABELS = ["sw20", "unbounded", "offload_contracts"]


def tiny(**changes: Any) -> RunConfig:
    return RunConfig(**(TINY | changes))


def table_bytes(run_dir: Path) -> dict[str, bytes]:
    return {name: (run_dir / name).read_bytes() for name in TABLES}


def snapshot(run_dir: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(run_dir)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted serial run of the tiny config."""
    out = tmp_path_factory.mktemp("reference") / "run"
    run(tiny(), out, quiet=True)
    return out


# allocate / plan / shard_of --------------------------------------------------------------------------


def weighted(weights: list[float]) -> list[dict[str, Any]]:
    """One scenario entry per weight (a config names each scenario once)."""
    return [{"name": name, "weight": w} for name, w in zip(scenarios.names(), weights, strict=False)]


@pytest.mark.parametrize(("sessions", "weights", "expected"), [
    (10, [2, 1], [7, 3]),
    (10, [1, 1, 1], [4, 3, 3]),
    (10, [3, 1], [8, 2]),
    (1, [1, 1, 1], [1, 0, 0]),
    (7, [1], [7]),
    (1000, [5, 3, 2], [500, 300, 200]),
])
def test_allocate_splits_sessions_by_weight_with_largest_remainder(sessions: int, weights: list[float],
                                                                    expected: list[int]) -> None:
    config = RunConfig(sessions=sessions, scenarios=weighted(weights), strategies=[{"name": "unbounded"}])
    assert allocate(config) == expected


@pytest.mark.parametrize("sessions", [1, 2, 9, 10, 11, 97, 1001])
@pytest.mark.parametrize("weights", [[1.0], [0.3, 0.7], [1, 2, 3, 4], [0.1, 5.0, 0.1], [1, 1, 1, 1, 1, 1]])
def test_allocate_sums_to_sessions_and_stays_within_one_of_the_exact_share(sessions: int,
                                                                          weights: list[float]) -> None:
    config = RunConfig(sessions=sessions, scenarios=weighted(weights), strategies=[{"name": "unbounded"}])
    counts = allocate(config)
    assert sum(counts) == sessions
    assert counts == allocate(config)
    for count, w in zip(counts, weights, strict=True):
        exact = sessions * w / sum(weights)
        assert exact - 1 < count < exact + 1


@pytest.mark.parametrize(("sessions", "batch_size"), [(10, 3), (10, 1), (10, 10), (10, 64), (97, 8)])
def test_plan_batches_cover_every_session_exactly_once(sessions: int, batch_size: int) -> None:
    config = tiny(sessions=sessions, batch_size=batch_size)
    batches = plan(config)
    planned = [(c.scenario_index, c.session_index) for b in batches for c in b.sessions]
    expected = [(s, i) for s, count in enumerate(allocate(config)) for i in range(count)]
    assert sorted(planned) == sorted(expected)
    assert len(planned) == len(set(planned)) == sessions
    assert all(1 <= len(b.sessions) <= batch_size for b in batches)
    assert all(len({c.scenario_index for c in b.sessions}) == 1 for b in batches)
    ids = [b.id for b in batches]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)


def test_an_unset_batch_size_keeps_a_batch_near_80_replays() -> None:
    # Ten variants: 8 sessions, the batches every default run has had; a sweep of 72 variants: one
    # session per batch, so its progress moves per 72 replays rather than three times in all.
    default = TINY | {"batch_size": None, "strategies": [{"name": "sliding_window", "label": f"w{k}",
                                                           "window_size": 10 + k} for k in range(10)]}
    assert RunConfig(**default).sessions_per_batch() == 8
    assert {len(b.sessions) for b in plan(RunConfig(**default))} <= {8, 7, 6, 5, 4, 3, 2, 1}
    few = RunConfig(**(TINY | {"batch_size": None}))
    assert few.sessions_per_batch() == 8  # three variants: never more sessions than before
    sweep = RunConfig(**(TINY | {"batch_size": None, "sweep": {
        "params": {"sw20.window_size": list(range(10, 34))}, "models": ["frontier", "small", "mid"]}}))
    assert len(sweep.variants()) == 3 * (24 + 2)
    assert sweep.sessions_per_batch() == 1
    assert len(plan(sweep)) == sweep.sessions
    eleven = RunConfig(**(default | {"strategies": default["strategies"] + [{"name": "unbounded"}]}))
    assert eleven.sessions_per_batch() == 7
    # Chosen or not, the size is part of the resolved config (and so of the hash that guards resume).
    assert RunConfig(**default).resolved()["batch_size"] == 8
    assert RunConfig(**default).config_hash() == RunConfig(**(default | {"batch_size": 8})).config_hash()
    assert sweep.sweep is not None
    eight = RunConfig(**(TINY | {"batch_size": 8, "sweep": sweep.sweep.model_dump()}))
    assert sweep.config_hash() != eight.config_hash()


def test_plan_is_the_same_for_every_executor_and_job_count() -> None:
    assert plan(tiny()) == plan(tiny(executor="process", jobs=7)) == plan(tiny(executor="dask", jobs=2))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_shard_slices_partition_the_batches_in_order(n: int) -> None:
    batches = plan(tiny(sessions=40, batch_size=3))
    shards = [shard_of(batches, Shard(k, n)) for k in range(1, n + 1)]
    joined: list[Batch] = [b for s in shards for b in s]
    assert sorted(joined, key=lambda b: b.id) == batches
    assert len({b.id for b in joined}) == len(batches)
    for s in shards:
        assert s == sorted(s, key=lambda b: b.id)
    assert max(len(s) for s in shards) - min(len(s) for s in shards) <= 1


def test_shard_none_is_every_batch() -> None:
    batches = plan(tiny())
    assert shard_of(batches, None) == batches
    assert shard_of(batches, Shard(1, 1)) == batches


# The run directory -------------------------------------------------------------------------------------


def test_run_writes_config_manifest_and_both_tables_and_removes_its_parts(reference: Path,
                                                                          tmp_path: Path) -> None:
    assert {p.name for p in reference.iterdir()} == {"config.toml", MANIFEST, *TABLES, EVENTS_TABLE}
    assert json.loads((reference / MANIFEST).read_text())["batches"] == len(plan(tiny()))
    kept = tmp_path / "kept"
    run(tiny(), kept, quiet=True, keep_parts=True)
    parts = sorted(p.name for p in (kept / "parts").glob("*.jsonl"))
    assert parts == sorted(f"{b.id}.jsonl" for b in plan(tiny()))


def test_config_toml_holds_the_hash_and_the_resolved_config(reference: Path) -> None:
    config = tiny()
    stamp = tomllib.loads((reference / "config.toml").read_text())
    assert stamp["config_hash"] == config.config_hash()
    assert (stamp["sessions"], stamp["seed"], stamp["batch_size"]) == (10, 5, 3)
    assert [s["label"] for s in stamp["strategies"]] == LABELS
    assert stamp["strategies"][0]["window_size"] == 20
    assert config_from_dir(reference).config_hash() == config.config_hash()


def test_manifest_matches_the_tables(reference: Path) -> None:
    manifest = json.loads((reference / MANIFEST).read_text())
    config = tiny()
    assert manifest["config_hash"] == config.config_hash()
    assert manifest["root_seed"] == 5
    assert manifest["run_id"] == reference.name
    for name in TABLES:
        data = (reference / name).read_bytes()
        assert manifest["sha256"][name] == hashlib.sha256(data).hexdigest()
        assert manifest["rows"][name] == pq.read_table(reference / name).num_rows
    assert manifest["rows"][SESSIONS_TABLE] == 10 * len(LABELS)
    assert manifest["rows"][CALLS_TABLE] > 0
    assert [s["label"] for s in manifest["strategies"]] == LABELS
    for key in ("ctxbench_version", "python", "platform", "started", "finished", "model", "scenarios"):
        assert manifest[key]


def test_sessions_table_has_one_row_per_cell_sorted_by_key(reference: Path) -> None:
    sessions = pd.read_parquet(reference / SESSIONS_TABLE)
    assert list(sessions.columns) == [*SessionRecord.__dataclass_fields__, "model", "sweep_param", "sweep_value"]
    assert sessions["sweep_value"].dtype == "float64"
    assert set(sessions["model"]) == {"frontier"}
    assert set(sessions["sweep_param"]) == {""} and sessions["sweep_value"].isna().all()
    assert not sessions.duplicated(KEY).any()
    assert len(sessions) == 10 * len(LABELS)
    assert sessions[KEY].values.tolist() == sessions.sort_values(KEY)[KEY].values.tolist()
    assert Counter(sessions["scenario"]) == {"mix": 7 * len(LABELS), "k8s_crashloop": 3 * len(LABELS)}
    assert set(sessions["strategy"]) == set(LABELS)
    assert (sessions["outcome"] != "error").all()


def test_calls_table_columns_are_call_record_fields_sorted_by_key(reference: Path) -> None:
    calls = pd.read_parquet(reference / CALLS_TABLE)
    assert list(calls.columns) == list(CallRecord.__dataclass_fields__)
    order = [*KEY, "call_index"]
    assert calls[order].values.tolist() == calls.sort_values(order, kind="stable")[order].values.tolist()
    sessions = pd.read_parquet(reference / SESSIONS_TABLE)
    per_session = calls.groupby(KEY).size()
    assert set(per_session.index) == set(map(tuple, sessions[KEY].values.tolist()))


def test_every_strategy_replays_the_same_sessions(reference: Path) -> None:
    sessions = pd.read_parquet(reference / SESSIONS_TABLE)
    seeds = sessions.groupby(["scenario", "session_index"])["seed"].nunique()
    assert (seeds == 1).all()


def test_parts_hold_exactly_the_table_rows(reference: Path, tmp_path: Path) -> None:
    run(tiny(), tmp_path / "kept", quiet=True, keep_parts=True)
    session_rows, call_rows = read_parts(tmp_path / "kept")
    assert len(session_rows) == pq.read_table(reference / SESSIONS_TABLE).num_rows
    assert len(call_rows) == pq.read_table(reference / CALLS_TABLE).num_rows


# Resume and refusing another config's directory ---------------------------------------------------------


def test_second_run_resumes_every_batch_without_duplicates(tmp_path: Path, reference: Path) -> None:
    out = tmp_path / "run"
    first = run(tiny(), out, quiet=True)
    assert (first.batches_run, first.batches_skipped) == (len(plan(tiny())), 0)
    second = run(tiny(), out, quiet=True)
    assert (second.batches_run, second.batches_skipped) == (0, len(plan(tiny())))
    assert len(second.sessions) == 10 * len(LABELS)
    assert not second.sessions.duplicated(KEY).any()
    assert table_bytes(out) == table_bytes(reference)


def test_resume_after_a_lost_batch_recomputes_only_that_batch(tmp_path: Path, reference: Path) -> None:
    out = tmp_path / "run"
    run(tiny(), out, quiet=True, keep_parts=True)
    lost = plan(tiny())[1]
    (out / "parts" / f"{lost.id}.jsonl").unlink()
    (out / SESSIONS_TABLE).unlink()
    (out / CALLS_TABLE).unlink()
    resumed = run(tiny(), out, quiet=True)
    assert (resumed.batches_run, resumed.batches_skipped) == (1, len(plan(tiny())) - 1)
    assert table_bytes(out) == table_bytes(reference)


def test_resume_with_another_executor_and_job_count_is_allowed(tmp_path: Path, reference: Path) -> None:
    out = tmp_path / "run"
    run(tiny(), out, quiet=True)
    again = run(tiny(executor="process", jobs=2), out, quiet=True)
    assert again.batches_skipped == len(plan(tiny()))
    assert table_bytes(out) == table_bytes(reference)


@pytest.mark.parametrize("changes", [{"seed": 6}, {"sessions": 11},
                                     {"strategies": [{"name": "unbounded"}]}])
def test_other_config_into_existing_directory_raises_and_leaves_it_untouched(tmp_path: Path,
                                                                             changes: dict[str, Any]) -> None:
    out = tmp_path / "run"
    run(tiny(), out, quiet=True)
    before = snapshot(out)
    with pytest.raises(RunError, match="holds a run of another config") as info:
        run(tiny(**changes), out, quiet=True)
    assert "\n" not in str(info.value)
    assert snapshot(out) == before


def test_a_directory_another_mock_model_version_wrote_is_refused_not_resumed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    monkeypatch.setattr(config_module, "MOCK_MODEL_VERSION", config_module.MOCK_MODEL_VERSION - 1)
    run(tiny(), out, quiet=True)  # the same config, as the previous model version stamped it
    monkeypatch.undo()
    before = snapshot(out)
    with pytest.raises(RunError, match="holds a run of another config"):
        run(tiny(), out, quiet=True)
    assert snapshot(out) == before


def test_a_directory_written_with_other_values_of_a_builtin_profile_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A config names a built-in profile by its name only; its values are hashed all the same.
    out = tmp_path / "run"
    model = tiny().model
    assert isinstance(model, str)
    monkeypatch.setitem(profiles_module._BUILTIN, model, {**profiles_module._BUILTIN[model], "p_note": 0.5})
    run(tiny(), out, quiet=True)
    monkeypatch.undo()
    with pytest.raises(RunError, match="holds a run of another config"):
        run(tiny(), out, quiet=True)


def test_no_resume_on_existing_run_raises_and_leaves_it_untouched(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(tiny(), out, quiet=True)
    before = snapshot(out)
    with pytest.raises(RunError, match="already holds this run"):
        run(tiny(), out, resume=False, quiet=True)
    assert snapshot(out) == before


# Determinism: executors, job counts and shard splits ------------------------------------------------------


@pytest.mark.parametrize("changes", [
    {"executor": "process", "jobs": 1},
    {"executor": "process", "jobs": 2},
    {"batch_size": 1},
    {"batch_size": 4},
], ids=["process-jobs1", "process-jobs2", "batch-size-1", "batch-size-4"])
def test_tables_are_byte_identical_to_the_serial_run(tmp_path: Path, reference: Path,
                                                     changes: dict[str, Any]) -> None:
    out = tmp_path / "run"
    run(tiny(**changes), out, quiet=True)
    assert table_bytes(out) == table_bytes(reference)


def test_dask_local_cluster_tables_are_byte_identical_to_the_serial_run(tmp_path: Path, reference: Path) -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        pytest.skip("the dask executor needs the optional extra `distributed`, which is not installed")
    out = tmp_path / "run"
    summary = run(tiny(executor="dask", jobs=2), out, quiet=True)
    assert summary.batches_run == len(plan(tiny()))
    assert table_bytes(out) == table_bytes(reference)


def test_two_shards_merged_are_byte_identical_to_the_unsharded_run(tmp_path: Path, reference: Path) -> None:
    one, two, merged = tmp_path / "shard1", tmp_path / "shard2", tmp_path / "merged"
    first = run(tiny(), one, shard=Shard(1, 2), quiet=True)
    second = run(tiny(executor="process", jobs=2), two, shard=Shard(2, 2), quiet=True)
    batches = plan(tiny())
    assert first.batches_run + second.batches_run == len(batches)
    assert len(first.sessions) + len(second.sessions) == 10 * len(LABELS)
    assert not set(map(tuple, first.sessions[KEY].values.tolist())) & set(
        map(tuple, second.sessions[KEY].values.tolist()))
    summary = merge(merged, [one, two])
    assert len(summary.sessions) == 10 * len(LABELS)
    assert table_bytes(merged) == table_bytes(reference)
    manifest = json.loads((merged / MANIFEST).read_text())
    assert manifest["config_hash"] == tiny().config_hash()
    assert manifest["sha256"][SESSIONS_TABLE] == hashlib.sha256((merged / SESSIONS_TABLE).read_bytes()).hexdigest()


def test_merge_refuses_shards_of_different_configs_and_creates_nothing(tmp_path: Path) -> None:
    one, two, merged = tmp_path / "a", tmp_path / "b", tmp_path / "merged"
    run(tiny(sessions=3), one, shard=Shard(1, 2), quiet=True)
    run(tiny(sessions=3, seed=99), two, shard=Shard(2, 2), quiet=True)
    with pytest.raises(RunError, match="different configs"):
        merge(merged, [one, two])
    assert not merged.exists()


def test_seed_changes_the_tables(tmp_path: Path, reference: Path) -> None:
    out = tmp_path / "run"
    run(tiny(seed=6), out, quiet=True)
    assert table_bytes(out)[SESSIONS_TABLE] != table_bytes(reference)[SESSIONS_TABLE]


def test_same_scenario_twice_is_refused_or_keeps_the_row_key_unique(tmp_path: Path) -> None:
    data = TINY | {"sessions": 4, "strategies": [{"name": "unbounded"}],
                   "scenarios": [{"name": "mix", "turns": 20}, {"name": "mix", "turns": 40}]}
    try:
        config = RunConfig(**data)
    except ValueError:
        return
    summary = run(config, tmp_path / "run", quiet=True)
    assert not summary.sessions.duplicated(KEY).any()


# A replay that raises ------------------------------------------------------------------------------------


def raise_for(label: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real = harness.run.worker.replay

    def replay(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("strategy_label") == label:
            raise RuntimeError(f"boom in {label}")
        return real(*args, **kwargs)

    monkeypatch.setattr(harness.run.worker, "replay", replay)


def test_replay_that_raises_becomes_an_error_row_and_the_run_goes_on(tmp_path: Path, reference: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    raise_for("unbounded", monkeypatch)
    summary = run(tiny(), tmp_path / "run", quiet=True)
    sessions = pd.read_parquet(tmp_path / "run" / SESSIONS_TABLE)
    failed = sessions[sessions["strategy"] == "unbounded"]
    assert summary.errors == 10
    assert len(sessions) == 10 * len(LABELS)
    assert (failed["outcome"] == "error").all()
    assert failed["error"].str.contains("RuntimeError: boom in unbounded").all()
    others = sessions[sessions["strategy"] != "unbounded"]
    assert (others["outcome"] != "error").all()
    assert (others["error"] == "").all()
    expected = pd.read_parquet(reference / SESSIONS_TABLE)
    pd.testing.assert_frame_equal(others.reset_index(drop=True),
                                  expected[expected["strategy"] != "unbounded"].reset_index(drop=True))
    calls = pd.read_parquet(tmp_path / "run" / CALLS_TABLE)
    assert "unbounded" not in set(calls["strategy"])
    assert list(sessions.columns) == SIMULATED_SESSION_COLUMNS
    assert set(failed["model"]) == {"frontier"} and (failed["sweep_param"] == "").all()


def test_cli_run_exits_1_when_sessions_errored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import tomli_w

    raise_for("sw20", monkeypatch)
    path = tmp_path / "tiny.toml"
    path.write_text(tomli_w.dumps(TINY | {"sessions": 3}))
    code = cli_main(["run", str(path), "--out", str(tmp_path / "run"), "--executor", "serial", "--quiet"])
    assert code == 1
    err = capsys.readouterr().err
    assert "3 sessions failed with outcome 'error'" in err
    sessions = pd.read_parquet(tmp_path / "run" / SESSIONS_TABLE)
    assert (sessions.loc[sessions["strategy"] == "sw20", "outcome"] == "error").all()


def test_cli_run_exits_0_without_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import tomli_w

    path = tmp_path / "tiny.toml"
    path.write_text(tomli_w.dumps(TINY | {"sessions": 2}))
    code = cli_main(["run", str(path), "--out", str(tmp_path / "run"), "--executor", "serial", "--quiet"])
    assert code == 0
    assert "failed" not in capsys.readouterr().err


def test_parts_of_an_older_version_without_a_checksum_are_replayed_to_identical_tables(
        tmp_path: Path, reference: Path) -> None:
    out = tmp_path / "run"
    run(tiny(), out, quiet=True, keep_parts=True)
    for part in (out / "parts").glob("*.jsonl"):  # the layout before part headers: rows only
        part.write_text("\n".join(part.read_text().splitlines()[1:]) + "\n")
    for name in (MANIFEST, SESSIONS_TABLE, CALLS_TABLE):  # that version was stopped before its tables
        (out / name).unlink()
    notes: list[str] = []
    summary = run(tiny(), out, quiet=True, notify=notes.append)
    assert summary.batches_run == len(plan(tiny()))
    assert len(notes) == len(plan(tiny())) and all("older ctxbench" in n for n in notes)
    assert table_bytes(out) == table_bytes(reference)
    assert len(list((out / "parts" / "damaged").iterdir())) == len(plan(tiny()))


def test_a_rerun_with_nothing_to_do_keeps_the_tables_and_the_manifest(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(tiny(), out, quiet=True)
    before = {name: (out / name).read_bytes() for name in (MANIFEST, SESSIONS_TABLE, CALLS_TABLE)}
    summary = run(tiny(), out, quiet=True)
    assert summary.batches_run == 0
    assert {name: (out / name).read_bytes() for name in before} == before
    assert len(summary.sessions) == 10 * len(LABELS)


# A process-pool run killed outright takes its workers with it ----------------------------------------------


def _children(pid: int) -> set[int]:
    """The processes ``pid`` started that are still its children (every thread's list, from /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(n) for n in (task / "children").read_text().split()}
        except OSError:  # the thread ended meanwhile
            continue
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs: a zombie (ended, not yet reaped by whoever adopted it) does not."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the process tree from /proc (Linux)")
def test_the_workers_of_a_killed_process_pool_run_end_with_it(tmp_path: Path) -> None:
    import signal
    import subprocess
    import time

    from tests.harness.cli.invoke import command, write_config

    config = write_config(tmp_path, TINY | {"sessions": 200, "batch_size": 2, "executor": "process", "jobs": 2})
    proc = subprocess.Popen([*command(), "run", str(config), "--out", str(tmp_path / "run"), "--quiet", "--no-report"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while len(workers) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, "the run never started its two workers"
            workers = {pid for pid in _children(proc.pid) if _alive(pid)}
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in workers if _alive(pid)], "workers outlived the run they worked for"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in workers:  # never leave one behind for the next test, whatever failed above
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
