"""What stuck sessions were doing when the loop detector stopped them, and the stuck floor that a fault
which never clears creates under plain errors: read from ``loop_shapes.parquet`` (one row per stuck
session, classified by ``harness.run.validation.loop_shapes`` from the last 4 agent calls and the
session's regenerated script) and the runs' session tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reports import stats
from reports.markup import md_lines
from reports.validation.data import Bundle, ci_pct, pct

#: The shapes in the order the document lists them (as harness.run.validation.LOOP_SHAPES names them).
SHAPES = ("fault never clears", "same wrong value re-sent", "new wrong values", "re-fetch loop", "malformed calls",
          "mixed")
NEVER_CLEARS = SHAPES[0]


def _runs(b: Bundle) -> list[str]:
    return [r for r in b.sessions if r in set(b.loop_shapes.get("run", pd.Series(dtype=str)))]


def loop_shape_rows(b: Bundle) -> list[list[str]]:
    """Per run and strategy with stuck sessions: its error format, sessions, stuck share, and how the
    stuck sessions' last 4 calls split between the shapes."""
    shapes = b.loop_shapes
    rows = []
    for run in _runs(b):
        sessions = b.sessions[run]
        for strategy, group in shapes[shapes["run"] == run].groupby("strategy", sort=False):
            n = int((sessions["strategy"] == strategy).sum())
            counts = group["shape"].value_counts()
            stuck = len(group)
            rows.append([run, str(strategy), str(group["errors"].iloc[0]), f"{n:,}", pct(stuck / n if n else np.nan),
                         *(pct(counts.get(s, 0) / stuck) for s in SHAPES)])
    return rows


def stuck_floor_rows(b: Bundle) -> list[list[str]]:
    """Per run and strategy: the share of all sessions that end stuck on a fault that never clears (every
    call of the step fails, ``fails=None``), with a 95% interval; the floor no context strategy can lower,
    since only the error format (a structured error naming the fallback) or a followed nudge gets past it."""
    shapes = b.loop_shapes
    rows = []
    for run in _runs(b):
        sessions = b.sessions[run]
        mine = shapes[(shapes["run"] == run) & (shapes["shape"] == NEVER_CLEARS)]
        for strategy in sessions["strategy"].drop_duplicates():
            group = sessions[sessions["strategy"] == strategy]
            ours = mine[mine["strategy"] == strategy]
            hit = set(zip(ours["scenario"].astype(str), ours["session_index"].astype(int), strict=True))
            flags = np.array([(str(sc), int(i)) in hit for sc, i in zip(group["scenario"], group["session_index"],
                                                                          strict=True)], dtype=float)
            value, lo, hi = stats.bootstrap(flags, stats.METRICS["success_rate"],
                                            rng=b.rng("floor", run, str(strategy)))
            stuck = float((group["outcome"] == "stuck").mean()) if len(group) else np.nan
            rows.append([run, str(strategy), str(group["errors"].iloc[0]) if len(group) else "-", f"{len(group):,}",
                         pct(stuck), f"{pct(value)} {ci_pct(lo, hi)}",
                         pct(value / stuck) if stuck else "-"])
    return rows


def loop_section(b: Bundle) -> list[str]:
    """The document's section: how the shapes are told apart, the breakdown, the stuck floor, and what
    the floor says, computed from the tables."""
    lines = [
        "## Loop shapes and the stuck floor", "",
        "Every stuck session's last 4 agent calls (the StuckDetector's window, docs/model.md 7), read from "
        "calls.parquet and from the session's script regenerated from its scenario and seed, are put in the "
        "first shape that fits: **fault never clears** (all 4 are the tool call of one step whose scripted "
        "fault has `fails=None`); **re-fetch loop** (all 4 re-fetch or retrieve a fact visible in no message, "
        "and the output comes back without it); "
        "**same wrong value re-sent** (all 4 are one step's call built with a wrong value and the repeat rule "
        "fired: identical calls); **new wrong values** (the same, but an error streak: the values changed); "
        "**malformed calls**; **mixed** (anything else). Shares are of the stuck sessions.", "",
    ]
    lines += md_lines(["run", "strategy", "errors", "sessions", "stuck", *SHAPES], loop_shape_rows(b))
    lines += ["", "The stuck floor: the share of all sessions that end stuck because a fault that never clears keeps "
              "failing. Under plain errors the agent sees only \"Error: ...\"; it takes the fallback only when it "
              "follows a nudge (p_nudge_follow), otherwise it resends or tries the same call again until the "
              "detector fires (docs/model.md 2.3 c). Under three-class errors the error names the fallback and "
              "the agent switches at once.", ""]
    floor = stuck_floor_rows(b)
    lines += md_lines(["run", "strategy", "errors", "sessions", "stuck", "stuck on a never-clearing fault (95% CI)",
                       "share of stuck"], floor)
    lines += ["", *_floor_summary(floor), ""]
    return lines


def _floor_summary(rows: list[list[str]]) -> list[str]:
    plain = [r for r in rows if r[2] == "plain"]
    structured = [r for r in rows if r[2] != "plain"]

    def share(cell: str) -> float:
        head = cell.split(" ")[0].rstrip("%")
        try:
            return float(head) / 100
        except ValueError:
            return float("nan")

    if not plain:
        return ["No run here used plain errors."]
    values = [share(r[5]) for r in plain]
    text = (f"Under plain errors the floor ranges from {pct(float(np.nanmin(values)))} to "
            f"{pct(float(np.nanmax(values)))} of sessions across {len(plain)} strategy runs")
    if structured:
        other = [share(r[5]) for r in structured]
        text += (f"; under three-class errors it is at most {pct(float(np.nanmax(other)))} "
                 f"({len(structured)} strategy runs)")
    return [text + ". Getting past such a fault takes no fact look-up, so the context strategy does not enter the "
            "mechanism: the script's faults, the error format and the profile's p_nudge_follow set the floor (the "
            "oracle profile follows every nudge)."]
