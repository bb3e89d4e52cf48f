"""The resume log's parts: one ``parts/<batch id>.jsonl`` per finished batch, written so that a
damaged, renamed, foreign or tampered part is recognised before its rows reach a table.

A part's first line is a header naming its batch, the hash of the config that made it, its row
counts and the sha256 of the lines that follow; then one ``{"table": ..., "row": ...}`` line per
row. `read_part` checks all of it and raises `PartError` with a `PartProblem` saying what is wrong,
which decides what the store does: a part whose bytes are damaged is replayed again (the replay is
deterministic, so the tables come out as if nothing happened); a part that is intact but does not
belong (another config, another batch, rows of other sessions) is refused, because a user put it
there and only they know which copy is right.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PART_FORMAT", "Part", "PartError", "PartProblem", "encode_part", "read_part"]

#: The part layout this version writes; a part without a header (or with another format) was written
#: by an older ctxbench and is replayed again rather than trusted without a checksum.
PART_FORMAT = 2


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


def _body_lines(session_rows: Iterable[dict[str, Any]], call_rows: Iterable[dict[str, Any]]) -> list[str]:
    lines = [json.dumps({"table": "sessions", "row": r}, sort_keys=True) for r in session_rows]
    return lines + [json.dumps({"table": "calls", "row": r}, sort_keys=True) for r in call_rows]


def encode_part(batch: str, config_hash: str, session_rows: list[dict[str, Any]],
                call_rows: list[dict[str, Any]]) -> bytes:
    """The bytes of one part: the header line, then one line per row."""
    body = "".join(line + "\n" for line in _body_lines(session_rows, call_rows)).encode()
    header = {"format": PART_FORMAT, "batch": batch, "config_hash": config_hash, "sessions": len(session_rows),
              "calls": len(call_rows), "sha256": hashlib.sha256(body).hexdigest()}
    return (json.dumps(header, sort_keys=True) + "\n").encode() + body


def read_part(path: Path, *, config_hash: str) -> Part:
    """The verified part at ``path``: PartError unless its header, checksum and rows hold up and it
    was made by the config of ``config_hash`` for the batch its file name says."""
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
    # The checksum holds, so the rows are what was written; now: do they belong here?
    if header.get("config_hash") != config_hash:
        raise PartError(path, PartProblem.FOREIGN, f"written by another config (hash "
                                                   f"{str(header.get('config_hash'))[:12]}, this run's is "
                                                   f"{config_hash[:12]})")
    if header.get("batch") != path.stem:
        raise PartError(path, PartProblem.FOREIGN, f"holds batch {header.get('batch')!r}, not {path.stem!r} (a copy "
                                                   "under another name?)")
    sessions: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise PartError(path, PartProblem.DAMAGED, "its rows are not UTF-8 text") from None
    for number, line in enumerate(text.splitlines(), start=2):
        try:
            item = json.loads(line)
            table, row = item["table"], item["row"]
        except (ValueError, TypeError, KeyError):
            raise PartError(path, PartProblem.DAMAGED, f"line {number} is not a row") from None
        if table not in ("sessions", "calls") or not isinstance(row, dict) or not row:
            raise PartError(path, PartProblem.DAMAGED, f"line {number} is not a row")
        (sessions if table == "sessions" else calls).append(row)
    if (len(sessions), len(calls)) != (header.get("sessions"), header.get("calls")):
        raise PartError(path, PartProblem.DAMAGED, "its row counts do not match its header")
    return Part(path.stem, data, sessions, calls)
