"""Running a plan: its batches worked on an executor, the resume log kept, and the run directory written
(docs/design.md, "Data flow of one run"). `run` is the library form of ``ctxbench run``; `execute` runs
any `RunPlan`, simulated or accounting (``ctxbench replay``). Planning is `harness.run.plan`, the
executors `harness.run.executors`, the run directory `harness.run.directory`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from harness.core.rundir import SESSIONS_TABLE
from harness.core.shard import Shard
from harness.run.config import RunConfig
from harness.run.directory import RunDirectory, RunSummary
from harness.run.executors import EXECUTORS, check_executor, check_scheduler
from harness.run.plan import RunPlan
from harness.run.progress import Progress

__all__ = ["execute", "run"]


def run(config: RunConfig, out_dir: Path, *, resume: bool = True, shard: Shard | tuple[int, int] | None = None,
        quiet: bool = False, notify: Callable[[str], None] | None = None, keep_parts: bool = False) -> RunSummary:
    """Run (or resume) ``config`` into ``out_dir`` and write its tables; the library form of
    ``ctxbench run``. ``notify`` hears what a resume repaired (a damaged part replayed, tables
    rebuilt); RunError, with the directory unchanged, for what it refuses. The parts are removed once
    the tables are written and checked, unless ``keep_parts``. ``shard`` is a `Shard` or the pair (K, N),
    which library callers may find the shorter to write."""
    if isinstance(shard, tuple):
        shard = Shard(*shard)
    return execute(RunPlan.simulated(config, shard), out_dir, resume=resume, quiet=quiet, notify=notify,
                   keep_parts=keep_parts)


def execute(plan: RunPlan, out_dir: Path, *, resume: bool = True, quiet: bool = False,
            notify: Callable[[str], None] | None = None, keep_parts: bool = False) -> RunSummary:
    """Work ``plan`` into the run directory ``out_dir``, resuming what an earlier command left there: the
    one way every run is written, simulated or accounting (see `run`)."""
    config = plan.config
    started_wall = time.perf_counter()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    tell = notify or (lambda _: None)
    check_executor(config.executor)  # before anything is written
    if config.executor == "dask" and config.scheduler is not None:
        check_scheduler(config.scheduler)
    directory = RunDirectory(out_dir)
    directory.open()
    with directory.writing():
        directory.check_own_files()
        directory.prepare(plan, resume=resume)
        batches = plan.mine
        if directory.tables_are_current(plan):
            # Finished before: the directory stands as it is (tables, manifest: who made them, when, at
            # which commit), even parts a run stopped just before removing them left behind.
            sessions = pd.read_parquet(out_dir / SESSIONS_TABLE)
            return _summary(out_dir, sessions, 0, len(batches), started_wall)
        todo = directory.pending(plan, notify=tell)
        # Counted in replays (sessions x variants): a sweep's rows, not just its sessions, are the work.
        total = sum(plan.replays(b) for b in batches)
        progress = Progress(total, resumed=total - sum(plan.replays(b) for b in todo),
                            enabled=not quiet and bool(todo), what="replays")
        sizes = {b.id: plan.replays(b) for b in todo}
        try:
            for result in EXECUTORS[config.executor](plan.work, (plan.task(b) for b in todo), config.jobs,
                                                     config.scheduler):
                directory.append(plan, result)
                progress.advance(sizes[result.batch_id])
        finally:
            progress.close()
        # Streamed from the parts, one at a time: the parent never holds the run's rows.
        sessions = directory.finish(plan, directory.part_batches(plan, [b.id for b in batches]),
                                    batches=len(batches), started=started)
        if not keep_parts:
            directory.compact(plan)
    return _summary(out_dir, sessions, len(todo), len(batches) - len(todo), started_wall)


def _summary(out_dir: Path, sessions: pd.DataFrame, ran: int, skipped: int, started_wall: float) -> RunSummary:
    # An accounting run's rows have no outcome: a recorded session is not replayed by a model.
    errors = int((sessions["outcome"] == "error").sum()) if "outcome" in sessions and not sessions.empty else 0
    return RunSummary(out_dir, sessions, errors, ran, skipped, time.perf_counter() - started_wall)
