"""Merging the shard run directories of one config into one: the same tables as an unsharded run
(docs/design.md, "Scale"). A finished shard's rows are read batch by batch from its tables, an
unfinished one's from its parts, and streamed into the merged directory's tables like a run's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from harness.core.files import write_atomically
from harness.core.rundir import CONFIG_FILE, EVENTS_TABLE, MANIFEST_FILE, PARTS_DIR, Manifest
from harness.run.directory import RunDirectory, RunError, RunSummary, config_from_dir, part_tables, stamp_hash
from harness.run.plan import EVENT_SCHEMA, RunPlan
from harness.run.table_writer import BatchSource, BatchTables

__all__ = ["merge"]

#: Rows a merge reads at a time from a finished shard's table (``iter_batches``' default).
_CURSOR_ROWS = 64 * 1024


def _check_events_of(run_dir: Path) -> None:
    """RunError unless a finished shard (checked against its manifest already) has the event log this
    version writes."""
    path = run_dir / EVENTS_TABLE
    if EVENTS_TABLE not in Manifest.read(run_dir).sha256:
        raise RunError(f"{path}: the manifest lists no event log although the config keeps one; run that shard "
                       "again into its directory to rebuild its tables, then merge")
    if pq.read_schema(path) != EVENT_SCHEMA:
        raise RunError(f"{path}: not the event log this version writes; run that shard again, then merge")


class _TableCursor:
    """A finished shard's table read front to back: its rows are in the tables' order, so the rows of
    each of its batches, taken in that order, are the next ones."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = pq.ParquetFile(path)
        self.schema = self._file.schema_arrow
        self._batches = self._file.iter_batches(batch_size=_CURSOR_ROWS)
        self._head: pa.RecordBatch | None = None

    def take(self, scenario: str, first: int, end: int) -> pa.Table:
        """The next rows while they are of ``scenario``'s sessions ``first`` to ``end - 1``."""
        pieces = []
        while True:
            if self._head is None or not self._head.num_rows:
                self._head = next(self._batches, None)
                if self._head is None:
                    break
            head = self._head
            index = head.column("session_index")
            inside = pc.and_(pc.equal(head.column("scenario"), scenario),
                             pc.and_(pc.greater_equal(index, first), pc.less(index, end)))
            outside = pc.index(pc.fill_null(inside, False), False).as_py()
            n = head.num_rows if outside < 0 else outside
            pieces.append(head.slice(0, n))
            self._head = head.slice(n)
            if outside >= 0:
                break
        return pa.Table.from_batches(pieces, schema=self.schema)

    def exhausted(self) -> bool:
        """No rows are left (every row belonged to a batch taken)."""
        if self._head is not None and self._head.num_rows:
            return False
        return all(not b.num_rows for b in self._batches)

    def close(self) -> None:
        self._file.close()


def _merged_batches(plan: RunPlan, holders: dict[str, Path], finished: set[Path]) -> BatchSource:
    """The rows of every batch of ``holders`` (batch id -> the directory that holds it), in the tables'
    order: from the finished tables of a directory in ``finished``, from its parts otherwise."""
    order = plan.in_table_order(list(holders))
    bounds = {b.id: (plan.scenario_names[b.sessions[0].scenario_index], b.sessions[0].session_index,
                     b.sessions[-1].session_index + 1) for b in plan.batches}
    names = plan.table_files

    def batches() -> Iterator[BatchTables]:
        cursors = {d: [_TableCursor(d / name) for name in names] for d in sorted(finished)}
        try:
            for batch_id in order:
                d = holders[batch_id]
                if d not in cursors:
                    yield part_tables(RunDirectory(d).part(batch_id), plan)
                    continue
                yield BatchTables(d, {name: cursor.take(*bounds[batch_id])
                                      for name, cursor in zip(names, cursors[d], strict=True)})
            for cursor in (c for shard in cursors.values() for c in shard):
                if not cursor.exhausted():
                    raise RunError(f"{cursor.path}: holds rows of sessions outside the batches of its manifest; run "
                                   "that shard again into its directory to rebuild its tables, then merge")
        finally:
            for cursor in (c for shard in cursors.values() for c in shard):
                cursor.close()

    return batches


def _check_inputs(out_dir: Path, run_dirs: Sequence[Path]) -> dict[Path, str]:
    """Each input is a run directory given once, none is ``out_dir``, all of one config: their hashes."""
    if not run_dirs:
        raise RunError("merge needs at least one run directory")
    seen: dict[Path, Path] = {}
    for d in run_dirs:
        if not d.is_dir():
            raise RunError(f"{d}: not a directory")
        if not (d / CONFIG_FILE).is_file():
            raise RunError(f"{d}: not a run directory (no {CONFIG_FILE})")
        real = d.resolve()
        if real in seen:
            raise RunError(f"{d}: given twice (as {seen[real]} too)")
        seen[real] = d
    if out_dir.resolve() in seen:
        raise RunError(f"{out_dir}: the merged directory cannot be one of the inputs")
    hashes = {d: stamp_hash(d) for d in run_dirs}
    if len(set(hashes.values())) != 1:
        raise RunError("the run directories hold different configs; only shards of one config can be merged ("
                       + ", ".join(f"{d}: {h[:12]}" for d, h in hashes.items()) + ")")
    return hashes


def _holders(plan: RunPlan, run_dirs: Sequence[Path]) -> tuple[dict[str, Path], dict[Path, list[str]]]:
    """Which input holds each batch (each at most once), and the batches each finished input's tables hold."""
    holders: dict[str, Path] = {}
    from_tables: dict[Path, list[str]] = {}
    for d in run_dirs:
        directory = RunDirectory(d)
        finished = directory.finished_batches(plan)
        if finished is not None:
            from_tables[d] = finished
        held = finished if finished is not None else sorted(directory.verified_parts(plan, replay_damaged=False))
        if finished is None and not held:
            manifest = d / MANIFEST_FILE
            state = "is missing" if not manifest.exists() else "does not describe finished tables of this config"
            raise RunError(f"{manifest}: {state}, and {d / PARTS_DIR} holds no parts: nothing to merge from {d} "
                           "(run its shard again into it)")
        for batch_id in held:
            if batch_id in holders:
                raise RunError(f"{d}: holds batch {batch_id}, as {holders[batch_id]} does (the same shard given "
                               "twice?); give each shard once")
            holders[batch_id] = d
    return holders, from_tables


def merge(out_dir: Path, run_dirs: Sequence[Path], *, partial: bool = False) -> RunSummary:
    """Join shard run directories of one config into ``out_dir``: the same tables as an unsharded run.

    Every part is verified first, and nothing is written unless all hold up: RunError (naming the
    file) for inputs of different configs, a directory given twice, two inputs holding the same batch,
    a damaged or foreign part, ``out_dir`` holding other parts, or, unless ``partial``, batches of the
    plan that no input holds.
    """
    started_wall = time.perf_counter()
    hashes = _check_inputs(out_dir, run_dirs)
    plan = RunPlan.simulated(config_from_dir(run_dirs[0]))
    stamp_bytes = (run_dirs[0] / CONFIG_FILE).read_bytes()
    holders, from_tables = _holders(plan, run_dirs)
    missing = [b.id for b in plan.batches if b.id not in holders]
    if missing and not partial:
        raise RunError(f"merge: {len(missing)} of {len(plan.batches)} batches are in none of the inputs (first: "
                       f"{missing[0]}); merge every shard K/N, or pass --partial to merge what there is")
    target = RunDirectory(out_dir)
    if out_dir.exists():
        if not out_dir.is_dir():
            raise RunError(f"{out_dir}: exists and is not a directory")
        if (out_dir / CONFIG_FILE).exists() and stamp_hash(out_dir) != hashes[run_dirs[0]]:
            raise RunError(f"{out_dir} holds a run of another config; use a new directory")
        if not (out_dir / CONFIG_FILE).exists() and any(not p.name.startswith(".") for p in out_dir.iterdir()):
            raise RunError(f"{out_dir}: not empty and not a ctxbench run directory; use a new directory")
        target.check_own_files()
    if plan.config.events:
        for d in from_tables:
            _check_events_of(d)
    target.open()
    with target.writing():
        if target.verified_parts(plan, replay_damaged=False):
            raise RunError(f"{out_dir / PARTS_DIR}: holds parts of an unfinished run; merge into a new directory")
        write_atomically(out_dir / CONFIG_FILE, stamp_bytes)
        # Streamed like a run's tables: a finished shard's rows are read batch by batch from its tables.
        sessions = target.finish(plan, _merged_batches(plan, holders, set(from_tables)), batches=len(holders),
                                 started=datetime.now(UTC).isoformat(timespec="seconds"),
                                 merged_from=[d.name for d in run_dirs])
    errors = int((sessions["outcome"] == "error").sum()) if not sessions.empty else 0
    return RunSummary(out_dir, sessions, errors, 0, 0, time.perf_counter() - started_wall)
