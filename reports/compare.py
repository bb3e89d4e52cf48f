"""Compare two runs (``ctxbench compare RUN_A RUN_B``): each metric per strategy in both runs, the
difference B - A with a 95% interval from independent bootstraps of the two runs' sessions, and a gate
that fails when a ``--fail-on METRIC:THRESHOLD`` is crossed.

Thresholds: ``METRIC:+2pp`` (absolute, percentage points; rate metrics only), ``METRIC:+5%`` (relative
to run A's value), ``METRIC:+1000`` (absolute, in the metric's unit). The sign is the direction that
fails: ``+`` fails when B is higher than A by more than the amount, ``-`` when it is lower. The gate
reads the point estimate of the difference (both runs are deterministic, so it never flakes); the
interval says whether the difference is distinguishable from resampling noise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reports import stats
from reports.inputs import STATS_COLUMNS, ReportInputError, open_run_dir
from reports.stats import METRICS, Metric
from reports.tables import format_diff, format_interval, format_value, is_share

_AMOUNT = re.compile(r"([+-])((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(pp|%)?")
#: Differences within this (relative) margin of a threshold do not cross it: float noise, not a change.
_EPS = 1e-9


def unknown_metric(name: str) -> ReportInputError:
    """The error for a metric name that is not one of ``reports.stats.METRICS``."""
    return ReportInputError(f"unknown metric {name!r} (known: {', '.join(METRICS)})")


@dataclass(frozen=True)
class Threshold:
    """One ``--fail-on`` gate."""

    text: str
    metric: str
    #: +1 fails on an increase (B above A), -1 on a decrease.
    direction: int
    amount: float
    #: ``pp`` (percentage points), ``relative`` (share of A's value) or ``absolute`` (metric units).
    kind: str

    def limit_text(self) -> str:
        sign = "+" if self.direction > 0 else "-"
        suffix = {"pp": "pp", "relative": "%", "absolute": ""}[self.kind]
        return f"{sign}{self.amount:g}{suffix}"

    def change(self, a: float, diff: float) -> float:
        """The difference in the threshold's own terms (pp, percent, or units), signed by its direction."""
        signed = diff * self.direction
        if self.kind == "pp":
            return signed * 100
        if self.kind == "relative":
            if a == 0:
                return math.inf if signed > 0 else 0.0
            return signed / abs(a) * 100
        return signed

    def crossed(self, a: float, diff: float) -> bool:
        if not (np.isfinite(a) and np.isfinite(diff)):
            return False
        return self.change(a, diff) > self.amount + _EPS * max(1.0, self.amount)


def parse_threshold(text: str) -> Threshold:
    """``METRIC:+2pp`` / ``METRIC:-5%`` / ``METRIC:+1000`` -> Threshold; a ReportInputError (a
    ValueError) with one line naming the bad part otherwise."""
    name, sep, raw = text.partition(":")
    name, raw = name.strip(), raw.strip().replace(" ", "")
    if not sep or not name or not raw:
        raise ReportInputError(f"--fail-on {text!r}: expected METRIC:THRESHOLD, e.g. loop_rate:+2pp, "
                               "context_tokens_mean:+5% or input_tokens:+1000")
    if name not in METRICS:
        raise unknown_metric(name)
    match = _AMOUNT.fullmatch(raw)
    if match is None:
        raise ReportInputError(f"--fail-on {text!r}: bad threshold {raw!r} (expected a sign, a number and "
                               "optionally pp or %, e.g. +2pp, -5%, +1000)")
    sign, number, suffix = match.groups()
    amount = float(number)
    if not math.isfinite(amount):
        raise ReportInputError(f"--fail-on {text!r}: the threshold must be a finite number")
    kind = {"pp": "pp", "%": "relative", None: "absolute"}[suffix]
    if kind == "pp" and not is_share(METRICS[name]):
        raise ReportInputError(f"--fail-on {text!r}: pp (percentage points) applies to rates only; {name} is in "
                               f"{METRICS[name].unit} (use % or a plain number)")
    return Threshold(text=f"{name}:{raw}", metric=name, direction=1 if sign == "+" else -1, amount=amount, kind=kind)


def parse_metrics(names: Iterable[str] | None) -> list[str]:
    """Metric names (commas allowed inside an item); all of them when none are given."""
    chosen = [n.strip() for item in (names or ()) for n in item.split(",") if n.strip()]
    for name in chosen:
        if name not in METRICS:
            raise unknown_metric(name)
    return list(dict.fromkeys(chosen)) or list(METRICS)


@dataclass(frozen=True)
class Breach:
    threshold: Threshold
    strategy: str
    a: float
    b: float
    diff: float

    def message(self) -> str:
        metric = METRICS[self.threshold.metric]
        change = self.threshold.change(self.a, self.diff) * self.threshold.direction
        shown = {"pp": f"{change:+.2f}pp", "relative": f"{change:+.1f}%"}.get(self.threshold.kind,
                                                                             format_diff(metric, self.diff))
        return (f"{self.threshold.metric} [{self.strategy}]: {format_value(metric, self.a)} -> "
                f"{format_value(metric, self.b)} ({shown}) crosses {self.threshold.limit_text()}")


@dataclass(frozen=True)
class CompareResult:
    run_a: Path
    run_b: Path
    #: One row per (metric, strategy): a, a_low, a_high, b, b_low, b_high, diff, ci_low, ci_high,
    #: excludes_zero, n_a, n_b.
    table: pd.DataFrame
    thresholds: tuple[Threshold, ...] = ()
    breaches: tuple[Breach, ...] = field(default=())

    @property
    def failed(self) -> bool:
        return bool(self.breaches)

    def to_text(self) -> str:
        lines = [f"A = {self.run_a}", f"B = {self.run_b}", ""]
        for metric_name, group in self.table.groupby("metric", sort=False):
            metric = METRICS[str(metric_name)]
            rows = [["strategy", "A", "B", "B - A", "95% CI of B - A", "CI excludes 0"]]
            for _, r in group.iterrows():
                rows.append([str(r["strategy"]), format_value(metric, r["a"]), format_value(metric, r["b"]),
                             format_diff(metric, r["diff"]),
                             format_interval(metric, r["ci_low"], r["ci_high"], diff=True),
                             "yes" if r["excludes_zero"] else "no"])
            widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
            lines.append(f"{metric.name} ({metric.label}, {metric.unit})")
            for row in rows:
                lines.append("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                              for i, (c, w) in enumerate(zip(row, widths, strict=True))))
            lines.append("")
        for t in self.thresholds:
            hits = [b for b in self.breaches if b.threshold == t]
            lines.append(f"gate {t.text}: " + ("FAILED" if hits else "ok"))
            lines += [f"  {b.message()}" for b in hits]
        return "\n".join(lines).rstrip() + "\n"

    def to_records(self) -> dict[str, Any]:
        def clean(value: Any) -> Any:
            if isinstance(value, np.generic):
                value = value.item()
            if isinstance(value, float) and not math.isfinite(value):
                return None
            return value

        rows = [{str(k): clean(v) for k, v in row.items()} for row in self.table.to_dict(orient="records")]
        return {
            "run_a": str(self.run_a), "run_b": str(self.run_b), "rows": rows,
            "thresholds": [{"threshold": t.text, "failed": any(b.threshold == t for b in self.breaches)}
                           for t in self.thresholds],
            "breaches": [{"threshold": b.threshold.text, "strategy": b.strategy, "a": clean(b.a), "b": clean(b.b),
                          "diff": clean(b.diff), "message": b.message()} for b in self.breaches],
            "failed": self.failed,
        }


def _row(metric: Metric, strategy: str, a: pd.DataFrame, b: pd.DataFrame, *, resamples: int,
         seed: int) -> dict[str, Any]:
    row: dict[str, Any] = {"metric": metric.name, "strategy": strategy, "n_a": len(a), "n_b": len(b)}
    va, da = stats.metric_arrays(a, metric)
    vb, db = stats.metric_arrays(b, metric)
    # Distinct streams for A and B (the generator key reads only the first bytes of each part), so
    # even two identical runs are resampled independently.
    rng_a = stats.rng_for(seed, "A", "compare", metric.name, strategy)
    rng_b = stats.rng_for(seed, "B", "compare", metric.name, strategy)
    row["a"], row["a_low"], row["a_high"] = stats.bootstrap(va, metric, denominators=da, resamples=resamples,
                                                            rng=rng_a)
    row["b"], row["b_low"], row["b_high"] = stats.bootstrap(vb, metric, denominators=db, resamples=resamples,
                                                            rng=rng_b)
    if len(a) == 0 or len(b) == 0:
        return row | {"diff": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"), "excludes_zero": False}
    # Fresh generators of the same streams: the difference's resamples are those behind each run's CI.
    stat = stats.statistic(metric)
    idx_a = stats.rng_for(seed, "A", "compare", metric.name, strategy).integers(0, len(a), size=(resamples, len(a)))
    idx_b = stats.rng_for(seed, "B", "compare", metric.name, strategy).integers(0, len(b), size=(resamples, len(b)))
    low, high = stats.percentile_interval(stat(vb, db, idx_b) - stat(va, da, idx_a), stats.CONFIDENCE)
    return row | {"diff": row["b"] - row["a"], "ci_low": low, "ci_high": high,
                  "excludes_zero": bool(low > 0 or high < 0)}


def _names(names: set[str], limit: int = 5) -> str:
    """Up to ``limit`` names, sorted, for a one-line message."""
    if not names:
        return "no sessions"
    shown = sorted(names)
    return ", ".join(shown[:limit]) + (f" and {len(shown) - limit} more" if len(shown) > limit else "")


def compare(run_a: str | Path, run_b: str | Path, metrics: Sequence[str] | None = None,
            fail_on: Iterable[str | Threshold] = (), *, resamples: int = stats.DEFAULT_RESAMPLES,
            seed: int = stats.DEFAULT_SEED) -> CompareResult:
    """The library form of ``ctxbench compare``: see the module docstring. Both run directories are
    checked and their tables verified first (:func:`reports.inputs.open_run_dir`); two runs without a
    strategy in common have nothing to compare (a ReportInputError). A run compared with itself is
    allowed: every difference is zero."""
    thresholds = tuple(t if isinstance(t, Threshold) else parse_threshold(t) for t in fail_on)
    chosen = parse_metrics(metrics)
    chosen += [t.metric for t in thresholds if t.metric not in chosen]
    open_a, open_b = open_run_dir(run_a), open_run_dir(run_b)
    path_a, path_b = open_a.path, open_b.path
    sessions_a, sessions_b = open_a.sessions(STATS_COLUMNS), open_b.sessions(STATS_COLUMNS)
    names_a, names_b = set(map(str, sessions_a["strategy"])), set(map(str, sessions_b["strategy"]))
    if not names_a & names_b:
        raise ReportInputError(f"{path_a} and {path_b} have no strategy in common (A: {_names(names_a)}; "
                               f"B: {_names(names_b)}): nothing to compare")
    strategies = sorted(names_a & names_b) + sorted(names_a ^ names_b)
    groups_a = {str(k): g for k, g in sessions_a.groupby("strategy")}
    groups_b = {str(k): g for k, g in sessions_b.groupby("strategy")}
    empty = sessions_a.iloc[0:0]
    rows = [_row(METRICS[name], s, groups_a.get(s, empty), groups_b.get(s, empty), resamples=resamples, seed=seed)
            for name in chosen for s in strategies]
    columns = ["metric", "strategy", "n_a", "n_b", "a", "a_low", "a_high", "b", "b_low", "b_high", "diff", "ci_low",
               "ci_high", "excludes_zero"]
    table = pd.DataFrame(rows, columns=columns)
    breaches = []
    for t in thresholds:
        for _, r in table[table["metric"] == t.metric].iterrows():
            if t.crossed(float(r["a"]), float(r["diff"])):
                breaches.append(Breach(t, str(r["strategy"]), float(r["a"]), float(r["b"]), float(r["diff"])))
    return CompareResult(path_a, path_b, table, thresholds, tuple(breaches))
