"""The statistics of a sweep run: where each session row sits in the grid (the ``model``,
``sweep_param`` and ``sweep_value`` columns), every headline metric at each grid point, the ranking of
the strategy variants per model profile, and how stable that ranking is across profiles (Kendall's
tau-b and the pairs of variants whose order flips).

Frames in, frames out: the sweep page (:mod:`reports.sweep`) and its plots (:mod:`reports.sweep_plots`)
are renderings of them, and the validation document reads the rankings. Loads no plotting library.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from harness.core.rundir import Manifest
from harness.core.suggest import did_you_mean
from reports import stats
from reports.inputs import SWEEP_COLUMNS
from reports.stats import CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, METRICS, Metric

__all__ = ["PROFILE_ORDER", "SUCCESS", "RankingStability", "grid_value_text", "is_sweep", "kendall_tau_b",
           "model_order", "panel_metrics", "ranking", "ranking_stability", "report_plot_variants", "sweep_headline",
           "sweep_points", "variant_name", "variant_table"]

#: The metric a ranking orders by unless told otherwise (what ``reports.stats.METRICS`` calls success).
SUCCESS = "success_rate"
#: One fixed colour (and marker) per built-in profile, in the order profiles are listed, so a profile
#: looks the same in every sweep plot whichever profiles a run crosses. The names repeat
#: ``harness.sim.profiles`` instead of importing it: reports depend on the tables alone.
PROFILE_ORDER = ("frontier", "mid", "small", "stress-2023", "oracle")


# Which rows are which ----------------------------------------------------------------------------------


def is_sweep(sessions: pd.DataFrame) -> bool:
    """True when the sessions come from a sweep: some row has a ``sweep_param``, or more than one model
    profile ran. Tables written before these columns existed are not sweeps."""
    if "sweep_param" in sessions.columns and (sessions["sweep_param"].fillna("").astype(str) != "").any():
        return True
    return "model" in sessions.columns and sessions["model"].nunique(dropna=True) > 1


def variant_name(label: str, model: str) -> str:
    """The strategy label without its ``@<model>`` suffix: the same variant under every profile."""
    suffix = f"@{model}"
    return label[: -len(suffix)] if model and label.endswith(suffix) else label


def model_order(models: Iterable[str]) -> list[str]:
    """Built-in profiles in their listed order, then any others by name."""
    present = set(models)
    return [m for m in PROFILE_ORDER if m in present] + sorted(present - set(PROFILE_ORDER))


def variant_table(sessions: pd.DataFrame) -> pd.DataFrame:
    """One row per strategy label: ``strategy, variant, model, sweep_param, sweep_value``. Missing sweep
    columns read as one unnamed model and no sweep."""
    if sessions.empty:
        return pd.DataFrame(columns=["strategy", "variant", "model", "sweep_param", "sweep_value"])
    columns = ["strategy", *(c for c in SWEEP_COLUMNS if c in sessions.columns)]
    table = sessions[columns].drop_duplicates("strategy").copy()
    if "model" not in table:
        table["model"] = ""
    if "sweep_param" not in table:
        table["sweep_param"] = ""
    if "sweep_value" not in table:
        table["sweep_value"] = np.nan
    table["strategy"] = table["strategy"].astype(str)
    table["model"] = table["model"].fillna("").astype(str)
    table["sweep_param"] = table["sweep_param"].fillna("").astype(str)
    table["sweep_value"] = table["sweep_value"].astype("float64")
    table["variant"] = [variant_name(s, m) for s, m in zip(table["strategy"], table["model"], strict=True)]
    return table[["strategy", "variant", "model", "sweep_param", "sweep_value"]].reset_index(drop=True)


def sweep_headline(sessions: pd.DataFrame, headline: pd.DataFrame | None = None, resamples: int = DEFAULT_RESAMPLES,
                   seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """``headline`` when the caller has it, else :func:`reports.stats.headline` of ``sessions`` (an empty frame
    of its columns for no sessions)."""
    if headline is not None:
        return headline
    if sessions.empty:
        return pd.DataFrame(columns=["strategy", "metric", "value", "ci_low", "ci_high", "n"])
    return stats.headline(sessions, resamples=resamples, seed=seed, confidence=confidence)


# The grid ------------------------------------------------------------------------------------------------


def sweep_points(sessions: pd.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                 confidence: float = CONFIDENCE, headline: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (sweep_param, sweep_value, model, metric) for every metric of ``METRICS``.

    Columns: ``sweep_param, sweep_value, model, variant, strategy, metric, value, ci_low, ci_high, n,
    interval, support``. The value, its 95% interval and the interval's kind are
    :func:`reports.stats.headline`'s for that variant
    (pass ``headline`` when it is computed already). Unswept variants come too, with ``sweep_param`` ""
    and ``sweep_value`` NaN, one set per model: the baselines the grid is read against. Swept rows come
    first, by param, value and model; then the unswept ones by variant and model.
    """
    columns = ["sweep_param", "sweep_value", "model", "variant", "strategy", "metric", "value", "ci_low", "ci_high",
               "n", "interval", "support"]
    table = variant_table(sessions)
    head = sweep_headline(sessions, headline, resamples, seed, confidence)
    if table.empty or head.empty:
        return pd.DataFrame(columns=columns)
    points = table.merge(head, on="strategy", how="inner")
    metric_rank = {name: i for i, name in enumerate(METRICS)}
    model_rank = {m: i for i, m in enumerate(model_order(points["model"]))}
    points = points.assign(_unswept=points["sweep_param"] == "", _metric=points["metric"].map(metric_rank),
                           _model=points["model"].map(model_rank))
    points = points.sort_values(["_unswept", "sweep_param", "sweep_value", "variant", "_model", "_metric"],
                                kind="stable", na_position="last")
    return points[columns].reset_index(drop=True)


# Rankings ------------------------------------------------------------------------------------------------


def ranking(sessions: pd.DataFrame, metric: str = SUCCESS, *, resamples: int = DEFAULT_RESAMPLES,
            seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE,
            headline: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model profile, every strategy variant ranked by ``metric`` (1 = best, in the metric's own
    direction; equal values share the lowest rank, "competition" ranking).

    Columns: ``model, rank, variant, strategy, metric, value, ci_low, ci_high, n``. ``variant`` is the
    label without ``@<model>``, so rows align across profiles. Sorted by model, then rank, then variant;
    a variant without a value (no sessions) has rank NaN and comes last.
    """
    if metric not in METRICS:
        raise KeyError(f"unknown metric {metric!r}{did_you_mean(metric, METRICS)} (known: {', '.join(METRICS)})")
    columns = ["model", "rank", "variant", "strategy", "metric", "value", "ci_low", "ci_high", "n"]
    table = variant_table(sessions)
    head = sweep_headline(sessions, headline, resamples, seed, confidence)
    if table.empty or head.empty:
        return pd.DataFrame(columns=columns)
    rows = table.merge(head[head["metric"] == metric], on="strategy", how="inner")
    better_first = not METRICS[metric].lower_is_better
    rows["rank"] = rows.groupby("model")["value"].rank(method="min", ascending=not better_first)
    model_rank = {m: i for i, m in enumerate(model_order(rows["model"]))}
    rows = rows.assign(_model=rows["model"].map(model_rank))
    rows = rows.sort_values(["_model", "rank", "variant"], kind="stable", na_position="last")
    return rows[columns].reset_index(drop=True)


def kendall_tau_b(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Kendall's tau-b of two paired samples: (concordant - discordant pairs) over
    sqrt((pairs - pairs tied in x) * (pairs - pairs tied in y)). NaN when either sample is constant
    or there are fewer than two pairs."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"kendall_tau_b needs two 1-d samples of one length, got {a.shape} and {b.shape}")
    if a.size < 2:
        return float("nan")
    i, j = np.triu_indices(a.size, k=1)
    sa, sb = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    pairs = i.size
    tied_a, tied_b = int((sa == 0).sum()), int((sb == 0).sum())
    denominator = math.sqrt((pairs - tied_a) * (pairs - tied_b))
    if denominator == 0:
        return float("nan")
    return float((sa * sb).sum() / denominator)


@dataclass(frozen=True)
class RankingStability:
    """How much a ranking (:func:`ranking`) changes from one model profile to another.

    ``tau``: one row per pair of profiles (``model_a`` before ``model_b`` in profile order):
    ``model_a, model_b, variants`` (ranked under both), ``tau`` (Kendall's tau-b of their values),
    ``flips`` (pairs of variants in opposite order), ``significant_flips``.

    ``flips``: one row per flipped pair of variants: ``model_a, model_b, better_a`` (the variant ahead
    in ``model_a``), ``better_b`` (the other one, ahead in ``model_b``), ``better_a_in_a, better_b_in_a,
    better_a_in_b, better_b_in_b`` (the metric's values), ``separated_a, separated_b`` (their 95%
    intervals do not overlap in that profile), ``significant`` (separated in both). Pairs tied in either
    profile are not flips.
    """

    metric: str
    models: list[str]
    tau: pd.DataFrame
    flips: pd.DataFrame

    def tau_matrix(self) -> pd.DataFrame:
        """Models by models, tau-b of each pair (1 on the diagonal)."""
        matrix = pd.DataFrame(np.eye(len(self.models)), index=self.models, columns=self.models)
        for row in self.tau.itertuples(index=False):
            matrix.loc[row.model_a, row.model_b] = row.tau
            matrix.loc[row.model_b, row.model_a] = row.tau
        return matrix

    @property
    def significant_flips(self) -> pd.DataFrame:
        """The rows of ``flips`` whose intervals are separated under both profiles."""
        return self.flips[self.flips["significant"]].reset_index(drop=True)


def _separated(low_x: float, high_x: float, low_y: float, high_y: float) -> bool:
    return bool(high_x < low_y or high_y < low_x)


def ranking_stability(ranks: pd.DataFrame) -> RankingStability:
    """Kendall's tau-b between every pair of profiles' rankings, and every flip, from a :func:`ranking`
    frame (any frame with ``model, variant, metric, value, ci_low, ci_high`` will do)."""
    metric = str(ranks["metric"].iloc[0]) if not ranks.empty else SUCCESS
    lower_is_better = METRICS[metric].lower_is_better if metric in METRICS else False
    models = model_order(ranks["model"].astype(str)) if not ranks.empty else []
    by_model = {m: ranks[(ranks["model"] == m) & np.isfinite(ranks["value"].astype(float))].set_index("variant")
                for m in models}
    tau_rows, flip_rows = [], []
    for model_a, model_b in combinations(models, 2):
        a, b = by_model[model_a], by_model[model_b]
        common = sorted(set(a.index) & set(b.index))
        va = a.loc[common, "value"].to_numpy(dtype=float)
        vb = b.loc[common, "value"].to_numpy(dtype=float)
        # Values in the better-first direction, so "ahead" means a larger number.
        sign = -1.0 if lower_is_better else 1.0
        flips = significant = 0
        for x, y in combinations(range(len(common)), 2):
            order_a, order_b = np.sign(sign * (va[x] - va[y])), np.sign(sign * (vb[x] - vb[y]))
            if order_a * order_b >= 0:
                continue
            ahead, behind = (x, y) if order_a > 0 else (y, x)
            p, q = common[ahead], common[behind]
            sep_a = _separated(a.at[p, "ci_low"], a.at[p, "ci_high"], a.at[q, "ci_low"], a.at[q, "ci_high"])
            sep_b = _separated(b.at[p, "ci_low"], b.at[p, "ci_high"], b.at[q, "ci_low"], b.at[q, "ci_high"])
            flips += 1
            significant += sep_a and sep_b
            flip_rows.append({"model_a": model_a, "model_b": model_b, "better_a": p, "better_b": q,
                              "better_a_in_a": float(a.at[p, "value"]), "better_b_in_a": float(a.at[q, "value"]),
                              "better_a_in_b": float(b.at[p, "value"]), "better_b_in_b": float(b.at[q, "value"]),
                              "separated_a": sep_a, "separated_b": sep_b, "significant": sep_a and sep_b})
        tau_rows.append({"model_a": model_a, "model_b": model_b, "variants": len(common),
                         "tau": kendall_tau_b(va, vb), "flips": flips, "significant_flips": significant})
    tau = pd.DataFrame(tau_rows, columns=["model_a", "model_b", "variants", "tau", "flips", "significant_flips"])
    flip_columns = ["model_a", "model_b", "better_a", "better_b", "better_a_in_a", "better_b_in_a", "better_a_in_b",
                    "better_b_in_b", "separated_a", "separated_b", "significant"]
    flips_frame = pd.DataFrame(flip_rows, columns=flip_columns)
    if not flips_frame.empty:
        flips_frame = flips_frame.sort_values(["significant", "model_a", "model_b", "better_a", "better_b"],
                                              ascending=[False, True, True, True, True], kind="stable")
        flips_frame = flips_frame.reset_index(drop=True)
    flips_frame[["separated_a", "separated_b", "significant"]] = flips_frame[
        ["separated_a", "separated_b", "significant"]].astype(bool)
    return RankingStability(metric, models, tau, flips_frame)



# What the page and the plots show ------------------------------------------------------------------------


def panel_metrics(points: pd.DataFrame) -> list[Metric]:
    """Every headline metric the points hold (an optional one a run lacks is left out), success first: it
    is what a sweep is usually read for."""
    have = set(points["metric"]) if "metric" in points else set()
    return sorted((m for m in METRICS.values() if not m.optional or m.name in have), key=lambda m: m.name != SUCCESS)


def grid_value_text(variant: str) -> str:
    """The grid value as written in the variant label ``<strategy>[<param>=<value>]``."""
    inside = variant.rpartition("[")[2]
    return inside.partition("=")[2].removesuffix("]") or variant


# The ordinary report of a sweep run ----------------------------------------------------------------------------


def report_plot_variants(sessions: pd.DataFrame, manifest: Manifest) -> tuple[dict[str, str], str]:
    """Which strategies the ordinary report's plots show for a sweep run, and under which names.

    Seventy-odd lines or panels in one plot are unreadable, and the sweep page plots the whole grid, so
    the report's plots keep the first profile's (in config order) unswept variants, named without the
    ``@<model>`` suffix: the same picture a plain run of those strategies on that profile gives. When
    every strategy is swept, they keep all of the first profile's variants. Returns (label -> plotted
    name, a one-line note saying so).
    """
    table = variant_table(sessions)
    listed = [str(v.get("model")) for v in manifest.variants if v.get("model")]
    models = [m for m in dict.fromkeys(listed) if m in set(table["model"])] or model_order(table["model"])
    if not models:
        return {}, ""
    first = table[table["model"] == models[0]]
    unswept = first[first["sweep_param"] == ""]
    chosen = unswept if not unswept.empty else first
    mapping = dict(zip(chosen["strategy"], chosen["variant"], strict=True))
    what = "unswept strategies" if not unswept.empty else "variants"
    note = (f"This run is a sweep of {len(table)} variants: these plots show the {len(mapping)} {what} on the "
            f"{models[0]} profile; the sweep page plots every variant against each swept param.")
    return mapping, note
