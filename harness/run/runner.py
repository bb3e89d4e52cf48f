"""Many sessions: plan the cells, run batches on an executor, keep the resume log, and write the
run directory (DESIGN.md, "Data flow of one run" and "Run directory").

A batch is a list of (scenario entry, session index) pairs. A worker builds and tokenizes each
script once and replays it under every strategy, returning plain rows. The parent process is the
only writer: it writes each finished batch to ``parts/<batch>.jsonl`` atomically, so an
interrupted run loses at most the batches in flight and a resumed run never duplicates a row.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import time
import tomllib
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import tomli_w

import harness
import scenarios
import strategies
from harness.core.crn import session_seed
from harness.core.files import write_atomically
from harness.core.rundir import CALLS_TABLE, CONFIG_FILE, MANIFEST_FILE, PARTS_DIR, SESSIONS_TABLE, Manifest
from harness.core.switches import Switches
from harness.run.config import RunConfig
from harness.sim.kernel import replay
from harness.sim.metrics import CallRecord, SessionRecord
from harness.sim.profiles import Profile

#: The replay's own columns, then where the row sits in the run: its profile and its sweep point.
SESSION_COLUMNS = [*SessionRecord.__dataclass_fields__, "model", "sweep_param", "sweep_value"]
CALL_COLUMNS = list(CallRecord.__dataclass_fields__)


class RunError(Exception):
    """A run directory cannot be used as asked (e.g. another config's results): one line, exit 2."""


@dataclass(frozen=True, slots=True)
class Cell:
    scenario_index: int
    session_index: int


@dataclass(frozen=True, slots=True)
class Batch:
    id: str
    cells: tuple[Cell, ...]


@dataclass(frozen=True, slots=True)
class RunSummary:
    out_dir: Path
    sessions: pd.DataFrame
    errors: int
    batches_run: int
    batches_skipped: int
    wall_s: float


def allocate(config: RunConfig) -> list[int]:
    """Sessions per scenario entry, in proportion to the weights (largest remainder, ties by order)."""
    weights = [s.weight for s in config.scenarios]
    total = sum(weights)
    exact = [config.sessions * w / total for w in weights]
    counts = [int(x) for x in exact]
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: config.sessions - sum(counts)]:
        counts[i] += 1
    return counts


def plan(config: RunConfig) -> list[Batch]:
    """Every batch of the run, in a fixed order (the same for every executor, job count and shard)."""
    batches: list[Batch] = []
    for s, count in enumerate(allocate(config)):
        for start in range(0, count, config.batch_size):
            cells = tuple(Cell(s, i) for i in range(start, min(start + config.batch_size, count)))
            batches.append(Batch(f"{s:02d}-{start:07d}", cells))
    return batches


def shard_of(batches: Sequence[Batch], shard: tuple[int, int] | None) -> list[Batch]:
    """The deterministic slice K/N (1-based K): every N-th batch starting at K."""
    if shard is None:
        return list(batches)
    k, n = shard
    return [b for i, b in enumerate(batches) if i % n == k - 1]


# The worker side ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StrategySpec:
    """One variant of `RunConfig.variants`, as plain data a worker process can receive."""

    name: str
    label: str
    params: dict[str, Any]
    switches: dict[str, Any]
    #: Index into `Task.profiles`.
    profile: int
    tags: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Task:
    """What a worker needs for one batch (plain, picklable data)."""

    batch: Batch
    root_seed: int
    scenarios: tuple[tuple[str, dict[str, Any]], ...]
    strategies: tuple[StrategySpec, ...]
    profiles: tuple[dict[str, Any], ...]


def run_batch(task: Task) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """Replay every session of a batch under every strategy: (batch id, session rows, call rows)."""
    profiles = [Profile(**p) for p in task.profiles]
    session_rows: list[dict[str, Any]] = []
    call_rows: list[dict[str, Any]] = []
    for cell in task.batch.cells:
        scenario, params = task.scenarios[cell.scenario_index]
        seed = session_seed(task.root_seed, scenario, cell.session_index)
        try:
            script = scenarios.generate(scenario, seed, **params)
        except Exception as e:  # a generator bug: record it against every strategy and go on
            for spec in task.strategies:
                session_rows.append(_error_row(scenario, cell.session_index, seed, spec, e))
            continue
        for spec in task.strategies:
            try:
                result = replay(script, strategies.create(spec.name, **spec.params), profiles[spec.profile],
                                switches=Switches(**spec.switches), scenario=scenario,
                                session_index=cell.session_index, strategy_label=spec.label)
            except Exception as e:  # the run goes on; the row says what failed (exit code 1)
                session_rows.append(_error_row(scenario, cell.session_index, seed, spec, e))
                continue
            session_rows.append(result.record.as_row() | spec.tags)
            call_rows.extend(c.as_row() for c in result.calls)
    return task.batch.id, session_rows, call_rows


def _error_row(scenario: str, index: int, seed: int, spec: StrategySpec, e: BaseException) -> dict[str, Any]:
    switches = spec.switches
    row: dict[str, Any] = {c: 0 for c in SESSION_COLUMNS}
    row |= {"scenario": scenario, "session_index": index, "seed": seed, "strategy": spec.label, "outcome": "error",
            "contracts": bool(switches["contracts"]), "errors": switches["errors"],
            "breaker": bool(switches["breaker"]), "family": scenario, "loop_detected": False, "loop_rule": "",
            "context_tokens_mean": 0.0, "latency_s": 0.0, "tool_s": 0.0, "backoff_s": 0.0, "cost_usd": 0.0,
            "summary_cost_usd": 0.0,
            "error": "".join(traceback.format_exception_only(type(e), e)).strip()} | spec.tags
    return row


def make_task(config: RunConfig, batch: Batch) -> Task:
    profiles: list[dict[str, Any]] = []
    strategy_specs = []
    for variant in config.variants():
        e = variant.entry
        instance = strategies.create(e.name, **e.params)
        switches = Switches.for_strategy(instance, **e.switch_overrides()).model_dump(mode="json")
        dumped = variant.profile.model_dump(mode="json")
        if dumped not in profiles:
            profiles.append(dumped)
        strategy_specs.append(StrategySpec(e.name, e.key, e.params, switches, profiles.index(dumped), variant.tags()))
    return Task(
        batch=batch,
        root_seed=config.seed,
        scenarios=tuple((s.name, s.params) for s in config.scenarios),
        strategies=tuple(strategy_specs),
        profiles=tuple(profiles),
    )


# Executors -------------------------------------------------------------------------------------------

Result = tuple[str, list[dict[str, Any]], list[dict[str, Any]]]


def _serial(tasks: Sequence[Task], jobs: int, scheduler: str | None) -> Iterator[Result]:
    for task in tasks:
        yield run_batch(task)


def _process(tasks: Sequence[Task], jobs: int, scheduler: str | None) -> Iterator[Result]:
    workers = jobs or os.cpu_count() or 1
    with ProcessPoolExecutor(max_workers=workers) as pool:
        pending: set[Future[Result]] = set()
        queue = list(tasks)
        # Keep a bounded number of batches in flight, so an interrupt loses little.
        while queue or pending:
            while queue and len(pending) < 2 * workers:
                pending.add(pool.submit(run_batch, queue.pop(0)))
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()


def _dask(tasks: Sequence[Task], jobs: int, scheduler: str | None) -> Iterator[Result]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise RunError("executor dask needs the optional extra: pip install 'ctxbench[dask]'") from None
    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=jobs or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        futures = client.map(run_batch, list(tasks), pure=False)
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _check_scheduler(address: str) -> None:
    try:
        from distributed import Client
    except ImportError:
        raise RunError("executor dask needs the optional extra: pip install 'ctxbench[dask]'") from None
    try:
        Client(address, timeout="10s").close()
    except (OSError, ValueError, TimeoutError) as e:
        raise RunError(f"--scheduler: cannot connect to {address}: {e}") from None


EXECUTORS: dict[str, Callable[[Sequence[Task], int, str | None], Iterator[Result]]] = {
    "serial": _serial, "process": _process, "dask": _dask,
}


# The run directory ----------------------------------------------------------------------------------


def _part_text(session_rows: list[dict[str, Any]], call_rows: list[dict[str, Any]]) -> bytes:
    lines = [json.dumps({"table": "sessions", "row": r}, sort_keys=True) for r in session_rows]
    lines += [json.dumps({"table": "calls", "row": r}, sort_keys=True) for r in call_rows]
    return ("\n".join(lines) + "\n").encode()


def read_parts(parts_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    sessions: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for part in sorted(parts_dir.glob("*.jsonl")):
        for line in part.read_text().splitlines():
            if line:
                item = json.loads(line)
                (sessions if item["table"] == "sessions" else calls).append(item["row"])
    return sessions, calls


def _table(rows: list[dict[str, Any]], columns: list[str], sort: list[str]) -> pa.Table:
    frame = pd.DataFrame(rows, columns=columns)
    if "sweep_value" in frame:  # None outside a sweep: keep the column float (NaN) so the schema is stable
        frame["sweep_value"] = frame["sweep_value"].astype("float64")
    if not frame.empty:
        frame = frame.sort_values(sort, kind="stable").reset_index(drop=True)
    return pa.Table.from_pandas(frame, preserve_index=False)


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return bytes(sink.getvalue().to_pybytes())


def _git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def write_tables(out_dir: Path, config: RunConfig, *, started: str, shard: tuple[int, int] | None,
                 merged_from: list[str] | None = None) -> pd.DataFrame:
    """Turn the parts into ``sessions.parquet``, ``calls.parquet`` and ``manifest.json``."""
    session_rows, call_rows = read_parts(out_dir / PARTS_DIR)
    for row in session_rows:  # rows resumed from a version before these columns: not a sweep
        row.setdefault("model", config.profile().name)
        row.setdefault("sweep_param", "")
        row.setdefault("sweep_value", None)
    sessions = _table(session_rows, SESSION_COLUMNS, ["scenario", "session_index", "strategy"])
    calls = _table(call_rows, CALL_COLUMNS, ["scenario", "session_index", "strategy", "call_index"])
    checksums = {}
    for name, table in ((SESSIONS_TABLE, sessions), (CALLS_TABLE, calls)):
        data = _parquet_bytes(table)
        write_atomically(out_dir / name, data)
        checksums[name] = hashlib.sha256(data).hexdigest()
    manifest = Manifest(
        run_id=out_dir.name,
        ctxbench_version=harness.__version__,
        git_sha=_git_sha(),
        python=sys.version.split()[0],
        platform=platform.platform(),
        root_seed=config.seed,
        config_hash=config.config_hash(),
        shard=None if shard is None else f"{shard[0]}/{shard[1]}",
        strategies=config.resolved()["strategies"],
        variants=[{"label": v.label, "name": v.entry.name} | v.tags() for v in config.variants()],
        scenarios=config.resolved()["scenarios"],
        model=config.profile().model_dump(mode="json"),
        started=started,
        finished=datetime.now(UTC).isoformat(timespec="seconds"),
        rows={SESSIONS_TABLE: sessions.num_rows, CALLS_TABLE: calls.num_rows},
        sha256=checksums,
        merged_from=merged_from,
    )
    manifest.write(out_dir)
    result: pd.DataFrame = sessions.to_pandas()
    return result


def prepare_dir(out_dir: Path, config: RunConfig, *, resume: bool) -> None:
    """Create the run directory, or check that an existing one holds this config's results."""
    stamp = out_dir / CONFIG_FILE
    config_hash = config.config_hash()
    if out_dir.exists() and stamp.exists():
        with stamp.open("rb") as f:
            previous = tomllib.load(f).get("config_hash")
        if previous != config_hash:
            raise RunError(f"{out_dir} holds a run of another config (hash {str(previous)[:12]}, this one "
                           f"{config_hash[:12]}); use --out for a new directory")
        if not resume:
            raise RunError(f"{out_dir} already holds this run; drop --no-resume to resume it or use --out")
        return
    (out_dir / PARTS_DIR).mkdir(parents=True, exist_ok=True)
    resolved = {"config_hash": config_hash} | config.resolved()
    write_atomically(stamp, tomli_w.dumps(_toml_safe(resolved)).encode())


def _toml_safe(value: Any) -> Any:
    """TOML has no null: drop None values (they mean "unset" everywhere in the config)."""
    if isinstance(value, dict):
        return {k: _toml_safe(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_toml_safe(v) for v in value]
    return value


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
        _check_scheduler(config.scheduler)  # before anything is written
    prepare_dir(out_dir, config, resume=resume)
    parts = out_dir / PARTS_DIR
    batches = shard_of(plan(config), shard)
    todo = [b for b in batches if not (parts / f"{b.id}.jsonl").exists()]
    progress = Progress(sum(len(b.cells) for b in batches), enabled=not quiet)
    progress.advance(sum(len(b.cells) for b in batches) - sum(len(b.cells) for b in todo))
    sizes = {b.id: len(b.cells) for b in todo}
    tasks = [make_task(config, b) for b in todo]
    try:
        for batch_id, session_rows, call_rows in EXECUTORS[config.executor](tasks, config.jobs, config.scheduler):
            write_atomically(parts / f"{batch_id}.jsonl", _part_text(session_rows, call_rows))
            progress.advance(sizes[batch_id])
    finally:
        progress.close()
    if not todo and _finished(out_dir, shard):
        # Nothing ran: the tables and the manifest (who made them, when, at which commit) stand as they are.
        sessions = pd.read_parquet(out_dir / SESSIONS_TABLE)
    else:
        sessions = write_tables(out_dir, config, started=started, shard=shard)
    errors = int((sessions["outcome"] == "error").sum()) if not sessions.empty else 0
    return RunSummary(out_dir, sessions, errors, len(todo), len(batches) - len(todo),
                      time.perf_counter() - started_wall)


def _finished(out_dir: Path, shard: tuple[int, int] | None) -> bool:
    """The tables were written from every part of this (shard of the) run: the manifest is written last."""
    path = out_dir / MANIFEST_FILE
    if not (path.is_file() and (out_dir / SESSIONS_TABLE).is_file() and (out_dir / CALLS_TABLE).is_file()):
        return False
    try:
        manifest = Manifest.read(out_dir)
    except (OSError, ValueError):
        return False
    return manifest.shard == (None if shard is None else f"{shard[0]}/{shard[1]}") and manifest.merged_from is None


def merge(out_dir: Path, run_dirs: Sequence[Path]) -> RunSummary:
    """Join shard run directories of one config into ``out_dir``: the same tables as an unsharded run."""
    started_wall = time.perf_counter()
    if not run_dirs:
        raise RunError("merge needs at least one run directory")
    hashes = set()
    stamp_text = None
    for d in run_dirs:
        stamp = d / CONFIG_FILE
        if not stamp.exists():
            raise RunError(f"{d}: not a run directory (no config.toml)")
        text = stamp.read_text()
        hashes.add(tomllib.loads(text).get("config_hash"))
        stamp_text = text
    if len(hashes) != 1:
        raise RunError("the run directories hold different configs; only shards of one config can be merged")
    if (out_dir / CONFIG_FILE).exists() and (out_dir / CONFIG_FILE).read_text() != stamp_text:
        raise RunError(f"{out_dir} holds a run of another config; use a new directory")
    (out_dir / PARTS_DIR).mkdir(parents=True, exist_ok=True)
    assert stamp_text is not None
    write_atomically(out_dir / CONFIG_FILE, stamp_text.encode())
    for d in run_dirs:
        for part in sorted((d / PARTS_DIR).glob("*.jsonl")):
            target = out_dir / PARTS_DIR / part.name
            if not target.exists():
                write_atomically(target, part.read_bytes())
    config = config_from_dir(out_dir)
    sessions = write_tables(out_dir, config, started=datetime.now(UTC).isoformat(timespec="seconds"), shard=None,
                            merged_from=[d.name for d in run_dirs])
    errors = int((sessions["outcome"] == "error").sum()) if not sessions.empty else 0
    return RunSummary(out_dir, sessions, errors, 0, 0, time.perf_counter() - started_wall)


def config_from_dir(run_dir: Path) -> RunConfig:
    """The RunConfig a run directory was made with (from its resolved ``config.toml``)."""
    data = tomllib.loads((run_dir / CONFIG_FILE).read_text())
    data.pop("config_hash", None)
    return RunConfig(**data)
