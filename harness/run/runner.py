"""Running a config: plan the batches, replay them on an executor, keep the resume log, and write the
run directory (docs/design.md, "Data flow of one run"). `run` is the library form of ``ctxbench run``;
planning is `harness.run.plan`, the executors `harness.run.executors`, the run directory
`harness.run.store`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from harness.core.rundir import MANIFEST_FILE, PARTS_DIR, SESSIONS_TABLE
from harness.core.shard import Shard
from harness.run.config import RunConfig
from harness.run.executors import EXECUTORS, check_executor, check_scheduler
from harness.run.plan import make_task, plan, shard_of
from harness.run.progress import Progress
from harness.run.store import (
    RunSummary,
    check_own_files,
    check_parts,
    check_shard_fits,
    compact_parts,
    open_dir,
    part_batches,
    prepare_dir,
    tables_are_current,
    write_part,
    write_tables,
    writing_into,
)

__all__ = ["run"]


def run(config: RunConfig, out_dir: Path, *, resume: bool = True, shard: Shard | tuple[int, int] | None = None,
        quiet: bool = False, notify: Callable[[str], None] | None = None, keep_parts: bool = False) -> RunSummary:
    """Run (or resume) ``config`` into ``out_dir`` and write its tables; the library form of
    ``ctxbench run``. ``notify`` hears what a resume repaired (a damaged part replayed, tables
    rebuilt); RunError, with the directory unchanged, for what it refuses. The parts are removed once
    the tables are written and checked, unless ``keep_parts``. ``shard`` is a `Shard` or the pair (K, N),
    which library callers may find the shorter to write."""
    if isinstance(shard, tuple):
        shard = Shard(*shard)
    started_wall = time.perf_counter()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    tell = notify or (lambda _: None)
    check_executor(config.executor)  # before anything is written
    if config.executor == "dask" and config.scheduler is not None:
        check_scheduler(config.scheduler)
    open_dir(out_dir)
    with writing_into(out_dir):
        check_own_files(out_dir)
        prepare_dir(out_dir, config, resume=resume)
        check_shard_fits(out_dir, config, shard)
        batches = shard_of(plan(config), shard)
        if tables_are_current(out_dir, config, shard):
            # Finished before: the directory stands as it is (tables, manifest: who made them, when, at
            # which commit), even parts a run stopped just before removing them left behind.
            sessions = pd.read_parquet(out_dir / SESSIONS_TABLE)
            return _summary(out_dir, sessions, 0, len(batches), started_wall)
        done = check_parts(out_dir, config, replay_damaged=True, notify=tell)
        if (out_dir / MANIFEST_FILE).exists():
            tell(f"{out_dir}: the tables do not match the manifest (changed or damaged after the run); "
                 + ("rebuilt from the verified parts" if len(done) == len(batches) else
                    f"{len(batches) - len(done)} of {len(batches)} batches are replayed to rebuild them"))
        (out_dir / PARTS_DIR).mkdir(exist_ok=True)
        todo = [b for b in batches if b.id not in done]
        # Counted in replays (sessions x variants): a sweep's rows, not just its sessions, are the work.
        variants = len(config.variants())
        total = variants * sum(len(b.sessions) for b in batches)
        progress = Progress(total, resumed=total - variants * sum(len(b.sessions) for b in todo),
                            enabled=not quiet and bool(todo), what="replays")
        sizes = {b.id: variants * len(b.sessions) for b in todo}
        tasks = [make_task(config, b) for b in todo]
        config_hash = config.config_hash()
        try:
            for batch_id, session_rows, call_rows, events in EXECUTORS[config.executor](tasks, config.jobs,
                                                                                        config.scheduler):
                write_part(out_dir, batch_id, config_hash, session_rows, call_rows, events)
                progress.advance(sizes[batch_id])
        finally:
            progress.close()
        # Streamed from the parts, one at a time: the parent never holds the run's rows.
        sessions = write_tables(out_dir, config, part_batches(out_dir, config, [b.id for b in batches]),
                                batches=len(batches), started=started, shard=shard)
        if not keep_parts:
            compact_parts(out_dir, config)
    return _summary(out_dir, sessions, len(todo), len(batches) - len(todo), started_wall)


def _summary(out_dir: Path, sessions: pd.DataFrame, ran: int, skipped: int, started_wall: float) -> RunSummary:
    errors = int((sessions["outcome"] == "error").sum()) if not sessions.empty else 0
    return RunSummary(out_dir, sessions, errors, ran, skipped, time.perf_counter() - started_wall)
