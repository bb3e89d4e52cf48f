"""The summary a run prints at its end: per strategy, the headline metrics with their 95% confidence
intervals (as text for people, as records for ``--json``).

Its column names and record keys are the keys of ``reports.stats.METRICS``, the names the report and
``ctxbench compare --metric`` use, so a number seen here can be gated on under the same name. Its
numbers are the report's: :func:`reports.stats.headline` with the report's resamples and seed, whose
streams are seeded from the sessions they resample, so every value and interval printed here is the
one the report and ``ctxbench compare`` print for the same run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from reports.identical import identical_groups, merge_identical
from reports.stats import DEFAULT_RESAMPLES, METRICS, SCRIPT_KEY, TOO_FEW, UNDEFINED, WILSON, headline
from reports.tables import WILSON_MARK, format_value, interval_notes, interval_text

#: The metrics the summary prints, in the order a reader scans them; each is a key of METRICS. The cost
#: per solved session follows the cost per session, which rewards failing early on its own.
SUMMARY_METRICS: tuple[str, ...] = (
    "success_rate",
    "context_tokens_mean",
    "tool_syntax_error_rate",
    "loop_rate",
    "latency_mean",
    "latency_p95",
    "cost_per_session",
    "cost_per_solved_session",
)
# A name outside METRICS would print a number nothing else can find (compare, the report): our bug.
assert set(SUMMARY_METRICS) <= set(METRICS), set(SUMMARY_METRICS) - set(METRICS)


def _number(x: Any) -> float | None:
    """A float for JSON, None for NaN or infinity (which JSON cannot hold)."""
    value = float(x)
    return value if math.isfinite(value) else None


def summary_frame(sessions: pd.DataFrame) -> pd.DataFrame:
    """The :func:`reports.stats.headline` rows of :data:`SUMMARY_METRICS`, as the report computes them."""
    # Only what the printed metrics read (and the session key their streams order sessions by): a run of
    # 100,000 sessions has a million rows of 40-odd columns.
    needed = {"strategy", "outcome", *SCRIPT_KEY} | {c for name in SUMMARY_METRICS for c in METRICS[name].columns}
    sessions = sessions[[c for c in sessions.columns if c in needed]]
    return headline(sessions, metrics=SUMMARY_METRICS)


def merged_identical(sessions: pd.DataFrame, order: Sequence[str] | None = None) -> pd.DataFrame:
    """``sessions`` with strategies whose rows are identical in every column shown once, under a name
    listing them in ``order`` (the run's; default: by name), as the report shows them
    (:mod:`reports.identical`)."""
    if sessions.empty or "strategy" not in sessions.columns:
        return sessions
    names = list(order) if order is not None else sorted(map(str, set(sessions["strategy"])))
    return merge_identical(sessions, identical_groups(sessions, names))


def summary_records(sessions: pd.DataFrame, order: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One record per strategy (strategies with identical sessions are one record, named
    ``a = b``: :func:`merged_identical` in ``order``), by success rate, best first: ``strategy``, ``sessions``,
    and per metric of :data:`SUMMARY_METRICS`, under its METRICS name, its value (None when
    undefined), ``<metric>_ci`` = [low, high] (None without an interval), ``<metric>_interval`` (its
    kind: ``bootstrap``, ``wilson``, ``too_few`` or ``undefined``), and for a ``per`` metric
    ``<metric>_support``, the count it divides by (solved sessions)."""
    sessions = merged_identical(sessions, order)
    return _records(sessions, summary_frame(sessions))


def _records(sessions: pd.DataFrame, frame: pd.DataFrame) -> list[dict[str, Any]]:
    """:func:`summary_records` from the summary's headline rows ``frame``."""
    stats = frame.set_index(["strategy", "metric"])
    counts = sessions.groupby("strategy").size()
    records = []
    for strategy in sorted(counts.index):
        record: dict[str, Any] = {"strategy": str(strategy), "sessions": int(counts[strategy])}
        for name in SUMMARY_METRICS:
            row = stats.loc[(strategy, name)]
            kind = str(row["interval"])
            record[name] = _number(row["value"])
            record[f"{name}_ci"] = ([float(row["ci_low"]), float(row["ci_high"])]
                                    if kind not in (TOO_FEW, UNDEFINED) else None)
            record[f"{name}_interval"] = kind
            if METRICS[name].kind == "per":
                record[f"{name}_support"] = int(row["support"])
        records.append(record)
    return sorted(records, key=lambda r: (-(r["success_rate"] or 0.0), r["strategy"]))


def _cell(name: str, record: dict[str, Any]) -> str:
    """``value [low, high]``, written as the report writes the metric (its kind's mark or words)."""
    metric = METRICS[name]
    value, kind = record[name], record[f"{name}_interval"]
    if value is None:
        return metric.undefined
    low, high = record[f"{name}_ci"] or (math.nan, math.nan)
    interval = interval_text(metric, low, high, kind, support=record.get(f"{name}_support", math.nan),
                             n=record["sessions"])
    return f"{format_value(metric, value)} {interval}".rstrip()


def summary_text(sessions: pd.DataFrame, order: Sequence[str] | None = None) -> str:
    """A fixed-width table: value [95% CI] per metric, strategies by success rate (identical ones as one
    row: :func:`merged_identical`), and under it which interval each number carries, with the run's own
    example of any that is not the bootstrap's."""
    sessions = merged_identical(sessions, order)
    frame = summary_frame(sessions)
    rows = []
    for r in _records(sessions, frame):
        rows.append({"strategy": r["strategy"], "sessions": r["sessions"],
                     **{name: _cell(name, r) for name in SUMMARY_METRICS}})
    table = pd.DataFrame(rows).set_index("strategy").to_string()
    kinds = set(frame["interval"])
    said = f"(values with 95% percentile-bootstrap CIs over sessions, {DEFAULT_RESAMPLES} resamples"
    said += f"; {WILSON_MARK}: Wilson score CI)" if WILSON in kinds else ")"
    notes = [text for _kind, text in interval_notes(frame, [r["strategy"] for r in rows], list(SUMMARY_METRICS))]
    return "\n".join([table, said, *notes])
