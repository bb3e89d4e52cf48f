"""Reading a trace file into JSON values: bounded, UTF-8 checked, JSON or JSONL, every failure one line.

A file is one JSON document, or JSONL (one JSON value per line: by its ``.jsonl``/``.ndjson`` suffix, or
because the whole text is several JSON values one after another). Syntax errors name the line
(`json.JSONDecodeError.lineno`; for JSONL, the file's line).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.run.traces.normal import JsonReader, TraceError, child, type_name

#: The largest trace file read: real sessions are a few MB; the bound keeps ``/dev/zero`` from reading forever.
MAX_TRACE_BYTES = 256 * 2**20
#: Nesting deeper than this is refused (no transcript nests so deep; Python's parser would hit its
#: recursion limit somewhere near a thousand levels).
MAX_JSON_DEPTH = 256
JSONL_SUFFIXES = (".jsonl", ".ndjson")


@dataclass(frozen=True, slots=True)
class Record:
    """One JSON value of a trace file and the path that names it in errors (``$`` or ``line N $``)."""

    value: Any
    where: str


@dataclass(frozen=True, slots=True)
class TraceText:
    """A trace file's JSON values: one record for a JSON document, one per non-blank line for JSONL."""

    source: str
    records: tuple[Record, ...]
    jsonl: bool


def read_text(path: Path) -> str:
    """The UTF-8 text of a trace file; TraceError for a missing, unreadable, huge, binary or non-UTF-8 file."""
    source = str(path)
    try:
        with path.open("rb") as f:
            # A binary file (``/dev/zero``, an archive) shows itself in its first megabyte: refuse it before
            # reading up to the size bound.
            raw = f.read(2**20)
            if b"\x00" not in raw:
                raw += f.read(MAX_TRACE_BYTES + 1 - len(raw))
    except FileNotFoundError:
        raise TraceError(source, "line 1", "no such file") from None
    except IsADirectoryError:
        raise TraceError(source, "line 1", "is a directory, not a trace file") from None
    except OSError as e:  # permissions, a symlink loop, a name too long, ...
        raise TraceError(source, "line 1", f"cannot be read ({e.strerror or e})") from None
    if len(raw) > MAX_TRACE_BYTES:
        raise TraceError(source, "line 1", f"larger than {MAX_TRACE_BYTES // 2**20} MiB, not a trace")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise TraceError(source, "line 1", "not UTF-8 text (a UTF-16 byte-order mark; save it as UTF-8)")
    nul = raw.find(b"\x00")
    if nul >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        raise TraceError(source, f"line {line}", f"a binary file, not a JSON trace (NUL byte at offset {nul})")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise TraceError(
            source, f"line {line}", f"not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})") from None


def read_json(path: Path) -> Any:
    """One JSON document (for the files of directory formats)."""
    source = str(path)
    return _loads(read_text(path), source, 0)


def read_trace(path: Path) -> TraceText:
    """A trace file as JSON records (see the module docstring)."""
    source = str(path)
    text = read_text(path)
    if not text.strip():
        raise TraceError(source, "line 1", "empty file, not a trace")
    if path.suffix.lower() not in JSONL_SUFFIXES:
        try:
            return TraceText(source, (Record(_checked(json.loads(text), text, source, 0), "$"),), jsonl=False)
        except json.JSONDecodeError as e:
            if e.msg != "Extra data":
                raise TraceError(source, f"line {e.lineno}", f"invalid JSON ({e.msg}, column {e.colno})") from None
        except RecursionError:
            raise _too_deep(text, source, 0) from None
    records = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            records.append(Record(_loads(line, source, n - 1), f"line {n} $"))
    return TraceText(source, tuple(records), jsonl=True)


def _loads(text: str, source: str, first_line: int) -> Any:
    """``json.loads`` with errors naming the file's line (``first_line`` = lines before ``text``)."""
    if not text.strip():
        raise TraceError(source, f"line {first_line + 1}", "empty, expected JSON")
    try:
        return _checked(json.loads(text), text, source, first_line)
    except json.JSONDecodeError as e:
        raise TraceError(
            source, f"line {first_line + e.lineno}", f"invalid JSON ({e.msg}, column {e.colno})") from None
    except RecursionError:
        raise _too_deep(text, source, first_line) from None


def _checked(value: Any, text: str, source: str, first_line: int) -> Any:
    # A cheap bound first: a value cannot nest deeper than it has brackets.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth(value) > MAX_JSON_DEPTH:
        raise _too_deep(text, source, first_line)
    return value


def _depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > deepest:
            deepest = level
            if deepest > MAX_JSON_DEPTH:
                return deepest
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item if isinstance(v, dict | list))
    return deepest


def _too_deep(text: str, source: str, first_line: int) -> TraceError:
    """The error for over-deep JSON, naming the line where the nesting passes the limit."""
    depth = 0
    line = 1
    in_string = escaped = False
    for ch in text:
        if ch == "\n":
            line += 1
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                break
        elif ch in "]}":
            depth -= 1
    return TraceError(source, f"line {first_line + line}", f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation of a file-based format: the object around its messages (system prompt, model, tools,
    id; empty for a bare list) and each message or item with its JSON path."""

    header: dict[str, Any]
    where: str
    items: tuple[tuple[Any, str], ...]


def conversations(trace: TraceText, keys: tuple[str, ...], what: str) -> list[Conversation]:
    """The conversations of a trace whose conversations are an object holding message lists under ``keys``
    (in that order) or a bare list of messages. In JSONL, each line is a conversation when the first line is
    one, else each line is one message of a single conversation."""
    reader = JsonReader(trace.source)

    def is_conversation(value: Any) -> bool:
        return isinstance(value, list) or (isinstance(value, dict) and any(k in value for k in keys))

    if trace.jsonl and not is_conversation(trace.records[0].value):
        first = trace.records[0].where
        return [Conversation({}, first, tuple((r.value, r.where) for r in trace.records))]
    found = []
    for record in trace.records:
        value, where = record.value, record.where
        if isinstance(value, list):
            found.append(Conversation({}, where, tuple((v, child(where, i)) for i, v in enumerate(value))))
        elif isinstance(value, dict) and any(k in value for k in keys):
            items: list[tuple[Any, str]] = []
            for key in keys:
                if key not in value:
                    continue
                inner, inner_where = value[key], child(where, key)
                if isinstance(inner, str):  # a prompt given as plain text (Responses ``input``)
                    items.append((inner, inner_where))
                else:
                    listed = reader.arr(inner, inner_where)
                    items.extend((v, child(inner_where, i)) for i, v in enumerate(listed))
            found.append(Conversation(value, where, tuple(items)))
        else:
            raise reader.error(where, f"expected {what}, got {type_name(value)}")
    return found


def derived_id(name: str, index: int, count: int) -> str:
    """A session id from the file name, numbered when the file holds more than one session."""
    return name if count == 1 else f"{name}-{index + 1}"
