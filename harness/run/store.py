"""The store: a run directory on disk (DESIGN.md, "Run directory"). It stamps the resolved config,
keeps the append-only resume log of parts, turns the parts into the sorted tables and the manifest,
and merges the shards of one config.

The parent process is the only writer, and one command at a time holds a directory's lock
(`writing_into`): each finished batch becomes ``parts/<batch>.jsonl`` atomically, so an interrupted
run loses at most the batches in flight and a resumed run never duplicates a row. Tables are written
before the manifest, which marks a finished run and holds their checksums. Nothing is trusted
because it is there: a resume and a merge verify every part (`harness.run.parts`) and every table
against the manifest before they use it, and refuse, naming the file, what they cannot repair.
"""

from __future__ import annotations

import contextlib
import hashlib
import platform
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import tomli_w
from pydantic import ValidationError

import harness
from harness.core.files import DirectoryBusy, lock_directory, remove_stale_temp_files, write_atomically
from harness.core.rundir import (
    CALLS_TABLE,
    CONFIG_FILE,
    EVENTS_TABLE,
    MANIFEST_FILE,
    PARTS_DIR,
    SESSIONS_TABLE,
    Manifest,
    TableCheckError,
    verify_tables,
)
from harness.run.config import RunConfig, first_error
from harness.run.parts import EventLines, Part, PartError, PartProblem, encode_part, read_part
from harness.run.plan import Batch, plan, shard_of
from harness.sim.events import EVENT_KEY, EventRecord
from harness.sim.metrics import CallRecord, SessionRecord

__all__ = [
    "CALL_COLUMNS",
    "DAMAGED_DIR",
    "EVENT_SCHEMA",
    "SESSION_COLUMNS",
    "RunError",
    "RunSummary",
    "TableRows",
    "check_own_files",
    "check_parts",
    "check_shard_fits",
    "compact_parts",
    "config_from_dir",
    "events_table",
    "merge",
    "open_dir",
    "prepare_dir",
    "read_batches",
    "read_parts",
    "stamp_hash",
    "tables_are_current",
    "write_part",
    "write_tables",
    "writing_into",
]

#: The replay's own columns, then where the row sits in the run: its profile and its sweep point.
SESSION_COLUMNS = [*SessionRecord.__dataclass_fields__, "model", "sweep_param", "sweep_value"]
CALL_COLUMNS = list(CallRecord.__dataclass_fields__)
#: The columns of ``events.parquet`` (`EventRecord`'s fields): counts as int32 (a window's tokens, a
#: tool output's characters and a session's events all fit), the session index as int64 like the
#: other tables' (columns the explorer joins on).
EVENT_SCHEMA = pa.schema([
    (f.name, pa.string() if f.type == "str" else pa.int64() if f.name == "session_index" else pa.int32())
    for f in fields(EventRecord)
])
#: Where a resume moves the parts it found damaged before replaying their batches (inside ``parts/``).
DAMAGED_DIR = "damaged"


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


class TableRows(NamedTuple):
    """The rows of some batches, as the tables are written from them: session and call rows, and the
    event log as a table (columnar already: it has the most rows; empty when the run keeps none)."""

    sessions: list[dict[str, Any]]
    calls: list[dict[str, Any]]
    events: pa.Table


def events_table(rows: Sequence[Sequence[Any]]) -> pa.Table:
    """Event rows, each the values of `harness.sim.events.EVENT_COLUMNS`, as a table of `EVENT_SCHEMA` in
    the order given. A value of the wrong type is a ValueError naming its column."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(EVENT_SCHEMA)
    arrays = []
    for f, values in zip(EVENT_SCHEMA, columns, strict=True):
        try:
            arrays.append(pa.array(values, type=f.type))
        except (pa.ArrowException, TypeError, OverflowError) as e:
            raise ValueError(f"event column {f.name}: {e}") from None
    return pa.Table.from_arrays(arrays, schema=EVENT_SCHEMA)


def write_part(out_dir: Path, batch_id: str, config_hash: str, session_rows: list[dict[str, Any]],
               call_rows: list[dict[str, Any]], events: EventLines | Sequence[Sequence[Any]] = ()) -> None:
    """Add one finished batch to the resume log, atomically, with its header and checksum (`parts`)."""
    write_atomically(out_dir / PARTS_DIR / f"{batch_id}.jsonl",
                     encode_part(batch_id, config_hash, session_rows, call_rows, events))


def _expected_rows(config: RunConfig, batch: Batch) -> set[tuple[str, int, str]]:
    """The (scenario, session_index, strategy) keys a part of ``batch`` must hold, no more, no fewer."""
    labels = [v.label for v in config.variants()]
    return {(config.scenarios[s.scenario_index].name, s.session_index, label)
            for s in batch.sessions for label in labels}


def _check_rows(part: Part, path: Path, expected: set[tuple[str, int, str]]) -> None:
    """A part whose checksum holds must also hold exactly its batch's sessions, each once."""
    keys = [(r.get("scenario"), r.get("session_index"), r.get("strategy")) for r in part.session_rows]
    if len(set(keys)) != len(keys) or set(keys) != expected:
        raise PartError(path, PartProblem.FOREIGN, "holds rows of other sessions than its batch's")
    sessions = {k[:2] for k in expected}
    if any((r.get("scenario"), r.get("session_index")) not in sessions for r in part.call_rows):
        raise PartError(path, PartProblem.FOREIGN, "holds model calls of other sessions than its batch's")
    if any((r[0], r[1], r[2]) not in expected for r in part.event_rows):  # the columns start with the key
        raise PartError(path, PartProblem.FOREIGN, "holds events of other sessions than its batch's")


def _set_aside(path: Path) -> Path:
    """Move a damaged part into ``parts/damaged/`` (never deleted: the user may want to see it)."""
    aside = path.parent / DAMAGED_DIR
    aside.mkdir(exist_ok=True)
    target = aside / path.name
    n = 1
    while target.exists():
        target = aside / f"{path.name}.{n}"
        n += 1
    path.rename(target)
    return target


def check_parts(out_dir: Path, config: RunConfig, *, replay_damaged: bool,
                notify: Callable[[str], None] = lambda _: None) -> set[str]:
    """Verify every part of ``out_dir`` against ``config``; the ids of the batches they hold.

    A part that is intact but does not belong (another config, another batch's name, rows of other
    sessions, a name no batch of this run has) is a RunError: only the user knows which copy is right.
    A damaged part is a RunError too unless ``replay_damaged``: then it is moved to ``parts/damaged/``,
    ``notify`` is told, and its batch is left out of the returned ids so that it runs again.
    """
    parts_dir = out_dir / PARTS_DIR
    if not parts_dir.exists():
        return set()
    if not parts_dir.is_dir():
        raise RunError(f"{parts_dir}: not a directory (the resume log of a run directory is a folder of parts)")
    batches = {b.id: b for b in plan(config)}
    config_hash = config.config_hash()
    done: set[str] = set()
    damaged: list[PartError] = []
    for path in sorted(parts_dir.glob("*.jsonl")):
        try:
            if path.stem not in batches:
                raise PartError(path, PartProblem.FOREIGN, "not a batch of this run's plan")
            part = read_part(path, config_hash=config_hash)
            _check_rows(part, path, _expected_rows(config, batches[path.stem]))
        except PartError as e:
            if not (replay_damaged and e.problem.replayable):
                raise RunError(f"{e}; move it out of the way (or use --out for a new directory)") from None
            damaged.append(e)
            continue
        done.add(part.batch)
    # Only once every part is known not to be refused: a refused command changes nothing.
    for problem in damaged:
        kept = _set_aside(problem.path)
        notify(f"{problem.path}: {problem.why}; its batch runs again (the file is kept as {kept})")
    return done


def read_parts(run_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(session rows, call rows) of every part of ``run_dir``, verified against its config, in
    part-name order; RunError naming the first part that does not hold up. `read_batches` has the
    events too."""
    config = config_from_dir(run_dir)
    rows = read_batches(run_dir, config, sorted(check_parts(run_dir, config, replay_damaged=False)))
    return rows.sessions, rows.calls


def read_batches(run_dir: Path, config: RunConfig, batch_ids: Sequence[str]) -> TableRows:
    """The rows of the parts of ``batch_ids``, verified again (RunError naming the first that changed
    since it was checked)."""
    sessions: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    events: list[pa.Table] = []
    config_hash = config.config_hash()
    for batch_id in batch_ids:
        path = run_dir / PARTS_DIR / f"{batch_id}.jsonl"
        try:
            part = read_part(path, config_hash=config_hash)
            # Columnar per part: the event log is the longest table, and dicts are large.
            events.append(events_table(part.event_rows))
        except PartError as e:  # checked a moment ago; changed since (another hand in the directory)
            raise RunError(str(e)) from None
        except ValueError as e:  # the checksum holds, so a row of another layout: not this version's part
            raise RunError(f"{path}: {e}") from None
        sessions += part.session_rows
        calls += part.call_rows
    return TableRows(sessions, calls, _concat_events(events))


def _concat_events(tables: Sequence[pa.Table]) -> pa.Table:
    return pa.concat_tables(tables) if tables else EVENT_SCHEMA.empty_table()


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


def write_tables(out_dir: Path, config: RunConfig, session_rows: list[dict[str, Any]],
                 call_rows: list[dict[str, Any]], *, batches: int, started: str, shard: tuple[int, int] | None,
                 merged_from: list[str] | None = None, events: pa.Table | None = None) -> pd.DataFrame:
    """Write the rows of ``batches`` batches as ``sessions.parquet``, ``calls.parquet`` and, when the
    config keeps the event log, ``events.parquet`` (``events``, a table of `EVENT_SCHEMA`), sorted,
    then, last, ``manifest.json`` with their checksums; the sessions table."""
    sessions = _table(session_rows, SESSION_COLUMNS, ["scenario", "session_index", "strategy"])
    calls = _table(call_rows, CALL_COLUMNS, ["scenario", "session_index", "strategy", "call_index"])
    tables = [(SESSIONS_TABLE, sessions), (CALLS_TABLE, calls)]
    if config.events:
        log = EVENT_SCHEMA.empty_table() if events is None else events
        tables.append((EVENTS_TABLE, log.sort_by([(k, "ascending") for k in EVENT_KEY])))
    checksums = {}
    for name, table in tables:
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
        rows={name: table.num_rows for name, table in tables},
        sha256=checksums,
        merged_from=merged_from,
        batches=batches,
    )
    manifest.write(out_dir)
    result: pd.DataFrame = sessions.to_pandas()
    return result


def open_dir(out_dir: Path) -> None:
    """Make sure ``out_dir`` is a directory, creating it (and its parents) when missing; RunError
    naming the path otherwise."""
    if out_dir.exists() and not out_dir.is_dir():
        raise RunError(f"{out_dir}: exists and is not a directory")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunError(f"{out_dir}: cannot create the run directory ({e.strerror or e})") from None


@contextlib.contextmanager
def writing_into(out_dir: Path) -> Iterator[None]:
    """Hold ``out_dir``'s lock while the block writes into it (one command at a time), and clear the
    temporary files a killed writer left; RunError at once when another command holds it."""
    try:
        with lock_directory(out_dir):
            for directory in (out_dir, out_dir / PARTS_DIR):
                if directory.is_dir():
                    remove_stale_temp_files(directory)
            yield
    except DirectoryBusy:
        raise RunError(f"{out_dir}: another ctxbench command is writing into this directory; wait for it to "
                       "finish or use --out for a new one") from None


def stamp_hash(run_dir: Path) -> str:
    """The config hash in ``run_dir``'s ``config.toml``; RunError naming the file when it has none."""
    stamp = run_dir / CONFIG_FILE
    try:
        value = tomllib.loads(stamp.read_text()).get("config_hash")
    except OSError as e:
        raise RunError(f"{stamp}: cannot be read ({e.strerror or e})") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise RunError(f"{stamp}: damaged, not the TOML a run writes ({e})") from None
    if not isinstance(value, str) or not value:
        raise RunError(f"{stamp}: config_hash: missing; not written by ctxbench run")
    return value


def check_own_files(out_dir: Path) -> None:
    """RunError when something that is not a file stands where the run writes one of its files (a
    directory named ``sessions.parquet``): the run would only fail at its end, after all its work."""
    for name in (CONFIG_FILE, MANIFEST_FILE, SESSIONS_TABLE, CALLS_TABLE, EVENTS_TABLE):
        path = out_dir / name
        if (path.exists() or path.is_symlink()) and not path.is_file():
            raise RunError(f"{path}: not a file (the run writes its {name} there); move it out of the way")


def check_shard_fits(out_dir: Path, config: RunConfig, shard: tuple[int, int] | None) -> None:
    """A shard run writes into a directory of its own shard: RunError when ``out_dir`` holds batches
    of other shards (a whole run, a merge, another shard: in its parts or its finished tables), which
    it would replace with a slice. A whole run may complete a shard's directory."""
    if shard is None:
        return
    wanted = f"{shard[0]}/{shard[1]}"
    try:
        manifest: Manifest | None = Manifest.read(out_dir)
    except (OSError, ValueError):
        manifest = None
    if manifest is not None and manifest.config_hash == config.config_hash() and manifest.shard != wanted:
        held = "the whole run" if manifest.shard is None else f"shard {manifest.shard}"
        raise RunError(f"{out_dir}: holds {held}, not shard {wanted}; give each shard its own --out")
    if not (out_dir / PARTS_DIR).is_dir():
        return
    mine = {b.id for b in shard_of(plan(config), shard)}
    planned = {b.id for b in plan(config)}
    others = sorted(p.stem for p in (out_dir / PARTS_DIR).glob("*.jsonl") if p.stem in planned - mine)
    if others:
        raise RunError(f"{out_dir}: holds batches outside shard {wanted} (e.g. {others[0]}: a whole run, a merge "
                       "or another shard); give each shard its own --out")


def prepare_dir(out_dir: Path, config: RunConfig, *, resume: bool) -> None:
    """Check that ``out_dir`` (existing, locked) is new or holds this config's results, and stamp a
    new one with the resolved config. RunError, changing nothing, for another config's directory,
    a directory of other files, or run files whose config.toml is gone."""
    stamp = out_dir / CONFIG_FILE
    config_hash = config.config_hash()
    if stamp.exists() or stamp.is_symlink():
        previous = stamp_hash(out_dir)
        if previous != config_hash:
            raise RunError(f"{out_dir} holds a run of another config (hash {previous[:12]}, this one "
                           f"{config_hash[:12]}); use --out for a new directory")
        if not resume:
            raise RunError(f"{out_dir} already holds this run; drop --no-resume to resume it or use --out")
        return
    others = sorted(p.name for p in out_dir.iterdir() if not p.name.startswith("."))
    run_files = [name for name in others
                 if name in (PARTS_DIR, MANIFEST_FILE, SESSIONS_TABLE, CALLS_TABLE, EVENTS_TABLE)]
    if run_files:
        raise RunError(f"{out_dir}: holds run files ({', '.join(run_files)}) but no {CONFIG_FILE}, so which config "
                       "made them is unknown; use --out for a new directory")
    if others:
        raise RunError(f"{out_dir}: not empty and not a ctxbench run directory (holds {others[0]}); use --out for "
                       "a new directory")
    (out_dir / PARTS_DIR).mkdir(exist_ok=True)
    resolved = {"config_hash": config_hash} | config.resolved()
    write_atomically(stamp, tomli_w.dumps(_toml_safe(resolved)).encode())


def _toml_safe(value: Any) -> Any:
    """TOML has no null: drop None values (they mean "unset" everywhere in the config)."""
    if isinstance(value, dict):
        return {k: _toml_safe(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_toml_safe(v) for v in value]
    return value


def tables_are_current(out_dir: Path, config: RunConfig, shard: tuple[int, int] | None) -> bool:
    """The tables hold every batch of this (shard of the) run and are unchanged since they were
    written: the manifest, written last, names this config, shard and batch count, and the tables'
    sha256 match it. A complete merge counts as the whole run."""
    try:
        manifest = Manifest.read(out_dir)
    except (OSError, ValueError):
        return False
    if (manifest.config_hash != config.config_hash()
            or manifest.shard != (None if shard is None else f"{shard[0]}/{shard[1]}")
            or manifest.batches != len(shard_of(plan(config), shard))):
        return False
    if not {SESSIONS_TABLE, CALLS_TABLE, *([EVENTS_TABLE] if config.events else [])} <= set(manifest.sha256):
        return False
    try:
        verify_tables(out_dir, manifest)
    except TableCheckError:
        return False
    return True


def compact_parts(out_dir: Path, config: RunConfig) -> None:
    """Remove the parts once the tables that hold their rows are written and check against the manifest
    (the resume log is many times the tables' size): a finished run is recognised from its manifest.
    Only parts that verify as this run's are removed; anything else in ``parts/`` (a damaged part, a
    file the user put there, ``parts/damaged/``) stays for the user to look at."""
    verify_tables(out_dir, Manifest.read(out_dir))
    parts_dir = out_dir / PARTS_DIR
    if not parts_dir.is_dir():
        return
    planned = {b.id for b in plan(config)}
    config_hash = config.config_hash()
    for path in parts_dir.glob("*.jsonl"):
        if path.stem in planned:
            with contextlib.suppress(PartError):
                # Its rows were read into the tables a moment ago; the checksum says these are those bytes.
                read_part(path, config_hash=config_hash, rows=False)
                path.unlink()
    with contextlib.suppress(OSError):  # not empty: what is left stays
        parts_dir.rmdir()


def _shard_spec(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    k, _, n = text.partition("/")
    return int(k), int(n)


def _finished_batches(run_dir: Path, config: RunConfig) -> list[str] | None:
    """The batches whose rows a finished run directory's tables hold; None when it is not finished
    (then its parts are what it holds). RunError naming the table when the manifest claims tables that
    do not check against it, or the directory is a partial merge."""
    try:
        manifest = Manifest.read(run_dir)
        shard = _shard_spec(manifest.shard)
    except (OSError, ValueError):
        return None
    if manifest.config_hash != config.config_hash() or manifest.batches is None:
        return None
    try:
        verify_tables(run_dir, manifest)
    except TableCheckError as e:
        raise RunError(str(e).split("; ")[0] + "; run that shard again into its directory to rebuild its "
                       "tables, then merge") from None
    if manifest.batches != len(shard_of(plan(config), shard)):
        raise RunError(f"{run_dir}: a partial merge (--partial) cannot be merged again; merge the shard "
                       "directories it came from")
    return [b.id for b in shard_of(plan(config), shard)]


def _table_rows(run_dir: Path, name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(run_dir / name).to_pylist()
    return rows


def _events_of(run_dir: Path) -> pa.Table:
    """The event log of a finished shard (checked against its manifest already)."""
    path = run_dir / EVENTS_TABLE
    if EVENTS_TABLE not in Manifest.read(run_dir).sha256:
        raise RunError(f"{path}: the manifest lists no event log although the config keeps one; run that shard "
                       "again into its directory to rebuild its tables, then merge")
    table = pq.read_table(path)
    if table.schema != EVENT_SCHEMA:
        raise RunError(f"{path}: not the event log this version writes; run that shard again, then merge")
    return table


def merge(out_dir: Path, run_dirs: Sequence[Path], *, partial: bool = False) -> RunSummary:
    """Join shard run directories of one config into ``out_dir``: the same tables as an unsharded run.

    Every part is verified first, and nothing is written unless all hold up: RunError (naming the
    file) for inputs of different configs, a directory given twice, two inputs holding the same batch,
    a damaged or foreign part, ``out_dir`` holding other parts, or, unless ``partial``, batches of the
    plan that no input holds.
    """
    started_wall = time.perf_counter()
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
    config = config_from_dir(run_dirs[0])
    stamp_bytes = (run_dirs[0] / CONFIG_FILE).read_bytes()
    holders: dict[str, Path] = {}
    from_tables: dict[Path, list[str]] = {}
    for d in run_dirs:
        finished = _finished_batches(d, config)
        if finished is not None:
            from_tables[d] = finished
        held = finished if finished is not None else sorted(check_parts(d, config, replay_damaged=False))
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
    missing = [b.id for b in plan(config) if b.id not in holders]
    if missing and not partial:
        raise RunError(f"merge: {len(missing)} of {len(plan(config))} batches are in none of the inputs (first: "
                       f"{missing[0]}); merge every shard K/N, or pass --partial to merge what there is")
    if out_dir.exists():
        if not out_dir.is_dir():
            raise RunError(f"{out_dir}: exists and is not a directory")
        if (out_dir / CONFIG_FILE).exists() and stamp_hash(out_dir) != hashes[run_dirs[0]]:
            raise RunError(f"{out_dir} holds a run of another config; use a new directory")
        if not (out_dir / CONFIG_FILE).exists() and any(not p.name.startswith(".") for p in out_dir.iterdir()):
            raise RunError(f"{out_dir}: not empty and not a ctxbench run directory; use a new directory")
        check_own_files(out_dir)
    session_rows: list[dict[str, Any]] = []
    call_rows: list[dict[str, Any]] = []
    events: list[pa.Table] = []
    for d in run_dirs:
        if d in from_tables:
            session_rows += _table_rows(d, SESSIONS_TABLE)
            call_rows += _table_rows(d, CALLS_TABLE)
            if config.events:
                events.append(_events_of(d))
        else:
            rows = read_batches(d, config, sorted(b for b, holder in holders.items() if holder == d))
            session_rows += rows.sessions
            call_rows += rows.calls
            events.append(rows.events)
    open_dir(out_dir)
    with writing_into(out_dir):
        if check_parts(out_dir, config, replay_damaged=False):
            raise RunError(f"{out_dir / PARTS_DIR}: holds parts of an unfinished run; merge into a new directory")
        write_atomically(out_dir / CONFIG_FILE, stamp_bytes)
        sessions = write_tables(out_dir, config, session_rows, call_rows, batches=len(holders),
                                started=datetime.now(UTC).isoformat(timespec="seconds"), shard=None,
                                merged_from=[d.name for d in run_dirs], events=_concat_events(events))
    errors = int((sessions["outcome"] == "error").sum()) if not sessions.empty else 0
    return RunSummary(out_dir, sessions, errors, 0, 0, time.perf_counter() - started_wall)


def config_from_dir(run_dir: Path) -> RunConfig:
    """The RunConfig a run directory was made with (from its resolved ``config.toml``); RunError naming
    the file when it is not one ctxbench wrote, or its hash does not match what it holds."""
    stamp = run_dir / CONFIG_FILE
    recorded = stamp_hash(run_dir)
    data = tomllib.loads(stamp.read_text())
    data.pop("config_hash", None)
    try:
        config = RunConfig(**data)
    except ValidationError as e:
        raise RunError(f"{stamp}: not a config this version can run ({first_error(e)})") from None
    except ValueError as e:  # a model_validator's message
        raise RunError(f"{stamp}: not a config this version can run ({e})") from None
    if config.config_hash() != recorded:
        raise RunError(f"{stamp}: its config_hash does not match the config it holds (edited after the run?)")
    return config
