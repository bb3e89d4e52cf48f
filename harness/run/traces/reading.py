"""Reading a trace file into JSON values: bounded, UTF-8 checked, JSON or JSONL, every failure one line.

A file is one JSON document, or JSONL (one JSON value per line: by its ``.jsonl``/``.ndjson`` suffix, or
because the whole text is several JSON values one after another). Syntax errors name the line
(`json.JSONDecodeError.lineno`; for JSONL, the file's line).

Only regular files are read (`read_text`): a named pipe, a device or a socket is refused in one line
instead of blocking. Every JSON text goes through `parse_json`: nesting deeper than `MAX_JSON_DEPTH` and an
integer longer than Python converts (`sys.get_int_max_str_digits`) are errors naming the JSON path; a lone
UTF-16 surrogate (``"\\ud800"``: legal JSON, written by tools that cut a character in half) becomes U+FFFD,
and the file's count of them is a note (`collecting_notes`), since no table or page can hold one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.run.traces.normal import JsonReader, TraceError, child, replace_surrogates, structured_text, type_name

#: The largest trace file read: real sessions are a few MB; the bound keeps ``/dev/zero`` from reading forever.
MAX_TRACE_BYTES = 256 * 2**20
#: Nesting deeper than this is refused (no transcript nests so deep; Python's parser would hit its
#: recursion limit somewhere near a thousand levels).
MAX_JSON_DEPTH = 256
JSONL_SUFFIXES = (".jsonl", ".ndjson")
#: A JSON escape of a UTF-16 surrogate (half of a pair, or a lone one).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


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

    @property
    def stem(self) -> str:
        """The file's name without its suffix, after which sessions without an id of their own are named."""
        return Path(self.source).stem


def read_text(path: Path) -> str:
    """The UTF-8 text of a trace file; TraceError for a missing, unreadable, huge, binary or non-UTF-8 file."""
    source = str(path)
    try:
        with _open_regular(path) as f:
            # A binary file (an archive, an image) shows itself in its first megabyte: refuse it before
            # reading up to the size bound.
            raw = f.read(min(2**20, MAX_TRACE_BYTES + 1))
            if b"\x00" not in raw and len(raw) <= MAX_TRACE_BYTES:
                raw += f.read(MAX_TRACE_BYTES + 1 - len(raw))
    except FileNotFoundError:
        raise TraceError(source, "line 1", "no such file") from None
    except IsADirectoryError:
        raise TraceError(source, "line 1", "is a directory, not a trace file") from None
    except OSError as e:  # permissions, a symlink loop, a name too long, ...
        raise TraceError(source, "line 1", f"cannot be read ({e.strerror or e})") from None
    except ValueError:  # a NUL character in the name (only an in-process caller can pass one)
        raise TraceError(source.replace("\0", "\\0"), "line 1", "the name holds a NUL character") from None
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


def _open_regular(path: Path) -> Any:
    """``path`` opened for reading in binary, when it is a regular file (after following links); OSError
    otherwise. Opened without blocking, so that a named pipe with no writer is refused, not waited on."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(mode):
            raise OSError(f"{_kind(mode)}, not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def read_json(path: Path) -> Any:
    """One JSON document (for the files of directory formats)."""
    source = str(path)
    value, replaced = parse_json(read_text(path), source, 0)
    _note_surrogates(source, replaced)
    return value


def read_trace(path: Path) -> TraceText:
    """A trace file as JSON records (see the module docstring). A ``.jsonl``/``.ndjson`` file is streamed:
    read and parsed a line at a time, so its text is never held whole (a 1 GB file needs the memory of its
    values, not of its text too), and bounded per line rather than per file."""
    source = str(path)
    if path.suffix.lower() in JSONL_SUFFIXES:
        return _streamed_jsonl(path)
    text = read_text(path)
    if not text.strip():
        raise TraceError(source, "line 1", "empty file, not a trace")
    if text.lstrip()[0] not in _JSON_STARTS:
        # Not JSON at all (a text log, a transcript printed for reading): say so, not where the parser tripped.
        raise TraceError(source, "line 1", "not a JSON trace: it does not start with a JSON value (a plain-text "
                         "log or a transcript printed for reading is not a recorded session)")
    if path.suffix.lower() not in JSONL_SUFFIXES:
        try:
            value, replaced = parse_json(text, source, 0, several_values=True)
        except _SeveralValues:
            pass
        else:
            _note_surrogates(source, replaced)
            return TraceText(source, (Record(value, "$"),), jsonl=False)
    records = []
    total = 0
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            value, replaced = parse_json(line, source, n - 1, prefix=f"line {n} ")
            total += replaced
            records.append(Record(value, f"line {n} $"))
    _note_surrogates(source, total)
    return TraceText(source, tuple(records), jsonl=True)


#: The characters a JSON text can start with.
_JSON_STARTS = frozenset('{["-0123456789tfn')


def _streamed_jsonl(path: Path) -> TraceText:
    """A JSONL file's records, read line by line (`read_trace`), with `read_text`'s checks on each line."""
    source = str(path)
    records: list[Record] = []
    total = 0
    try:
        with _open_regular(path) as f:
            for n, raw in enumerate(f, start=1):
                if len(raw) > MAX_TRACE_BYTES:
                    raise TraceError(source, f"line {n}", f"a line longer than {MAX_TRACE_BYTES // 2**20} MiB, "
                                     "not a trace")
                line = _decoded_line(raw, source, n)
                if line.strip():
                    if not records and line.lstrip()[0] not in _JSON_STARTS:
                        raise TraceError(source, f"line {n}", "not a JSON trace: it does not start with a JSON "
                                         "value (a plain-text log or a transcript printed for reading is not a "
                                         "recorded session)")
                    value, replaced = parse_json(line, source, n - 1, prefix=f"line {n} ")
                    total += replaced
                    records.append(Record(value, f"line {n} $"))
    except FileNotFoundError:
        raise TraceError(source, "line 1", "no such file") from None
    except IsADirectoryError:
        raise TraceError(source, "line 1", "is a directory, not a trace file") from None
    except OSError as e:
        raise TraceError(source, "line 1", f"cannot be read ({e.strerror or e})") from None
    except ValueError as e:  # a NUL character in the name (only an in-process caller can pass one)
        if isinstance(e, TraceError):
            raise
        raise TraceError(source.replace("\0", "\\0"), "line 1", "the name holds a NUL character") from None
    if not records:
        raise TraceError(source, "line 1", "empty file, not a trace")
    _note_surrogates(source, total)
    return TraceText(source, tuple(records), jsonl=True)


def _decoded_line(raw: bytes, source: str, n: int) -> str:
    """One line of a JSONL file as text, with `read_text`'s checks (a byte-order mark, NUL, UTF-8)."""
    if n == 1:
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise TraceError(source, "line 1", "not UTF-8 text (a UTF-16 byte-order mark; save it as UTF-8)")
        raw = raw.removeprefix(b"\xef\xbb\xbf")
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise TraceError(source, f"line {n}", f"a binary file, not a JSON trace (NUL byte at column {nul + 1})")
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as e:
        raise TraceError(source, f"line {n}", f"not UTF-8 text (byte 0x{raw[e.start]:02x} at column "
                         f"{e.start + 1})") from None


class _SeveralValues(Exception):
    """The text is several JSON values one after another (read as JSONL)."""


class _LongInteger:
    """Where a JSON integer too long for `int` stood (found afterwards to name its JSON path)."""

    __slots__ = ("digits",)

    def __init__(self, digits: str) -> None:
        self.digits = digits


def parse_json(text: str, source: str, first_line: int, *, prefix: str = "",
               several_values: bool = False) -> tuple[Any, int]:
    """The JSON value of ``text`` and how many lone surrogates in its strings were replaced by U+FFFD.
    TraceError naming the file's line (``first_line`` = lines before ``text``) for a syntax error, or the
    JSON path (after ``prefix``, e.g. ``line 3 ``) of nesting too deep or an integer too long. With
    ``several_values``, `_SeveralValues` when the text is JSON values one after another."""
    if not text.strip():
        raise TraceError(source, f"line {first_line + 1}", "empty, expected JSON")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        if several_values and e.msg == "Extra data":
            raise _SeveralValues() from None
        raise TraceError(
            source, f"line {first_line + e.lineno}", f"invalid JSON ({e.msg}, column {e.colno})") from None
    except RecursionError:
        raise _too_deep(text, source, first_line) from None
    except ValueError:  # an integer longer than int() converts (sys.get_int_max_str_digits)
        raise _long_integer(text, source, prefix) from None
    _checked(value, text, source, first_line)
    # A lone surrogate can only come from a \uD800-\uDFFF escape: most texts have none and skip the walk.
    if _SURROGATE_ESCAPE.search(text):
        return replace_surrogates(value)
    return value, 0


def _long_integer(text: str, source: str, prefix: str) -> TraceError:
    """The error for a JSON integer too long to convert, naming its JSON path."""
    limit = sys.get_int_max_str_digits()

    def parse_int(digits: str) -> Any:
        return _LongInteger(digits) if len(digits.lstrip("-")) > limit else int(digits)

    try:
        value = json.loads(text, parse_int=parse_int)
    except (ValueError, RecursionError):
        value = None
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, _LongInteger):
            return TraceError(source, prefix + where, f"an integer of {len(item.digits.lstrip('-')):,} digits "
                              f"(more than the {limit:,} a number of a trace may have)")
        if isinstance(item, dict):
            stack.extend((v, child(where, k)) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((v, child(where, i)) for i, v in reversed(list(enumerate(item))))
    return TraceError(source, prefix + "$", f"a number longer than the {limit:,} digits a trace may have")


#: The notes of the `collecting_notes` block running (None: notes are dropped).
_NOTES: ContextVar[list[str] | None] = ContextVar("trace_notes", default=None)


@contextlib.contextmanager
def collecting_notes() -> Iterator[list[str]]:
    """Collect, while the block runs, what reading changed in the traces (one line per file, e.g. lone
    surrogates replaced); the list yielded fills as files are read."""
    notes: list[str] = []
    token = _NOTES.set(notes)
    try:
        yield notes
    finally:
        _NOTES.reset(token)


def _note_surrogates(source: str, count: int) -> None:
    notes = _NOTES.get()
    if count and notes is not None:
        notes.append(f"{source}: {count:,} lone UTF-16 surrogate{'s' if count != 1 else ''} (half a character) "
                     "replaced by U+FFFD")


def _checked(value: Any, text: str, source: str, first_line: int) -> None:
    # A cheap bound first: a value cannot nest deeper than it has brackets.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth(value) > MAX_JSON_DEPTH:
        raise _too_deep(text, source, first_line)


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


@dataclass(frozen=True, slots=True)
class ContentParts:
    """How a format writes content as a string or an array of typed parts (``{"type": ..., ...}``): which
    part types hold text (and under which key), which become placeholders, which are structured output kept
    as `structured_text`, and what its errors call a part (``content part``, ``content block``)."""

    #: Part type -> the key holding its text.
    text_keys: Mapping[str, str]
    #: Part type -> the placeholder it becomes (media, files).
    placeholders: Mapping[str, str]
    #: Part types whose whole object is kept as `structured_text`.
    structured: frozenset[str] = frozenset()
    #: What a part is called in errors: ``expected a <part> object``.
    part: str = "content part"
    #: What an unknown part's type is the type of, in errors: ``unknown <unknown> type 'x'``.
    unknown: str = "content part"

    def read(self, reader: JsonReader, content: Any, where: str) -> list[tuple[str, str]]:
        """(text, JSON path) of each part of ``content`` (a string is one text part); TraceError for a value
        that is neither, a part that is not an object, or a part type this format does not know."""
        if isinstance(content, str):
            return [(content, where)]
        out = []
        for i, value in enumerate(reader.arr(content, where, f"a string or an array of {self.part}s")):
            part_where = child(where, i)
            part = reader.obj(value, part_where, f"a {self.part} object")
            kind = reader.req_str(part, "type", part_where)
            if kind in self.text_keys:
                out.append((reader.req_str(part, self.text_keys[kind], part_where), part_where))
            elif kind in self.placeholders:
                out.append((self.placeholders[kind], part_where))
            elif kind in self.structured:
                out.append((structured_text(part), part_where))
            else:
                raise reader.error(child(part_where, "type"), f"unknown {self.unknown} type {kind!r}")
        return out

    def text(self, reader: JsonReader, content: Any, where: str) -> str:
        """The texts `read` finds in ``content``, one per line."""
        return "\n".join(text for text, _ in self.read(reader, content, where))


def derived_id(name: str, index: int, count: int) -> str:
    """A session id from the file name, numbered when the file holds more than one session."""
    return name if count == 1 else f"{name}-{index + 1}"
