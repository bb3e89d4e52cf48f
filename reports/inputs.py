"""What every report reads before it draws anything: a run directory checked to hold a finished run,
its manifest, its tables verified against the manifest's checksums and checked to have the columns the
reports read, and the output formats checked to be known. A problem the user can fix is a
``ReportInputError``: one line naming the directory, file or format.

Everything here only reads: a report that fails on its inputs leaves the run directory as it was.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from harness.core import tables
from harness.core.rundir import (
    ACCOUNTING_MODE,
    CALLS_TABLE,
    CONFIG_FILE,
    MANIFEST_FILE,
    SESSIONS_TABLE,
    Manifest,
    TableCheckError,
    verify_tables,
)
from reports.stats import METRICS, with_success

__all__ = [
    "FORMATS",
    "OPTIONAL_REPORT_CALL_COLUMNS",
    "OPTIONAL_STATS_COLUMNS",
    "REPORT_CALL_COLUMNS",
    "REPORT_COLUMNS",
    "STATS_COLUMNS",
    "SWEEP_COLUMNS",
    "OpenRun",
    "ReportInputError",
    "RunEntry",
    "check_formats",
    "check_run_dir",
    "kinds",
    "list_runs",
    "open_run_dir",
    "read_manifest",
    "read_table",
    "simulated_run",
]

#: The formats a report (and a sweep page) is written in.
FORMATS = ("html", "md")

#: Column kinds a reader needs: numbers (booleans count) or text.
NUMBER, TEXT = "number", "text"


def kinds(columns: Iterable[tables.Column], wanted: Iterable[str]) -> dict[str, str]:
    """Name -> kind (NUMBER or TEXT) of the columns named ``wanted``, in that order, as the table declares
    them (`harness.core.tables`)."""
    return {c.name: TEXT if c.text else NUMBER for c in tables.select(columns, tuple(wanted))}


#: The sessions columns the statistics read (the session row's key, the outcome and every metric's columns),
#: with their kind; ``success`` is derived from ``outcome``.
STATS_COLUMNS: dict[str, str] = kinds(tables.SESSION_COLUMNS, dict.fromkeys([
    *tables.SESSION_ROW_KEY, "outcome",
    *(c for m in METRICS.values() if not m.optional for c in m.columns if c != "success")]))
#: The columns of the optional metrics (``Metric.optional``): read when a run has them.
OPTIONAL_STATS_COLUMNS = tuple(dict.fromkeys(c for m in METRICS.values() if m.optional for c in m.columns))
#: What the report reads of the sessions besides: the breakdowns by scenario family and loop rule.
REPORT_COLUMNS: dict[str, str] = STATS_COLUMNS | kinds(tables.SESSION_COLUMNS, ("family", "loop_rule"))
#: The sessions columns a sweep adds (``reports.sweep``); a run directory from before sweeps has none.
SWEEP_COLUMNS = tables.names(tables.SESSION_COLUMNS, ("sweep",))
#: The calls columns the plots read.
REPORT_CALL_COLUMNS: dict[str, str] = kinds(tables.CALL_COLUMNS, (
    *tables.CALL_ROW_KEY, "call_kind", "context_tokens", "input_tokens", "malformed_kind"))
#: Calls columns the plots read when a run has them (a run made before compactions were counted has none).
OPTIONAL_REPORT_CALL_COLUMNS = ("tokens_freed",)
#: Columns no row may leave empty: a row without them would silently drop out of every group.
_KEY_COLUMNS = tables.SESSION_ROW_KEY


class ReportInputError(ValueError):
    """The report or compare cannot start from what it was given (not a run directory, a damaged
    table or manifest, an unknown format): one line naming the problem.

    One line by construction: a line break inside (a path or a strategy label can hold one) is
    written as ``\\n``, so the message is never split over lines on stderr."""

    def __init__(self, message: str) -> None:
        super().__init__(message.replace("\r", "\\r").replace("\n", "\\n"))


def _one_line(text: object) -> str:
    """A library's message (pydantic's, arrow's, the OS's) as one line."""
    return " ".join(str(text).split())


def check_run_dir(run_dir: str | Path) -> Path:
    """``run_dir`` as a Path when it is a directory holding a sessions table; else a ReportInputError.
    Only looks: :func:`open_run_dir` also reads the manifest and verifies the tables."""
    path = Path(run_dir)
    if not path.exists():
        raise ReportInputError(f"{path}: no such directory")
    if not path.is_dir():
        raise ReportInputError(f"{path}: not a directory")
    sessions = path / SESSIONS_TABLE
    if not sessions.exists():
        raise ReportInputError(f"{path}: not a finished run directory (no {SESSIONS_TABLE}; run `ctxbench run` "
                               "into it to finish it)")
    if not sessions.is_file():
        raise ReportInputError(f"{sessions}: not a file")
    return path


def check_formats(formats: Iterable[str]) -> tuple[str, ...]:
    """The asked formats, lower-cased, blanks and repeats dropped, in the order given; a
    ReportInputError for an unknown one or for none at all."""
    chosen = tuple(dict.fromkeys(f.strip().lower() for f in formats if f.strip()))
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown:
        raise ReportInputError(f"unknown report format {unknown[0]!r} (known: {', '.join(FORMATS)})")
    if not chosen:
        raise ReportInputError(f"no report format given (known: {', '.join(FORMATS)})")
    return chosen


def read_manifest(run_dir: Path) -> Manifest:
    """The manifest of ``run_dir``. A directory without one (its tables copied without it, or a run
    from before manifests) reads as an empty manifest named after the directory, so it still renders;
    a manifest that cannot be read or parsed is a ReportInputError naming the file (and the field)."""
    path = run_dir / MANIFEST_FILE
    if not path.exists():
        return Manifest(run_id=run_dir.name)
    if not path.is_file():
        raise ReportInputError(f"{path}: not a file")
    try:
        return Manifest.read(run_dir)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ReportInputError(_one_line(f"{path}: not a valid manifest ({f'{where}: ' if where else ''}"
                                         f"{first['msg']})")) from None
    except OSError as error:
        raise ReportInputError(f"{path}: cannot be read ({_one_line(error.strerror or error)})") from None


# Arrow names its input first; the path is ours to give, and a buffer has none.
_ARROW_SOURCE = re.compile(r"^Could not open Parquet input source '[^']*':\s*")


def read_table(path: Path, columns: Mapping[str, str], *, optional: Iterable[str] | None = None) -> pd.DataFrame:
    """The parquet table at ``path``, checked to have ``columns`` (name -> NUMBER or TEXT) and the key
    columns filled; a ReportInputError naming the file when it cannot be read, is not a parquet table,
    or lacks what the reports read. Other columns are kept as they are; with ``optional`` given, only
    ``columns`` and those of ``optional`` the table has are read (a parquet table is read column by
    column: the report reads an eighth of the calls table's bytes)."""
    if not path.is_file():
        raise ReportInputError(f"{path}: {'not a file' if path.exists() else 'missing'}")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ReportInputError(f"{path}: cannot be read ({_one_line(error.strerror or error)})") from None
    if not data:
        raise ReportInputError(f"{path}: empty file (0 bytes), not a parquet table")
    try:
        if optional is None:
            frame = pd.read_parquet(io.BytesIO(data))
        else:
            present = set(pq.ParquetFile(io.BytesIO(data)).schema_arrow.names)
            wanted = [c for c in dict.fromkeys([*columns, *optional]) if c in present]
            frame = pd.read_parquet(io.BytesIO(data), columns=wanted)
    # Damaged bytes surface as ArrowInvalid (a ValueError), ArrowIOError (an OSError) or another
    # ArrowException, depending on where the reader trips; each is the file's fault, not ours.
    except (pa.ArrowException, OSError, ValueError) as error:
        reason = _ARROW_SOURCE.sub("", _one_line(error)) or type(error).__name__
        raise ReportInputError(f"{path}: not a readable parquet table ({reason})") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ReportInputError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                               "(not a table of a ctxbench run?)")
    if not frame.empty:  # an empty table's columns have no type to check
        for name, kind in columns.items():
            column = frame[name]
            # Booleans count as numbers (pandas says so too): loop_detected is a 0/1 metric.
            fits = pd.api.types.is_numeric_dtype(column) if kind == NUMBER else pd.api.types.is_string_dtype(column)
            if not fits and not column.isna().all():  # all null: parquet's null type, read as object
                raise ReportInputError(f"{path}: column {name} holds {column.dtype}, not "
                                       f"{'numbers' if kind == NUMBER else 'text'}")
        for name in _KEY_COLUMNS:
            empty = int(frame[name].isna().sum()) if name in columns else 0
            if empty:
                raise ReportInputError(f"{path}: column {name} has no value in {empty} row{'s' if empty > 1 else ''}")
    return frame


@dataclass(frozen=True)
class OpenRun:
    """A run directory checked by :func:`open_run_dir`: its path, its manifest, and its tables read
    with the columns a reader needs."""

    path: Path
    manifest: Manifest

    @property
    def run_id(self) -> str:
        return self.manifest.run_id or self.path.name

    def sessions(self, columns: Mapping[str, str] = REPORT_COLUMNS, *,
                 optional: Iterable[str] | None = None) -> pd.DataFrame:
        """``sessions.parquet`` with ``success`` added and ``loop_detected`` as booleans
        (:func:`reports.stats.with_success`); only ``columns`` and ``optional`` when that is given
        (:func:`read_table`)."""
        return with_success(read_table(self.path / SESSIONS_TABLE, columns, optional=optional))

    def calls(self, columns: Mapping[str, str] = REPORT_CALL_COLUMNS, *,
              optional: Iterable[str] | None = None) -> pd.DataFrame:
        """``calls.parquet``; an empty frame when the directory has none and the manifest lists none
        (tables copied without it); only ``columns`` and ``optional`` when that is given."""
        path = self.path / CALLS_TABLE
        if not path.exists() and CALLS_TABLE not in self.manifest.sha256:
            return pd.DataFrame()
        return read_table(path, columns, optional=optional)

    def config_text(self) -> str:
        """The resolved ``config.toml`` as text; "" when the directory has none."""
        path = self.path / CONFIG_FILE
        if not path.exists():
            return ""
        try:
            return path.read_bytes().decode("utf-8")
        except IsADirectoryError:
            raise ReportInputError(f"{path}: not a file") from None
        except OSError as error:
            raise ReportInputError(f"{path}: cannot be read ({_one_line(error.strerror or error)})") from None
        except UnicodeDecodeError as error:
            raise ReportInputError(f"{path}: not UTF-8 text (byte {error.start})") from None


def simulated_run(run: OpenRun, what: str) -> OpenRun:
    """``run`` when it is a simulated run; a ReportInputError naming ``what`` for an accounting run
    (``ctxbench replay``), whose tables hold no behavioural columns to compare or explore."""
    if run.manifest.mode == ACCOUNTING_MODE:
        raise ReportInputError(f"{run.path}: an accounting run of recorded sessions (ctxbench replay) has no "
                               f"simulated sessions for {what}; its report compares the strategies "
                               f"(ctxbench report {run.path})")
    return run


def open_run_dir(run_dir: str | Path) -> OpenRun:
    """``run_dir`` checked to be a finished run directory (:func:`check_run_dir`), with its manifest
    read and every table the manifest lists verified against its sha256
    (:func:`harness.core.rundir.verify_tables`); a ReportInputError naming the file otherwise."""
    path = check_run_dir(run_dir)
    manifest = read_manifest(path)
    try:
        verify_tables(path, manifest)
    except TableCheckError as error:
        raise ReportInputError(_one_line(error)) from None
    return OpenRun(path, manifest)


@dataclass(frozen=True, slots=True)
class RunEntry:
    """One run directory found by :func:`list_runs`: where it is, whether it is finished, and what the
    manifest says about it (None where there is no readable manifest)."""

    path: Path
    #: ``finished``, ``unfinished`` (a config.toml, no manifest yet: resumable) or ``damaged: <why>``.
    state: str
    session_rows: int | None = None
    strategies: int | None = None
    model: str | None = None
    shard: str | None = None
    merged: bool = False
    finished: str | None = None
    config_hash: str | None = None


def list_runs(folder: str | Path) -> list[RunEntry]:
    """The run directories directly under ``folder`` (those holding a config.toml or a manifest.json),
    by name; each checked as the report would check it, without reading its tables. ReportInputError
    when ``folder`` is not a directory."""
    root = Path(folder)
    if not root.is_dir():
        raise ReportInputError(f"{root}: {'no such directory' if not root.exists() else 'not a directory'}")
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError as e:
        raise ReportInputError(f"{root}: cannot be listed ({e.strerror or e})") from None
    entries = []
    for path in folders:
        try:
            if not ((path / CONFIG_FILE).exists() or (path / MANIFEST_FILE).exists()):
                continue
            if not (path / MANIFEST_FILE).exists():
                entries.append(RunEntry(path, "unfinished"))
                continue
            manifest = read_manifest(path)
            verify_tables(path, manifest)
        except (ReportInputError, TableCheckError) as e:
            entries.append(RunEntry(path, f"damaged: {str(e).removeprefix(f'{path}/').split('; ')[0]}"))
            continue
        except OSError as e:  # a directory this user cannot look into: listed as such, the others go on
            entries.append(RunEntry(path, f"unreadable: {e.strerror or e}"))
            continue
        entries.append(RunEntry(
            path, "finished", session_rows=manifest.rows.get(SESSIONS_TABLE),
            strategies=len(manifest.strategy_order()) or None, model=manifest.model_name, shard=manifest.shard,
            merged=manifest.merged_from is not None, finished=manifest.finished, config_hash=manifest.config_hash))
    return entries
