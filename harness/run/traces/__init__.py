"""Trace import: real agent transcripts read into ctxbench's normal form (`ImportedSession`), for replay.

Formats (`FORMATS`), one module each: ``atif`` (ATIF v1.x trajectories), ``openai-chat`` (Chat
Completions messages), ``openai-responses`` (Responses items), ``anthropic`` (Messages API), ``strands``
(strands-agents session directories) and ``openhands`` (OpenHands SDK conversation directories). Each
module's docstring cites the documentation it follows and says what it keeps, skips and turns into
placeholders.

The normal form (`normal.TranscriptBuilder`): roles ``user`` and ``assistant`` alternate (consecutive
messages of one role are merged); ``messages[0]`` is the user's task; tool calls are ToolUse blocks of
assistant messages, each answered by a ToolResult in the next (user) message, except the calls of a final
assistant message; orphan results, unanswered calls and duplicate ids are errors. Tool result text: text
parts joined with newlines, structured content as JSON with sorted keys, images and other binary content as
short placeholders such as ``[image omitted]``. Loading only reads: nothing is written. Only regular files
are read (a named pipe or a device is refused, not waited on); a walked folder reaches each real folder and
file once, whatever symbolic links loop back into it; what reading had to change (lone surrogates replaced)
is collected as notes (`load_traces`' ``notes``).

Every problem with a trace raises `TraceError`, whose text is one line naming the file and a line or JSON
path.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.run.traces import anthropic, atif, openai_chat, openai_responses, openhands, strands
from harness.run.traces.normal import FORMATS, ImportedSession, TraceError, replace_surrogates, type_name
from harness.run.traces.reading import JSONL_SUFFIXES, TraceText, collecting_notes, read_trace

__all__ = ["FORMATS", "ImportedSession", "TraceError", "detect_format", "dump_session", "load_trace",
           "load_traces"]

_FILE_PARSERS: dict[str, Callable[[TraceText, str], list[ImportedSession]]] = {
    "atif": atif.parse,
    "openai-chat": openai_chat.parse,
    "openai-responses": openai_responses.parse,
    "anthropic": anthropic.parse,
}
_DIR_LOADERS: dict[str, Callable[[Path], list[ImportedSession]]] = {
    "strands": strands.load,
    "openhands": openhands.load,
}
_WRITERS: dict[str, Callable[[ImportedSession], Any]] = {
    "atif": atif.dump,
    "openai-chat": openai_chat.dump,
    "openai-responses": openai_responses.dump,
    "anthropic": anthropic.dump,
    "strands": strands.dump,
}
#: File suffixes `load_traces` picks up when it walks a directory.
TRACE_SUFFIXES = (".json", *JSONL_SUFFIXES)
_RESPONSES_ITEM_TYPES = frozenset({"function_call", "function_call_output", "custom_tool_call",
                                   "custom_tool_call_output", "message"}) | openai_responses.SKIPPED_ITEMS
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def detect_format(path: Path) -> str:
    """The format of a trace file or session directory, sniffed from its content (see `FORMATS`); TraceError
    "unknown trace format" saying what was seen."""
    if path.is_dir():
        return _detect_dir(path)
    return _sniff(read_trace(path))


def load_trace(path: Path, fmt: str | None = None) -> list[ImportedSession]:
    """The sessions of one trace file or one session directory (``fmt`` forces a format; default: sniffed)."""
    _check_format_name(path, fmt)
    if path.is_dir():
        fmt = fmt or _detect_dir(path)
        if fmt not in _DIR_LOADERS:
            raise TraceError(str(path), "directory", f"a {fmt} trace is a file, not a directory")
        try:
            return [_named(s) for s in _DIR_LOADERS[fmt](path)]
        except OSError as e:  # a session directory or file that cannot be listed or opened
            raise TraceError(str(path), "directory", f"cannot be read ({e.strerror or e})") from None
    if fmt in _DIR_LOADERS:
        raise TraceError(str(path), "line 1", f"a {fmt} trace is a session directory, not a file")
    trace = read_trace(path)
    return [_named(s) for s in _FILE_PARSERS[fmt or _sniff(trace)](trace, path.stem)]


def _named(session: ImportedSession) -> ImportedSession:
    """``session`` with the names taken from file names (its source, an id derived from a name) made text:
    a name's bytes that are not UTF-8 (Python keeps them as lone surrogates) become U+FFFD, as in JSON."""
    source, fixed_source = replace_surrogates(session.source)
    session_id, fixed_id = replace_surrogates(session.session_id)
    if not fixed_source and not fixed_id:
        return session
    return dataclasses.replace(session, source=source, session_id=session_id)


def load_traces(paths: Sequence[Path], fmt: str | None = None, *,
                notes: list[str] | None = None) -> list[ImportedSession]:
    """The sessions of all ``paths``, in order. A directory that is not itself a strands or OpenHands session
    directory is walked (sorted, hidden entries skipped) for trace files (`TRACE_SUFFIXES`) and session
    directories. Each real folder is walked once and each real file or session directory read once, however
    many paths or symbolic links lead to it: a link back into a folder already walked (a loop) is skipped.
    ``notes`` receives one line per file whose text reading had to change (lone surrogates replaced)."""
    if notes is None:
        return _load_all(paths, fmt)
    with collecting_notes() as collected:
        sessions = _load_all(paths, fmt)
    notes.extend(dict.fromkeys(collected))
    return sessions


def _load_all(paths: Sequence[Path], fmt: str | None) -> list[ImportedSession]:
    sessions: list[ImportedSession] = []
    seen: set[tuple[int, int]] = set()
    for path in paths:
        _check_format_name(path, fmt)
        if path.is_dir() and not _is_session_dir(path):
            found = _walk(path, seen)
            if found is None:  # this folder was walked already (given twice, or through a link)
                continue
            if not found:
                raise TraceError(str(path), "directory", "no trace files (*.json, *.jsonl) or session directories")
            for item in found:
                sessions.extend(load_trace(item, fmt))
        elif _first_visit(path, seen):
            sessions.extend(load_trace(path, fmt))
    return sessions


def dump_session(session: ImportedSession, fmt: str) -> str | dict[str, str]:
    """The session written in ``fmt``: JSON text for a file format, ``{relative path: JSON text}`` for a
    directory format. Writers: atif, openai-chat, openai-responses, anthropic, strands. Loading the result
    gives the same messages, except where a format cannot say it: OpenAI formats have no error status (results
    read back as ``success``) and write an assistant's text before its calls; ATIF joins a message's texts
    into one."""
    writer = _WRITERS.get(fmt)
    if writer is None:
        raise ValueError(f"no writer for trace format {fmt!r} (writers: {', '.join(sorted(_WRITERS))})")
    written = writer(session)
    if isinstance(written, dict) and all(isinstance(v, str) for v in written.values()):
        return written
    return json.dumps(written, indent=2, ensure_ascii=False) + "\n"


# Detection -----------------------------------------------------------------------------------------------

def _check_format_name(path: Path, fmt: str | None) -> None:
    if fmt is not None and fmt not in FORMATS:
        raise TraceError(str(path), "format", f"unknown trace format {fmt!r} (one of: {', '.join(FORMATS)})")


def _is_session_dir(path: Path) -> bool:
    return openhands.is_session_dir(path) or strands.is_session_dir(path)


def _detect_dir(path: Path) -> str:
    if openhands.is_session_dir(path):
        return "openhands"
    if strands.is_session_dir(path):
        return "strands"
    raise TraceError(str(path), "directory", "unknown trace format: a directory without events/ (OpenHands) or "
                     "agents/ (strands session) or messages/ (strands agent)")


def _first_visit(path: Path, seen: set[tuple[int, int]]) -> bool:
    """Whether the real file or folder ``path`` leads to (device and inode, after links) is new to ``seen``;
    one that cannot be looked up counts as new (reading it will say what is wrong)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return True
    key = (info.st_dev, info.st_ino)
    if key in seen:
        return False
    seen.add(key)
    return True


def _listing(directory: Path) -> Iterator[Path]:
    try:
        return iter(sorted(directory.iterdir()))
    except OSError as e:
        raise TraceError(str(directory), "directory", f"cannot be listed ({e.strerror or e})") from None


def _walk(directory: Path, seen: set[tuple[int, int]]) -> list[Path] | None:
    """The trace files and session directories under ``directory``, depth first in sorted order, each real
    folder walked once (None when ``directory`` itself was); without recursion, so depth is no limit."""
    if not _first_visit(directory, seen):
        return None
    found: list[Path] = []
    stack = [_listing(directory)]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            if not _first_visit(entry, seen):
                continue
            if _is_session_dir(entry):
                found.append(entry)
            else:
                stack.append(_listing(entry))
        elif entry.suffix.lower() in TRACE_SUFFIXES and _first_visit(entry, seen):
            found.append(entry)
    return found


def _sniff(trace: TraceText) -> str:
    first = trace.records[0]
    value = first.value
    if isinstance(value, dict):
        if "schema_version" in value or ("steps" in value and "agent" in value):
            return "atif"
        if "messages" not in value and any(k in value for k in ("input", "output", "instructions")):
            return "openai-responses"
        if "messages" in value:
            if "system" in value:
                return "anthropic"
            messages = value["messages"]
            if isinstance(messages, list):
                return _sniff_items(trace, messages, "openai-chat")
    if isinstance(value, list):
        return _sniff_items(trace, value, None)
    if trace.jsonl and isinstance(value, dict):
        return _sniff_items(trace, [r.value for r in trace.records], None)
    raise _unknown(trace, value)


def _sniff_items(trace: TraceText, items: list[Any], default: str | None) -> str:
    """The format a list of messages or items shows: the first distinctive mark wins; plain user/assistant text
    messages read the same in every chat format, so they default to openai-chat."""
    # Non-objects are left to the format's reader, which names them; the objects decide the format.
    plain = any(isinstance(item, dict) for item in items)
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        role = item.get("role")
        if isinstance(kind, str) and kind in _RESPONSES_ITEM_TYPES and (kind != "message" or "role" in item):
            return "openai-responses"
        if role == "tool" or "tool_calls" in item or "tool_call_id" in item:
            return "openai-chat"
        if "schema_version" in item:
            return "atif"
        if isinstance(item.get("messages"), list):  # JSONL of conversations
            return "anthropic" if "system" in item else _sniff_items(trace, item["messages"], "openai-chat")
        if any(k in item for k in ("input", "output")) and "role" not in item:
            return "openai-responses"
        content = item.get("content")
        if isinstance(content, list):
            for part in content:
                part_type = part.get("type") if isinstance(part, dict) else None
                if part_type in _ANTHROPIC_BLOCKS:
                    return "anthropic"
                if part_type in _RESPONSES_PARTS:
                    return "openai-responses"
                if part_type == "image_url":
                    return "openai-chat"
        if role not in ("user", "assistant", "system", "developer"):
            plain = False
    if default is not None:
        return default
    if plain:
        return "openai-chat"
    raise _unknown(trace, items)


_PLURAL = {"a number": "numbers", "a string": "strings", "a boolean": "booleans", "null": "nulls",
           "an array": "arrays", "an object": "objects"}


def _unknown(trace: TraceText, value: Any) -> TraceError:
    if isinstance(value, dict):
        keys = ", ".join(repr(k) for k in list(value)[:6])
        seen = f"a JSON object with keys {keys}" if value else "an empty JSON object"
    elif isinstance(value, list):
        kinds = sorted({_PLURAL.get(type_name(v), type_name(v)) for v in value[:50]})
        seen = f"an array of {' and '.join(kinds)}" if value else "an empty array"
    else:
        seen = f"a JSON value that is {type_name(value)}"
    return TraceError(trace.source, trace.records[0].where,
                      f"unknown trace format ({seen}); expected one of: {', '.join(FORMATS)}")
