"""The summary a run prints at its end: per strategy, the headline metrics with their 95% bootstrap
confidence intervals (as text for people, as records for ``--json``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from reports.stats import headline

#: Printed column -> headline metric, in the order a reader scans them.
COLUMNS: dict[str, str] = {
    "success_rate": "success_rate",
    "context_tokens_mean": "context_tokens_mean",
    "tool_syntax_error_rate": "tool_syntax_error_rate",
    "loop_rate": "loop_rate",
    "latency_s_mean": "latency_mean",
    "latency_s_p95": "latency_p95",
    "cost_usd_per_session": "cost_per_session",
}
#: Fewer resamples than the report: the summary is a first look, printed on every run.
SUMMARY_RESAMPLES = 1000


def summary_records(sessions: pd.DataFrame) -> list[dict[str, Any]]:
    """One record per strategy: sessions, each metric's value, and ``<metric>_ci`` = [low, high]."""
    stats = headline(sessions, resamples=SUMMARY_RESAMPLES).set_index(["strategy", "metric"])
    counts = sessions.groupby("strategy").size()
    records = []
    for strategy in sorted(counts.index):
        record: dict[str, Any] = {"strategy": str(strategy), "sessions": int(counts[strategy])}
        for column, metric in COLUMNS.items():
            row = stats.loc[(strategy, metric)]
            record[column] = float(row["value"])
            record[f"{column}_ci"] = [float(row["ci_low"]), float(row["ci_high"])]
        records.append(record)
    return sorted(records, key=lambda r: (-r["success_rate"], r["strategy"]))


def _cell(value: float, ci: list[float], column: str) -> str:
    low, high = ci
    if column.endswith("_rate"):
        return f"{value:.1%} [{low:.1%}, {high:.1%}]"
    if column.startswith("cost"):
        return f"{value:.3f} [{low:.3f}, {high:.3f}]"
    return f"{value:,.0f} [{low:,.0f}, {high:,.0f}]"


def summary_text(sessions: pd.DataFrame) -> str:
    """A fixed-width table: value [95% CI] per metric, strategies by success rate."""
    rows = []
    for r in summary_records(sessions):
        rows.append({"strategy": r["strategy"], "sessions": r["sessions"],
                     **{c: _cell(r[c], r[f"{c}_ci"], c) for c in COLUMNS}})
    return pd.DataFrame(rows).set_index("strategy").to_string() + "\n(values with 95% bootstrap CIs)"
