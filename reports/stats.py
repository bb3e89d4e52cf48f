"""Honest statistics over a run's ``sessions`` table: every headline metric per strategy with a 95%
bootstrap confidence interval, paired differences against a baseline over the same sessions, and
breakdowns. Vectorised numpy; the bootstrap resamples sessions (never calls) with a fixed seed.

A rate of no events or of every event (0 of 40 loops) has nothing to resample: its bootstrap interval
collapses to the point. Such a rate gets a Wilson score interval instead (:func:`wilson_interval`),
and :func:`headline` says which interval each row carries.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd

from harness.core.rundir import SESSIONS_TABLE

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
CONFIDENCE = 0.95
#: The key of one session across strategies: paired comparisons join on it.
SESSION_KEY = ["scenario", "session_index"]


@dataclass(frozen=True, slots=True)
class Metric:
    """A headline metric: how one value is computed from a set of sessions (rows of arrays)."""

    name: str
    label: str
    unit: str
    #: ``mean`` of one column, ``ratio`` of two column sums (0 over a zero denominator), ``per``: the
    #: column's sum per unit of the denominator's sum (undefined, NaN, over a zero denominator), or a
    #: ``quantile`` of one column.
    kind: str
    column: str
    denominator: str = ""
    q: float = 0.5
    #: True when lower is better (for reading a comparison's direction).
    lower_is_better: bool = True
    #: True for a count of events over trials (sessions, tool calls): at none or all of them the
    #: interval is Wilson's, not the bootstrap's (which collapses to a point there).
    events: bool = False
    #: What a report writes for an undefined value (a ``per`` metric over a zero denominator).
    undefined: str = "n/a"


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("context_tokens_mean", "mean context tokens per call", "tokens", "mean", "context_tokens_mean"),
    Metric("input_tokens", "input tokens per session", "tokens", "mean", "input_tokens"),
    Metric("tool_syntax_error_rate", "tool-syntax error rate", "share of tool calls", "ratio",
           "tool_syntax_errors", "tool_calls", events=True),
    Metric("loop_rate", "loop rate", "share of sessions", "mean", "loop_detected", events=True),
    Metric("latency_mean", "latency, mean", "s per session", "mean", "latency_s"),
    Metric("latency_p50", "latency, p50", "s per session", "quantile", "latency_s", q=0.5),
    Metric("latency_p95", "latency, p95", "s per session", "quantile", "latency_s", q=0.95),
    Metric("success_rate", "success rate", "share of sessions", "mean", "success", lower_is_better=False,
           events=True),
    Metric("cost_per_session", "cost per session", "USD", "mean", "cost_usd"),
    # Cost per session rewards failing early (an overflowed session stops early and cheap); the cost of
    # what a strategy actually solves does not.
    Metric("cost_per_solved_session", "cost per solved session", "USD", "per", "cost_usd", "success",
           undefined="no solved session"),
    # Prompt-cache hits are billed at a fraction of the input price, so this, more than the input
    # tokens, decides the bill of strategies that rewrite their context.
    Metric("cache_hit_share", "cache-hit share", "share of input tokens", "ratio", "cached_input_tokens",
           "input_tokens", lower_is_better=False),
)}


def load_sessions(run_dir: str | Path) -> pd.DataFrame:
    """The ``sessions.parquet`` of a run directory, with a boolean ``success`` column added."""
    frame = pd.read_parquet(Path(run_dir) / SESSIONS_TABLE)
    return with_success(frame)


def with_success(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of a sessions frame with a boolean ``success`` column and ``loop_detected`` as booleans."""
    out = frame.copy()
    out["success"] = out["outcome"] == "success"
    out["loop_detected"] = out["loop_detected"].astype(bool)
    return out


def statistic(metric: Metric) -> Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """f(values, denominators, index matrix) -> one statistic per row of the index matrix."""
    if metric.kind == "mean":
        return lambda v, _d, idx: v[idx].mean(axis=-1)
    if metric.kind == "ratio":
        return lambda v, d, idx: v[idx].sum(axis=-1) / np.maximum(d[idx].sum(axis=-1), 1)
    if metric.kind == "per":
        return _per_unit
    return lambda v, _d, idx: np.quantile(v[idx], metric.q, axis=-1)


def _per_unit(v: np.ndarray, d: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The ``per`` statistic: sum of values over sum of denominators, NaN where that is zero."""
    num, den = v[idx].sum(axis=-1), d[idx].sum(axis=-1)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def metric_arrays(frame: pd.DataFrame, metric: Metric) -> tuple[np.ndarray, np.ndarray]:
    """(values, denominators) of ``metric`` over the sessions of ``frame``, the inputs of
    :func:`statistic`; the denominators are the values themselves when the metric has none."""
    values = frame[metric.column].to_numpy(dtype=float)
    denominators = frame[metric.denominator].to_numpy(dtype=float) if metric.denominator else values
    return values, denominators


def rng_for(seed: int, *parts: str) -> np.random.Generator:
    """A generator per (table, metric, strategy): adding a strategy never shifts another's CI, and
    no two metrics or strategies share a resample stream (each name is hashed whole)."""
    key = [seed, *(int.from_bytes(hashlib.blake2b(p.encode(), digest_size=8).digest(), "big") for p in parts)]
    return np.random.default_rng(key)


def percentile_interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central ``confidence`` interval of bootstrap ``samples`` (percentile method). Undefined
    resamples (NaN: a cost per solved session of a resample without a success) are left out; NaN when
    every one is."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return float("nan"), float("nan")
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(finite, [alpha, 1 - alpha])
    return float(lo), float(hi)


def wilson_interval(events: float, trials: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of a rate of ``events`` in ``trials``: at 0 of n its upper bound is
    about 3.8 / n (the rule of three says 3 / n), where a bootstrap interval is the point [0, 0]."""
    if trials <= 0:
        return float("nan"), float("nan")
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p, z2 = events / trials, z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    # At 0 or n events one bound is exact; floating point would leave it a hair off.
    low = 0.0 if events <= 0 else max(0.0, centre - half)
    high = 1.0 if events >= trials else min(1.0, centre + half)
    return low, high


def events_and_trials(metric: Metric, values: np.ndarray, denominators: np.ndarray) -> tuple[float, float]:
    """(events, trials) of an ``events`` metric over some sessions: the sessions themselves for a
    ``mean`` (a share of sessions), the denominator's sum for a ``ratio`` (a share of tool calls)."""
    if metric.kind == "ratio":
        return float(values.sum()), float(denominators.sum())
    return float(values.sum()), float(len(values))


def rate_interval(metric: Metric, values: np.ndarray, denominators: np.ndarray,
                  confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Wilson's interval for an ``events`` metric at none or all of its trials, where the bootstrap's
    collapses to a point; None when the bootstrap interval stands."""
    if not metric.events:
        return None
    events, trials = events_and_trials(metric, values, denominators)
    if trials <= 0 or 0 < events < trials:
        return None
    return wilson_interval(events, trials, confidence)


def bootstrap(values: np.ndarray, metric: Metric, *, denominators: np.ndarray | None = None,
              resamples: int = DEFAULT_RESAMPLES, rng: np.random.Generator | None = None,
              confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(value, low, high): the metric over the sessions and its percentile bootstrap interval."""
    n = len(values)
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    den = values if denominators is None else denominators
    stat = statistic(metric)
    value = float(stat(values, den, np.arange(n)))
    rng = rng or np.random.default_rng(DEFAULT_SEED)
    idx = rng.integers(0, n, size=(resamples, n))
    lo, hi = percentile_interval(stat(values, den, idx), confidence)
    return value, lo, hi


def headline(sessions: pd.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
             confidence: float = CONFIDENCE) -> pd.DataFrame:
    """One row per (strategy, metric): value, ci_low, ci_high, n, and ``interval``: ``bootstrap``, or
    ``wilson`` for a rate of none or all of its events (:func:`rate_interval`)."""
    sessions = with_success(sessions) if "success" not in sessions else sessions
    rows = []
    for strategy, group in sessions.groupby("strategy", sort=True):
        for metric in METRICS.values():
            values, den = metric_arrays(group, metric)
            value, lo, hi = bootstrap(values, metric, denominators=den, resamples=resamples,
                                      rng=rng_for(seed, "headline", metric.name, str(strategy)), confidence=confidence)
            wilson = rate_interval(metric, values, den, confidence)
            if wilson is not None:
                lo, hi = wilson
            rows.append({"strategy": strategy, "metric": metric.name, "value": value, "ci_low": lo, "ci_high": hi,
                         "n": len(group), "interval": "bootstrap" if wilson is None else "wilson"})
    return pd.DataFrame(rows)


def paired(sessions: pd.DataFrame, baseline: str = "unbounded", *, resamples: int = DEFAULT_RESAMPLES,
           seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE,
           metrics: Iterable[str] | None = None) -> pd.DataFrame:
    """Each strategy against ``baseline`` over the sessions both ran: the difference of the metric
    (strategy minus baseline), its bootstrap CI from resampling those sessions jointly, the relative
    change, and whether the CI excludes zero. ``metrics`` (names of ``METRICS``) limits the metrics
    compared; each metric's resamples are the same whichever others are asked for."""
    sessions = with_success(sessions) if "success" not in sessions else sessions
    chosen = list(METRICS.values()) if metrics is None else [METRICS[name] for name in metrics]
    if baseline not in set(sessions["strategy"]):
        raise KeyError(f"baseline strategy {baseline!r} is not in this run; strategies: "
                       f"{', '.join(sorted(set(sessions['strategy'])))}")
    base = sessions[sessions["strategy"] == baseline].set_index(SESSION_KEY).sort_index()
    rows = []
    for strategy, group in sessions.groupby("strategy", sort=True):
        if strategy == baseline:
            continue
        other = group.set_index(SESSION_KEY).sort_index()
        common = base.index.intersection(other.index)
        a, b = other.loc[common], base.loc[common]
        n = len(common)
        for metric in chosen:
            stat = statistic(metric)
            va, da = metric_arrays(a, metric)
            vb, db = metric_arrays(b, metric)
            if n == 0:
                rows.append({"strategy": strategy, "baseline": baseline, "metric": metric.name, "n": 0,
                             "diff": np.nan, "ci_low": np.nan, "ci_high": np.nan, "relative": np.nan,
                             "excludes_zero": False})
                continue
            full = np.arange(n)
            diff = float(stat(va, da, full) - stat(vb, db, full))
            base_value = float(stat(vb, db, full))
            idx = rng_for(seed, "paired", metric.name, str(strategy)).integers(0, n, size=(resamples, n))
            lo, hi = percentile_interval(stat(va, da, idx) - stat(vb, db, idx), confidence)
            rows.append({"strategy": strategy, "baseline": baseline, "metric": metric.name, "n": n, "diff": diff,
                         "ci_low": lo, "ci_high": hi,
                         "relative": diff / base_value if base_value and np.isfinite(base_value) else np.nan,
                         "excludes_zero": bool(lo > 0 or hi < 0)})
    return pd.DataFrame(rows)


def breakdown(sessions: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per strategy and ``by`` (``family`` or ``outcome``): sessions, success rate, mean context tokens."""
    sessions = with_success(sessions) if "success" not in sessions else sessions
    g = sessions.groupby(["strategy", by], sort=True)
    return pd.DataFrame({
        "sessions": g.size(),
        "success_rate": g["success"].mean(),
        "context_tokens_mean": g["context_tokens_mean"].mean(),
        "cost_per_session": g["cost_usd"].mean(),
    }).reset_index()


def outcome_shares(sessions: pd.DataFrame) -> pd.DataFrame:
    """Share of each outcome per strategy (rows strategies, columns outcomes)."""
    return pd.crosstab(sessions["strategy"], sessions["outcome"], normalize="index").sort_index()


def loop_rules(sessions: pd.DataFrame) -> pd.DataFrame:
    """Loop rate by StuckDetector rule, per strategy (share of that strategy's sessions)."""
    counts = pd.crosstab(sessions["strategy"], sessions["loop_rule"].replace("", "none"))
    return counts.div(counts.sum(axis=1), axis=0).drop(columns=["none"], errors="ignore").sort_index()


def paired_ratio(a: np.ndarray, b: np.ndarray, *, rng: np.random.Generator, resamples: int = DEFAULT_RESAMPLES,
                 confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(mean(a) / mean(b), low, high) over paired sessions (``a[i]`` and ``b[i]`` are the same session),
    resampling sessions jointly: e.g. a strategy's mean cost over the baseline's."""
    n = len(a)
    if n == 0 or len(b) != n:
        return float("nan"), float("nan"), float("nan")
    value = float(a.mean() / b.mean()) if b.mean() else float("nan")
    idx = rng.integers(0, n, size=(resamples, n))
    den = b[idx].mean(axis=-1)
    samples = a[idx].mean(axis=-1) / np.where(den == 0, np.nan, den)
    finite = samples[np.isfinite(samples)]
    lo, hi = percentile_interval(finite, confidence) if len(finite) else (np.nan, np.nan)
    return value, float(lo), float(hi)


def ratio_of_means(a: np.ndarray, b: np.ndarray, *, rng: np.random.Generator, resamples: int = DEFAULT_RESAMPLES,
                   confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(mean(a) / mean(b), low, high) for two independent samples, each resampled on its own: e.g.
    recall of probes at one length over recall at another."""
    if len(a) == 0 or len(b) == 0:
        return float("nan"), float("nan"), float("nan")
    value = float(a.mean() / b.mean()) if b.mean() else float("nan")
    num = a[rng.integers(0, len(a), size=(resamples, len(a)))].mean(axis=-1)
    den = b[rng.integers(0, len(b), size=(resamples, len(b)))].mean(axis=-1)
    samples = num / np.where(den == 0, np.nan, den)
    finite = samples[np.isfinite(samples)]
    lo, hi = percentile_interval(finite, confidence) if len(finite) else (np.nan, np.nan)
    return value, float(lo), float(hi)
