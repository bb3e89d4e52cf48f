"""Compare two runs (``ctxbench compare RUN_A RUN_B``): each metric per strategy in both runs, the
difference B - A with a 95% bootstrap interval, and a gate that fails when a ``--fail-on
METRIC:THRESHOLD`` regression is statistically established.

Pairing. Rows of two runs with the same scenario, session_index and seed are the same session (the
same script replayed: docs/design.md, "Determinism"). When the runs share sessions, each strategy is
compared over the shared ones only: B - A is the metric over B's rows minus the metric over A's rows
of the same sessions (for a mean metric, the mean of the per-session differences), and its interval
resamples those sessions with one resample for both runs. A run compared with itself therefore shows
zero differences with zero-width intervals. Sessions only one run has are left out and counted. Runs
that share no session (other seeds) fall back to independent bootstraps of each run's sessions;
``CompareResult.pairing`` says which was used.

Thresholds: ``METRIC:+2pp`` (percentage points; rates only), ``METRIC:+5%`` (relative: (B - A) / A),
``METRIC:+1000`` (the metric's unit). The sign is the direction that fails. The gate reads the
interval's bound in the failing direction, never the point estimate: ``+T`` fails only when the LOWER
bound of the 95% CI of B - A is above +T, ``-T`` only when the UPPER bound is below -T. For ``%`` the
bound is that of the relative difference, bootstrapped as a ratio (A varies across resamples too, so
B - A's bound divided by A would be the wrong interval). A failed gate is a regression established
beyond the threshold, not one session's blip; the resamples are seeded, so the gate never flakes.

Intervals. Each run's value of a metric and its interval (``a``, ``a_low``, ``a_high`` and B's) are
:func:`reports.stats.estimates` of the sessions compared, the computation of the report's headline: when
every session is compared, they are the run's own headline numbers, to the bit. Every stream is seeded
from what it resamples (:func:`reports.stats.content_digest`), never from a strategy's name: identical
sessions give identical intervals. A ``per`` metric over fewer than :data:`reports.stats.MIN_SUPPORT`
successes on a side has no interval of B - A (``interval`` is ``too_few``), and no gate can fail it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.core.suggest import did_you_mean
from reports import stats
from reports.inputs import NUMBER, STATS_COLUMNS, ReportInputError, open_run_dir, simulated_run
from reports.stats import METRICS, Metric
from reports.tables import format_diff, format_interval, format_relative, format_value, is_share

_AMOUNT = re.compile(r"([+-])((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(pp|%)?")
#: A bound within this (relative) margin of a threshold does not cross it: float noise, not a change.
_EPS = 1e-9
#: What makes rows of two runs the same session. The session seed hashes the root seed, scenario and
#: index, so runs with different root seeds share no session and are compared unpaired.
SESSION_IDENTITY = ["scenario", "session_index", "seed"]
#: The sessions columns compare reads: those of the statistics and the seed to pair on.
COMPARE_COLUMNS: dict[str, str] = STATS_COLUMNS | {"seed": NUMBER}
#: The table's columns, one row per (metric, strategy): each run's value, interval, interval kind and
#: (for a ``per`` metric) support, as :func:`reports.stats.estimates` gives them; B - A, its interval and
#: the interval's kind (``bootstrap``, ``too_few`` or ``undefined``: :func:`reports.stats.paired_kind`);
#: ``rel*``, (B - A) / |A| and its interval.
TABLE_COLUMNS = ["metric", "strategy", "paired", "n_a", "n_b", "a", "a_low", "a_high", "a_interval", "a_support",
                 "b", "b_low", "b_high", "b_interval", "b_support", "diff", "ci_low", "ci_high", "interval",
                 "excludes_zero", "rel", "rel_low", "rel_high"]


def unknown_metric(name: str) -> ReportInputError:
    """The error for a metric name that is not one of ``reports.stats.METRICS``."""
    return ReportInputError(f"unknown metric {name!r}{did_you_mean(name, METRICS)} (known: {', '.join(METRICS)})")


@dataclass(frozen=True)
class Threshold:
    """One ``--fail-on`` gate: it trips when the CI bound of B - A in the failing direction is beyond it."""

    text: str
    metric: str
    #: +1 fails on an increase (B above A), -1 on a decrease.
    direction: int
    amount: float
    #: ``pp`` (percentage points), ``relative`` (percent of A's value) or ``absolute`` (metric units).
    kind: str

    def limit_text(self) -> str:
        sign = "+" if self.direction > 0 else "-"
        suffix = {"pp": "pp", "relative": "%", "absolute": ""}[self.kind]
        return f"{sign}{self.amount:g}{suffix}"

    @property
    def bound_name(self) -> str:
        """The bound the gate reads: the one nearest to "no regression" in the failing direction."""
        return "lower" if self.direction > 0 else "upper"

    @property
    def quantity(self) -> str:
        return "(B - A) / A" if self.kind == "relative" else "B - A"

    def rule(self) -> str:
        """The gate in words, e.g. ``fails when the lower bound of the 95% CI of B - A is above +2pp``."""
        return (f"fails when the {self.bound_name} bound of the 95% CI of {self.quantity} is "
                f"{'above' if self.direction > 0 else 'below'} {self.limit_text()}")

    def in_own_terms(self, diff: float, rel: float) -> float:
        """A difference (B - A, and (B - A) / |A|) in the threshold's terms: pp, percent or metric units."""
        if self.kind == "pp":
            return diff * 100
        if self.kind == "relative":
            return rel * 100
        return diff

    def point(self, row: Mapping[str, Any]) -> float:
        """The row's point estimate of B - A in the threshold's terms."""
        return self.in_own_terms(float(row["diff"]), float(row["rel"]))

    def bound(self, row: Mapping[str, Any]) -> float:
        """The row's CI bound in the failing direction, in the threshold's terms."""
        side = "low" if self.direction > 0 else "high"
        return self.in_own_terms(float(row[f"ci_{side}"]), float(row[f"rel_{side}"]))

    def crossed(self, value: float) -> bool:
        """True when ``value`` (B - A in the threshold's terms) is beyond the threshold in the failing
        direction; a missing value (a strategy only one run has) never is."""
        if math.isnan(value):
            return False
        return value * self.direction > self.amount + _EPS * max(1.0, self.amount)

    def trips(self, row: Mapping[str, Any]) -> bool:
        return self.crossed(self.bound(row))

    def format(self, value: float) -> str:
        """A value in the threshold's terms, written like the threshold (``+2.50pp``, ``+3.1%``)."""
        if self.kind == "pp":
            return f"{value:+.2f}pp"
        if self.kind == "relative":
            return format_relative(value / 100)
        return format_diff(METRICS[self.metric], value)


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
    """A gate that tripped for one strategy: its failing-direction bound is beyond the threshold."""

    threshold: Threshold
    strategy: str
    a: float
    b: float
    diff: float
    ci_low: float
    ci_high: float
    #: The CI bound the gate read, in the threshold's terms (pp, percent or units).
    bound: float

    def message(self) -> str:
        t = self.threshold
        metric = METRICS[t.metric]
        interval = format_interval(metric, self.ci_low, self.ci_high, diff=True)
        return (f"{self.strategy}: the {t.bound_name} bound of the 95% CI of {t.quantity} is {t.format(self.bound)}, "
                f"{'above' if t.direction > 0 else 'below'} the threshold {t.limit_text()} "
                f"(A {format_value(metric, self.a)}, B {format_value(metric, self.b)}, "
                f"B - A {format_diff(metric, self.diff)} {interval})")


@dataclass(frozen=True)
class Pairing:
    """How the two runs' sessions meet; a session is a (scenario, session_index, seed), whatever strategies ran it."""

    shared: int
    only_a: int
    only_b: int

    @property
    def paired(self) -> bool:
        return self.shared > 0

    def describe(self) -> str:
        if not self.paired:
            return (f"unpaired: the runs share no session (same scenario, session_index and seed), e.g. they ran with "
                    f"different seeds; A's {self.only_a} and B's {self.only_b} sessions are resampled independently")
        left = (f"left out {self.only_a} sessions only in A and {self.only_b} only in B" if self.only_a or self.only_b
                else "none left out")
        return (f"paired on {self.shared} shared sessions (same scenario, session_index and seed; {left}): A, B and "
                "B - A are over those sessions, and one resample of them serves both runs")


@dataclass(frozen=True)
class CompareResult:
    run_a: Path
    run_b: Path
    #: One row per (metric, strategy), columns ``TABLE_COLUMNS``.
    table: pd.DataFrame
    pairing: Pairing
    thresholds: tuple[Threshold, ...] = ()
    breaches: tuple[Breach, ...] = ()
    run_id_a: str = ""
    run_id_b: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.breaches)

    def _gate_cell(self, metric: str, row: Mapping[str, Any]) -> str:
        """Each gate on ``metric`` for one row: its verdict and the bound it read, against the threshold."""
        if math.isnan(float(row["diff"])):
            return "n/a"
        if row["interval"] == stats.TOO_FEW:
            return f"not decided: {_too_few(METRICS[metric], row)}"
        cells = []
        for t in (t for t in self.thresholds if t.metric == metric):
            tripped = t.trips(row)
            relation = {(True, True): ">", (True, False): "<=", (False, True): "<", (False, False): ">="}[
                (t.direction > 0, tripped)]
            cells.append(f"{'FAILED' if tripped else 'ok'} ({t.bound_name} bound {t.format(t.bound(row))} {relation} "
                         f"{t.limit_text()})")
        return "; ".join(cells)

    def to_text(self) -> str:
        lines = [f"A: {self.run_a} (run {self.run_id_a or self.run_a.name})",
                 f"B: {self.run_b} (run {self.run_id_b or self.run_b.name})",
                 self.pairing.describe(), ""]
        for metric_name, group in self.table.groupby("metric", sort=False):
            metric = METRICS[str(metric_name)]
            gated = any(t.metric == metric.name for t in self.thresholds)
            rows = [["strategy", "sessions", "A", "B", "B - A", "95% CI of B - A", "CI excludes 0"]
                    + (["gate"] if gated else [])]
            for _, r in group.iterrows():
                sessions = f"{r['n_a']} paired" if r["paired"] else f"{r['n_a']} / {r['n_b']}"
                rows.append([str(r["strategy"]), sessions, format_value(metric, r["a"]), format_value(metric, r["b"]),
                             format_diff(metric, r["diff"]), _diff_interval(metric, r),
                             "yes" if r["excludes_zero"] else "no"]
                            + ([self._gate_cell(metric.name, r)] if gated else []))
            widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
            lines.append(f"{metric.name} ({metric.label}, {metric.unit})")
            for row in rows:
                lines.append("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                              for i, (c, w) in enumerate(zip(row, widths, strict=True))))
            lines.append("")
        for t in self.thresholds:
            hits = [b for b in self.breaches if b.threshold == t]
            lines.append(f"gate {t.text} ({t.rule()}): " + ("FAILED" if hits else "ok"))
            lines += [f"  {b.message()}" for b in hits]
            lines += [f"  {note}" for note in self._not_established(t)]
        return "\n".join(lines).rstrip() + "\n"

    def _not_established(self, t: Threshold) -> list[str]:
        """Strategies whose point estimate is beyond the threshold while the bound the gate reads is not:
        the gate passes them, and the reader should know why."""
        notes = []
        for _, r in self.table[self.table["metric"] == t.metric].iterrows():
            if r["interval"] == stats.TOO_FEW:
                notes.append(f"{r['strategy']}: not decided: {_too_few(METRICS[t.metric], r)} for an interval of "
                             f"{t.quantity} (fewer than {stats.MIN_SUPPORT} on a side), so the gate cannot fail it")
            elif t.crossed(t.point(r)) and not t.trips(r):
                notes.append(f"{r['strategy']}: not established: {t.quantity} is {t.format(t.point(r))}, beyond "
                             f"{t.limit_text()}, but its {t.bound_name} bound {t.format(t.bound(r))} is not")
        return notes

    def to_records(self) -> dict[str, Any]:
        def clean(value: Any) -> Any:
            if isinstance(value, np.generic):
                value = value.item()
            if isinstance(value, float) and not math.isfinite(value):
                return None
            return value

        rows = [{str(k): clean(v) for k, v in row.items()} for row in self.table.to_dict(orient="records")]
        return {
            "run_a": str(self.run_a), "run_b": str(self.run_b),
            "run_id_a": self.run_id_a, "run_id_b": self.run_id_b,
            "paired": self.pairing.paired, "shared_sessions": self.pairing.shared,
            "left_out": {"only_a": self.pairing.only_a, "only_b": self.pairing.only_b},
            "pairing": self.pairing.describe(),
            "rows": rows,
            "thresholds": [{"threshold": t.text, "metric": t.metric, "bound": t.bound_name, "rule": t.rule(),
                            "failed": any(b.threshold == t for b in self.breaches)} for t in self.thresholds],
            "breaches": [{"threshold": b.threshold.text, "strategy": b.strategy, "a": clean(b.a), "b": clean(b.b),
                          "diff": clean(b.diff), "ci_low": clean(b.ci_low), "ci_high": clean(b.ci_high),
                          "bound": b.threshold.bound_name, "bound_value": clean(b.bound), "message": b.message()}
                         for b in self.breaches],
            "failed": self.failed,
        }


def relative_change(diff: Any, base: Any) -> np.ndarray:
    """(B - A) / |A|, elementwise. From A = 0 any increase is infinitely relative (+inf), any decrease
    -inf, and no change is 0, so a ``%`` gate still reads a rate that left zero."""
    d, a = np.asarray(diff, dtype=float), np.asarray(base, dtype=float)
    from_zero = np.where(d > 0, np.inf, np.where(d < 0, -np.inf, np.where(np.isnan(d), np.nan, 0.0)))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a != 0, d / np.abs(a), from_zero)


def _relative_interval(samples: np.ndarray) -> tuple[float, float]:
    """The percentile interval of relative changes. Resamples with A at zero are infinite, and linear
    interpolation between two infinities is NaN, so the bounds are resampled values themselves.
    Undefined resamples (NaN: a metric with no value in that resample) are left out, as
    :func:`reports.stats.percentile_interval` leaves them out; NaN when every one is."""
    defined = samples[~np.isnan(samples)]
    if defined.size == 0:
        return float("nan"), float("nan")
    alpha = (1 - stats.CONFIDENCE) / 2
    low, high = np.quantile(defined, [alpha, 1 - alpha], method="inverted_cdf")
    return float(low), float(high)


def _too_few(metric: Metric, row: Mapping[str, Any]) -> str:
    """``too few successes (A 3, B 12)``: why a row's B - A has no interval."""
    def count(x: Any) -> str:
        return f"{float(x):,.0f}" if math.isfinite(float(x)) else "n/a"

    return f"too few {metric.support or 'events'} (A {count(row['a_support'])}, B {count(row['b_support'])})"


def _diff_interval(metric: Metric, row: Mapping[str, Any]) -> str:
    """The interval of B - A as the text table writes it, by its kind."""
    if row["interval"] == stats.TOO_FEW:
        return _too_few(metric, row)
    return format_interval(metric, row["ci_low"], row["ci_high"], diff=True)


def _draws(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    return rng.integers(0, n, size=(resamples, n))


def _measure(metric: Metric, a: pd.DataFrame, b: pd.DataFrame, *, paired: bool, resamples: int,
             seed: int) -> dict[str, Any]:
    """A, B, B - A and (B - A) / |A| with their intervals. Paired, ``a`` and ``b`` hold the same sessions
    in the same order and one resample of them serves both runs; unpaired, each run is resampled on
    its own. A's and B's own values and intervals are :func:`reports.stats.estimates`'."""
    arrays_a, arrays_b = stats.metric_arrays(a, metric), stats.metric_arrays(b, metric)
    est_a, est_b = stats.estimates([(metric, *arrays_a), (metric, *arrays_b)], resamples=resamples, seed=seed)
    nan = float("nan")
    row: dict[str, Any] = {
        "a": est_a.value, "a_low": est_a.ci_low, "a_high": est_a.ci_high, "a_interval": est_a.interval,
        "a_support": est_a.support,
        "b": est_b.value, "b_low": est_b.ci_low, "b_high": est_b.ci_high, "b_interval": est_b.interval,
        "b_support": est_b.support,
        "diff": nan, "ci_low": nan, "ci_high": nan, "interval": stats.paired_kind(metric, arrays_a, arrays_b),
        "excludes_zero": False, "rel": nan, "rel_low": nan, "rel_high": nan}
    if row["interval"] == stats.UNDEFINED:
        return row
    diff = est_b.value - est_a.value
    row |= {"diff": diff, "rel": float(relative_change(diff, est_a.value))}
    if row["interval"] != stats.BOOTSTRAP:
        return row
    digest_a, digest_b = stats.content_digest(*arrays_a), stats.content_digest(*arrays_b)
    if paired:
        # Seeded from both sides in sorted order: A against B draws what B against A draws.
        low, high = sorted((digest_a, digest_b))
        idx_a = idx_b = _draws(stats.rng_for(seed, "compare-paired", metric.name, low, high), len(a), resamples)
    else:
        # Each run its own stream, named by its side too: identical runs are still resampled independently.
        idx_a = _draws(stats.rng_for(seed, "compare-A", metric.name, digest_a), len(a), resamples)
        idx_b = _draws(stats.rng_for(seed, "compare-B", metric.name, digest_b), len(b), resamples)
    stat = stats.statistic(metric)
    sa, sb = stat(*arrays_a, idx_a), stat(*arrays_b, idx_b)
    ci_low, ci_high = stats.percentile_interval(sb - sa, stats.CONFIDENCE)
    rel_low, rel_high = _relative_interval(relative_change(sb - sa, sa))
    return row | {"ci_low": ci_low, "ci_high": ci_high, "excludes_zero": bool(ci_low > 0 or ci_high < 0),
                  "rel_low": rel_low, "rel_high": rel_high}


def _paired_row(metric: Metric, strategy: str, a: pd.DataFrame, b: pd.DataFrame, *, resamples: int,
                seed: int) -> dict[str, Any]:
    """``a`` and ``b`` hold the same sessions in the same order: one resample index serves both runs."""
    n = len(a)
    return {"metric": metric.name, "strategy": strategy, "paired": True, "n_a": n, "n_b": n,
            **_measure(metric, a, b, paired=True, resamples=resamples, seed=seed)}


def _unpaired_row(metric: Metric, strategy: str, a: pd.DataFrame, b: pd.DataFrame, *, resamples: int,
                  seed: int) -> dict[str, Any]:
    """Each run's sessions of ``strategy`` (in session order, as the headline sees them), resampled
    independently; a strategy only one run has gets its value and interval, and no difference."""
    row: dict[str, Any] = {"metric": metric.name, "strategy": strategy, "paired": False, "n_a": len(a), "n_b": len(b)}
    return row | _measure(metric, stats.in_session_order(a), stats.in_session_order(b), paired=False,
                          resamples=resamples, seed=seed)


def _by_session(frame: pd.DataFrame, path: Path, strategy: str) -> pd.DataFrame:
    """One strategy's rows indexed and sorted by session; a table repeating a session cannot be paired."""
    indexed = frame.set_index(SESSION_IDENTITY).sort_index()
    if indexed.index.has_duplicates:
        repeated = indexed.index[indexed.index.duplicated()][0]
        raise ReportInputError(f"{path}: strategy {strategy!r} has more than one row for session "
                               f"{dict(zip(SESSION_IDENTITY, map(str, repeated), strict=True))}: cannot pair sessions")
    return indexed


def _sessions_of(frame: pd.DataFrame) -> pd.MultiIndex:
    return pd.MultiIndex.from_frame(frame[SESSION_IDENTITY]).unique()


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
    allowed: every difference is zero, with a zero-width interval."""
    thresholds = tuple(t if isinstance(t, Threshold) else parse_threshold(t) for t in fail_on)
    chosen = parse_metrics(metrics)
    chosen += [t.metric for t in thresholds if t.metric not in chosen]
    open_a, open_b = (simulated_run(open_run_dir(r), "compare") for r in (run_a, run_b))
    path_a, path_b = open_a.path, open_b.path
    sessions_a, sessions_b = open_a.sessions(COMPARE_COLUMNS), open_b.sessions(COMPARE_COLUMNS)
    names_a, names_b = set(map(str, sessions_a["strategy"])), set(map(str, sessions_b["strategy"]))
    if not names_a & names_b:
        raise ReportInputError(f"{path_a} and {path_b} have no strategy in common (A: {_names(names_a)}; "
                               f"B: {_names(names_b)}): nothing to compare")
    keys_a, keys_b = _sessions_of(sessions_a), _sessions_of(sessions_b)
    shared = len(keys_a.intersection(keys_b))
    pairing = Pairing(shared=shared, only_a=len(keys_a) - shared, only_b=len(keys_b) - shared)
    strategies = sorted(names_a & names_b) + sorted(names_a ^ names_b)
    groups_a = {str(k): g for k, g in sessions_a.groupby("strategy")}
    groups_b = {str(k): g for k, g in sessions_b.groupby("strategy")}
    empty = sessions_a.iloc[0:0]
    # Per strategy: its rows in each run, and the sessions both ran (none when the runs are unpaired).
    compared: list[tuple[str, pd.DataFrame, pd.DataFrame, pd.Index]] = []
    for strategy in strategies:
        a, b = groups_a.get(strategy, empty), groups_b.get(strategy, empty)
        common: pd.Index = pd.Index([])
        if pairing.paired and len(a) and len(b):
            a, b = _by_session(a, path_a, strategy), _by_session(b, path_b, strategy)
            # In session order: the order the headline resamples a run's sessions in.
            common = a.index.intersection(b.index).sort_values()
        compared.append((strategy, a, b, common))
    rows = [_paired_row(METRICS[name], strategy, a.loc[common], b.loc[common], resamples=resamples, seed=seed)
            if len(common) else _unpaired_row(METRICS[name], strategy, a, b, resamples=resamples, seed=seed)
            for name in chosen for strategy, a, b, common in compared]
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    breaches = [Breach(t, str(r["strategy"]), float(r["a"]), float(r["b"]), float(r["diff"]), float(r["ci_low"]),
                       float(r["ci_high"]), t.bound(r))
                for t in thresholds for _, r in table[table["metric"] == t.metric].iterrows() if t.trips(r)]
    return CompareResult(path_a, path_b, table, pairing, thresholds, tuple(breaches),
                         run_id_a=open_a.run_id, run_id_b=open_b.run_id)
