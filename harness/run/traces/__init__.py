"""Trace import: real agent transcripts read into ctxbench's normal form (`ImportedSession`), for replay.

Formats, one module each, which declares the format as ``FORMAT``, a `TraceFormat`: its name, whether it
is a file or a session-directory format, a one-line description, its own sniffer (``sniff``: the `Claim`
it makes on a trace), its reader (``load``) and its writer, if any (``dump``). Built in (`TRACE_FORMATS`):
``atif`` (ATIF v1.x trajectories), ``openai-chat`` (Chat Completions messages), ``openai-responses``
(Responses items), ``anthropic`` (Messages API), ``strands`` (strands-agents session directories),
``openhands`` (OpenHands SDK conversation directories), and what agents publish as they write it:
``swe-agent`` (SWE-agent ``.traj``, its history as sent; ``swe-agent-steps`` its trajectory steps, by name
only), ``mini-swe-agent`` (its trajectory files, text actions read as tool calls), ``tau-bench`` (tau-bench
trajectory lists and tau2 results), ``litellm-logs`` (folders of LiteLLM completion logs, as OpenHands
writes them), ``claude-code`` (Claude Code session JSONL) and ``otel-genai`` (OTLP/JSON GenAI spans). Each
module's docstring cites the documentation or source it follows and says what it keeps, skips and turns
into placeholders, and which recorded usage it reads (`ImportedSession.usage`). Third-party formats are `TraceFormat`
values named by entry points of the group ``ctxbench.trace_formats`` (`ENTRY_POINT_GROUP`).

`registry` lists the formats once (`trace_formats`, `format_names`: the built-ins, then the third-party
ones, loaded on first use); detection, loading, the walk of a folder (which directories are session
directories) and writing all go through that list. Detection asks every format for its claim and gives
the trace to the earliest (a mark of the whole document beats one on its messages; among messages, the
first distinctive mark wins: `sniffing`); equal claims of two formats are a `TraceError` naming both.

The normal form (`normal.TranscriptBuilder`): roles ``user`` and ``assistant`` alternate (consecutive
messages of one role are merged); ``messages[0]`` is the user's task; tool calls are ToolUse blocks of
assistant messages, each answered by a ToolResult in the next (user) message, except the calls of a final
assistant message; orphan results and unanswered calls are errors. A tool id used again after its call was
answered is a new call (providers reuse ids; it is renamed ``<id>#<n>``); one used again while its call is
unanswered is ambiguous, an error naming both places. A transcript that starts with the agent (a fragment)
is read after a placeholder task, with a note (`ImportedSession.notes`). Tool result text: text
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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.core.messages import default_meter
from harness.core.model_tokens import meter_for_model, remeasured
from harness.run.traces.formats import DIRECTORY, FILE, Claim, TraceFormat
from harness.run.traces.normal import ImportedSession, TraceError, replace_surrogates
from harness.run.traces.reading import JSONL_SUFFIXES, TraceText, collecting_notes, read_trace
from harness.run.traces.registry import (
    ENTRY_POINT_GROUP,
    TRACE_FORMATS,
    find_format,
    format_names,
    is_session_dir,
    sniff_directory,
    sniff_file,
    trace_formats,
    unknown_directory,
)

__all__ = ["DIRECTORY", "ENTRY_POINT_GROUP", "FILE", "TRACE_FORMATS", "Claim", "ImportedSession", "TraceError",
           "TraceFormat", "TraceText", "detect_format", "dump_session", "format_names", "load_trace", "load_traces",
           "trace_formats"]

#: File suffixes `load_traces` picks up when it walks a directory.
TRACE_SUFFIXES = (".json", ".traj", *JSONL_SUFFIXES)


def detect_format(path: Path) -> str:
    """The format of a trace file or session directory, sniffed from its content (see `trace_formats`);
    TraceError "unknown trace format" saying what was seen."""
    if path.is_dir():
        return _detect_dir(path).name
    return sniff_file(read_trace(path)).name


def load_trace(path: Path, fmt: str | None = None) -> list[ImportedSession]:
    """The sessions of one trace file or one session directory (``fmt`` forces a format; default: sniffed)."""
    forced = _format_named(path, fmt)
    if path.is_dir():
        chosen = forced or _detect_dir(path)
        if chosen.kind != DIRECTORY:
            raise TraceError(str(path), "directory", f"a {chosen.name} trace is a file, not a directory")
        try:
            return [_named(s) for s in chosen.load(path)]
        except OSError as e:  # a session directory or file that cannot be listed or opened
            raise TraceError(str(path), "directory", f"cannot be read ({e.strerror or e})") from None
    if forced is not None and forced.kind == DIRECTORY:
        raise TraceError(str(path), "line 1", f"a {forced.name} trace is a session directory, not a file")
    trace = read_trace(path)
    return [_named(s) for s in (forced or sniff_file(trace)).load(trace)]


def _named(session: ImportedSession) -> ImportedSession:
    """``session`` with the names taken from file names (its source, an id derived from a name) made text
    (a name's bytes that are not UTF-8, which Python keeps as lone surrogates, become U+FFFD, as in JSON), and
    its messages counted with its model's tokenizer (`harness.core.model_tokens.meter_for_model`)."""
    source, fixed_source = replace_surrogates(session.source)
    session_id, fixed_id = replace_surrogates(session.session_id)
    if fixed_source or fixed_id:
        session = dataclasses.replace(session, source=source, session_id=session_id)
    # Counted with the tokenizer of the model the trace names (o200k for GPT-4o and later, cl100k otherwise):
    # every reader builds with the default meter, and this is the one place that recounts.
    meter = meter_for_model(session.model)
    if meter is not default_meter():
        session = dataclasses.replace(session, messages=remeasured(session.messages, meter))
    return session


def load_traces(paths: Sequence[Path], fmt: str | None = None, *,
                notes: list[str] | None = None) -> list[ImportedSession]:
    """The sessions of all ``paths``, in order. A directory that is not itself a session directory (one a
    directory format claims: strands, OpenHands, ...) is walked (sorted, hidden entries skipped) for trace
    files (`TRACE_SUFFIXES`) and session directories. Each real folder is walked once and each real file or
    session directory read once, however many paths or symbolic links lead to it: a link back into a folder
    already walked (a loop) is skipped.
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
        _format_named(path, fmt)
        if path.is_dir() and not is_session_dir(path):
            found = _walk(path, seen)
            if found is None:  # this folder was walked already (given twice, or through a link)
                continue
            if not found:
                raise TraceError(str(path), "directory",
                                 "no trace files (*.json, *.traj, *.jsonl) or session directories")
            for item in found:
                sessions.extend(load_trace(item, fmt))
        elif _first_visit(path, seen):
            sessions.extend(load_trace(path, fmt))
    return sessions


def dump_session(session: ImportedSession, fmt: str) -> str | dict[str, str]:
    """The session written in ``fmt``: JSON text for a file format, ``{relative path: JSON text}`` for a
    directory format. Writers: the formats with a ``dump`` (built-in: atif, openai-chat, openai-responses,
    anthropic, strands). Loading the result gives the same messages, except where a format cannot say it:
    OpenAI formats have no error status (results read back as ``success``) and write an assistant's text
    before its calls; ATIF joins a message's texts into one."""
    chosen = find_format(fmt)
    if chosen is None or chosen.dump is None:
        writers = sorted(f.name for f in trace_formats() if f.dump is not None)
        raise ValueError(f"no writer for trace format {fmt!r} (writers: {', '.join(writers)})")
    written = chosen.dump(session)
    if isinstance(written, dict) and all(isinstance(v, str) for v in written.values()):
        return written
    return json.dumps(written, indent=2, ensure_ascii=False) + "\n"


# Detection -----------------------------------------------------------------------------------------------

def _format_named(path: Path, fmt: str | None) -> TraceFormat[Any] | None:
    """The format ``fmt`` names (None when not given); TraceError when it names none."""
    if fmt is None:
        return None
    chosen = find_format(fmt)
    if chosen is None:
        raise TraceError(str(path), "format", f"unknown trace format {fmt!r} (one of: {', '.join(format_names())})")
    return chosen


def _detect_dir(path: Path) -> TraceFormat[Path]:
    chosen = sniff_directory(path)
    if chosen is None:
        raise unknown_directory(path)
    return chosen


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
            if is_session_dir(entry):
                found.append(entry)
            else:
                stack.append(_listing(entry))
        elif entry.suffix.lower() in TRACE_SUFFIXES and _first_visit(entry, seen):
            found.append(entry)
    return found
