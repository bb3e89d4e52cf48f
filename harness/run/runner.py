"""Running a config: plan the batches, replay them on an executor, keep the resume log, and write the
run directory (DESIGN.md, "Data flow of one run"). `run` is the library form of ``ctxbench run``;
planning is `harness.run.plan`, the executors `harness.run.executors`, the run directory
`harness.run.store`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from harness.core.rundir import MANIFEST_FILE, PARTS_DIR, SESSIONS_TABLE
from harness.run.config import RunConfig
from harness.run.executors import EXECUTORS, check_executor, check_scheduler
from harness.run.plan import make_task, plan, shard_of
from harness.run.store import (
    RunSummary,
    check_own_files,
    check_parts,
    check_shard_fits,
    open_dir,
    prepare_dir,
    tables_are_current,
    write_part,
    write_tables,
    writing_into,
)

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
        quiet: bool = False, notify: Callable[[str], None] | None = None) -> RunSummary:
    """Run (or resume) ``config`` into ``out_dir`` and write its tables; the library form of
    ``ctxbench run``. ``notify`` hears what a resume repaired (a damaged part replayed, tables
    rebuilt); RunError, with the directory unchanged, for what it refuses."""
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
        done = check_parts(out_dir, config, replay_damaged=True, notify=tell)
        (out_dir / PARTS_DIR).mkdir(exist_ok=True)
        batches = shard_of(plan(config), shard)
        todo = [b for b in batches if b.id not in done]
        progress = Progress(sum(len(b.sessions) for b in batches), enabled=not quiet)
        progress.advance(sum(len(b.sessions) for b in batches) - sum(len(b.sessions) for b in todo))
        sizes = {b.id: len(b.sessions) for b in todo}
        tasks = [make_task(config, b) for b in todo]
        config_hash = config.config_hash()
        try:
            for batch_id, session_rows, call_rows in EXECUTORS[config.executor](tasks, config.jobs,
                                                                                config.scheduler):
                write_part(out_dir, batch_id, config_hash, session_rows, call_rows)
                progress.advance(sizes[batch_id])
        finally:
            progress.close()
        if not todo and tables_are_current(out_dir, config, shard):
            # Nothing ran: the tables and the manifest (who made them, when, at which commit) stand as they are.
            sessions = pd.read_parquet(out_dir / SESSIONS_TABLE)
        else:
            if not todo and (out_dir / MANIFEST_FILE).exists():
                tell(f"{out_dir}: the tables do not match the manifest (changed or damaged after the run); "
                     "rebuilt from the verified parts")
            sessions = write_tables(out_dir, config, batch_ids=[b.id for b in batches], started=started, shard=shard)
    errors = int((sessions["outcome"] == "error").sum()) if not sessions.empty else 0
    return RunSummary(out_dir, sessions, errors, len(todo), len(batches) - len(todo),
                      time.perf_counter() - started_wall)
