"""The one list of trace formats, and the sniffer that picks a trace's format from it.

The list (`trace_formats`): the built-in formats in a fixed order (`BUILTIN_FORMATS`, the order ``ctxbench
replay --format`` lists them in), then the third-party formats named by the entry points of the group
``ctxbench.trace_formats`` (`ENTRY_POINT_GROUP`), each an object path to a `TraceFormat` value
(``my_package.my_format:FORMAT``). The plugins are loaded the first time the list is asked for, and not at
all when ``CTXBENCH_NO_PLUGINS`` is set; a plugin that cannot be loaded stops the command with one line
naming its entry point (`PluginError`).

Sniffing asks every format of the trace's kind (file or session directory) for its `Claim` and gives the
trace to the earliest; two formats with equal claims make the trace ambiguous, a one-line `TraceError`.
"""

from __future__ import annotations

import functools
import os
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

from harness.core.registry import NO_PLUGINS_ENV, PluginError
from harness.run.traces import (
    anthropic,
    atif,
    claude_code,
    litellm_logs,
    mini_swe_agent,
    openai_chat,
    openai_responses,
    openhands,
    otel_genai,
    strands,
    swe_agent,
    tau_bench,
)
from harness.run.traces.formats import DIRECTORY, FILE, Claim, TraceFormat
from harness.run.traces.normal import TraceError, type_name
from harness.run.traces.reading import TraceText
from harness.run.traces.sniffing import listed_values

#: The entry-point group third-party trace formats are registered under.
ENTRY_POINT_GROUP = "ctxbench.trace_formats"
#: The built-in formats, in the order they are listed.
BUILTIN_FORMATS: tuple[TraceFormat[Any], ...] = (
    atif.FORMAT, openai_chat.FORMAT, openai_responses.FORMAT, anthropic.FORMAT, strands.FORMAT, openhands.FORMAT,
    swe_agent.FORMAT, swe_agent.STEPS_FORMAT, mini_swe_agent.FORMAT, tau_bench.FORMAT, litellm_logs.FORMAT,
    claude_code.FORMAT, otel_genai.FORMAT, openhands.EVENTS_FORMAT)
#: Names of the built-in trace formats, in the order `ctxbench replay --format` lists them.
TRACE_FORMATS: tuple[str, ...] = tuple(f.name for f in BUILTIN_FORMATS)


def trace_formats() -> tuple[TraceFormat[Any], ...]:
    """Every trace format: the built-ins, then the third-party ones (loaded on first use)."""
    return BUILTIN_FORMATS + _plugin_formats()


def format_names() -> tuple[str, ...]:
    """The names of every trace format, built-in and third-party, in `trace_formats` order."""
    return tuple(f.name for f in trace_formats())


def find_format(name: str) -> TraceFormat[Any] | None:
    """The format called ``name``, or None."""
    return next((f for f in trace_formats() if f.name == name), None)


@functools.cache
def _plugin_formats() -> tuple[TraceFormat[Any], ...]:
    """The third-party formats, loaded once (a failure is not remembered: the next look-up raises it again)."""
    if os.environ.get(NO_PLUGINS_ENV):
        return ()
    loaded: list[TraceFormat[Any]] = []
    names = set(TRACE_FORMATS)
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        found = _load_plugin(entry)
        if any(found is f for f in loaded):  # the same distribution seen twice on the path
            continue
        if found.name in names:
            raise _plugin_error(entry, f"a trace format named {found.name!r} is already registered")
        names.add(found.name)
        loaded.append(found)
    return tuple(loaded)


def _load_plugin(entry: EntryPoint) -> TraceFormat[Any]:
    try:
        found = entry.load()
    except Exception as e:  # any failure of the user's plugin is reported as theirs
        raise _plugin_error(entry, " ".join(str(e).split()) or type(e).__name__) from None
    if not isinstance(found, TraceFormat):
        raise _plugin_error(entry, f"expected a TraceFormat, got {type(found).__name__}")
    return found


def _plugin_error(entry: EntryPoint, problem: str) -> PluginError:
    return PluginError(f"trace format plugin {entry.name!r} ({entry.value}) cannot be loaded: {problem}")


# Sniffing ------------------------------------------------------------------------------------------------

def sniff_file(trace: TraceText) -> TraceFormat[TraceText]:
    """The file format whose claim on ``trace`` is earliest; TraceError "unknown trace format" saying what was
    seen when no format claims it, "ambiguous trace format" when two claim it equally."""
    claims = [(c, f) for f in trace_formats() if f.kind == FILE and (c := f.sniff(trace)) is not None]
    if not claims:
        raise _unknown(trace)
    return _earliest(claims, trace.source, trace.records[0].where)


def sniff_directory(path: Path) -> TraceFormat[Path] | None:
    """The directory format whose claim on ``path`` is earliest, or None when ``path`` is no session
    directory; TraceError "ambiguous trace format" when two claim it equally."""
    claims = [(c, f) for f in trace_formats() if f.kind == DIRECTORY and (c := f.sniff(path)) is not None]
    return _earliest(claims, str(path), "directory") if claims else None


def is_session_dir(path: Path) -> bool:
    """Whether some directory format claims ``path``: a walk reads it whole instead of looking inside."""
    return any(f.sniff(path) is not None for f in trace_formats() if f.kind == DIRECTORY)


def unknown_directory(path: Path) -> TraceError:
    """The error of a directory that no format claims, naming what the directory formats look for (in name
    order: the same whatever order plugins load in)."""
    marks = " or ".join(f.looks_for or f.name for f in sorted(trace_formats(), key=lambda f: f.name)
                        if f.kind == DIRECTORY)
    return TraceError(str(path), "directory", f"unknown trace format: a directory without {marks}")


def _earliest(claims: list[tuple[Claim, TraceFormat[Any]]], source: str, where: str) -> TraceFormat[Any]:
    best = min(c for c, _ in claims)
    tied = [f for c, f in claims if c == best]
    if len(tied) > 1:
        names = " or ".join(f.name for f in tied)
        raise TraceError(source, where, f"ambiguous trace format: it could be {names} (name the format to read it as)")
    return tied[0]


_PLURAL = {"a number": "numbers", "a string": "strings", "a boolean": "booleans", "null": "nulls",
           "an array": "arrays", "an object": "objects"}


def _unknown(trace: TraceText) -> TraceError:
    listed = listed_values(trace)
    value = trace.records[0].value if listed is None else listed
    if isinstance(value, dict):
        keys = ", ".join(repr(k) for k in list(value)[:6])
        seen = f"a JSON object with keys {keys}" if value else "an empty JSON object"
    elif isinstance(value, list):
        kinds = sorted({_PLURAL.get(type_name(v), type_name(v)) for v in value[:50]})
        seen = f"an array of {' and '.join(kinds)}" if value else "an empty array"
    else:
        seen = f"a JSON value that is {type_name(value)}"
    return TraceError(trace.source, trace.records[0].where,
                      f"unknown trace format ({seen}); expected one of: {', '.join(format_names())}")
