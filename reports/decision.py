"""Which strategy to pick: per goal (most successful, cheapest per solved session, fewest loops,
fastest) the best strategy and the strategies statistically tied with it, and the success-vs-cost
Pareto front. Pure functions over a sessions frame and its :func:`reports.stats.headline` table.

Tied means: the paired difference against the best, over the sessions both ran (every strategy
replays the same sessions), has a 95% bootstrap interval that includes zero (:func:`reports.stats.paired`).
The best is the best point estimate; with ties the choice among them is for other reasons (the other
goals, the front). A goal whose best is tied with every other strategy names no best.

:func:`recommend` turns the goals into the one sentence a reader acts on, for the report's goal: the most
successful strategy, and among those tied for it the cheapest per solved session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from reports import stats
from reports.stats import METRICS
from reports.tables import format_value

__all__ = ["FRONT_X", "FRONT_Y", "GOALS", "RECOMMENDATION_GOAL", "CostContrast", "Goal", "GoalResult", "Recommendation",
           "Tie", "best_corner", "cost_contrasts", "decide", "decision_order", "goal_pairs", "pareto_front", "ranked",
           "recommend", "recommendation_pairs"]

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
    #: Strategies whose value rests on too few events to be compared (a cost per solved session over a
    #: handful of successes: :data:`reports.stats.TOO_FEW`); not ranked.
    too_few: tuple[str, ...] = ()

    @property
    def tied(self) -> tuple[str, ...]:
        """The strategies statistically tied with the best."""
        return tuple(t.strategy for t in self.others if t.tied)

    @property
    def behind(self) -> tuple[str, ...]:
        """The strategies whose paired interval excludes zero (or that share no session with the best)."""
        return tuple(t.strategy for t in self.others if not t.tied)

    @property
    def all_tied(self) -> bool:
        """The best is tied with every other strategy that has a value: this goal names no best."""
        return bool(self.others) and not self.behind


def _values(headline: pd.DataFrame, metric: str) -> dict[str, float]:
    rows = headline[headline["metric"] == metric]
    return {str(s): float(v) for s, v in zip(rows["strategy"], rows["value"], strict=True)}


def _too_few(headline: pd.DataFrame, metric: str) -> set[str]:
    """The strategies whose ``metric`` rests on too few events to be compared (:data:`reports.stats.TOO_FEW`)."""
    if "interval" not in headline.columns:
        return set()
    rows = headline[(headline["metric"] == metric) & (headline["interval"] == stats.TOO_FEW)]
    return set(map(str, rows["strategy"]))


def ranked(headline: pd.DataFrame, metric: str) -> list[str]:
    """The strategies with a value for ``metric`` that can be compared, best first in the metric's
    direction (a cost per solved session over too few successes is left out: it is not comparable);
    equal values go by success rate (higher first), then by name, so the order never depends on row order."""
    values = _values(headline, metric)
    success = _values(headline, FRONT_X)
    sign = 1.0 if METRICS[metric].lower_is_better else -1.0
    few = _too_few(headline, metric)
    defined = [s for s, v in values.items() if np.isfinite(v) and s not in few]
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
        few = _too_few(headline, goal.metric)
        undefined = tuple(s for s in names if s not in order and s not in few)
        too_few = tuple(s for s in names if s in few)
        if not order:
            nan = float("nan")
            results.append(GoalResult(goal, None, nan, nan, nan, "bootstrap", (), undefined, too_few))
            continue
        best = order[0]
        row = headline[(headline["strategy"] == best) & (headline["metric"] == goal.metric)].iloc[0]
        others: tuple[Tie, ...] = ()
        if len(order) > 1 and table is not None:
            found = [table.loc[(s, best, goal.metric)] for s in order[1:]]
            others = tuple(Tie(s, float(r["diff"]), float(r["ci_low"]), float(r["ci_high"]), int(r["n"]))
                           for s, r in zip(order[1:], found, strict=True))
        results.append(GoalResult(goal, best, float(row["value"]), float(row["ci_low"]), float(row["ci_high"]),
                                  str(row.get("interval", "bootstrap")), others, undefined, too_few))
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


#: The goal the report's one sentence decides: success first, then the cost of what is solved.
RECOMMENDATION_GOAL = "the most successful strategy, and among those tied for it the cheapest per solved session"


@dataclass(frozen=True)
class Recommendation:
    """What to use for :data:`RECOMMENDATION_GOAL`: the chosen strategy (None when the sample cannot tell
    the strategies apart, or nothing was solved), the others equally good, and the sentence."""

    strategy: str | None
    equally_good: tuple[str, ...]
    sentence: str


def _goal(results: list[GoalResult], key: str) -> GoalResult | None:
    return next((r for r in results if r.goal.key == key), None)


def _contenders(results: list[GoalResult]) -> tuple[str, ...]:
    """The best on success and every strategy tied with it."""
    success = _goal(results, "success")
    if success is None or success.best is None:
        return ()
    return (success.best, *success.tied)


def recommendation_pairs(headline: pd.DataFrame, results: list[GoalResult]) -> list[tuple[str, str, str]]:
    """The paired differences :func:`recommend` reads besides :func:`decide`'s: every contender for
    success against the cheapest contender, on cost per solved session."""
    contenders = set(_contenders(results))
    order = [s for s in ranked(headline, FRONT_Y) if s in contenders]
    return [(s, order[0], FRONT_Y) for s in order[1:]]


def _list(names: Sequence[str]) -> str:
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    shown = names[:6]
    more = f" and {len(names) - len(shown)} more" if len(names) > len(shown) else ""
    return (", ".join(shown[:-1]) + f" and {shown[-1]}") if not more else ", ".join(shown) + more


def recommend(results: list[GoalResult], headline: pd.DataFrame, pairs: pd.DataFrame, *,
              sessions: int) -> Recommendation:
    """The one sentence above the decision table (:data:`RECOMMENDATION_GOAL`). ``results`` is
    :func:`decide`'s, ``pairs`` holds at least :func:`recommendation_pairs` (a paired difference per row:
    strategy, baseline, metric, ci_low, ci_high), ``sessions`` the sessions each strategy replayed."""
    success = _goal(results, "success")
    if success is None or success.best is None:
        return Recommendation(None, (), "No strategy has a success rate: there is nothing to recommend.")
    contenders = _contenders(results)
    everyone = (success.best, *(t.strategy for t in success.others))
    tied_all = len(contenders) == len(everyone)
    value = _values(headline, FRONT_X)
    cost = _values(headline, FRONT_Y)
    money = METRICS[FRONT_Y]
    cheap = [s for s in ranked(headline, FRONT_Y) if s in contenders]
    if len(contenders) == 1:
        best = contenders[0]
        return Recommendation(best, (), f"Use {best}: the most successful ({value[best] * 100:.1f}% of sessions "
                                        "solved); every other strategy solves fewer, beyond the noise of "
                                        f"{sessions:,} paired sessions.")
    if not cheap or value[success.best] <= 0:
        if tied_all:
            return Recommendation(None, tuple(everyone), "No strategy is better than another on this goal at this "
                                                         f"sample size ({sessions:,} paired sessions).")
        return Recommendation(None, contenders, f"{_list(contenders)} are tied for most successful, and none of them "
                                                "solved enough sessions to compare their cost per solved session.")
    first = cheap[0]
    table = pairs.set_index(["strategy", "baseline", "metric"]) if not pairs.empty else None

    def tied_on_cost(s: str) -> bool:
        if table is None or (s, first, FRONT_Y) not in table.index:
            return False
        row = table.loc[(s, first, FRONT_Y)]
        lo, hi = float(row["ci_low"]), float(row["ci_high"])
        return bool(np.isfinite(lo) and np.isfinite(hi) and lo <= 0 <= hi)

    same_cost = tuple(s for s in cheap[1:] if tied_on_cost(s))
    uncomparable = [s for s in contenders if s not in cheap]
    if tied_all and len(same_cost) == len(cheap) - 1 and not uncomparable:
        return Recommendation(None, tuple(everyone), "No strategy is better than another on this goal at this "
                                                     f"sample size ({sessions:,} paired sessions): every strategy is "
                                                     "tied on success and on cost per solved session.")
    how = ("every strategy is tied on success" if tied_all
           else f"tied for most successful with {_list([s for s in contenders if s != first])}")
    price = format_value(money, cost[first])
    if same_cost:
        verb = "is" if len(same_cost) == 1 else "are"
        return Recommendation(first, same_cost, f"Use {first} (or {_list(same_cost)}): {how}, and the cheapest of "
                                                f"those per solved session ({price}); {_list(same_cost)} {verb} as "
                                                "cheap within the noise.")
    dearer = cheap[1:]
    against = f" against {format_value(money, cost[dearer[0]])} for the next, {dearer[0]}" if dearer else ""
    return Recommendation(first, (), f"Use {first}: {how}, and the cheapest of those per solved session "
                                     f"({price}{against}).")
