"""Which strategy to pick: per goal (most successful, cheapest per solved session, fewest loops,
fastest) the best strategy and the strategies statistically tied with it, and the success-vs-cost
Pareto front. Pure functions over a sessions frame and its :func:`reports.stats.headline` table.

Tied means: the paired difference against the best, over the sessions both ran (every strategy
replays the same sessions), has a 95% bootstrap interval that includes zero (:func:`reports.stats.paired`).
The best is the best point estimate; with ties the choice among them is for other reasons (the other
goals, the front).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reports import stats
from reports.stats import METRICS

__all__ = ["FRONT_X", "FRONT_Y", "GOALS", "CostContrast", "Goal", "GoalResult", "Tie", "best_corner", "cost_contrasts",
           "decide", "decision_order", "goal_pairs", "pareto_front", "ranked"]

#: The front's axes: success (higher is better) against the cost of what is solved (lower is better).
FRONT_X = "success_rate"
FRONT_Y = "cost_per_solved_session"


@dataclass(frozen=True)
class Goal:
    """What a reader may want of a strategy, and the headline metric that measures it."""

    key: str
    title: str
    metric: str


#: The goals, in the order the report lists them. Latency is the mean per session: a paired difference
#: of means is the steadiest of the latency statistics at a few dozen sessions.
GOALS: tuple[Goal, ...] = (
    Goal("success", "most successful", "success_rate"),
    Goal("cost", "cheapest per solved session", "cost_per_solved_session"),
    Goal("loops", "fewest loops", "loop_rate"),
    Goal("latency", "fastest", "latency_mean"),
)


@dataclass(frozen=True)
class Tie:
    """A strategy against the best of a goal over their common sessions: the paired difference
    (strategy minus best) and its 95% bootstrap interval."""

    strategy: str
    diff: float
    ci_low: float
    ci_high: float
    n: int

    @property
    def tied(self) -> bool:
        """The interval includes zero: no detectable difference at this sample size."""
        return bool(np.isfinite(self.ci_low) and np.isfinite(self.ci_high) and self.ci_low <= 0 <= self.ci_high)


@dataclass(frozen=True)
class GoalResult:
    """One goal decided: the best strategy (None when no strategy has a value), its headline value and
    interval, and every other strategy against it."""

    goal: Goal
    best: str | None
    value: float
    ci_low: float
    ci_high: float
    #: ``bootstrap`` or ``wilson`` (:func:`reports.stats.headline`).
    interval: str
    #: Every other strategy with a value, paired against the best, in the goal's ranking order.
    others: tuple[Tie, ...]
    #: Strategies without a value for the goal's metric (no solved session for a cost per solved one).
    undefined: tuple[str, ...]

    @property
    def tied(self) -> tuple[str, ...]:
        """The strategies statistically tied with the best."""
        return tuple(t.strategy for t in self.others if t.tied)

    @property
    def behind(self) -> tuple[str, ...]:
        """The strategies whose paired interval excludes zero (or that share no session with the best)."""
        return tuple(t.strategy for t in self.others if not t.tied)


def _values(headline: pd.DataFrame, metric: str) -> dict[str, float]:
    rows = headline[headline["metric"] == metric]
    return {str(s): float(v) for s, v in zip(rows["strategy"], rows["value"], strict=True)}


def ranked(headline: pd.DataFrame, metric: str) -> list[str]:
    """The strategies with a value for ``metric``, best first in the metric's direction; equal values
    go by success rate (higher first), then by name, so the order never depends on row order."""
    values = _values(headline, metric)
    success = _values(headline, FRONT_X)
    sign = 1.0 if METRICS[metric].lower_is_better else -1.0
    defined = [s for s, v in values.items() if np.isfinite(v)]
    return sorted(defined, key=lambda s: (sign * values[s], -success.get(s, 0.0), s))


def goal_pairs(headline: pd.DataFrame, goals: tuple[Goal, ...] = GOALS) -> list[tuple[str, str, str]]:
    """The paired differences :func:`decide` reads, as (strategy, best, metric): per goal, every other
    strategy with a value against the best (:func:`ranked`)."""
    if headline.empty:
        return []
    pairs = []
    for goal in goals:
        order = ranked(headline, goal.metric)
        pairs += [(strategy, order[0], goal.metric) for strategy in order[1:]]
    return pairs


def decide(sessions: pd.DataFrame, headline: pd.DataFrame, goals: tuple[Goal, ...] = GOALS, *,
           resamples: int = stats.DEFAULT_RESAMPLES, seed: int = stats.DEFAULT_SEED,
           pairs: pd.DataFrame | None = None) -> list[GoalResult]:
    """Each goal's best strategy and every other strategy paired against it (see the module docstring).
    ``headline`` is :func:`reports.stats.headline` of ``sessions``; ``pairs`` may hold the paired
    differences already computed with the same ``resamples`` and ``seed``
    (:func:`reports.stats.paired_differences` of at least :func:`goal_pairs`), else they are computed."""
    needed = goal_pairs(headline, goals)
    have = (set() if pairs is None or pairs.empty
            else set(zip(pairs["strategy"], pairs["baseline"], pairs["metric"], strict=True)))
    if not set(needed) <= have:
        pairs = stats.paired_differences(sessions, needed, resamples=resamples, seed=seed)
    table = pairs.set_index(["strategy", "baseline", "metric"]) if needed and pairs is not None else None
    results = []
    names = sorted(set(map(str, headline["strategy"]))) if not headline.empty else []
    for goal in goals:
        order = ranked(headline, goal.metric) if names else []
        undefined = tuple(s for s in names if s not in order)
        if not order:
            nan = float("nan")
            results.append(GoalResult(goal, None, nan, nan, nan, "bootstrap", (), undefined))
            continue
        best = order[0]
        row = headline[(headline["strategy"] == best) & (headline["metric"] == goal.metric)].iloc[0]
        others: tuple[Tie, ...] = ()
        if len(order) > 1 and table is not None:
            found = [table.loc[(s, best, goal.metric)] for s in order[1:]]
            others = tuple(Tie(s, float(r["diff"]), float(r["ci_low"]), float(r["ci_high"]), int(r["n"]))
                           for s, r in zip(order[1:], found, strict=True))
        results.append(GoalResult(goal, best, float(row["value"]), float(row["ci_low"]), float(row["ci_high"]),
                                  str(row.get("interval", "bootstrap")), others, undefined))
    return results


def pareto_front(headline: pd.DataFrame) -> list[str]:
    """The strategies no other strategy beats on both success rate and cost per solved session (at
    least as good on both, better on one), on the point estimates, cheapest first. A strategy without
    a solved session has no cost per solved session and is not on the front."""
    success, cost = _values(headline, FRONT_X), _values(headline, FRONT_Y)
    points = {s: (success[s], cost[s]) for s in success
              if s in cost and np.isfinite(success[s]) and np.isfinite(cost[s])}

    def dominated(s: str) -> bool:
        x, y = points[s]
        return any(ox >= x and oy <= y and (ox > x or oy < y) for o, (ox, oy) in points.items() if o != s)

    return sorted((s for s in points if not dominated(s)), key=lambda s: (points[s][1], -points[s][0], s))


def decision_order(headline: pd.DataFrame, strategies: list[str]) -> list[str]:
    """``strategies`` in the order the report lists them: by success rate (higher first), then by cost
    per solved session (lower first; none last), then by name."""
    success, cost = _values(headline, FRONT_X), _values(headline, FRONT_Y)

    def key(s: str) -> tuple[float, float, str]:
        x, y = success.get(s, float("nan")), cost.get(s, float("nan"))
        return (-x if np.isfinite(x) else np.inf, y if np.isfinite(y) else np.inf, s)

    return sorted(strategies, key=key)


@dataclass(frozen=True)
class CostContrast:
    """A strategy whose input tokens and cost move in opposite directions against the baseline's (fewer
    tokens yet dearer, or more tokens yet cheaper): the prompt cache's doing, shown by the two
    cache-hit shares. Changes are relative (0.5 = 50% more)."""

    strategy: str
    baseline: str
    tokens_change: float
    cost_change: float
    cache_share: float
    baseline_cache_share: float


def cost_contrasts(headline: pd.DataFrame, baseline: str) -> list[CostContrast]:
    """Every strategy whose mean input tokens per session and mean cost per session differ from the
    baseline's in opposite directions, the largest cost change first (then by name)."""
    tokens, cost = _values(headline, "input_tokens"), _values(headline, "cost_per_session")
    cache = _values(headline, "cache_hit_share")
    if baseline not in tokens or not (tokens[baseline] > 0 and cost.get(baseline, 0) > 0):
        return []
    found = []
    for s in sorted(tokens):
        if s == baseline or s not in cost or not (np.isfinite(tokens[s]) and np.isfinite(cost[s])):
            continue
        dt, dc = tokens[s] / tokens[baseline] - 1, cost[s] / cost[baseline] - 1
        if dt * dc < 0:
            found.append(CostContrast(s, baseline, dt, dc, cache.get(s, float("nan")),
                                      cache.get(baseline, float("nan"))))
    return sorted(found, key=lambda c: (-abs(c.cost_change), c.strategy))


def best_corner() -> str:
    """The corner of a success (x) against cost per solved session (y) plot where the best strategies
    sit, from the two metrics' directions, for axes that grow right and up: ``bottom-right``."""
    vertical = "bottom" if METRICS[FRONT_Y].lower_is_better else "top"
    horizontal = "left" if METRICS[FRONT_X].lower_is_better else "right"
    return f"{vertical}-{horizontal}"
