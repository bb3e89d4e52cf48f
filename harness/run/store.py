"""The store: a run directory on disk (DESIGN.md, "Run directory"). It stamps the resolved config,
keeps the append-only resume log of parts, turns the parts into the sorted tables and the manifest,
and merges the shards of one config.

The parent process is the only writer: each finished batch becomes ``parts/<batch>.jsonl``
atomically, so an interrupted run loses at most the batches in flight and a resumed run never
duplicates a row. Tables are written before the manifest, which marks a finished run.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import tomli_w

import harness
from harness.core.files import write_atomically
from harness.core.rundir import CALLS_TABLE, CONFIG_FILE, MANIFEST_FILE, PARTS_DIR, SESSIONS_TABLE, Manifest
from harness.run.config import RunConfig
from harness.sim.metrics import CallRecord, SessionRecord

__all__ = [
    "CALL_COLUMNS", "SESSION_COLUMNS", "RunError", "RunSummary", "config_from_dir", "finished", "merge",
    "prepare_dir", "read_parts", "write_part", "write_tables",
]

#: The replay's own columns, then where the row sits in the run: its profile and its sweep point.
SESSION_COLUMNS = [*SessionRecord.__dataclass_fields__, "model", "sweep_param", "sweep_value"]
CALL_COLUMNS = list(CallRecord.__dataclass_fields__)


class RunError(Exception):
    """The run cannot go ahead as asked (a directory holding another config's results, a missing
    extra, an unreachable scheduler): one line, exit 2."""


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What a run or merge left: its directory, the sessions table, and how the work went."""

    out_dir: Path
    sessions: pd.DataFrame
    errors: int
    batches_run: int
    batches_skipped: int
    wall_s: float


def write_part(out_dir: Path, batch_id: str, session_rows: list[dict[str, Any]],
               call_rows: list[dict[str, Any]]) -> None:
    """Append one finished batch to the resume log, atomically."""
    lines = [json.dumps({"table": "sessions", "row": r}, sort_keys=True) for r in session_rows]
    lines += [json.dumps({"table": "calls", "row": r}, sort_keys=True) for r in call_rows]
    write_atomically(out_dir / PARTS_DIR / f"{batch_id}.jsonl", ("\n".join(lines) + "\n").encode())


def read_parts(parts_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(session rows, call rows) of every part in ``parts_dir``, in part-name order."""
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


def finished(out_dir: Path, shard: tuple[int, int] | None) -> bool:
    """The tables were written from every part of this (shard of the) run: the manifest is written last."""
    if not all((out_dir / name).is_file() for name in (MANIFEST_FILE, SESSIONS_TABLE, CALLS_TABLE)):
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
