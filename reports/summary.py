"""The summary a run prints at its end: per strategy, the headline metrics with their 95% bootstrap
confidence intervals (as text for people, as records for ``--json``).

Its column names and record keys are the keys of ``reports.stats.METRICS``, the names the report and
``ctxbench compare --metric`` use, so a number seen here can be gated on under the same name.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from reports.stats import METRICS, headline
from reports.tables import format_interval, format_value

#: The metrics the summary prints, in the order a reader scans them; each is a key of METRICS.
SUMMARY_METRICS: tuple[str, ...] = (
    "success_rate",
    "context_tokens_mean",
    "tool_syntax_error_rate",
    "loop_rate",
    "latency_mean",
    "latency_p95",
    "cost_per_session",
)
# A name outside METRICS would print a number nothing else can find (compare, the report): our bug.
assert set(SUMMARY_METRICS) <= set(METRICS), set(SUMMARY_METRICS) - set(METRICS)
#: Fewer resamples than the report: the summary is a first look, printed on every run.
SUMMARY_RESAMPLES = 1000


def summary_records(sessions: pd.DataFrame) -> list[dict[str, Any]]:
    """One record per strategy: sessions, each metric's value under its METRICS name, and
    ``<metric>_ci`` = [low, high]; strategies by success rate, best first."""
    # Only what the printed metrics read: a run of 100,000 sessions has a million rows of 40-odd columns.
    needed = {"strategy", "outcome"} | {c for name in SUMMARY_METRICS
                                        for c in (METRICS[name].column, METRICS[name].denominator) if c}
    sessions = sessions[[c for c in sessions.columns if c in needed]]
    stats = headline(sessions, resamples=SUMMARY_RESAMPLES, metrics=SUMMARY_METRICS).set_index(["strategy", "metric"])
    counts = sessions.groupby("strategy").size()
    records = []
    for strategy in sorted(counts.index):
        record: dict[str, Any] = {"strategy": str(strategy), "sessions": int(counts[strategy])}
        for name in SUMMARY_METRICS:
            row = stats.loc[(strategy, name)]
            record[name] = float(row["value"])
            record[f"{name}_ci"] = [float(row["ci_low"]), float(row["ci_high"])]
        records.append(record)
    return sorted(records, key=lambda r: (-r["success_rate"], r["strategy"]))


def _cell(name: str, value: float, ci: list[float]) -> str:
    """``value [low, high]``, written as the report and compare write the metric."""
    metric = METRICS[name]
    return f"{format_value(metric, value)} {format_interval(metric, *ci)}"


def summary_text(sessions: pd.DataFrame) -> str:
    """A fixed-width table: value [95% CI] per metric, strategies by success rate."""
    rows = []
    for r in summary_records(sessions):
        rows.append({"strategy": r["strategy"], "sessions": r["sessions"],
                     **{name: _cell(name, r[name], r[f"{name}_ci"]) for name in SUMMARY_METRICS}})
    return pd.DataFrame(rows).set_index("strategy").to_string() + "\n(values with 95% bootstrap CIs)"
