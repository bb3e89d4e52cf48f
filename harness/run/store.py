"""The store: a run directory on disk (docs/design.md, "Run directory"). It stamps the resolved config,
keeps the append-only resume log of parts, turns the parts into the sorted tables and the manifest,
and merges the shards of one config.

The parent process is the only writer, and one command at a time holds a directory's lock
(`writing_into`): each finished batch becomes ``parts/<batch>.jsonl`` atomically, so an interrupted
run loses at most the batches in flight and a resumed run never duplicates a row. Tables are written
before the manifest, which marks a finished run and holds their checksums. Nothing is trusted
because it is there: a resume and a merge verify every part (`harness.run.parts`) and every table
against the manifest before they use it, and refuse, naming the file, what they cannot repair.

The tables are streamed: the rows go from the parts (or a merged shard's tables) to the Parquet files one
batch at a time, so the parent holds a batch and a row group, never the run (a 100,000-session run has
tens of millions of call rows). The files are byte for byte what one ``pq.write_table`` of the sorted,
whole table wrote before they were streamed (`write_tables` says how).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import tomli_w
from pydantic import ValidationError

import harness
from harness.core import tables
from harness.core.files import TEMP_SUFFIX, DirectoryBusy, lock_directory, remove_stale_temp_files, write_atomically
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
from harness.core.shard import Shard
from harness.run.config import RunConfig, first_error
from harness.run.parts import EventLines, Part, PartError, PartProblem, encode_part, read_part
from harness.run.plan import Batch, plan, shard_of

__all__ = [
    "CALL_COLUMNS",
    "DAMAGED_DIR",
    "EVENT_SCHEMA",
    "ROW_GROUP_ROWS",
    "SESSION_COLUMNS",
    "BatchSource",
    "BatchTables",
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
    "part_batches",
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
SESSION_COLUMNS = list(tables.names(tables.SESSION_COLUMNS, ("", "sweep")))


def session_columns(config: RunConfig) -> list[str]:
    """The sessions table's columns for ``config``: the series and memory columns only in a run with
    ``[series]``, so a run without one keeps its tables byte for byte."""
    if config.series is None:
        return SESSION_COLUMNS
    return [*SESSION_COLUMNS, *tables.names(tables.SESSION_COLUMNS, ("series", "memory"))]
#: The simulator's call columns (an accounting run's extra ones are not in a simulated run's table).
CALL_COLUMNS = list(tables.names(tables.CALL_COLUMNS))
#: The columns of ``events.parquet`` (`harness.core.tables.EVENT_COLUMNS`, `EventRecord`'s fields).
EVENT_SCHEMA = tables.arrow_schema(tables.EVENT_COLUMNS)
#: Where a resume moves the parts it found damaged before replaying their batches (inside ``parts/``).
DAMAGED_DIR = "damaged"
#: Rows per row group of every table: what ``pq.write_table`` takes when given none (pyarrow's
#: ``_DEFAULT_ROW_GROUP_SIZE``, 1024 * 1024 rows in pyarrow 26), which wrote each table in one call before
#: the tables were streamed; cut into groups of the same size, a streamed table keeps those bytes.
ROW_GROUP_ROWS = 1024 * 1024
#: How rows wait for their row group (`_Spool`): lz4-compressed Arrow, about 4x smaller for about 1 us a
#: row (measured on calls of examples/default.toml; the parsing of a part costs 10 us a row). Three
#: tables fill a row group each at once, and one of calls is some 300 MB as plain Arrow.
_SPOOL_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")
#: Rows the spool compresses together: 16,384 compress as well as a whole table (4.4x for calls, lz4) and
#: are a few MB before they are compressed.
_SPOOL_CHUNK_ROWS = 16 * 1024
#: Rows a merge reads at a time from a finished shard's table (``iter_batches``' default).
_CURSOR_ROWS = 64 * 1024
_INT64_MAX = 2**63 - 1


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


class BatchTables(NamedTuple):
    """The rows of one batch on their way to the tables: session and call rows as Arrow tables whose
    columns have the types of their values (`write_tables` gives each column the type of the whole
    table), events as a table of `EVENT_SCHEMA`; ``source`` is the file they came from, for errors."""

    source: Path
    sessions: pa.Table
    calls: pa.Table
    events: pa.Table


#: The rows of a run's batches, in the tables' order (`part_batches`). A callable, not an iterator: when a
#: column's type turns out wider than its first rows showed, `write_tables` starts again from the first
#: batch with a new iterator.
BatchSource = Callable[[], Iterator[BatchTables]]


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


def _table(rows: list[dict[str, Any]], columns: list[str], sort: Sequence[str]) -> pa.Table:
    """The table of ``rows`` as the tables were written before they were streamed (and so what fixes the
    schema they keep, `_Inferred`): pandas infers each column's type from all its values, then Arrow
    converts, adding pandas' metadata."""
    frame = pd.DataFrame(rows, columns=columns)
    if "sweep_value" in frame:  # None outside a sweep: keep the column float (NaN) so the schema is stable
        frame["sweep_value"] = frame["sweep_value"].astype("float64")
    if not frame.empty:
        frame = frame.sort_values(list(sort), kind="stable").reset_index(drop=True)
    return pa.Table.from_pandas(frame, preserve_index=False)


def _rows_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> pa.Table:
    """``rows`` as a table of ``columns`` (a missing value is null), each column of the type Arrow infers
    from its values; ValueError naming a column whose values have no one type."""
    arrays = []
    for c in columns:
        values = [r.get(c) for r in rows]
        try:
            try:
                arrays.append(pa.array(values))
            except OverflowError:  # above int64: a 64-bit seed, which pandas reads as uint64
                arrays.append(pa.array(values, type=pa.uint64()))
        except (pa.ArrowException, TypeError, OverflowError) as e:
            raise ValueError(f"column {c}: {e}") from None
    return pa.Table.from_arrays(arrays, names=list(columns))


def _kinds(column: pa.ChunkedArray, name: str) -> frozenset[str]:
    """The kinds of value in ``column`` that decide the type pandas infers for a column holding them:
    int (negative: some below 0; uint: some above int64), float, bool, str, null (None or NaN)."""
    kinds: set[str] = set()
    if column.null_count:
        kinds.add("null")
    if column.null_count == len(column):  # only missing values: whatever Arrow typed them, pandas sees None
        return frozenset(kinds)
    t = column.type
    if pa.types.is_integer(t):
        low, high = (v.as_py() for v in pc.min_max(column).values())
        kinds.add("uint" if high > _INT64_MAX else "int")
        if low < 0:
            kinds.add("negative")
    elif pa.types.is_floating(t):
        kinds.add("float")
        if pc.any(pc.is_nan(column)).as_py():
            kinds.add("null")
    elif pa.types.is_boolean(t):
        kinds.add("bool")
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        kinds.add("str")
    else:
        raise ValueError(f"column {name}: values of type {t}, which no table of this version holds")
    return frozenset(kinds)


def _representatives(kinds: frozenset[str]) -> list[Any]:
    """A few values in which pandas sees exactly ``kinds`` (its type inference looks at which kinds of
    value a column holds, and for ints whether any is negative or above int64, nothing else)."""
    values: list[Any] = []
    if "int" in kinds:
        values.append(0)
    if "negative" in kinds:
        values.append(-1)
    if "uint" in kinds:
        values.append(2**63)
    values += [v for kind, v in (("float", 0.5), ("bool", True), ("str", "a"), ("null", None)) if kind in kinds]
    return values


class _Inferred:
    """The schema of a table that is written as `_table` wrote it, found without holding its rows:
    pandas gave each column the type its values together call for, which depends only on the kinds of
    value the column holds (`_kinds`). Those are gathered batch by batch, and the schema is what
    `_table` makes of a few rows holding the same kinds (`_representatives`): the same types and the
    same pandas metadata as the whole table."""

    def __init__(self, columns: list[str], keys: Sequence[str]) -> None:
        self.columns = columns
        self.keys = keys
        self.kinds: dict[str, frozenset[str]] = {c: frozenset() for c in columns}
        self.schema = self._schema()

    def see(self, table: pa.Table) -> bool:
        """Take in the kinds of value of ``table`` (a batch's rows, `_rows_table`); whether the schema
        changed. ValueError when its values and the earlier batches' make a column no table can hold."""
        grown = False
        for c in self.columns:
            kinds = _kinds(table.column(c), c) if c in table.column_names else frozenset({"null"})
            if table.num_rows and not kinds <= self.kinds[c]:
                self.kinds[c] |= kinds
                grown = True
        if not grown:
            return False
        before = self.schema
        try:
            self.schema = self._schema()
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise ValueError(f"its values and the other batches' make no one column type ({e})") from None
        return not self.schema.equals(before, check_metadata=True)

    def _schema(self) -> pa.Schema:
        values = {c: _representatives(self.kinds[c]) or [None] for c in self.columns}
        n = max(len(v) for v in values.values()) if any(self.kinds.values()) else 0
        rows = [{c: v[i % len(v)] for c, v in values.items()} for i in range(n)]
        return _table(rows, self.columns, self.keys).schema


class _Fixed:
    """A table whose schema does not depend on its values (the event log)."""

    def __init__(self, schema: pa.Schema, keys: Sequence[str]) -> None:
        self.schema = schema
        self.keys = keys

    def see(self, table: pa.Table) -> bool:
        """Nothing to learn from the rows."""
        return False


class _Widened(Exception):
    """A column's type turned out wider than the rows written so far showed: write them again."""


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with the columns and types of ``schema``, converted as pandas and Arrow converted the
    values of a whole table: ints widened to float or uint64 when the column is, NaN made null."""
    arrays = []
    for f in schema:
        if f.name not in table.column_names:
            arrays.append(pa.nulls(table.num_rows, f.type))
            continue
        column = table.column(f.name)
        array = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
        if pa.types.is_floating(array.type):
            nan = pc.is_nan(array)
            if pc.any(nan).as_py():  # a NaN of pandas became a null in Table.from_pandas
                array = pc.if_else(nan, pa.scalar(None, array.type), array)
        if array.type != f.type:
            # Unchecked, like pandas' own widening: int64 -> float64 rounds above 2**53 as numpy does.
            array = array.cast(f.type, safe=False)
        arrays.append(array)
    return pa.Table.from_arrays(arrays, schema=schema)


def _spool_pool() -> pa.MemoryPool:
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc
        return pa.default_memory_pool()


#: Where the spooled chunks live: an allocator of their own. They stay while the batches' arrays come and
#: go around them, and in the same allocator they pin its pages (measured with 2 strategies x 32,000
#: sessions: 130 MB more before a row group is joined, 45 MB more at the peak).
_SPOOL_POOL = _spool_pool()


def _pack(array: pa.Array) -> pa.Buffer:
    """``array`` compressed (`_SPOOL_OPTIONS`)."""
    schema = pa.schema([pa.field("values", array.type)])
    sink = pa.BufferOutputStream(memory_pool=_SPOOL_POOL)
    with pa.ipc.new_stream(sink, schema, options=_SPOOL_OPTIONS) as writer:
        writer.write_batch(pa.record_batch([array], schema=schema))
    return sink.getvalue()


def _unpack(buffer: pa.Buffer) -> pa.Array:
    return pa.ipc.open_stream(buffer).read_next_batch().column(0)


class _Spool:
    """Rows waiting for their row group, in the order they came. Batches are gathered into chunks of
    `_SPOOL_CHUNK_ROWS` rows, each column of a chunk compressed on its own: a batch of a run of the
    default config has 80 session rows, too few to compress (the framing of 80 values costs as much as
    they do), and a row group is then joined one column at a time (all of its columns decompressed at
    once, then joined, would take twice the group's size)."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.rows = 0
        self._staged: list[pa.Table] = []
        self._staged_rows = 0
        #: Per chunk: its row count and each column's compressed values.
        self._chunks: list[tuple[int, list[pa.Buffer]]] = []

    def add(self, table: pa.Table) -> None:
        """Queue ``table``'s rows (of `schema`)."""
        self._staged.append(table)
        self._staged_rows += table.num_rows
        self.rows += table.num_rows
        if self._staged_rows >= _SPOOL_CHUNK_ROWS:
            self._pack_staged()

    def _pack_staged(self) -> None:
        if not self._staged_rows:
            self._staged = []
            return
        staged = pa.concat_tables(self._staged)
        self._staged, self._staged_rows = [], 0
        self._chunks.append((staged.num_rows, [_pack(column.combine_chunks()) for column in staged.columns]))

    def take(self, n: int) -> pa.Table:
        """The first ``n`` queued rows as one table, each column one array (as a table written in one
        piece has: the Parquet writer cuts its pages where its input's chunks end)."""
        self._pack_staged()
        used, need = 0, n
        while need and need >= self._chunks[used][0]:
            need -= self._chunks[used][0]
            used += 1
        # The first `used` chunks are taken whole, and `need` rows of the next one.
        split = self._chunks[used] if need else None
        rest: dict[int, pa.Buffer] = {}
        arrays: dict[int, pa.Array] = {}
        # Largest first: joining a column holds its pieces and the joined copy at once, best done while
        # little of the group is joined yet (a call's trace is a third of a row group of calls).
        sizes = {i: sum(columns[i].size for _, columns in self._chunks[:used + 1]) for i in range(len(self.schema))}
        for i in sorted(sizes, key=lambda i: -sizes[i]):
            pieces = [_unpack(columns[i]) for _, columns in self._chunks[:used]]
            if split is not None:
                values = _unpack(split[1][i])
                pieces.append(values.slice(0, need))
                rest[i] = _pack(values.slice(need))
                del values
            for _, columns in self._chunks[:used]:
                columns[i] = pa.py_buffer(b"")  # this column of a chunk taken is done with
            arrays[i] = pa.concat_arrays(pieces) if pieces else pa.nulls(0, self.schema.field(i).type)
            del pieces
            # The pieces are small blocks and the joined column one large one: unless the allocator
            # hands the small ones back now, it keeps them beside the group (measured with 2 strategies
            # x 32,000 sessions: 45 MB more at the peak).
            pa.default_memory_pool().release_unused()
        _SPOOL_POOL.release_unused()
        self._chunks = self._chunks[used:]
        if split is not None:
            self._chunks[0] = (split[0] - need, [rest[i] for i in range(len(self.schema))])
        self.rows -= n
        return pa.Table.from_arrays([arrays[i] for i in range(len(self.schema))], schema=self.schema)


class _HashingFile:
    """A binary file that keeps the sha256 of what is written to it (the manifest's checksum, without
    reading the table back)."""

    def __init__(self, file: Any) -> None:
        self.file = file
        self.sha256 = hashlib.sha256()
        self.closed = False

    def write(self, data: bytes) -> int:
        self.file.write(data)
        self.sha256.update(data)
        return len(data)

    def tell(self) -> int:
        return int(self.file.tell())

    def flush(self) -> None:
        self.file.flush()

    def writable(self) -> bool:
        return True

    def close(self) -> None:  # the owner closes the file, after fsync
        self.closed = True


class _TableWriter:
    """One table streamed into a temporary file next to it: each batch is sorted by the table's key and
    must come after the batch before; full row groups are written as they fill; `finish` renames the
    file into place."""

    def __init__(self, path: Path, layout: _Inferred | _Fixed) -> None:
        self.path = path
        self.layout = layout
        self.rows = 0
        self.schema = layout.schema
        self.spool = _Spool(self.schema.remove_metadata())
        self._last: tuple[Any, ...] | None = None
        self._temp: Path | None = None
        self._file: Any = None
        self._sink: _HashingFile | None = None
        self._parquet: pq.ParquetWriter | None = None

    def add(self, table: pa.Table, source: Path) -> None:
        """Add one batch's rows; RunError naming ``source`` when they do not fit, _Widened when the
        table's schema changed with them after rows were queued."""
        try:
            if self.layout.see(table):
                if self.rows:
                    raise _Widened
                self.schema = self.layout.schema
                self.spool = _Spool(self.schema.remove_metadata())
            table = _conform(table, self.spool.schema).sort_by([(k, "ascending") for k in self.layout.keys])
        except (ValueError, pa.ArrowException) as e:
            raise RunError(f"{source}: {e}") from None
        if not table.num_rows:
            return
        first = tuple(table.column(k)[0].as_py() for k in self.layout.keys)
        try:
            misplaced = self._last is not None and first < self._last
        except TypeError:  # a null key: not a row this version writes
            misplaced = True
        if misplaced:
            raise RunError(f"{source}: holds rows that do not follow those of the batch before it in "
                           f"{self.path.name} (changed since it was checked?)")
        self._last = tuple(table.column(k)[-1].as_py() for k in self.layout.keys)
        self.spool.add(table)
        self.rows += table.num_rows
        while self.spool.rows >= ROW_GROUP_ROWS:
            self._write(self.spool.take(ROW_GROUP_ROWS))

    def _write(self, group: pa.Table) -> None:
        if self._parquet is None:
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=TEMP_SUFFIX)
            self._temp = Path(temp)
            self._file = os.fdopen(fd, "wb")
            os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide results from other readers
            self._sink = _HashingFile(self._file)
            self._parquet = pq.ParquetWriter(self._sink, self.schema, compression="zstd")
        self._parquet.write_table(group, row_group_size=ROW_GROUP_ROWS)

    def finish(self) -> tuple[int, str]:
        """Write the last row group (an empty one for a table of no rows, as ``pq.write_table`` does),
        sync the file and rename it into place; its row count and sha256."""
        if self.spool.rows or not self.rows:
            self._write(self.spool.take(self.spool.rows))
        assert self._parquet is not None and self._sink is not None and self._temp is not None
        self._parquet.close()
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        os.replace(self._temp, self.path)
        self._temp = None
        return self.rows, self._sink.sha256.hexdigest()

    def abort(self) -> None:
        """Drop the temporary file, if it is still there (a no-op after `finish`)."""
        if self._temp is None:
            return
        with contextlib.suppress(Exception):  # closing a half-written file may fail; it is deleted anyway
            if self._parquet is not None:
                self._parquet.close()
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(FileNotFoundError):
            self._temp.unlink()
        self._temp = None


def _stream(out_dir: Path, layouts: list[tuple[str, _Inferred | _Fixed]], source: BatchSource) -> list[tuple[int, str]]:
    """Write the tables of ``layouts`` from ``source``'s batches; each one's row count and sha256.
    A column that widens after rows were queued starts the writing again from the first batch (the
    layouts know its type by then): in practice it happens at most once, early (the seeds of the first
    batch may all fit int64)."""
    while True:
        writers = [_TableWriter(out_dir / name, layout) for name, layout in layouts]
        try:
            for batch in source():
                tables = {SESSIONS_TABLE: batch.sessions, CALLS_TABLE: batch.calls, EVENTS_TABLE: batch.events}
                for writer, (name, _) in zip(writers, layouts, strict=True):
                    writer.add(tables[name], batch.source)
            return [writer.finish() for writer in writers]
        except _Widened:
            continue
        finally:
            for writer in writers:
                writer.abort()


def _in_table_order(config: RunConfig, batch_ids: Iterable[str]) -> list[str]:
    """``batch_ids`` in the order of their rows in the tables: by scenario name (the plan goes in config
    order), then by first session (a batch holds consecutive sessions of one scenario)."""
    where = {b.id: (config.scenarios[b.sessions[0].scenario_index].name, b.sessions[0].session_index)
             for b in plan(config)}
    return sorted(batch_ids, key=where.__getitem__)


def _part_tables(path: Path, config_hash: str, columns: list[str] = SESSION_COLUMNS) -> BatchTables:
    """The rows of the part at ``path``, verified again (RunError naming it when it changed since it
    was checked, or holds rows of another layout)."""
    try:
        part = read_part(path, config_hash=config_hash)
        return BatchTables(path, _rows_table(part.session_rows, columns),
                           _rows_table(part.call_rows, CALL_COLUMNS), events_table(part.event_rows))
    except PartError as e:  # checked a moment ago; changed since (another hand in the directory)
        raise RunError(str(e)) from None
    except ValueError as e:  # the checksum holds, so a row of another layout: not this version's part
        raise RunError(f"{path}: {e}") from None


def part_batches(run_dir: Path, config: RunConfig, batch_ids: Iterable[str]) -> BatchSource:
    """The rows of the parts of ``batch_ids`` in ``run_dir``, one part at a time in the tables' order,
    each verified again as it is read (RunError naming the first that changed since it was checked)."""
    order = _in_table_order(config, batch_ids)
    config_hash = config.config_hash()

    def batches() -> Iterator[BatchTables]:
        for batch_id in order:
            yield _part_tables(run_dir / PARTS_DIR / f"{batch_id}.jsonl", config_hash, session_columns(config))

    return batches


def _git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def write_tables(out_dir: Path, config: RunConfig, source: BatchSource, *, batches: int, started: str,
                 shard: Shard | None, merged_from: list[str] | None = None) -> pd.DataFrame:
    """Write the rows of ``source``'s ``batches`` batches as ``sessions.parquet``, ``calls.parquet`` and,
    when the config keeps the event log, ``events.parquet``, then, last, ``manifest.json`` with their
    checksums; the sessions table.

    The rows stream: one batch at a time, sorted within itself (the source gives the batches in the
    tables' order), queued compressed until a row group of `ROW_GROUP_ROWS` is full. The files are the
    bytes one ``pq.write_table`` of the whole sorted table wrote (docs/design.md, "Determinism"): the same
    row groups, each column of a group one array, and the same schema, which for sessions and calls is
    what pandas inferred from all their rows (`_Inferred`)."""
    layouts: list[tuple[str, _Inferred | _Fixed]] = [
        (SESSIONS_TABLE, _Inferred(session_columns(config), tables.SESSION_ROW_KEY)),
        (CALLS_TABLE, _Inferred(CALL_COLUMNS, tables.CALL_ROW_KEY)),
    ]
    if config.events:
        layouts.append((EVENTS_TABLE, _Fixed(EVENT_SCHEMA, tables.EVENT_ROW_KEY)))
    written = _stream(out_dir, layouts, source)
    manifest = Manifest(
        run_id=out_dir.name,
        ctxbench_version=harness.__version__,
        git_sha=_git_sha(),
        python=sys.version.split()[0],
        platform=platform.platform(),
        root_seed=config.seed,
        config_hash=config.config_hash(),
        shard=None if shard is None else str(shard),
        strategies=config.resolved()["strategies"],
        variants=[{"label": v.label, "name": v.entry.name} | v.tags() for v in config.variants()],
        scenarios=config.resolved()["scenarios"],
        model=config.profile().model_dump(mode="json"),
        started=started,
        finished=datetime.now(UTC).isoformat(timespec="seconds"),
        rows={name: rows for (name, _), (rows, _) in zip(layouts, written, strict=True)},
        sha256={name: sha for (name, _), (_, sha) in zip(layouts, written, strict=True)},
        merged_from=merged_from,
        batches=batches,
    )
    manifest.write(out_dir)
    # Read back rather than kept: the sessions are a seventieth of the rows, and only they are needed.
    result: pd.DataFrame = pq.read_table(out_dir / SESSIONS_TABLE).to_pandas(split_blocks=True, self_destruct=True)
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


def check_shard_fits(out_dir: Path, config: RunConfig, shard: Shard | None) -> None:
    """A shard run writes into a directory of its own shard: RunError when ``out_dir`` holds batches
    of other shards (a whole run, a merge, another shard: in its parts or its finished tables), which
    it would replace with a slice. A whole run may complete a shard's directory."""
    if shard is None:
        return
    wanted = str(shard)
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


def tables_are_current(out_dir: Path, config: RunConfig, shard: Shard | None) -> bool:
    """The tables hold every batch of this (shard of the) run and are unchanged since they were
    written: the manifest, written last, names this config, shard and batch count, and the tables'
    sha256 match it. A complete merge counts as the whole run."""
    try:
        manifest = Manifest.read(out_dir)
    except (OSError, ValueError):
        return False
    if (manifest.config_hash != config.config_hash()
            or manifest.shard != (None if shard is None else str(shard))
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


def _finished_batches(run_dir: Path, config: RunConfig) -> list[str] | None:
    """The batches whose rows a finished run directory's tables hold; None when it is not finished
    (then its parts are what it holds). RunError naming the table when the manifest claims tables that
    do not check against it, or the directory is a partial merge."""
    try:
        manifest = Manifest.read(run_dir)
        # A shard that does not read (ShardError is a ValueError) is a manifest this version did not write.
        shard = None if manifest.shard is None else Shard.parse(manifest.shard)
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


def _check_events_of(run_dir: Path) -> None:
    """RunError unless a finished shard (checked against its manifest already) has the event log this
    version writes."""
    path = run_dir / EVENTS_TABLE
    if EVENTS_TABLE not in Manifest.read(run_dir).sha256:
        raise RunError(f"{path}: the manifest lists no event log although the config keeps one; run that shard "
                       "again into its directory to rebuild its tables, then merge")
    if pq.read_schema(path) != EVENT_SCHEMA:
        raise RunError(f"{path}: not the event log this version writes; run that shard again, then merge")


class _TableCursor:
    """A finished shard's table read front to back: its rows are in the tables' order, so the rows of
    each of its batches, taken in that order, are the next ones."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = pq.ParquetFile(path)
        self.schema = self._file.schema_arrow
        self._batches = self._file.iter_batches(batch_size=_CURSOR_ROWS)
        self._head: pa.RecordBatch | None = None

    def take(self, scenario: str, first: int, end: int) -> pa.Table:
        """The next rows while they are of ``scenario``'s sessions ``first`` to ``end - 1``."""
        pieces = []
        while True:
            if self._head is None or not self._head.num_rows:
                self._head = next(self._batches, None)
                if self._head is None:
                    break
            head = self._head
            index = head.column("session_index")
            inside = pc.and_(pc.equal(head.column("scenario"), scenario),
                             pc.and_(pc.greater_equal(index, first), pc.less(index, end)))
            outside = pc.index(pc.fill_null(inside, False), False).as_py()
            n = head.num_rows if outside < 0 else outside
            pieces.append(head.slice(0, n))
            self._head = head.slice(n)
            if outside >= 0:
                break
        return pa.Table.from_batches(pieces, schema=self.schema)

    def exhausted(self) -> bool:
        """No rows are left (every row belonged to a batch taken)."""
        if self._head is not None and self._head.num_rows:
            return False
        return all(not b.num_rows for b in self._batches)

    def close(self) -> None:
        self._file.close()


def _merged_batches(config: RunConfig, holders: dict[str, Path], finished: set[Path]) -> BatchSource:
    """The rows of every batch of ``holders`` (batch id -> the directory that holds it), in the tables'
    order: from the finished tables of a directory in ``finished``, from its parts otherwise."""
    order = _in_table_order(config, holders)
    bounds = {b.id: (config.scenarios[b.sessions[0].scenario_index].name, b.sessions[0].session_index,
                     b.sessions[-1].session_index + 1) for b in plan(config)}
    names = [SESSIONS_TABLE, CALLS_TABLE, *([EVENTS_TABLE] if config.events else [])]
    config_hash = config.config_hash()

    def batches() -> Iterator[BatchTables]:
        cursors = {d: [_TableCursor(d / name) for name in names] for d in sorted(finished)}
        try:
            for batch_id in order:
                d = holders[batch_id]
                if d not in cursors:
                    yield _part_tables(d / PARTS_DIR / f"{batch_id}.jsonl", config_hash, session_columns(config))
                    continue
                tables = [cursor.take(*bounds[batch_id]) for cursor in cursors[d]]
                events = tables[2] if config.events else EVENT_SCHEMA.empty_table()
                yield BatchTables(d, tables[0], tables[1], events)
            for cursor in (c for shard in cursors.values() for c in shard):
                if not cursor.exhausted():
                    raise RunError(f"{cursor.path}: holds rows of sessions outside the batches of its manifest; run "
                                   "that shard again into its directory to rebuild its tables, then merge")
        finally:
            for cursor in (c for shard in cursors.values() for c in shard):
                cursor.close()

    return batches


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
    if config.events:
        for d in from_tables:
            _check_events_of(d)
    open_dir(out_dir)
    with writing_into(out_dir):
        if check_parts(out_dir, config, replay_damaged=False):
            raise RunError(f"{out_dir / PARTS_DIR}: holds parts of an unfinished run; merge into a new directory")
        write_atomically(out_dir / CONFIG_FILE, stamp_bytes)
        # Streamed like a run's tables: a finished shard's rows are read batch by batch from its tables.
        sessions = write_tables(out_dir, config, _merged_batches(config, holders, set(from_tables)),
                                batches=len(holders), started=datetime.now(UTC).isoformat(timespec="seconds"),
                                shard=None, merged_from=[d.name for d in run_dirs])
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
