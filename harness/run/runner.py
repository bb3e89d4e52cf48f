"""Running a config: plan the batches, replay them on an executor, keep the resume log, and write the
run directory (DESIGN.md, "Data flow of one run"). `run` is the library form of ``ctxbench run``;
planning is `harness.run.plan`, the executors `harness.run.executors`, the run directory
`harness.run.store`.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from harness.core.rundir import PARTS_DIR, SESSIONS_TABLE
from harness.run.config import RunConfig
from harness.run.executors import EXECUTORS, check_scheduler
from harness.run.plan import make_task, plan, shard_of
from harness.run.store import RunSummary, finished, prepare_dir, write_part, write_tables

__all__ = ["Progress", "run"]


class Progress:
    """sessions done / total, rate and ETA on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.done = 0
        self.enabled = enabled and sys.stderr.isatty()
        self.started = time.perf_counter()

    def advance(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        sys.stderr.write(f"\r{self.done}/{self.total} sessions  {rate:.1f}/s  ETA {eta:.0f}s ")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def run(config: RunConfig, out_dir: Path, *, resume: bool = True, shard: tuple[int, int] | None = None,
        quiet: bool = False) -> RunSummary:
    """Run (or resume) ``config`` into ``out_dir`` and write its tables; the library form of
    ``ctxbench run``."""
    started_wall = time.perf_counter()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    if config.executor == "dask" and config.scheduler is not None:
        check_scheduler(config.scheduler)  # before anything is written
    prepare_dir(out_dir, config, resume=resume)
    parts = out_dir / PARTS_DIR
    batches = shard_of(plan(config), shard)
    todo = [b for b in batches if not (parts / f"{b.id}.jsonl").exists()]
    progress = Progress(sum(len(b.sessions) for b in batches), enabled=not quiet)
    progress.advance(sum(len(b.sessions) for b in batches) - sum(len(b.sessions) for b in todo))
    sizes = {b.id: len(b.sessions) for b in todo}
    tasks = [make_task(config, b) for b in todo]
    try:
        for batch_id, session_rows, call_rows in EXECUTORS[config.executor](tasks, config.jobs, config.scheduler):
            write_part(out_dir, batch_id, session_rows, call_rows)
            progress.advance(sizes[batch_id])
    finally:
        progress.close()
    if not todo and finished(out_dir, shard):
        # Nothing ran: the tables and the manifest (who made them, when, at which commit) stand as they are.
        sessions = pd.read_parquet(out_dir / SESSIONS_TABLE)
    else:
        sessions = write_tables(out_dir, config, started=started, shard=shard)
    errors = int((sessions["outcome"] == "error").sum()) if not sessions.empty else 0
    return RunSummary(out_dir, sessions, errors, len(todo), len(batches) - len(todo),
                      time.perf_counter() - started_wall)


