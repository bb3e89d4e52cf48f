"""The resume log's parts: one ``parts/<batch id>.jsonl`` per finished batch, written so that a
damaged, renamed, foreign or tampered part is recognised before its rows reach a table.

A part's first line is a header naming its batch, the hash of the config that made it, its row
counts and the sha256 of the lines that follow; then one ``{"table": ..., "row": ...}`` line per
row, for the tables ``sessions``, ``calls`` and ``hidden`` (an object of its columns) and ``events`` (the values
of the columns the header lists under ``event_columns``, in that order: the event log has the most
rows, and its columns are mostly defaults). `read_part` checks all of it and raises `PartError` with a
`PartProblem` saying what is wrong, which decides what the run directory does: a part whose bytes are damaged
is replayed again (the replay is deterministic, so the tables come out as if nothing happened); a part
that is intact but does not belong (another config, another batch, rows of other sessions) is refused,
because a user put it there and only they know which copy is right.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from harness.sim.events import EVENT_COLUMNS

__all__ = ["PART_FORMAT", "TABLES", "BatchResult", "EventLines", "Part", "PartError", "PartProblem", "encode_part",
           "read_part"]

#: The part layout this version writes; a part without a header (or with another format) was written
#: by an older ctxbench and is replayed again rather than trusted without a checksum. 3: event rows;
#: 4: the hidden outputs of an accounting run.
PART_FORMAT = 4
#: The tables a part holds rows of, in the order they are written (``events`` in a simulated run that
#: keeps its event log, ``hidden`` in an accounting run).
TABLES = ("sessions", "calls", "events", "hidden")
#: One encoder for every row (``json.dumps`` with options builds a new one per call). Event rows, the
#: most numerous, are written without spaces, each into the same frame ``{"row":[...],"table":"events"}``.
_ROW = json.JSONEncoder(sort_keys=True).encode
_VALUES = json.JSONEncoder(separators=(",", ":")).encode


class PartProblem(enum.Enum):
    """What is wrong with a part, and so whether a resume may replay its batch again."""

    #: The bytes are damaged (empty, truncated, a garbage line, a checksum or count that does not
    #: match) or unreadable, or written without a checksum by an older version: replay the batch.
    DAMAGED = "damaged"
    #: Intact, but made by another config, or holding another batch than its name says: refuse.
    FOREIGN = "foreign"

    @property
    def replayable(self) -> bool:
        """A resume may replay the batch and put the part aside."""
        return self is PartProblem.DAMAGED


class PartError(Exception):
    """A part that cannot be used as it is: ``problem`` says which kind, the message says why."""

    def __init__(self, path: Path, problem: PartProblem, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.problem = problem
        self.why = why


@dataclass(frozen=True, slots=True)
class Part:
    """A verified part: its batch id, its raw bytes (for comparing copies) and its rows."""

    batch: str
    data: bytes
    session_rows: list[dict[str, Any]]
    call_rows: list[dict[str, Any]]
    #: Event rows as the values of `EVENT_COLUMNS`; none when the run keeps no event log.
    event_rows: list[list[Any]]
    #: An accounting run's hidden-output rows (`harness.sim.recorded.HiddenOutput` and their key).
    hidden_rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def rows(self, table: str) -> list[Any]:
        """The rows of one of `TABLES`."""
        tables: dict[str, list[Any]] = {"sessions": self.session_rows, "calls": self.call_rows,
                                        "events": self.event_rows, "hidden": self.hidden_rows}
        return tables[table]


@dataclass(frozen=True, slots=True)
class EventLines:
    """Event rows already encoded as a part's lines. The worker that replayed them encodes them (there
    are more of them than of all other rows, and the parent, the one writer, writes every batch's part)."""

    count: int
    #: One ``{"row":[...],"table":"events"}`` line per row, each ending in a newline.
    text: str

    @classmethod
    def of(cls, rows: Sequence[Sequence[Any]]) -> EventLines:
        """The lines of ``rows``, each the values of `EVENT_COLUMNS` (as `harness.sim.events.EventLog` makes them)."""
        return cls(len(rows), "".join('{"row":' + _VALUES(r) + ',"table":"events"}\n' for r in rows))


class BatchResult(NamedTuple):
    """The rows of one finished batch, plain data a worker returns for the parent to write as its part."""

    batch_id: str
    session_rows: list[dict[str, Any]]
    call_rows: list[dict[str, Any]]
    #: The per-turn event log's rows, encoded in the worker (none when the run keeps no event log).
    events: EventLines = EventLines(0, "")
    #: An accounting run's hidden-output rows.
    hidden_rows: Sequence[dict[str, Any]] = ()


def encode_part(batch: str, config_hash: str, session_rows: list[dict[str, Any]],
                call_rows: list[dict[str, Any]], events: EventLines | Sequence[Sequence[Any]] = (),
                hidden_rows: Sequence[dict[str, Any]] = ()) -> bytes:
    """The bytes of one part: the header line, then one line per row (``events``: `EventLines`, or rows
    each the values of `EVENT_COLUMNS`)."""
    lines = [_ROW({"table": "sessions", "row": r}) for r in session_rows]
    lines += [_ROW({"table": "calls", "row": r}) for r in call_rows]
    lines += [_ROW({"table": "hidden", "row": r}) for r in hidden_rows]
    event_lines = events if isinstance(events, EventLines) else EventLines.of(events)
    body = ("".join(line + "\n" for line in lines) + event_lines.text).encode()
    header = {"format": PART_FORMAT, "batch": batch, "config_hash": config_hash, "sessions": len(session_rows),
              "calls": len(call_rows), "events": event_lines.count, "hidden": len(hidden_rows),
              "event_columns": list(EVENT_COLUMNS), "sha256": hashlib.sha256(body).hexdigest()}
    return (json.dumps(header, sort_keys=True) + "\n").encode() + body


def read_part(path: Path, *, config_hash: str, rows: bool = True) -> Part:
    """The verified part at ``path``: PartError unless its header, checksum and rows hold up and it
    was made by the config of ``config_hash`` for the batch its file name says. ``rows=False`` checks
    the header and the checksum only and returns no rows (enough to know a part read before is still
    the same bytes)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise PartError(path, PartProblem.DAMAGED, f"cannot be read ({e.strerror or e})") from None
    if not data:
        raise PartError(path, PartProblem.DAMAGED, "empty (0 bytes)")
    head, newline, body = data.partition(b"\n")
    try:
        header = json.loads(head)
    except ValueError:
        raise PartError(path, PartProblem.DAMAGED, "line 1 is not a part header (damaged)") from None
    if not isinstance(header, dict) or "table" in header:
        raise PartError(path, PartProblem.DAMAGED, "no header with a checksum (written by an older ctxbench, or "
                                                   "damaged)")
    if header.get("format") != PART_FORMAT:
        raise PartError(path, PartProblem.DAMAGED, f"part format {header.get('format')!r}, expected {PART_FORMAT}")
    if not newline or hashlib.sha256(body).hexdigest() != header.get("sha256"):
        raise PartError(path, PartProblem.DAMAGED, "its rows do not match the checksum in its header (truncated "
                                                   "or edited)")
    if header.get("event_columns") != list(EVENT_COLUMNS):
        raise PartError(path, PartProblem.DAMAGED, "its event rows have other columns than this version's (written "
                                                   "by another ctxbench)")
    # The checksum holds, so the rows are what was written; now: do they belong here?
    if header.get("config_hash") != config_hash:
        raise PartError(path, PartProblem.FOREIGN, f"written by another config (hash "
                                                   f"{str(header.get('config_hash'))[:12]}, this run's is "
                                                   f"{config_hash[:12]})")
    if header.get("batch") != path.stem:
        raise PartError(path, PartProblem.FOREIGN, f"holds batch {header.get('batch')!r}, not {path.stem!r} (a copy "
                                                   "under another name?)")
    if not rows:
        return Part(path.stem, data, [], [], [])
    by_table: dict[str, list[Any]] = {table: [] for table in TABLES}
    width = len(EVENT_COLUMNS)
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise PartError(path, PartProblem.DAMAGED, "its rows are not UTF-8 text") from None
    lines = text.splitlines()
    items = _parse_lines(lines)
    for number, item in enumerate(items, start=2):
        try:
            table, row = item["table"], item["row"]
        except (ValueError, TypeError, KeyError):
            raise PartError(path, PartProblem.DAMAGED, f"line {number} is not a row") from None
        if table == "events":
            fits = isinstance(row, list) and len(row) == width
        else:
            fits = table in by_table and isinstance(row, dict) and bool(row)
        if not fits:
            raise PartError(path, PartProblem.DAMAGED, f"line {number} is not a row")
        by_table[table].append(row)
    if any(len(by_table[table]) != header.get(table) for table in TABLES):
        raise PartError(path, PartProblem.DAMAGED, "its row counts do not match its header")
    return Part(path.stem, data, by_table["sessions"], by_table["calls"], by_table["events"], by_table["hidden"])


def _parse_lines(lines: list[str]) -> list[Any]:
    """One JSON value per line. Parsed as one array (a part has many thousands of lines, and one call
    into the decoder is much faster than one per line); when that fails, or a line held more than one
    value, line by line, so that the error names the first line that is not one value (a PartError is
    raised by the caller for anything that is not a row)."""
    try:
        items = json.loads("[" + ",".join(lines) + "]")
    except ValueError:
        items = None
    if isinstance(items, list) and len(items) == len(lines):
        return items
    parsed: list[Any] = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            parsed.append(None)  # not a row: the caller names its line
            break
    return parsed

