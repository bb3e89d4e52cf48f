"""Honest statistics over a run's ``sessions`` table: every headline metric per strategy with a 95%
bootstrap confidence interval, paired differences against a baseline over the same sessions, and
breakdowns. Vectorised numpy; the bootstrap resamples sessions (never calls) with a fixed seed.

The resamples are drawn and reduced a block of rows at a time (:func:`resample_rows`), on a few threads
(numpy releases the GIL while it draws, gathers and reduces): the same draws and the same arithmetic as
one ``rng.integers`` matrix per (metric, strategy) reduced along its rows, so the same intervals to the
bit, without a 48 MB matrix per metric and strategy at 3,000 sessions a strategy.

A rate of no events or of every event (0 of 40 loops) has nothing to resample: its bootstrap interval
collapses to the point. Such a rate gets a Wilson score interval instead (:func:`wilson_interval`),
and :func:`headline` says which interval each row carries.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
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
    #: True for a metric whose columns a run may lack (a run directory made before ctxbench counted
    #: them): statistics leave it out for such a run, as absent, never as zero.
    optional: bool = False

    @property
    def columns(self) -> tuple[str, ...]:
        """The sessions columns it reads (``success`` is derived from ``outcome``)."""
        return tuple(c for c in (self.column, self.denominator) if c)


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
    # What a context manager did (sdk-strategies.md 3): how often it changed what the model sees, how much
    # it took out, how often it broke the cached prefix, and how often it fired again within 3 turns.
    Metric("compactions", "compactions per session", "compactions", "mean", "compactions", optional=True),
    Metric("tokens_freed", "tokens freed per session", "tokens", "mean", "tokens_freed", optional=True),
    Metric("cache_breaking_edits", "cache-breaking edits per session", "calls", "mean", "cache_breaking_edits",
           optional=True),
    # Undefined, not zero, for a strategy that never compacted: there was nothing to thrash.
    Metric("thrash_rate", "thrash rate", "share of compactions", "per", "thrash", "compactions", events=True,
           undefined="no compaction", optional=True),
)}


def metrics_of(sessions: pd.DataFrame, names: Iterable[str] | None = None) -> list[Metric]:
    """The metrics ``names`` (default: all of ``METRICS``, in order) that ``sessions`` can give: an optional
    metric whose columns the frame lacks is left out; any other is kept (its missing column is an error
    where it is read)."""
    chosen = list(METRICS.values()) if names is None else [METRICS[name] for name in names]
    have = set(sessions.columns) | {"success"}
    return [m for m in chosen if not m.optional or set(m.columns) <= have]


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


# Resampling, a block of rows at a time ----------------------------------------------------------------

#: Indices per block of resample rows: a block and the values gathered through it (1.5 MB) stay in the
#: CPU cache, where a whole 2000 x 3,000 index matrix and its values (72 MB) do not. On the 2-core dev
#: machine this drew and averaged a 2000 x 3,000 resample in two thirds of the time of one matrix.
BLOCK_INDICES = 1 << 17
#: Threads the resamples run on, one per core: numpy releases the GIL while it draws, gathers, sums and
#: partitions, and every stream has its own generator, so the threads change nothing but the time taken
#: (on the 2-core dev machine, two threads ran numpy work in half the time of one while a core was free,
#: and in the same time while other work kept both busy). 1 turns the threads off, and with them the
#: child process that draws the report's plots meanwhile (reports.plots.PendingPlots).
WORKERS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def resample_rows(rng: np.random.Generator, n: int, resamples: int) -> Iterator[np.ndarray]:
    """The rows of ``rng.integers(0, n, size=(resamples, n))``, a block of rows at a time: the same
    integers in the same order, and ``rng`` left in the same state. numpy draws an integer range below
    2**32 from one stream of 32-bit words whatever the dtype asked and however the draws are split
    (``tests/reports/test_stats.py`` checks both), so the blocks come as int32: half the bytes to read."""
    dtype = np.int32 if n <= np.iinfo(np.int32).max else np.int64
    rows = max(1, BLOCK_INDICES // max(n, 1))
    for start in range(0, resamples, rows):
        yield rng.integers(0, n, size=(min(rows, resamples - start), n), dtype=dtype)


def block_statistic(metric: Metric, values: np.ndarray,
                    denominators: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """f(block of index rows) -> ``statistic(metric)(values, denominators, block)``, the same bits with
    less work: values are gathered into one reused buffer (``np.take`` into ``out`` in ``clip`` mode,
    which is unbuffered and never clips a valid index), a mean is the row sum over the row length (what
    ``ndarray.mean`` computes), and a quantile comes from the values' ranks (:func:`quantile_rows`).
    Holds its buffers: one thread at a time."""
    n = len(values)
    buffers: dict[np.dtype, np.ndarray] = {}

    def gather(column: np.ndarray, idx: np.ndarray) -> np.ndarray:
        held = buffers.get(column.dtype)
        if held is None or held.size < idx.size:
            held = buffers[column.dtype] = np.empty(idx.size, dtype=column.dtype)
        return np.take(column, idx, out=held[:idx.size].reshape(idx.shape), mode="clip")

    if metric.kind == "mean":
        return lambda idx: gather(values, idx).sum(axis=-1) / n
    if metric.kind == "ratio":
        return lambda idx: gather(values, idx).sum(axis=-1) / np.maximum(gather(denominators, idx).sum(axis=-1), 1)
    if metric.kind == "per":
        def per_unit(idx: np.ndarray) -> np.ndarray:
            num, den = gather(values, idx).sum(axis=-1), gather(denominators, idx).sum(axis=-1)
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)

        return per_unit
    if np.isnan(values).any():  # numpy's quantile of a row with a NaN is NaN; ranks would hide it
        return lambda idx: np.quantile(values[idx], metric.q, axis=-1)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    ranks = np.empty(n, dtype=np.int16 if n <= np.iinfo(np.int16).max else np.int32 if n <= 2**31 - 1 else np.int64)
    ranks[order] = np.arange(n)
    return lambda idx: quantile_rows(gather(ranks, idx), metric.q, ordered)


def quantile_rows(ranks: np.ndarray, q: float, ordered: np.ndarray) -> np.ndarray:
    """``np.quantile(ordered[ranks], q, axis=-1)`` (numpy's default, linear method) for rows of ranks into
    the sorted values ``ordered``, without NaN: the same order statistics, found by partitioning the
    ranks in place along the rows (numpy partitions the values across them, three times as slow), and
    numpy's interpolation between them, step by step, so the same bits."""
    m = ranks.shape[-1]
    virtual = (m - 1) * q
    if virtual >= m - 1:
        # numpy takes the last order statistic there, at index -1, and its weight is virtual - (-1).
        low = high = m - 1
        gamma = virtual + 1
    else:
        low = math.floor(virtual)
        high, gamma = low + 1, virtual - low
    # One partition, then the next order statistic as the least rank past it: a third quicker than
    # partitioning at both.
    ranks.partition(low, axis=-1)
    below = ordered[ranks[..., low]]
    above = ordered[ranks[..., high:].min(axis=-1)] if high != low else below
    diff = above - below
    if gamma >= 0.5:
        return above - diff * (1 - gamma)
    return below + diff * gamma


@dataclass(frozen=True)
class _Side:
    """One side of a paired difference: the metric's arrays over its sessions, and where in its
    stream's statistics their resampled values are."""

    arrays: tuple[np.ndarray, np.ndarray]
    slot: int


@dataclass
class _Stream:
    """One stream of resamples: its generator, how many sessions it resamples, and the statistics
    computed on every block of its rows (:func:`block_statistic`, each used by this stream only)."""

    rng: np.random.Generator
    n: int
    statistics: list[Callable[[np.ndarray], np.ndarray]] = field(default_factory=list)
    #: id of a frame (one side's sessions) -> its side, so a side shared by several pairs (the
    #: strategy itself, a baseline) is resampled once.
    sides: dict[int, _Side] = field(default_factory=dict)

    def side(self, metric: Metric, frame: pd.DataFrame) -> _Side:
        """``metric`` over ``frame``'s sessions as a side of this stream, added if new."""
        if id(frame) not in self.sides:
            arrays = metric_arrays(frame, metric)
            self.sides[id(frame)] = _Side(arrays, len(self.statistics))
            self.statistics.append(block_statistic(metric, *arrays))
        return self.sides[id(frame)]


def _resample(streams: Sequence[_Stream], resamples: int) -> list[list[np.ndarray]]:
    """Per stream, each of its statistics over its ``resamples`` resamples (one value per resample)."""

    def run(stream: _Stream) -> list[np.ndarray]:
        out = [np.empty(resamples) for _ in stream.statistics]
        start = 0
        for block in resample_rows(stream.rng, stream.n, resamples):
            stop = start + len(block)
            for values, stat in zip(out, stream.statistics, strict=True):
                values[start:stop] = stat(block)
            start = stop
        return out

    if WORKERS <= 1 or len(streams) <= 1:
        return [run(stream) for stream in streams]
    pool = ThreadPoolExecutor(max_workers=WORKERS)
    try:
        return list(pool.map(run, streams))
    finally:
        # Interrupted (Ctrl-C, SIGTERM): the streams not started yet are not wanted.
        pool.shutdown(wait=True, cancel_futures=True)


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
    ``mean`` (a share of sessions), the denominator's sum for a ``ratio`` or ``per`` (a share of tool calls,
    of compactions)."""
    if metric.kind in ("ratio", "per"):
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
    [[samples]] = _resample([_Stream(rng, n, [block_statistic(metric, values, den)])], resamples)
    lo, hi = percentile_interval(samples, confidence)
    return value, lo, hi


def headline(sessions: pd.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
             confidence: float = CONFIDENCE, metrics: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per (strategy, metric): value, ci_low, ci_high, n, and ``interval``: ``bootstrap``, or
    ``wilson`` for a rate of none or all of its events (:func:`rate_interval`). ``metrics`` (names of
    ``METRICS``) limits the metrics; each one's resamples are the same whichever others are asked for."""
    chosen = metrics_of(sessions, metrics)
    sessions = with_success(sessions) if "success" not in sessions else sessions
    cells = []
    streams = []
    for strategy, group in sessions.groupby("strategy", sort=True):
        for metric in chosen:
            values, den = metric_arrays(group, metric)
            cells.append((strategy, metric, values, den))
            streams.append(_Stream(rng_for(seed, "headline", metric.name, str(strategy)), len(values),
                                   [block_statistic(metric, values, den)]))
    rows = []
    for (strategy, metric, values, den), [samples] in zip(cells, _resample(streams, resamples), strict=True):
        n = len(values)
        value = float(statistic(metric)(values, den, np.arange(n)))
        lo, hi = percentile_interval(samples, confidence)
        wilson = rate_interval(metric, values, den, confidence)
        if wilson is not None:
            lo, hi = wilson
        rows.append({"strategy": strategy, "metric": metric.name, "value": value, "ci_low": lo, "ci_high": hi,
                     "n": n, "interval": "bootstrap" if wilson is None else "wilson"})
    return pd.DataFrame(rows)


def paired(sessions: pd.DataFrame, baseline: str = "unbounded", *, resamples: int = DEFAULT_RESAMPLES,
           seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE,
           metrics: Iterable[str] | None = None) -> pd.DataFrame:
    """Each strategy against ``baseline`` over the sessions both ran: the difference of the metric
    (strategy minus baseline), its bootstrap CI from resampling those sessions jointly, the relative
    change, and whether the CI excludes zero. ``metrics`` (names of ``METRICS``) limits the metrics
    compared; each metric's resamples are the same whichever others are asked for."""
    sessions = with_success(sessions) if "success" not in sessions else sessions
    return paired_differences(sessions, paired_against(sessions, baseline, metrics), resamples=resamples, seed=seed,
                              confidence=confidence)


def paired_against(sessions: pd.DataFrame, baseline: str,
                   metrics: Iterable[str] | None = None) -> list[tuple[str, str, str]]:
    """The (strategy, baseline, metric) triples of :func:`paired`: every other strategy, by name, each
    with every metric of ``metrics`` (default: all of ``METRICS``, in order). A KeyError naming the run's
    strategies when ``baseline`` is not one of them."""
    chosen = [m.name for m in metrics_of(sessions, metrics)]
    names = sorted(set(sessions["strategy"]))
    if baseline not in names:
        raise KeyError(f"baseline strategy {baseline!r} is not in this run; strategies: {', '.join(names)}")
    return [(strategy, baseline, metric) for strategy in names if strategy != baseline for metric in chosen]


def paired_differences(sessions: pd.DataFrame, pairs: Iterable[tuple[str, str, str]], *,
                       resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                       confidence: float = CONFIDENCE) -> pd.DataFrame:
    """One :func:`paired` row per (strategy, baseline, metric) asked, in the order asked (a repeat
    once): the same values as :func:`paired` against that baseline. The resamples of a strategy and a
    metric are named by those two only, so a strategy paired with several baselines over as many
    sessions is resampled once for all of them."""
    sessions = with_success(sessions) if "success" not in sessions else sessions
    wanted = list(dict.fromkeys(pairs))
    groups = {strategy: group for strategy, group in sessions.groupby("strategy", sort=True)}
    indexed: dict[str, pd.DataFrame] = {}

    def by_session(strategy: str) -> pd.DataFrame:
        if strategy not in indexed:
            if strategy not in groups:
                raise KeyError(f"strategy {strategy!r} is not in this run; strategies: {', '.join(map(str, groups))}")
            indexed[strategy] = groups[strategy].set_index(SESSION_KEY).sort_index()
        return indexed[strategy]

    # A strategy's rows over the sessions it shares with another; one frame per distinct set of sessions,
    # so that a stream sees a side shared by several pairs as the same frame (_Stream.side).
    restricted: dict[str, list[tuple[pd.Index, pd.DataFrame]]] = {}

    def over(strategy: str, common: pd.Index) -> pd.DataFrame:
        seen = restricted.setdefault(strategy, [])
        for index, frame in seen:
            if index.equals(common):
                return frame
        frame = by_session(strategy).loc[common]
        seen.append((common, frame))
        return frame

    aligned: dict[tuple[str, str], tuple[pd.DataFrame, pd.DataFrame]] = {}
    for strategy, baseline, _metric in wanted:
        if (strategy, baseline) not in aligned:
            common = by_session(baseline).index.intersection(by_session(strategy).index)
            aligned[strategy, baseline] = (over(strategy, common), over(baseline, common))

    # One stream per (metric, strategy, sessions resampled); each side of it resampled once.
    streams: dict[tuple[str, str, int], _Stream] = {}
    plan: list[tuple[str, str, Metric, _Side, _Side, tuple[str, str, int]]] = []
    for strategy, baseline, name in wanted:
        metric = METRICS[name]
        a, b = aligned[strategy, baseline]
        key = (name, str(strategy), len(a))
        if key not in streams:
            streams[key] = _Stream(rng_for(seed, "paired", name, str(strategy)), len(a))
        plan.append((strategy, baseline, metric, streams[key].side(metric, a), streams[key].side(metric, b), key))
    keys = [key for key, stream in streams.items() if stream.n]
    samples = dict(zip(keys, _resample([streams[key] for key in keys], resamples), strict=True))

    rows = []
    for strategy, baseline, metric, a_side, b_side, key in plan:
        n = key[2]
        if not n:
            rows.append({"strategy": strategy, "baseline": baseline, "metric": metric.name, "n": 0,
                         "diff": np.nan, "ci_low": np.nan, "ci_high": np.nan, "relative": np.nan,
                         "excludes_zero": False})
            continue
        stat = statistic(metric)
        full = np.arange(n)
        diff = float(stat(*a_side.arrays, full) - stat(*b_side.arrays, full))
        base_value = float(stat(*b_side.arrays, full))
        lo, hi = percentile_interval(samples[key][a_side.slot] - samples[key][b_side.slot], confidence)
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
