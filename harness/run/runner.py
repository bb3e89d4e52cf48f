"""Running a config: plan the batches, replay them on an executor, keep the resume log, and write the
run directory (docs/design.md, "Data flow of one run"). `run` is the library form of ``ctxbench run``;
planning is `harness.run.plan`, the executors `harness.run.executors`, the run directory
`harness.run.store`.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

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
    compact_parts,
    open_dir,
    part_batches,
    prepare_dir,
    tables_are_current,
    write_part,
    write_tables,
    writing_into,
)

__all__ = ["Progress", "format_duration", "run"]


class Progress:
    """Sessions done out of the total, the rate and a real ETA, on stderr, for a terminal and for a log.

    On a terminal: one bar redrawn in place (at most 5 times a second). Off a terminal (``make bench >
    log``, CI): a plain line every `LOG_EVERY_S` seconds and one at the end, so a log shows that work
    moves. The rate counts only the sessions replayed by this process, so resumed batches do not make
    the ETA look shorter than it is; until the first batch finishes the ETA is unknown, shown as "--".
    """

    #: Seconds between two progress lines when stderr is not a terminal.
    LOG_EVERY_S = 15.0
    #: Seconds between two redraws of the bar on a terminal.
    DRAW_EVERY_S = 0.2
    BAR_WIDTH = 24

    def __init__(self, total: int, *, resumed: int = 0, enabled: bool = True, what: str = "sessions",
                 stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.done = resumed
        self.resumed = resumed
        self.what = what
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and total > 0
        self.terminal = self.stream.isatty()
        self.clock = clock
        self.started = clock()
        self.last_shown = -math.inf
        if self.enabled and not self.terminal:
            self._line()
        elif self.enabled:
            self._bar()

    def eta_s(self) -> float | None:
        """Seconds left at this process's rate so far; None before anything was replayed here."""
        fresh = self.done - self.resumed
        elapsed = self.clock() - self.started
        if fresh <= 0 or elapsed <= 0:
            return None
        return (self.total - self.done) * elapsed / fresh

    def advance(self, n: int) -> None:
        """Count ``n`` more sessions done and show progress if it is time to."""
        self.done += n
        if not self.enabled:
            return
        now = self.clock()
        if self.terminal and now - self.last_shown >= self.DRAW_EVERY_S:
            self._bar()
        elif not self.terminal and now - self.last_shown >= self.LOG_EVERY_S:
            self._line()

    def close(self) -> None:
        """The final state: the bar ends its line, a log gets a last line."""
        if not self.enabled:
            return
        if self.terminal:
            self._bar()
            self.stream.write("\n")
        else:
            self._line()
        self.stream.flush()

    def _status(self) -> str:
        elapsed = self.clock() - self.started
        fresh = self.done - self.resumed
        rate = f"{fresh / elapsed:.1f}/s" if fresh > 0 and elapsed > 0 else "--/s"
        eta = self.eta_s()
        resumed = f", {self.resumed} resumed" if self.resumed else ""
        return f"{self.done}/{self.total} {self.what}{resumed}  {rate}  ETA {format_duration(eta)}"

    def _bar(self) -> None:
        filled = self.BAR_WIDTH * self.done // self.total
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.BAR_WIDTH - filled)}] {self._status()} ")
        self.stream.flush()
        self.last_shown = self.clock()

    def _line(self) -> None:
        self.stream.write(f"ctxbench: {self._status()} ({100 * self.done // self.total}%)\n")
        self.stream.flush()
        self.last_shown = self.clock()


def format_duration(seconds: float | None) -> str:
    """``--`` when unknown, else ``42s``, ``3m05s`` or ``1h02m``."""
    if seconds is None:
        return "--"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def run(config: RunConfig, out_dir: Path, *, resume: bool = True, shard: tuple[int, int] | None = None,
        quiet: bool = False, notify: Callable[[str], None] | None = None, keep_parts: bool = False) -> RunSummary:
    """Run (or resume) ``config`` into ``out_dir`` and write its tables; the library form of
    ``ctxbench run``. ``notify`` hears what a resume repaired (a damaged part replayed, tables
    rebuilt); RunError, with the directory unchanged, for what it refuses. The parts are removed once
    the tables are written and checked, unless ``keep_parts``."""
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
