"""Honest statistics over a run's ``sessions`` table: every headline metric per strategy with a 95%
bootstrap confidence interval, paired differences against a baseline over the same sessions, and
breakdowns. Vectorised numpy; the bootstrap resamples sessions (never calls) with a fixed seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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
    #: ``mean`` of one column, ``ratio`` of two column sums, or a ``quantile`` of one column.
    kind: str
    column: str
    denominator: str = ""
    q: float = 0.5
    #: True when lower is better (for reading a comparison's direction).
    lower_is_better: bool = True


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("context_tokens_mean", "mean context tokens per call", "tokens", "mean", "context_tokens_mean"),
    Metric("input_tokens", "input tokens per session", "tokens", "mean", "input_tokens"),
    Metric("tool_syntax_error_rate", "tool-syntax error rate", "share of tool calls", "ratio",
           "tool_syntax_errors", "tool_calls"),
    Metric("loop_rate", "loop rate", "share of sessions", "mean", "loop_detected"),
    Metric("latency_mean", "latency, mean", "s per session", "mean", "latency_s"),
    Metric("latency_p50", "latency, p50", "s per session", "quantile", "latency_s", q=0.5),
    Metric("latency_p95", "latency, p95", "s per session", "quantile", "latency_s", q=0.95),
    Metric("success_rate", "success rate", "share of sessions", "mean", "success", lower_is_better=False),
    Metric("cost_per_session", "cost per session", "USD", "mean", "cost_usd"),
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
    return lambda v, _d, idx: np.quantile(v[idx], metric.q, axis=-1)


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
    """The central ``confidence`` interval of bootstrap ``samples`` (percentile method)."""
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(samples, [alpha, 1 - alpha])
    return float(lo), float(hi)


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
    """One row per (strategy, metric): value, ci_low, ci_high, n."""
    sessions = with_success(sessions) if "success" not in sessions else sessions
    rows = []
    for strategy, group in sessions.groupby("strategy", sort=True):
        for metric in METRICS.values():
            values, den = metric_arrays(group, metric)
            value, lo, hi = bootstrap(values, metric, denominators=den, resamples=resamples,
                                      rng=rng_for(seed, "headline", metric.name, str(strategy)), confidence=confidence)
            rows.append({"strategy": strategy, "metric": metric.name, "value": value, "ci_low": lo, "ci_high": hi,
                         "n": len(group)})
    return pd.DataFrame(rows)


def paired(sessions: pd.DataFrame, baseline: str = "unbounded", *, resamples: int = DEFAULT_RESAMPLES,
           seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Each strategy against ``baseline`` over the sessions both ran: the difference of the metric
    (strategy minus baseline), its bootstrap CI from resampling those sessions jointly, the relative
    change, and whether the CI excludes zero."""
    sessions = with_success(sessions) if "success" not in sessions else sessions
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
        for metric in METRICS.values():
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
                         "relative": diff / base_value if base_value else np.nan,
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
