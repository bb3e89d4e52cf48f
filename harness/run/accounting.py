"""Accounting runs: recorded sessions (`harness.run.traces`) replayed under every strategy of a config by
`harness.sim.accounting.account`, written as an ordinary run directory the reports read.

The directory holds ``sessions.parquet`` (one row per recorded session and strategy: the exact token,
cost, cache, compaction and hidden-output columns; none of the behavioural ones), ``calls.parquet``
(one row per call), ``hidden.parquet`` (one row per recorded tool output a strategy hid, with its
size and the first call sent without it), ``config.toml`` (the strategies and the model profile, so
``ctxbench replay TRACE... --config config.toml`` repeats it) and ``manifest.json`` with ``mode =
"accounting"`` and the traces read. Everything is computed first and the directory appears whole (a
temporary sibling renamed into place): a failure leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import tomli_w

import harness
import strategies
from harness.core import tables
from harness.core.rundir import (
    ACCOUNTING_MODE,
    CALLS_TABLE,
    CONFIG_FILE,
    HIDDEN_TABLE,
    SESSIONS_TABLE,
    Manifest,
    file_sha256,
)
from harness.run.config import DEFAULT_PIPELINE, RunConfig
from harness.run.progress import Progress
from harness.run.traces import ImportedSession
from harness.sim.accounting import CALL_FIELDS, account
from strategies import create

__all__ = ["REPLAY_PARAMS", "AccountingError", "AccountingSummary", "replay_entries", "replay_traces"]



#: Params for the managers whose sources leave a setting to the user, as examples/sdk.toml sets them: a
#: LangChain summarization trigger at 80% of the window, ADK's token trigger at 80% of the frontier window.
REPLAY_PARAMS: dict[str, dict[str, Any]] = {
    "pipeline": DEFAULT_PIPELINE,
    "langchain_summarization": {"trigger": ["fraction", 0.8]},
    "adk_compaction": {"token_threshold": 160_000, "event_retention_size": 5},
}


def replay_entries() -> list[dict[str, Any]]:
    """The strategy entries ``ctxbench replay`` uses when given no config: every registered strategy (the
    research set and the SDK managers) with its defaults, or `REPLAY_PARAMS`; one that cannot be made
    here (a bridge whose optional dependency is not installed) is left out."""
    entries = []
    for name in strategies.names():
        entry = {"name": name, **REPLAY_PARAMS.get(name, {})}
        try:
            create(name, **{k: v for k, v in entry.items() if k != "name"})
        except Exception:
            continue
        entries.append(entry)
    return entries


class AccountingError(ValueError):
    """An accounting run cannot start (its output directory is in the way): one line."""


@dataclass(frozen=True, slots=True)
class AccountingSummary:
    """What an accounting run wrote: its directory, row counts and wall time."""

    out: Path
    sessions: int
    strategies: list[str]
    rows: dict[str, int]
    wall_s: float


#: The calls table's columns (the session row's key, what `CallRecord` has that is exact here, then the
#: hidden outputs per call), so that a run whose recorded sessions hold no model call (a trace of the task
#: alone) still has them all: each such session is a sessions row with no calls, as the tables can say.
CALLS_SCHEMA = tables.arrow_schema(tables.select(tables.CALL_COLUMNS, (
    *tables.SESSION_ROW_KEY, *CALL_FIELDS, *tables.names(tables.CALL_COLUMNS, ("accounting",)))))
#: The hidden-outputs table's columns, so that a run in which nothing was hidden still has them all.
HIDDEN_SCHEMA = tables.arrow_schema(tables.HIDDEN_COLUMNS)


def _parquet(rows: Sequence[dict[str, Any]], schema: pa.Schema | None = None) -> bytes:
    table = pa.Table.from_pylist(list(rows), schema=schema)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def replay_traces(sessions: Sequence[ImportedSession], config: RunConfig, out: Path, *,
                  quiet: bool = False) -> AccountingSummary:
    """Account every recorded session under every strategy variant of ``config`` (its profile gives the
    window, prices and cache rules) and write the run directory ``out``, which must not exist yet (or be
    an empty directory)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise AccountingError(f"{out}: already exists and is not an empty directory (choose another --out)")
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.monotonic()
    variants = config.variants()
    session_rows: list[dict[str, Any]] = []
    call_rows: list[dict[str, Any]] = []
    hidden_rows: list[dict[str, Any]] = []
    progress = Progress(len(sessions) * len(variants), enabled=not quiet, what="session replays")
    try:
        for index, session in enumerate(sessions):
            tokenizer = session.messages[0].meter.tokenizer if session.messages else None
            system_tokens = tokenizer.count(session.system) if tokenizer is not None and session.system else 0
            trace = {"trace": session.source, "session_id": session.session_id, "format": session.format}
            for variant in variants:
                strategy = create(variant.entry.name, **variant.entry.params)
                done = account(session.messages, strategy, variant.profile, system_tokens=system_tokens,
                               scenario="trace", session_index=index, label=variant.label)
                session_rows.append({**done.row, **trace, "model": variant.model})
                call_rows += done.calls
                hidden_rows += [{"scenario": "trace", "session_index": index, "strategy": variant.label,
                                 **asdict(h)} for h in done.hidden]
                progress.advance(1)
    finally:
        progress.close()
    tables = {
        SESSIONS_TABLE: _parquet(session_rows),
        CALLS_TABLE: _parquet(call_rows, CALLS_SCHEMA),
        HIDDEN_TABLE: _parquet(hidden_rows, HIDDEN_SCHEMA),
    }
    rows = {SESSIONS_TABLE: len(session_rows), CALLS_TABLE: len(call_rows), HIDDEN_TABLE: len(hidden_rows)}
    resolved = {"model": config.model if isinstance(config.model, str) else dict(config.model),
                "strategies": [e.model_dump(exclude_none=True) for e in config.strategy_entries()]}
    _write_dir(out, tables, config_toml=tomli_w.dumps(resolved).encode(), manifest=lambda sha: Manifest(
        run_id=out.name, ctxbench_version=harness.__version__, root_seed=None,
        config_hash=hashlib.sha256(json.dumps(resolved, sort_keys=True).encode()).hexdigest(),
        strategies=resolved["strategies"],
        variants=[{"label": v.label, "name": v.entry.name} for v in variants],
        scenarios=[{"name": "trace", "traces": sorted({s.source for s in sessions})}],
        model=variants[0].profile.model_dump() if variants else {}, started=started_at,
        finished=datetime.now(UTC).isoformat(timespec="seconds"), rows=rows, sha256=sha,
        mode=ACCOUNTING_MODE,
    ))
    return AccountingSummary(out=out, sessions=len(sessions), strategies=[v.label for v in variants], rows=rows,
                             wall_s=time.monotonic() - started)


def _write_dir(out: Path, tables: dict[str, bytes], *, config_toml: bytes, manifest: Any) -> None:
    """Write the tables, the config and the manifest into a temporary sibling of ``out``, then rename it
    into place (``out`` absent or an empty directory)."""
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=parent, prefix=f".{out.name}.", suffix=".tmp"))
    try:
        for name, data in tables.items():
            (staging / name).write_bytes(data)
        (staging / CONFIG_FILE).write_bytes(config_toml)
        sha = {name: file_sha256(staging / name) for name in tables}
        manifest(sha).write(staging)
        os.chmod(staging, 0o755)
        if out.is_dir():
            out.rmdir()  # empty, checked above
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
