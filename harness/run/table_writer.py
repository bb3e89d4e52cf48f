"""The Parquet writer of a run directory's tables: rows arrive one batch at a time, in the tables'
order, and leave as files byte for byte what one ``pq.write_table`` of each whole table wrote. It knows
tables (`TableSpec`), never a config: the run plan (`harness.run.plan.RunPlan`) says which tables a run
has and how each is laid out.

Three layouts, each reproducing how such a table was written whole (`TableSpec.layout`):

- ``pandas``: a ``pd.DataFrame`` of the rows, sorted by the table's key, converted by Arrow (pandas
  infers each column's type from all its values: `_Inferred` finds that type without holding the rows);
- ``fixed``: a schema that does not depend on the values (the event log), rows sorted by the key;
- ``pylist``: ``pa.Table.from_pylist`` of the rows in the order they came (the accounting tables), each
  column of the type Arrow infers from all its values unless the spec gives a schema.

The rows stream: a batch at a time, queued compressed until a row group of `ROW_GROUP_ROWS` is full.
A column that widens after rows were queued starts the writing again from the first batch
(`write_tables`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from harness.core.files import StagedFile

__all__ = ["ROW_GROUP_ROWS", "BatchSource", "BatchTables", "TableSpec", "TableWriteError", "values_table",
           "write_tables"]

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
_INT64_MAX = 2**63 - 1


class TableWriteError(ValueError):
    """A batch's rows do not fit the table (a value of another type, rows out of order): one line naming
    the file they came from."""


Layout = Literal["pandas", "fixed", "pylist"]


@dataclass(frozen=True, slots=True, eq=False)
class TableSpec:
    """One table of a run directory: its file, the part table its rows come from, and its layout."""

    #: The table's file name in the run directory (``sessions.parquet``).
    file: str
    #: The table of a part whose rows it holds (`harness.run.parts.TABLES`).
    part_table: str
    layout: Layout
    #: ``pandas``, and ``pylist`` without a schema: the columns, in order (a row's missing value is null).
    columns: tuple[str, ...] = ()
    #: ``fixed``: the schema (a part holds each row as its values, in this order); ``pylist``: the schema to
    #: convert to, or None to infer it from the values.
    schema: pa.Schema | None = None
    #: The columns a batch's rows are sorted by, and each batch must follow the one before in; none: the
    #: rows stay in the order they came.
    keys: tuple[str, ...] = ()
    compression: str = "zstd"
    #: Whether the rows of a part are value lists (``fixed``) rather than objects of their columns.
    value_rows: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "value_rows", self.layout == "fixed")

    def batch_table(self, rows: Sequence[Any]) -> pa.Table:
        """One batch's rows (a part's rows of `part_table`) as a table; ValueError naming a column whose
        values do not fit."""
        if self.layout == "pandas":
            return _rows_table(rows, self.columns)
        if self.layout == "fixed":
            assert self.schema is not None
            return values_table(rows, self.schema)
        try:
            if self.schema is None:  # what from_pylist does with the columns of the whole table's first row
                return pa.Table.from_pydict({c: [r.get(c) for r in rows] for c in self.columns})
            return pa.Table.from_pylist(list(rows), schema=self.schema)
        except (pa.ArrowException, TypeError, OverflowError) as e:
            raise ValueError(str(e)) from None

    def empty_table(self) -> pa.Table:
        """A table of no rows with this table's columns."""
        return self.batch_table([])

    def _new_layout(self) -> _Inferred | _Fixed | _Listed:
        if self.layout == "pandas":
            return _Inferred(list(self.columns), self.keys)
        if self.layout == "fixed":
            assert self.schema is not None
            return _Fixed(self.schema, self.keys)
        return _Listed(self.schema)


class BatchTables(NamedTuple):
    """The rows of one batch on their way to the tables, per table file: tables whose columns have the
    types of their values (`write_tables` gives each column the type of the whole table); ``source``
    is the file they came from, for errors."""

    source: Path
    tables: Mapping[str, pa.Table]


#: The rows of a run's batches, in the tables' order. A callable, not an iterator: when a column's type
#: turns out wider than its first rows showed, `write_tables` starts again from the first batch with a
#: new iterator.
BatchSource = Callable[[], Iterator[BatchTables]]


def values_table(rows: Sequence[Sequence[Any]], schema: pa.Schema) -> pa.Table:
    """Rows, each the values of ``schema``'s columns in order, as a table of ``schema`` in the order given.
    A value of the wrong type is a ValueError naming its column."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    arrays = []
    for f, values in zip(schema, columns, strict=True):
        try:
            arrays.append(pa.array(values, type=f.type))
        except (pa.ArrowException, TypeError, OverflowError) as e:
            raise ValueError(f"column {f.name}: {e}") from None
    return pa.Table.from_arrays(arrays, schema=schema)


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

    def conform(self, table: pa.Table, schema: pa.Schema) -> pa.Table:
        """``table`` as pandas and Arrow converted its values in the whole table (`_conform`)."""
        return _conform(table, schema)


class _Fixed:
    """A table whose schema does not depend on its values (the event log)."""

    def __init__(self, schema: pa.Schema, keys: Sequence[str]) -> None:
        self.schema = schema
        self.keys = keys

    def see(self, table: pa.Table) -> bool:
        """Nothing to learn from the rows."""
        return False

    def conform(self, table: pa.Table, schema: pa.Schema) -> pa.Table:
        """``table`` in the schema (`_conform`)."""
        return _conform(table, schema)


class _Listed:
    """The schema of a table that ``pa.Table.from_pylist`` of all its rows made: the columns of the first
    row, each of the type Arrow infers from all the column's values (null when all are missing, float64
    when ints and floats meet), or a given schema."""

    keys: tuple[str, ...] = ()

    def __init__(self, schema: pa.Schema | None) -> None:
        self.inferred = schema is None
        self.schema = pa.schema([]) if schema is None else schema

    def see(self, table: pa.Table) -> bool:
        """Take in the types of ``table`` (a batch's rows, from_pylist); whether the schema changed."""
        if not self.inferred or not table.num_rows:
            return False
        if not self.schema.names:
            self.schema = table.schema
            return True
        fields = [pa.field(f.name, _wider(f.type, table.schema.field(f.name).type if f.name in table.column_names
                                          else pa.null(), f.name)) for f in self.schema]
        widened = pa.schema(fields)
        if widened.equals(self.schema):
            return False
        self.schema = widened
        return True

    def conform(self, table: pa.Table, schema: pa.Schema) -> pa.Table:
        """``table`` with the columns and types of ``schema`` (a missing column is null; NaN stays NaN, as
        from_pylist keeps it)."""
        arrays = [table.column(f.name).cast(f.type) if f.name in table.column_names else pa.nulls(table.num_rows,
                                                                                                 f.type)
                  for f in schema]
        return pa.Table.from_arrays(arrays, schema=schema)


def _wider(a: pa.DataType, b: pa.DataType, name: str) -> pa.DataType:
    """The type Arrow infers for a column holding values of types ``a`` and ``b``; ValueError when none."""
    if a == b or pa.types.is_null(b):
        return a
    if pa.types.is_null(a):
        return b
    if {pa.types.is_integer(a) or pa.types.is_floating(a), pa.types.is_integer(b) or pa.types.is_floating(b)} == {True}:
        return pa.float64()
    raise ValueError(f"column {name}: values of types {a} and {b}, which make no one column type")


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

    def __init__(self, path: Path, layout: _Inferred | _Fixed | _Listed, compression: str) -> None:
        self.path = path
        self.layout = layout
        self.compression = compression
        self.rows = 0
        self.schema = layout.schema
        self.spool = _Spool(self.schema.remove_metadata())
        self._last: tuple[Any, ...] | None = None
        self._staged = StagedFile(path)
        self._file: Any = None
        self._sink: _HashingFile | None = None
        self._parquet: pq.ParquetWriter | None = None

    def add(self, table: pa.Table, source: Path) -> None:
        """Add one batch's rows; TableWriteError naming ``source`` when they do not fit, _Widened when the
        table's schema changed with them after rows were queued."""
        try:
            if self.layout.see(table):
                if self.rows:
                    raise _Widened
                self.schema = self.layout.schema
                self.spool = _Spool(self.schema.remove_metadata())
            table = self.layout.conform(table, self.spool.schema)
            if self.layout.keys:
                table = table.sort_by([(k, "ascending") for k in self.layout.keys])
        except (ValueError, pa.ArrowException) as e:
            raise TableWriteError(f"{source}: {e}") from None
        if not table.num_rows:
            return
        first = tuple(table.column(k)[0].as_py() for k in self.layout.keys)
        try:
            misplaced = self._last is not None and first < self._last
        except TypeError:  # a null key: not a row this version writes
            misplaced = True
        if misplaced:
            raise TableWriteError(f"{source}: holds rows that do not follow those of the batch before it in "
                           f"{self.path.name} (changed since it was checked?)")
        self._last = tuple(table.column(k)[-1].as_py() for k in self.layout.keys)
        self.spool.add(table)
        self.rows += table.num_rows
        while self.spool.rows >= ROW_GROUP_ROWS:
            self._write(self.spool.take(ROW_GROUP_ROWS))

    def _write(self, group: pa.Table) -> None:
        if self._parquet is None:
            self._file = os.fdopen(self._staged.create(), "wb")
            self._sink = _HashingFile(self._file)
            self._parquet = pq.ParquetWriter(self._sink, self.schema, compression=self.compression)
        self._parquet.write_table(group, row_group_size=ROW_GROUP_ROWS)

    def finish(self) -> tuple[int, str]:
        """Write the last row group (an empty one for a table of no rows, as ``pq.write_table`` does),
        sync the file and rename it into place; its row count and sha256."""
        if self.spool.rows or not self.rows:
            self._write(self.spool.take(self.spool.rows))
        assert self._parquet is not None and self._sink is not None
        self._parquet.close()
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._staged.commit()
        return self.rows, self._sink.sha256.hexdigest()

    def abort(self) -> None:
        """Drop the temporary file, if it is still there (a no-op after `finish`)."""
        if self._staged.path is None:
            return
        with contextlib.suppress(Exception):  # closing a half-written file may fail; it is deleted anyway
            if self._parquet is not None:
                self._parquet.close()
        with contextlib.suppress(OSError):
            if self._file is not None:
                self._file.close()
        self._staged.discard()


def write_tables(out_dir: Path, specs: Sequence[TableSpec], source: BatchSource) -> list[tuple[int, str]]:
    """Write the tables of ``specs`` into ``out_dir`` from ``source``'s batches; each one's row count and
    sha256. Each file is written next to its place and renamed into it when whole. A column that widens
    after rows were queued starts the writing again from the first batch (the layouts know its type by
    then): in practice it happens at most once, early (the seeds of the first batch may all fit int64).
    TableWriteError naming the source of a batch whose rows do not fit."""
    layouts = [spec._new_layout() for spec in specs]
    while True:
        writers = [_TableWriter(out_dir / spec.file, layout, spec.compression) for spec, layout in zip(specs, layouts,
                                                                                                         strict=True)]
        try:
            for batch in source():
                for writer, spec in zip(writers, specs, strict=True):
                    writer.add(batch.tables[spec.file], batch.source)
            return [writer.finish() for writer in writers]
        except _Widened:
            continue
        finally:
            for writer in writers:
                writer.abort()
