"""The tables are streamed from the parts (harness/run/table_writer.py, `write_tables`, through
`RunDirectory.finish`): the parent holds a
batch and a row group, never the run, and every table is byte for byte what one ``pq.write_table`` of
all its rows, sorted, wrote before: the same row groups, the same schema (pandas' types and metadata,
which depend on every row's values), the same order across scenarios whose config order is not their
name order, in a sweep, with the event log off, with no rows, and through a merge."""

from __future__ import annotations

import hashlib
import importlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import harness.run.table_writer as table_writer
from harness.core.rundir import CALLS_TABLE, EVENTS_TABLE, MANIFEST_FILE, PARTS_DIR, SESSIONS_TABLE
from harness.run.config import RunConfig
from harness.run.directory import RunDirectory, RunError, config_from_dir
from harness.run.merge import merge
from harness.run.parts import BatchResult, EventLines, read_part
from harness.run.plan import EVENT_SCHEMA, SIMULATED_CALL_COLUMNS, SIMULATED_SESSION_COLUMNS, RunPlan, plan
from harness.run.runner import run
from harness.run.table_writer import BatchSource, BatchTables, values_table
from harness.sim.events import EVENT_KEY
from tests.harness.run.test_runner import LABELS, TINY, raise_for, tiny


def one_shot_tables(run_dir: Path, *, row_group_size: int | None = None) -> dict[str, bytes]:
    """The tables of ``run_dir``'s parts written the way they were before they were streamed: every row
    in one DataFrame, sorted stably, converted by ``Table.from_pandas``, written by one ``pq.write_table``."""
    config = config_from_dir(run_dir)
    ids = sorted(p.stem for p in (run_dir / PARTS_DIR).glob("*.jsonl"))
    parts = [read_part(run_dir / PARTS_DIR / f"{i}.jsonl", config_hash=config.config_hash()) for i in ids]
    sessions = [r for p in parts for r in p.session_rows]
    calls = [r for p in parts for r in p.call_rows]

    def frame_table(records: list[dict[str, Any]], columns: list[str], key: list[str]) -> pa.Table:
        frame = pd.DataFrame(records, columns=columns)
        if "sweep_value" in frame:
            frame["sweep_value"] = frame["sweep_value"].astype("float64")
        if not frame.empty:
            frame = frame.sort_values(key, kind="stable").reset_index(drop=True)
        return pa.Table.from_pandas(frame, preserve_index=False)

    tables = {
        SESSIONS_TABLE: frame_table(sessions, SIMULATED_SESSION_COLUMNS, ["scenario", "session_index", "strategy"]),
        CALLS_TABLE: frame_table(calls, SIMULATED_CALL_COLUMNS,
                                 ["scenario", "session_index", "strategy", "call_index"]),
    }
    if config.events:
        events = values_table([r for p in parts for r in p.event_rows], EVENT_SCHEMA)
        tables[EVENTS_TABLE] = events.sort_by([(k, "ascending") for k in EVENT_KEY])
    out = {}
    for name, table in tables.items():
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd", row_group_size=row_group_size)
        out[name] = sink.getvalue().to_pybytes()
    return out


def written(run_dir: Path) -> dict[str, bytes]:
    return {name: (run_dir / name).read_bytes() for name in (SESSIONS_TABLE, CALLS_TABLE, EVENTS_TABLE)
            if (run_dir / name).exists()}


def assert_manifest_matches(run_dir: Path) -> None:
    manifest = json.loads((run_dir / MANIFEST_FILE).read_text())
    tables = written(run_dir)
    assert set(manifest["sha256"]) == set(tables)
    for name, data in tables.items():
        assert manifest["sha256"][name] == hashlib.sha256(data).hexdigest()
        assert manifest["rows"][name] == pq.ParquetFile(run_dir / name).metadata.num_rows


def rebuild(run_dir: Path, config: RunConfig) -> pd.DataFrame:
    """Write the tables of ``run_dir`` again from its parts, as a run does after its last batch."""
    batches = [b.id for b in plan(config)]
    return write_tables(run_dir, config, part_batches(run_dir, config, batches), batches=len(batches),
                        started="2000-01-01T00:00:00+00:00")


def part_batches(run_dir: Path, config: RunConfig, batch_ids: list[str]) -> BatchSource:
    return RunDirectory(run_dir).part_batches(RunPlan.simulated(config), batch_ids)


def write_tables(run_dir: Path, config: RunConfig, source: BatchSource, *, batches: int,
                 started: str) -> pd.DataFrame:
    return RunDirectory(run_dir).finish(RunPlan.simulated(config), source, batches=batches, started=started)


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the tiny config (two scenarios, ``mix`` first in the config and last by name)
    with its parts kept."""
    out = tmp_path_factory.mktemp("streaming") / "kept"
    run(tiny(), out, quiet=True, keep_parts=True)
    return out


def test_row_group_rows_is_pyarrows_default_for_write_table() -> None:
    """The streamed tables keep their bytes only with the row groups ``pq.write_table`` makes by default
    (a table of more rows than that is too slow for a unit test to write both ways)."""
    default = getattr(importlib.import_module("pyarrow._parquet"), "_DEFAULT_ROW_GROUP_SIZE", None)
    if default is None:
        pytest.skip("this pyarrow does not name its default row group size")
    assert default == table_writer.ROW_GROUP_ROWS


def test_streamed_tables_are_the_bytes_of_one_write_of_all_rows_sorted(kept: Path) -> None:
    assert [s.name for s in tiny().scenarios] == ["mix", "k8s_crashloop"]  # config order is not name order
    expected = one_shot_tables(kept)
    assert set(expected) == {SESSIONS_TABLE, CALLS_TABLE, EVENTS_TABLE}
    assert written(kept) == expected
    assert_manifest_matches(kept)
    sessions = pq.read_table(kept / SESSIONS_TABLE).to_pandas()
    assert sessions["scenario"].tolist() == sorted(sessions["scenario"])
    assert sessions["scenario"].iloc[0] == "k8s_crashloop"


def test_the_sessions_table_returned_is_the_one_written(kept: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(kept, out)
    sessions = rebuild(out, tiny())
    assert written(out) == written(kept)
    pd.testing.assert_frame_equal(sessions, pq.read_table(pa.BufferReader(
        one_shot_tables(kept)[SESSIONS_TABLE])).to_pandas())


@pytest.mark.parametrize("spool_chunk", [3, 7, 1000], ids=["chunks-inside-a-group", "chunk-is-a-group",
                                                         "group-inside-a-chunk"])
def test_tiny_row_groups_are_the_bytes_of_write_table_with_that_row_group_size(
        kept: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spool_chunk: int) -> None:
    out = tmp_path / "run"
    shutil.copytree(kept, out)
    monkeypatch.setattr(table_writer, "ROW_GROUP_ROWS", 7)
    monkeypatch.setattr(table_writer, "_SPOOL_CHUNK_ROWS", spool_chunk)
    rebuild(out, tiny())
    assert written(out) == one_shot_tables(out, row_group_size=7)
    assert pq.ParquetFile(out / CALLS_TABLE).metadata.num_row_groups > 10
    assert_manifest_matches(out)


def test_a_row_group_size_that_divides_the_rows_adds_no_empty_group(
        kept: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    shutil.copytree(kept, out)
    monkeypatch.setattr(table_writer, "ROW_GROUP_ROWS", 10)  # 30 session rows: exactly three groups
    rebuild(out, tiny())
    assert pq.ParquetFile(out / SESSIONS_TABLE).metadata.num_row_groups == 3
    assert written(out) == one_shot_tables(out, row_group_size=10)


def test_a_sweep_with_bracketed_labels_streams_to_the_same_bytes(tmp_path: Path) -> None:
    config = RunConfig(**(TINY | {
        "sessions": 4, "batch_size": 1,
        "sweep": {"models": ["frontier", "small"], "params": {"sw20.window_size": [10, 40]}}}))
    labels = [v.label for v in config.variants()]
    assert any("[" in label for label in labels) and any("@" in label for label in labels)
    out = tmp_path / "sweep"
    run(config, out, quiet=True, keep_parts=True)
    assert written(out) == one_shot_tables(out)
    sessions = pq.read_table(out / SESSIONS_TABLE)
    assert sessions.schema.field("sweep_value").type == pa.float64()
    assert sessions.column("sweep_value").null_count < sessions.num_rows


def test_with_the_event_log_off_there_is_no_events_table(tmp_path: Path) -> None:
    out = tmp_path / "quiet"
    run(tiny(events=False, sessions=4), out, quiet=True, keep_parts=True)
    assert not (out / EVENTS_TABLE).exists()
    assert written(out) == one_shot_tables(out)
    assert EVENTS_TABLE not in json.loads((out / MANIFEST_FILE).read_text())["sha256"]
    assert_manifest_matches(out)


def test_a_table_of_no_rows_is_the_bytes_of_writing_an_empty_table(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    config = tiny(sessions=3, strategies=[{"name": "unbounded"}])
    raise_for("unbounded", monkeypatch)  # every replay fails: sessions rows, no calls, no events
    out = tmp_path / "failed"
    summary = run(config, out, quiet=True, keep_parts=True)
    assert summary.errors == 3
    assert pq.ParquetFile(out / CALLS_TABLE).metadata.num_rows == 0
    assert pq.ParquetFile(out / EVENTS_TABLE).metadata.num_rows == 0
    assert written(out) == one_shot_tables(out)
    assert pq.read_schema(out / EVENTS_TABLE) == EVENT_SCHEMA
    assert pq.read_schema(out / CALLS_TABLE).names == SIMULATED_CALL_COLUMNS
    assert_manifest_matches(out)


def rewrite_part(run_dir: Path, batch_id: str, change: Any) -> None:
    """Rewrite one part (a valid part again, checksum and all) after ``change(sessions, calls)``."""
    config = config_from_dir(run_dir)
    part = read_part(run_dir / PARTS_DIR / f"{batch_id}.jsonl", config_hash=config.config_hash())
    change(part.session_rows, part.call_rows)
    RunDirectory(run_dir).append(RunPlan.simulated(config), BatchResult(batch_id, part.session_rows, part.call_rows,
                                                                        EventLines.of(part.event_rows)))


def test_a_column_wider_than_its_first_batches_gets_the_type_of_the_whole_table(
        kept: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pandas typed each column from all its values: seeds that fit int64 in the first batch but not
    later are uint64, ints with a later float are float64, an int column with a later None float64, a
    str column with a later None still text. The writing starts again from the first batch then."""
    out = tmp_path / "run"
    shutil.copytree(kept, out)
    config = tiny()
    order = RunPlan.simulated(config).in_table_order([b.id for b in plan(config)])
    first, last = order[0], order[-1]

    def small_ints_first(sessions: list[dict[str, Any]], calls: list[dict[str, Any]]) -> None:
        for i, row in enumerate(sessions):
            row["seed"] = i
        for row in calls:
            row["noise"] = 1

    def nones_last(sessions: list[dict[str, Any]], calls: list[dict[str, Any]]) -> None:
        sessions[-1]["seed"] = 2**64 - 1
        calls[-1]["attempt"] = None
        calls[-1]["step_id"] = None
        sessions[0]["loop_detected"] = None

    rewrite_part(out, first, small_ints_first)
    rewrite_part(out, last, nones_last)
    monkeypatch.setattr(table_writer, "ROW_GROUP_ROWS", 5)  # rows reach the file before the widening shows
    source = part_batches(out, config, [b.id for b in plan(config)])
    passes = []

    def counted() -> Iterator[BatchTables]:
        passes.append(1)
        return source()

    write_tables(out, config, counted, batches=len(plan(config)), started="x")
    assert len(passes) >= 2
    sessions, calls = pq.read_schema(out / SESSIONS_TABLE), pq.read_schema(out / CALLS_TABLE)
    assert sessions.field("seed").type == pa.uint64()
    assert sessions.field("loop_detected").type == pa.bool_()
    assert calls.field("noise").type == pa.float64()
    assert calls.field("attempt").type == pa.float64()
    assert written(out) == one_shot_tables(out, row_group_size=5)


def test_a_part_changed_after_it_was_checked_is_named(kept: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(kept, out)
    config = tiny()
    source = part_batches(out, config, [b.id for b in plan(config)])
    damaged = out / PARTS_DIR / f"{plan(config)[2].id}.jsonl"
    damaged.write_bytes(damaged.read_bytes()[:-20])
    before = written(out)
    with pytest.raises(RunError, match=damaged.name):
        write_tables(out, config, source, batches=len(plan(config)), started="x")
    assert written(out) == before  # the tables in place are untouched
    assert not list(out.glob(".*.tmp"))


def test_batches_out_of_the_tables_order_are_refused(kept: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(kept, out)
    config = tiny()
    ids = [b.id for b in plan(config)]
    source = part_batches(out, config, ids)

    def reversed_batches() -> Iterator[BatchTables]:
        return iter(list(source())[::-1])

    with pytest.raises(RunError, match="do not follow"):
        write_tables(out, config, reversed_batches, batches=len(ids), started="x")
    assert not list(out.glob(".*.tmp"))


def test_a_merge_of_a_finished_and_an_unfinished_shard_streams_the_same_bytes(
        kept: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    run(tiny(), one, shard=(1, 2), quiet=True)
    run(tiny(), two, shard=(2, 2), quiet=True, keep_parts=True)
    for name in (MANIFEST_FILE, SESSIONS_TABLE, CALLS_TABLE, EVENTS_TABLE):
        (two / name).unlink()
    monkeypatch.setattr(table_writer, "ROW_GROUP_ROWS", 7)
    summary = merge(tmp_path / "merged", [one, two])
    assert written(tmp_path / "merged") == one_shot_tables(kept, row_group_size=7)
    assert len(summary.sessions) == 10 * len(LABELS)
    assert_manifest_matches(tmp_path / "merged")
