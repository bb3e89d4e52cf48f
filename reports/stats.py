"""Honest statistics over a run's ``sessions`` table: every headline metric per strategy with a 95%
bootstrap confidence interval, paired differences against a baseline over the same sessions, and
breakdowns. Vectorised numpy; the bootstrap resamples sessions (never calls) with a fixed seed.

The resamples are drawn and reduced a block of rows at a time (:func:`resample_rows`), on a few threads
(numpy releases the GIL while it draws, gathers and reduces): the same draws and the same arithmetic as
one ``rng.integers`` matrix per (metric, strategy) reduced along its rows, so the same intervals to the
bit, without a 48 MB matrix per metric and strategy at 3,000 sessions a strategy.

A rate of no events or of every event (0 of 40 loops) has nothing to resample: its bootstrap interval
collapses to the point. Such a rate gets a Wilson score interval instead (:func:`wilson_interval`), as
does a share of sessions with fewer than :data:`MIN_SUPPORT` events or non-events (:func:`rate_interval`). A
``per`` metric over fewer than :data:`MIN_SUPPORT` units of its denominator (a cost per solved session
of 3 solved sessions) gets no interval at all (``too_few``). :func:`headline` says which interval each
row carries.

Every stream of resamples is seeded from what it resamples (:func:`content_digest` of the arrays, in
session order), the statistic's kind and the metric's name, never from a strategy's name or the order
of computation: the same sessions give the same interval to the bit wherever they are summarised (the
run's console summary, ``--json``, the report, ``ctxbench compare``), and two strategies whose
sessions are identical get identical intervals.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd

from harness.core import tables
from harness.core.rundir import SESSIONS_TABLE

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
CONFIDENCE = 0.95
#: The kinds of interval a headline row carries (its ``interval`` column): the percentile bootstrap over
#: sessions; Wilson's score interval, for a rate where the bootstrap's fails (:func:`rate_interval`);
#: none, for a ``per`` metric over too few units of its denominator; none, for a metric without a value.
BOOTSTRAP, WILSON, TOO_FEW, UNDEFINED = "bootstrap", "wilson", "too_few", "undefined"
INTERVAL_KINDS = (BOOTSTRAP, WILSON, TOO_FEW, UNDEFINED)
#: A ``per`` metric over fewer units of its denominator than this (solved sessions for a cost per solved
#: session, compactions for the thrash rate) gets its value but no interval. Its resamples divide by a
#: resampled count k* that is about Poisson(k) for k units in many sessions: a resample has none (its
#: statistic undefined, so it is dropped and the interval is conditioned on a success) with probability
#: about e^-k, 37% at k = 1 and 0.7% at k = 5 but under 0.005% from k = 10 (0.1 of 2,000 resamples); and
#: the count's relative spread 1 / sqrt(k) is 45% at 5, so below 10 the percentile interval of the ratio
#: is mostly the noise of the count. 10 is also the textbook success-failure condition for treating a
#: count's sampling distribution as normal (at least 10 successes: OpenIntro Statistics, Diez,
#: Cetinkaya-Rundel and Barr; De Veaux, Velleman and Bock, Intro Stats).
MIN_SUPPORT = 10
#: The key of one session script across strategies (`harness.core.tables.SCRIPT_KEY`), as a list for pandas:
#: paired comparisons join on it.
SCRIPT_KEY = list(tables.SCRIPT_KEY)


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
    #: interval is Wilson's, not the bootstrap's (which collapses to a point there); for a share of
    #: sessions, also at fewer than MIN_SUPPORT events or non-events (:func:`rate_interval`).
    events: bool = False
    #: What a report writes for an undefined value (a ``per`` metric over a zero denominator).
    undefined: str = "n/a"
    #: True for a metric whose columns a run may lack (a run directory made before ctxbench counted
    #: them): statistics leave it out for such a run, as absent, never as zero.
    optional: bool = False
    #: What the denominator of a ``per`` metric counts, as in "too few successes" (:data:`MIN_SUPPORT`).
    support: str = ""

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
           undefined="no solved session", support="successes"),
    # Prompt-cache hits are billed at a fraction of the input price, so this, more than the input
    # tokens, decides the bill of strategies that rewrite their context.
    Metric("cache_hit_share", "cache-hit share", "share of input tokens", "ratio", "cached_input_tokens",
           "input_tokens", lower_is_better=False),
    # What a context manager did (docs/sdk-strategies.md 3): how often it changed what the model sees, how much
    # it took out, how often it broke the cached prefix, and how often it fired again within 3 turns.
    Metric("compactions", "compactions per session", "compactions", "mean", "compactions", optional=True),
    Metric("tokens_freed", "tokens freed per session", "tokens", "mean", "tokens_freed", optional=True),
    Metric("cache_breaking_edits", "cache-breaking edits per session", "calls", "mean", "cache_breaking_edits",
           optional=True),
    # Steps the agent did again after their every trace left its context (docs/model.md v3 change 1): the
    # work a strategy makes it repeat. Optional: runs made before the column existed lack it.
    Metric("redone_steps", "redone steps per session", "steps", "mean", "redone_steps", optional=True),
    # Undefined, not zero, for a strategy that never compacted: there was nothing to thrash.
    Metric("thrash_rate", "thrash rate", "share of compactions", "per", "thrash", "compactions", events=True,
           undefined="no compaction", optional=True, support="compactions"),
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


def in_session_order(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s rows by session (:data:`SCRIPT_KEY`), the order the paired comparisons see them in:
    a stream's draws pick sessions by position, so the same sessions give the same interval whatever
    order a table holds them in. As given when the frame lacks those columns."""
    if not set(SCRIPT_KEY) <= set(frame.columns):
        return frame
    return frame.sort_values(SCRIPT_KEY, kind="stable")


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
#: child process that draws the report's plots meanwhile (reports.plot_child.PendingPlots).
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
    #: The digest of a side's arrays (:func:`content_digest`) -> its side, so identical sides are
    #: resampled once.
    sides: dict[bytes, _Side] = field(default_factory=dict)

    def side(self, metric: Metric, arrays: tuple[np.ndarray, np.ndarray], digest: bytes) -> _Side:
        """``metric``'s ``arrays`` (whose digest is ``digest``) as a side of this stream, added if new."""
        if digest not in self.sides:
            self.sides[digest] = _Side(arrays, len(self.statistics))
            self.statistics.append(block_statistic(metric, *arrays))
        return self.sides[digest]


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


def rng_for(seed: int, *parts: str | bytes) -> np.random.Generator:
    """A generator per purpose, named by ``parts``: a name (each hashed whole) or a digest (used as
    it is: :func:`content_digest`). Adding a strategy never shifts another's CI, and no two purposes
    share a resample stream."""
    key = [seed, *(int.from_bytes(p if isinstance(p, bytes) else hashlib.blake2b(p.encode(), digest_size=8).digest(),
                                  "big") for p in parts)]
    return np.random.default_rng(key)


def content_digest(*arrays: np.ndarray) -> bytes:
    """A digest of exactly what a stream resamples: each array's length and its values as float64
    bytes, in order (-0.0 as 0.0 and every NaN alike, so equal values give equal digests)."""
    digest = hashlib.blake2b(digest_size=16)
    for array in arrays:
        data = np.asarray(array, dtype=np.float64)
        data = np.ascontiguousarray(np.where(np.isnan(data), np.nan, data + 0.0))
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data.tobytes())
    return digest.digest()


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
    """Wilson's interval for an ``events`` metric where the bootstrap's does not hold; None where it
    does. That is at none or all of its trials, where the bootstrap's collapses to a point; and, for a
    share of sessions (a ``mean`` of a flag), at fewer than :data:`MIN_SUPPORT` events or non-events,
    where the percentile bootstrap of a proportion covers like the Wald interval, too rarely, and
    Wilson's is the interval recommended for it (Brown, Cai and DasGupta, "Interval Estimation for a
    Binomial Proportion", Statistical Science 16(2), 2001). Sessions are independent trials, so
    Wilson's model holds there exactly; a share of tool calls or compactions is clustered in sessions,
    which only the bootstrap over sessions sees, so it keeps the bootstrap's short of none or all."""
    if not metric.events:
        return None
    events, trials = events_and_trials(metric, values, denominators)
    if trials <= 0:
        return None
    fewest = MIN_SUPPORT if metric.kind == "mean" else 1
    if fewest <= events <= trials - fewest:
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


@dataclass(frozen=True, slots=True)
class Estimate:
    """A metric over some sessions: its value, its interval and the interval's kind
    (:data:`INTERVAL_KINDS`), and the counts they rest on."""

    value: float
    ci_low: float
    ci_high: float
    #: ``bootstrap``, ``wilson``, ``too_few`` or ``undefined`` (:func:`interval_kind`).
    interval: str
    #: Sessions.
    n: int
    #: The denominator's sum of a ``per`` metric (solved sessions, compactions); NaN for other kinds.
    support: float
    #: (events, trials) of an ``events`` metric (:func:`events_and_trials`); NaN for other metrics.
    events: float
    trials: float

    def row(self) -> dict[str, float | int | str]:
        """The estimate as the columns of a :func:`headline` row."""
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n,
                "interval": self.interval, "support": self.support, "events": self.events, "trials": self.trials}


def support_of(metric: Metric, denominators: np.ndarray) -> float:
    """What a ``per`` metric divides by over some sessions (its denominator's sum); NaN for other kinds."""
    return float(denominators.sum()) if metric.kind == "per" else float("nan")


def interval_kind(metric: Metric, values: np.ndarray, denominators: np.ndarray) -> str:
    """Which interval ``metric`` over these sessions carries: ``undefined`` without a value (no
    sessions; a ``per`` metric over a zero denominator), ``too_few`` for a ``per`` metric over fewer
    than :data:`MIN_SUPPORT` units of its denominator, ``wilson`` for an ``events`` rate of none or
    all of its trials (:func:`rate_interval`), else ``bootstrap``."""
    if len(values) == 0:
        return UNDEFINED
    if metric.kind == "per":
        support = support_of(metric, denominators)
        if not support > 0:
            return UNDEFINED
        if support < MIN_SUPPORT:
            return TOO_FEW
    if rate_interval(metric, values, denominators) is not None:
        return WILSON
    return BOOTSTRAP


#: Bootstrap bounds already computed in this process, by (metric, content digest, resamples, seed,
#: confidence): a run prints its summary and then writes its report, and the report's intervals of the
#: summary's metrics are the summary's, found here rather than drawn again. Two floats an entry; the
#: oldest go first past the limit.
_BOUNDS: dict[tuple[str, bytes, int, int, float], tuple[float, float]] = {}
_BOUNDS_LIMIT = 1 << 16
_BOUNDS_LOCK = threading.Lock()


def estimates(cells: Sequence[tuple[Metric, np.ndarray, np.ndarray]], *, resamples: int = DEFAULT_RESAMPLES,
              seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE) -> list[Estimate]:
    """Each (metric, values, denominators) cell as an :class:`Estimate`: the one computation of a
    metric's value and interval over a set of sessions, which :func:`headline` and
    ``ctxbench compare`` both call. A bootstrap cell's stream is seeded from ``seed``, ``headline``,
    the metric's name and :func:`content_digest` of its arrays, so the same arrays (in the same
    session order: :func:`in_session_order`) get the same interval to the bit; identical cells are
    resampled once (and once in a process: :data:`_BOUNDS`)."""
    kinds = [interval_kind(metric, values, den) for metric, values, den in cells]
    keys: list[tuple[str, bytes] | None] = [(metric.name, content_digest(values, den)) if kind == BOOTSTRAP else None
                                            for (metric, values, den), kind in zip(cells, kinds, strict=True)]
    streams: dict[tuple[str, bytes], _Stream] = {}
    bounds: dict[tuple[str, bytes], tuple[float, float]] = {}
    with _BOUNDS_LOCK:
        for (metric, values, den), key in zip(cells, keys, strict=True):
            if key is None or key in bounds or key in streams:
                continue
            known = _BOUNDS.get((*key, resamples, seed, confidence))
            if known is not None:
                bounds[key] = known
            else:
                streams[key] = _Stream(rng_for(seed, "headline", *key), len(values),
                                       [block_statistic(metric, values, den)])
    drawn = _resample(list(streams.values()), resamples)
    with _BOUNDS_LOCK:
        for new_key, [samples] in zip(streams, drawn, strict=True):
            bounds[new_key] = _BOUNDS[(*new_key, resamples, seed, confidence)] = percentile_interval(samples,
                                                                                                   confidence)
        while len(_BOUNDS) > _BOUNDS_LIMIT:
            del _BOUNDS[next(iter(_BOUNDS))]
    out = []
    nan = float("nan")
    for (metric, values, den), kind, key in zip(cells, kinds, keys, strict=True):
        n = len(values)
        value = float(statistic(metric)(values, den, np.arange(n))) if n else nan
        lo, hi = bounds[key] if key is not None else (nan, nan)
        if kind == WILSON:
            lo, hi = wilson_interval(*events_and_trials(metric, values, den), confidence)
        events, trials = events_and_trials(metric, values, den) if metric.events and n else (nan, nan)
        out.append(Estimate(value if kind != UNDEFINED else nan, lo, hi, kind, n, support_of(metric, den), events,
                            trials))
    return out


#: The columns of a :func:`headline` frame, in order.
HEADLINE_COLUMNS = ["strategy", "metric", "value", "ci_low", "ci_high", "n", "interval", "support", "events", "trials"]


def headline(sessions: pd.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
             confidence: float = CONFIDENCE, metrics: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per (strategy, metric), strategies by name and metrics in ``METRICS`` order, columns
    :data:`HEADLINE_COLUMNS`: value, ci_low, ci_high (NaN unless the interval is ``bootstrap`` or
    ``wilson``), n (sessions), ``interval`` (:func:`interval_kind`), ``support`` (a ``per`` metric's
    denominator sum, else NaN) and ``events``, ``trials`` (of an ``events`` metric, else NaN): the
    :func:`estimates` of each strategy's sessions in session order. ``metrics`` (names of ``METRICS``)
    limits the metrics; each one's interval is the same whichever others are asked for, whatever
    other strategies the frame holds and whatever its row order."""
    chosen = metrics_of(sessions, metrics)
    sessions = with_success(sessions) if "success" not in sessions else sessions
    names, cells = [], []
    for strategy, group in sessions.groupby("strategy", sort=True):
        group = in_session_order(group)
        for metric in chosen:
            names.append(strategy)
            cells.append((metric, *metric_arrays(group, metric)))
    found = estimates(cells, resamples=resamples, seed=seed, confidence=confidence)
    rows = [{"strategy": strategy, "metric": metric.name, **estimate.row()}
            for strategy, (metric, _v, _d), estimate in zip(names, cells, found, strict=True)]
    return pd.DataFrame(rows, columns=HEADLINE_COLUMNS)


def paired(sessions: pd.DataFrame, baseline: str = "unbounded", *, resamples: int = DEFAULT_RESAMPLES,
           seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE,
           metrics: Iterable[str] | None = None) -> pd.DataFrame:
    """Each strategy against ``baseline`` over the sessions both ran: the difference of the metric
    (strategy minus baseline), its bootstrap CI from resampling those sessions jointly (none, NaN, when
    ``interval`` is ``too_few`` or ``undefined``: :func:`paired_kind`), the relative change, and whether
    the CI excludes zero. ``metrics`` (names of ``METRICS``) limits the metrics compared; each metric's
    resamples are the same whichever others are asked for."""
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


def paired_kind(metric: Metric, a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> str:
    """Which interval a paired difference of ``metric`` carries: ``undefined`` without common sessions
    or with a side without a value, ``too_few`` when a side of a ``per`` metric has fewer than
    :data:`MIN_SUPPORT` units of its denominator (:func:`interval_kind`), else ``bootstrap``."""
    kinds = {interval_kind(metric, *a), interval_kind(metric, *b)}
    if UNDEFINED in kinds:
        return UNDEFINED
    return TOO_FEW if TOO_FEW in kinds else BOOTSTRAP


def paired_differences(sessions: pd.DataFrame, pairs: Iterable[tuple[str, str, str]], *,
                       resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                       confidence: float = CONFIDENCE) -> pd.DataFrame:
    """One :func:`paired` row per (strategy, baseline, metric) asked, in the order asked (a repeat
    once): the same values as :func:`paired` against that baseline, and ``interval`` (``bootstrap``;
    ``too_few`` or ``undefined``, with no interval: :func:`paired_kind`) and ``support`` (the smaller
    side's denominator sum of a ``per`` metric, else NaN). A pair's stream is seeded from ``seed``,
    ``paired``, the metric's name and the digests of both sides' arrays (in session order), taken
    in sorted order: the same two sides give the same draws whichever is the strategy, so B - A is
    A - B negated, and pairs over identical data are resampled once."""
    sessions = with_success(sessions) if "success" not in sessions else sessions
    wanted = list(dict.fromkeys(pairs))
    groups = {strategy: group for strategy, group in sessions.groupby("strategy", sort=True)}
    indexed: dict[str, pd.DataFrame] = {}

    def by_session(strategy: str) -> pd.DataFrame:
        if strategy not in indexed:
            if strategy not in groups:
                raise KeyError(f"strategy {strategy!r} is not in this run; strategies: {', '.join(map(str, groups))}")
            indexed[strategy] = groups[strategy].set_index(SCRIPT_KEY).sort_index()
        return indexed[strategy]

    aligned: dict[tuple[str, str], tuple[pd.DataFrame, pd.DataFrame]] = {}
    for strategy, baseline, _metric in wanted:
        if (strategy, baseline) not in aligned:
            common = by_session(baseline).index.intersection(by_session(strategy).index).sort_values()
            aligned[strategy, baseline] = (by_session(strategy).loc[common], by_session(baseline).loc[common])

    # One stream per metric and (unordered) pair of sides' contents; each side of it resampled once.
    streams: dict[tuple[str, bytes, bytes], _Stream] = {}
    plan: list[tuple[str, str, Metric, int, str, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray],
                     tuple[_Side, _Side, tuple[str, bytes, bytes]] | None]] = []
    for strategy, baseline, name in wanted:
        metric = METRICS[name]
        a, b = aligned[strategy, baseline]
        arrays_a, arrays_b = metric_arrays(a, metric), metric_arrays(b, metric)
        kind = paired_kind(metric, arrays_a, arrays_b)
        drawn = None
        if kind == BOOTSTRAP:
            digest_a, digest_b = content_digest(*arrays_a), content_digest(*arrays_b)
            low, high = sorted((digest_a, digest_b))
            key = (name, low, high)
            if key not in streams:
                streams[key] = _Stream(rng_for(seed, "paired", *key), len(a))
            stream = streams[key]
            drawn = (stream.side(metric, arrays_a, digest_a), stream.side(metric, arrays_b, digest_b), key)
        plan.append((strategy, baseline, metric, len(a), kind, arrays_a, arrays_b, drawn))
    keys = list(streams)
    samples = dict(zip(keys, _resample([streams[key] for key in keys], resamples), strict=True))

    rows = []
    nan = float("nan")
    for strategy, baseline, metric, n, kind, arrays_a, arrays_b, drawn in plan:
        support = min(support_of(metric, arrays_a[1]), support_of(metric, arrays_b[1]))
        if not n:
            rows.append({"strategy": strategy, "baseline": baseline, "metric": metric.name, "n": 0,
                         "diff": nan, "ci_low": nan, "ci_high": nan, "relative": nan, "excludes_zero": False,
                         "interval": kind, "support": support})
            continue
        stat = statistic(metric)
        full = np.arange(n)
        diff = float(stat(*arrays_a, full) - stat(*arrays_b, full))
        base_value = float(stat(*arrays_b, full))
        lo, hi = nan, nan
        if drawn is not None:
            a_side, b_side, key = drawn
            lo, hi = percentile_interval(samples[key][a_side.slot] - samples[key][b_side.slot], confidence)
        rows.append({"strategy": strategy, "baseline": baseline, "metric": metric.name, "n": n, "diff": diff,
                     "ci_low": lo, "ci_high": hi,
                     "relative": diff / base_value if base_value and np.isfinite(base_value) else np.nan,
                     "excludes_zero": bool(lo > 0 or hi < 0), "interval": kind, "support": support})
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
