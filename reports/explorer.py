"""The session explorer (``ctxbench view``): one self-contained HTML page, script, style and data inline
and nothing fetched, to filter and sort a run's sessions, step through one session's turns, and put
two strategies side by side on the same session.

It reads the run directory through the report's checks (`reports.inputs.open_run_dir`: the manifest,
every table it lists verified against its checksum), then ``events.parquet``, the per-turn event log,
and the decisions of ``calls.parquet`` (action and trace). A run made with ``events = false`` (or by a
ctxbench without the event log) still opens: its session table, and a note that there are no turns to
show. For 1,000 sessions x 10 strategies the page stays small enough to open: each session's events
and calls are one deflate-compressed JSON blob, unpacked by the browser only when the session is opened,
and the session table draws only the rows in view.

Every number the page shows is written the way the reports write it (`reports.tables.format_value`):
tokens and counts as integers with thousands separators, costs in dollars to 4 decimals, seconds to 1
decimal, probabilities and positions as percentages (`NUMBER_FORMATS`, `format_number`); sorting uses
the true values. The decision trace's columns carry their meaning in the mock model (`TRACE_COLUMNS`)
as header tooltips and as a legend under the trace.
"""

from __future__ import annotations

import base64
import json
import math
import tomllib
import zlib
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.core import tables
from harness.core.rundir import CONFIG_FILE, EVENTS_TABLE, SESSIONS_TABLE
from reports.explorer_assets import SCRIPT, STYLE
from reports.inputs import NUMBER, TEXT, OpenRun, ReportInputError, kinds, open_run_dir, read_table, simulated_run
from reports.markup import escape
from reports.outputs import write_files

__all__ = [
    "EVENT_COLUMNS",
    "EXPLORER_HTML",
    "EXPLORER_SESSION_COLUMNS",
    "NUMBER_FORMATS",
    "TRACE_COLUMNS",
    "TRACE_LEGEND",
    "ExplorerData",
    "format_number",
    "load",
    "render",
    "trace_legend",
    "write_explorer",
]

#: The page's file name in a run directory (``ctxbench view`` writes it there unless told otherwise).
EXPLORER_HTML = "explorer.html"

#: The session row's key (`harness.core.tables.SESSION_ROW_KEY`), as a list for pandas.
KEY = list(tables.SESSION_ROW_KEY)
#: The session table's columns: (column, heading, kind). The key and the outcome are required; a metric
#: column an older run lacks is left out of the page.
EXPLORER_SESSION_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("scenario", "scenario", TEXT), ("session_index", "#", NUMBER), ("family", "family", TEXT),
    ("strategy", "strategy", TEXT),
    ("outcome", "outcome", TEXT), ("turns", "turns", NUMBER), ("tool_calls", "tool calls", NUMBER),
    ("tool_syntax_errors", "syntax errors", NUMBER), ("facts_lost", "facts lost", NUMBER),
    ("refetches", "re-fetches", NUMBER), ("redone_steps", "redone steps", NUMBER),
    ("overflow_events", "overflows", NUMBER),
    ("context_tokens_mean", "context mean", NUMBER), ("context_tokens_peak", "context peak", NUMBER),
    ("input_tokens", "input tokens", NUMBER), ("latency_s", "latency", NUMBER), ("cost_usd", "cost", NUMBER),
    ("loop_rule", "loop rule", TEXT),
)
#: How the page writes a number of each unit, as (scale, decimals, prefix, suffix): the conventions of
#: `reports.tables.format_value` (``32,770`` tokens, ``$1.0440``, ``6.6 s``, ``12.50%``).
NUMBER_FORMATS: dict[str, tuple[int, int, str, str]] = {
    "count": (1, 0, "", ""), "tokens": (1, 0, "", ""), "usd": (1, 4, "$", ""), "s": (1, 1, "", " s"),
    "share": (100, 2, "", "%"),
}
#: The unit of each numeric session column that is not a plain count.
SESSION_UNITS: dict[str, str] = {
    "context_tokens_mean": "tokens", "context_tokens_peak": "tokens", "input_tokens": "tokens", "latency_s": "s",
    "cost_usd": "usd",
}
#: The decision trace's columns (``calls.parquet``'s ``trace``, one entry per fact a decision looked up:
#: `harness.sim.model.MockModel._resolve` and ``handover``), as (column, unit, what it means in the mock
#: model); the unit "" is text. The page puts the meaning in the column's tooltip, and `TRACE_LEGEND`'s
#: short line for it in the legend under the trace.
TRACE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("key", "", "the fact looked up, by its key in the scenario: a value the step's tool call, the final "
                "answer or a hand-over message must state"),
    ("depth", "count", "how many re-fetch levels deep the look-up is: 0 for a fact the step itself needs; 1 "
                       "(or 2) for a fact needed to call again the step that first produced a fact being "
                       "re-fetched (the row above it says refetch); never deeper than 2; empty in a hand-over"),
    ("visible", "", "whether a message in the context the model was sent held the fact's value (the memory "
                    "block does not count): no for a fact a tool had shown or the task stated is a fact "
                    "lost to context management; a hand-over leaves it empty when not visible"),
    ("lookup", "", "the fact's look-up kind, which picks the recall curve p follows: literal (an exact value "
                   "copied from beside what identifies it) or latent (found through an association the text "
                   "does not state); empty when no recall was drawn (not visible, or a step following a "
                   "nudge, which skips recall)"),
    ("branch", "", "what the model did for the fact: recall (read it from the context), memory (took it "
                   "from the memory block), retrieve (paged an offloaded output back in through its stub), "
                   "refetch (called again the tool of the step that first produced it), shortcut (took the "
                   "step's dangerous shortcut instead), wrong (stated a wrong value: a decoy seen in the "
                   "context, or a made-up one)"),
    ("p", "share", "the probability of recalling the visible fact: the model profile's recall curve for its "
                   "look-up kind at this prompt's length (system prompt included), lowered towards the middle "
                   "of the prompt (position x)"),
    ("u", "share", "the uniform draw compared with p: recalled when u < p; keyed by session, step, attempt "
                   "and fact, not by strategy, so strategies replaying the same session draw the same u there"),
    ("x", "share", "where the fact sits in the prompt: the middle of the newest message holding it, as a "
                   "share of the prompt's tokens (0% the start of the system prompt, 100% its newest end)"),
)
#: Each trace column in one short line, for the legend (the tooltips hold `TRACE_COLUMNS`' whole meaning).
TRACE_LEGEND: dict[str, str] = {
    "key": "the fact looked up",
    "depth": "re-fetch levels deep: 0 for a fact the step itself needs, 1-2 for one needed to re-fetch another",
    "visible": "whether the fact's value was in the context sent (no: lost, if a tool or the task had shown it)",
    "lookup": "literal (a value copied as it stands) or latent (found through an association): picks p's curve",
    "branch": "what the model did: recall, memory, retrieve (a stub), refetch, shortcut, or wrong (a wrong value)",
    "p": "the recall probability at this prompt's length and the fact's position x",
    "u": "the uniform draw compared with p (recalled when u < p), shared by every strategy at that step and fact",
    "x": "where the fact sits in the prompt: 0% its start, 100% its newest end",
}
_REQUIRED_SESSION = kinds(tables.SESSION_COLUMNS, (*tables.SESSION_ROW_KEY, "outcome"))
#: What the page reads of ``events.parquet`` (`harness.core.tables.EVENT_COLUMNS` after the session row's
#: key), with each column's kind and default: a session's blob leaves out a column that holds only its default.
EVENT_COLUMNS: dict[str, tuple[str, Any]] = {
    c.name: (TEXT if c.text else NUMBER, c.default)
    for c in tables.EVENT_COLUMNS if c.name not in tables.SESSION_ROW_KEY
}
#: What the page reads of ``calls.parquet``: the decision of each call (the events refer to it).
REPORT_CALL_COLUMNS: dict[str, str] = kinds(tables.CALL_COLUMNS, (
    *tables.CALL_ROW_KEY, "call_kind", "agent", "step_id", "attempt", "action", "malformed_kind", "input_tokens",
    "cached_input_tokens", "output_tokens", "cost_usd", "trace"))

#: Whether the run kept its event log: ``on`` (the page has turns), ``off`` (made with events = false)
#: or ``absent`` (a run from a ctxbench without the event log).
EVENTS_ON, EVENTS_OFF, EVENTS_ABSENT = "on", "off", "absent"


@dataclass(frozen=True)
class ExplorerData:
    """What the page shows: the run, its session table, and per session row its compressed details."""

    run_id: str
    strategies: list[str]
    #: The session table (`EXPLORER_SESSION_COLUMNS` that the run has), sorted by scenario, index and strategy.
    sessions: pd.DataFrame
    events: str
    #: Per session row, the index into ``details`` of its session's events (-1: none).
    detail_of: list[int]
    #: Per session (scenario and index), every strategy's events and calls: base64 of deflate-compressed JSON.
    details: list[str]


def load(run_dir: str | Path) -> ExplorerData:
    """Everything the page shows of ``run_dir``, read through the report's checks; a ReportInputError
    naming the file for a directory that is not a finished run, a damaged table, or an event log that
    the run's config keeps but that is missing."""
    run = simulated_run(open_run_dir(run_dir), "the session explorer")
    sessions = read_table(run.path / SESSIONS_TABLE, _REQUIRED_SESSION)
    shown = [c for c, _, _ in EXPLORER_SESSION_COLUMNS if c in sessions.columns]
    sessions = sessions[shown].sort_values(KEY, kind="stable").reset_index(drop=True)
    order = run.manifest.strategy_order() or []
    strategies = [s for s in order if s in set(sessions["strategy"])]
    strategies += sorted(set(sessions["strategy"]) - set(strategies))
    state = _events_state(run)
    detail_of: list[int] = [-1] * len(sessions)
    details: list[str] = []
    if state == EVENTS_ON:
        events = read_table(run.path / EVENTS_TABLE, kinds(tables.EVENT_COLUMNS, tables.SESSION_ROW_KEY)
                            | {c: kind for c, (kind, _) in EVENT_COLUMNS.items()})
        calls = run.calls(REPORT_CALL_COLUMNS)
        detail_of, details = _details(sessions, events, calls)
    return ExplorerData(run.run_id, strategies, sessions, state, detail_of, details)


def _events_state(run: OpenRun) -> str:
    """``on`` when the run has an event log to read; ``off`` or ``absent`` when it has none and was made
    without one; a ReportInputError when its config keeps one and the table is missing."""
    path = run.path / EVENTS_TABLE
    if path.exists() or EVENTS_TABLE in run.manifest.sha256:
        return EVENTS_ON  # open_run_dir verified it when the manifest lists it; read_table checks the rest
    try:
        kept = tomllib.loads(run.config_text()).get("events")
    except tomllib.TOMLDecodeError:
        kept = None  # a damaged config.toml: the report shows it as text; here it only decides a note
    if kept is True:
        raise ReportInputError(f"{path}: missing (the run's {CONFIG_FILE} keeps the event log: events = true); "
                               "run `ctxbench run` again with this run's config and --out to rebuild it")
    return EVENTS_OFF if kept is False else EVENTS_ABSENT


def _columns(frame: pd.DataFrame, names: list[str]) -> dict[str, list[Any]]:
    """Columns as plain lists (ints as ints, NaN as None, text as str), as the page's JSON holds them; floats
    unrounded: the page sorts by the true values, and rounds them only to show them (rounding twice, to
    6 digits and then to a cost's 4, would show some a step off)."""
    return {name: _Column.of(frame[name]).take(0, len(frame), digits=None) for name in names}


@dataclass(frozen=True)
class _Column:
    """A column as numpy arrays: int64 for integers and booleans, float64 for other numbers, and text as
    codes into its distinct values (a million events repeat a few dozen strings: as Python strings
    they would take gigabytes)."""

    values: np.ndarray
    #: Text only: the distinct values ("" for a missing one); ``values`` holds codes into it.
    text: np.ndarray | None = None

    @classmethod
    def of(cls, column: pd.Series) -> _Column:
        if pd.api.types.is_bool_dtype(column) or pd.api.types.is_integer_dtype(column):
            return cls(column.to_numpy(dtype="int64"))
        if pd.api.types.is_float_dtype(column):
            return cls(column.to_numpy(dtype="float64"))
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
        codes = codes.astype("int64")
        codes[codes < 0] = len(uniques)  # a missing value reads as ""
        return cls(codes, np.array([*(str(v) for v in uniques), ""], dtype=object))

    @property
    def integer(self) -> bool:
        return self.text is None and self.values.dtype.kind == "i"

    def differs(self, default: Any) -> np.ndarray:
        """Per row, whether the value is not ``default``."""
        if self.text is None:
            return np.asarray(self.values != default)
        return ~np.isin(self.values, np.flatnonzero(self.text == default))

    def take(self, start: int, end: int, digits: int | None = 9) -> list[Any]:
        """Rows ``start:end`` as JSON holds them: floats rounded to ``digits`` decimals (None: as they are),
        NaN and infinities as None. Nine keep a call's cost to a billionth of a dollar (the prices' own
        precision for the profiles' per-million-token prices) and drop float noise, so the page's 4 decimals
        of a cost are those of the true value (6 showed about one call cost in 400 a step off)."""
        chunk = self.values[start:end]
        if self.text is not None:
            out: list[Any] = self.text[chunk].tolist()
            return out
        if chunk.dtype.kind == "f":
            if digits is None:
                return [v if math.isfinite(v) else None for v in chunk.tolist()]
            return [round(v, digits) if math.isfinite(v) else None for v in chunk.tolist()]
        values: list[Any] = chunk.tolist()
        return values


@dataclass(frozen=True)
class _Table:
    """One table's rows grouped per replay (scenario, index, strategy), column by column, for cutting into
    the sessions' blobs without a Python loop over every value (a large run has a million events)."""

    groups: dict[tuple[Any, ...], tuple[int, int, int]]
    #: Column -> values; an integer column holds differences from the row before within its replay (the
    #: context's tokens grow by little per turn, and small numbers compress well): the page adds them up.
    columns: dict[str, _Column]
    #: Column -> per replay, whether any of its values is not the column's default (None: no default).
    used: dict[str, np.ndarray | None]

    @classmethod
    def of(cls, frame: pd.DataFrame, names: list[str], sort: str, defaults: dict[str, Any]) -> _Table:
        if frame.empty:
            return cls({}, {}, {})
        frame = frame.sort_values([*KEY, sort], kind="stable", ignore_index=True)
        keys = [_Column.of(frame[k]) for k in KEY]
        changed = np.zeros(len(frame), dtype=bool)
        changed[0] = True
        for k in keys:
            changed[1:] |= k.values[1:] != k.values[:-1]
        starts = np.flatnonzero(changed)
        ends = [*starts[1:].tolist(), len(frame)]
        groups = {(keys[0].take(s, s + 1)[0], keys[1].take(s, s + 1)[0], keys[2].take(s, s + 1)[0]): (g, s, e)
                  for g, (s, e) in enumerate(zip(starts.tolist(), ends, strict=True))}
        columns: dict[str, _Column] = {}
        used: dict[str, np.ndarray | None] = {}
        for name in names:
            column = _Column.of(frame[name])
            used[name] = np.logical_or.reduceat(column.differs(defaults[name]), starts) if name in defaults else None
            if column.integer:
                values = np.concatenate([column.values[:1], np.diff(column.values)])
                values[starts] = column.values[starts]
                column = _Column(values)
            columns[name] = column
        return cls(groups, columns, used)

    def part(self, key: tuple[Any, ...]) -> dict[str, Any] | None:
        """The replay's rows: ``n``, each column that is not all its default, and under ``~`` the
        columns written as differences."""
        found = self.groups.get(key)
        if found is None:
            return None
        g, start, end = found
        out: dict[str, Any] = {"n": end - start}
        deltas = []
        for name, column in self.columns.items():
            used = self.used[name]
            if used is None or used[g]:
                out[name] = column.take(start, end)
                if column.integer:
                    deltas.append(name)
        if deltas:
            out["~"] = deltas
        return out


#: The event columns of each kind of event (the others hold their defaults there).
_EVENT_KINDS: dict[str, list[str]] = {
    "call": ["seq", "turn", "agent", "call_index", "messages", "system_tokens", "task_tokens", "assistant_tokens",
             "tool_tokens", "error_tokens", "summary_tokens", "stub_tokens", "masked_tokens", "nudge_tokens", "tool",
             "status", "output_chars", "output_tokens", "error_class"],
    "compaction": ["seq", "turn", "agent", "call_index", "hook", "how", "messages_before", "messages_after",
                   "tokens_before", "tokens_after", "facts_dropped"],
    "lost": ["seq", "turn", "agent", "fact", "cause", "dropped_seq"],
}


def _details(sessions: pd.DataFrame, events: pd.DataFrame, calls: pd.DataFrame) -> tuple[list[int], list[str]]:
    """Per session row the index of its session's blob (-1: no events), and per session (scenario and
    index, every strategy together: strategies replay the same session, so their events compress
    together) its blob: base64 of deflate-compressed JSON, ``{strategy: {"call": .., "compaction": ..,
    "lost": .., "c": calls}}``, each a `_Table.part`."""
    defaults = {c: default for c, (_, default) in EVENT_COLUMNS.items()}
    tables = {kind: _Table.of(events[events["event"] == kind], names, "seq", defaults)
              for kind, names in _EVENT_KINDS.items()}
    call_names = [c for c in REPORT_CALL_COLUMNS if c not in KEY]
    tables["c"] = _Table.of(calls, call_names, "call_index", {})
    blobs: dict[tuple[str, int], dict[str, Any]] = {}
    for key in zip(sessions["scenario"].tolist(), sessions["session_index"].astype("int64").tolist(),
                   sessions["strategy"].tolist(), strict=True):
        parts = {kind: table.part(key) for kind, table in tables.items()}
        if parts["call"] is None and parts["compaction"] is None and parts["lost"] is None:
            continue
        blobs.setdefault(key[:2], {})[key[2]] = {k: v for k, v in parts.items() if v is not None}
    order = {k: i for i, k in enumerate(blobs)}
    index = [order.get((s, int(i)), -1) for s, i in zip(sessions["scenario"], sessions["session_index"], strict=True)]
    # Level 6, zlib's default: level 9 takes twice as long for blobs 4% smaller (measured on a default run).
    packed = [base64.b64encode(zlib.compress(json.dumps(b, separators=(",", ":"), ensure_ascii=False).encode(), 6))
              .decode("ascii") for b in blobs.values()]
    return index, packed


def format_number(value: float | None, unit: str = "count") -> str:
    """``value`` as the page writes a number of ``unit`` (`NUMBER_FORMATS`): ``12,346`` tokens, ``$0.3739``,
    ``192.5 s``, ``81.23%``; "" for none (a missing or non-finite value). Rounded half away from zero on
    the shortest decimal form of the number, as the browser's ``Intl.NumberFormat`` does: the page's
    script writes its numbers with that, and the browser test checks that the two agree."""
    if value is None or not math.isfinite(value):
        return ""
    scale, decimals, prefix, suffix = NUMBER_FORMATS[unit]
    scaled = Decimal(repr(float(value) * scale)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return f"{'-' if scaled < 0 else ''}{prefix}{abs(scaled):,.{decimals}f}{suffix}"


def trace_legend() -> str:
    """The legend the page shows under a decision trace: every `TRACE_COLUMNS` column, its short line
    (`TRACE_LEGEND`) and, as the line's tooltip, its whole meaning."""
    items = "".join(f"<dt data-col=\"{escape(name)}\">{escape(name)}</dt><dd title=\"{escape(meaning)}\">"
                    f"{escape(TRACE_LEGEND[name])}</dd>" for name, _, meaning in TRACE_COLUMNS)
    return ("<div class=\"trace-legend\" id=\"trace-legend\"><p>One row per fact the decision looked up, in the "
            "order it resolved them (hover a column's name for more):</p>"
            f"<dl>{items}</dl></div>")


def _script_json(value: Any) -> str:
    """``value`` as JSON that is safe inside a ``<script>`` element (no ``</script>`` can close it)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).replace("<", "\\u003c")


def render(data: ExplorerData) -> str:
    """The explorer page of ``data``: one HTML document with everything inline."""
    kinds = {c: kind for c, _, kind in EXPLORER_SESSION_COLUMNS}
    meta = {
        "run_id": data.run_id,
        "events": data.events,
        "strategies": data.strategies,
        "columns": [{"name": c, "label": label, "kind": kind, "unit": SESSION_UNITS.get(c, "count")}
                    for c, label, kind in EXPLORER_SESSION_COLUMNS if c in data.sessions.columns],
        "formats": NUMBER_FORMATS,
        "trace_columns": [{"name": c, "unit": unit, "help": meaning} for c, unit, meaning in TRACE_COLUMNS],
        "event_defaults": {c: default for c, (_, default) in EVENT_COLUMNS.items()},
        "rows": len(data.sessions),
        "detail_of": data.detail_of,
    }
    columns = _columns(data.sessions, list(data.sessions.columns))
    for name, values in columns.items():
        if kinds.get(name) == NUMBER:
            columns[name] = [v if v is None else (int(v) if float(v).is_integer() else v) for v in values]
    title = f"Session explorer: {data.run_id}"
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        # Nothing may be fetched: inline script and style only (and blobs the page unpacks itself).
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
        "style-src 'unsafe-inline'; img-src data:\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        "<link rel=\"icon\" href=\"data:,\">",
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1><div id=\"app\"><p class=\"subtitle\">Loading…</p></div>",
        f"<template id=\"trace-legend-template\">{trace_legend()}</template>",
        f"<script type=\"application/json\" id=\"meta\">{_script_json(meta)}</script>",
        f"<script type=\"application/json\" id=\"sessions\">{_script_json(columns)}</script>",
        f"<script type=\"application/json\" id=\"details\">{_script_json(data.details)}</script>",
        f"<script>{SCRIPT}</script></body></html>\n",
    ])


def write_explorer(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write the explorer page of ``run_dir`` to ``out`` (default ``RUN_DIR/explorer.html``); its path.
    Every input is read and the page built before anything is written; a ReportInputError (one line
    naming the file) leaves everything as it was."""
    data = load(run_dir)
    target = Path(out) if out is not None else Path(run_dir) / EXPLORER_HTML
    base = Path(run_dir) if target.is_relative_to(Path(run_dir)) else target.parent
    write_files(base, {target: render(data).encode()})
    return target
