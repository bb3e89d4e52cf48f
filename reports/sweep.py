"""A sweep run's own page: every headline metric against each swept strategy param, one line per model
profile, the ranking of the strategy variants per profile, and how stable that ranking is across
profiles (Kendall's tau-b and the pairs of variants whose order flips).

Reads the run directory only (``sessions.parquet``, ``manifest.json``): the ``model``, ``sweep_param``
and ``sweep_value`` columns say where each session row sits in the grid. The frames are the API; the
page (``sweep.html``, ``sweep.md``, ``plots/sweep-*.png``) is one rendering of them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullLocator, PercentFormatter

from harness.core.files import write_atomically
from harness.core.rundir import PLOTS_DIR, Manifest
from harness.core.suggest import did_you_mean
from reports import stats
from reports.inputs import (
    FORMATS,
    OPTIONAL_STATS_COLUMNS,
    REPORT_COLUMNS,
    SWEEP_COLUMNS,
    OpenRun,
    check_formats,
    open_run_dir,
)
from reports.markup import PAGE_END, data_uri, escape, how_box, html_table, md_how, md_table, page_start
from reports.outputs import Png, write_files
from reports.plots import (
    DPI,
    LINESTYLES,
    MARKERS,
    OKABE_ITO,
    no_data,
    plot_style,
    png_bytes,
    short_label,
    thousands,
)
from reports.stats import CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, METRICS, Metric
from reports.tables import Cell, Table, format_interval, format_value, headline_cell, is_share

#: The metric a ranking orders by unless told otherwise (what ``reports.stats.METRICS`` calls success).
SUCCESS = "success_rate"
#: One fixed colour (and marker) per built-in profile, in the order profiles are listed, so a profile
#: looks the same in every sweep plot whichever profiles a run crosses. The names repeat
#: ``harness.sim.profiles`` instead of importing it: reports depend on the tables alone.
PROFILE_ORDER = ("frontier", "mid", "small", "stress-2023", "oracle")
#: Sweep plots are a grid of one panel per metric: taller than the report's single-axes plots.
SWEEP_FIGSIZE = (12.0, 9.0)
#: A swept param whose largest value is at least this many times its smallest gets a log x axis.
LOG_X_SPAN = 8.0
#: Models' points at one grid value are spread this share of the axis apart, so error bars do not hide
#: each other.
DODGE = 0.012


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


def profile_styles(models: Iterable[str]) -> dict[str, tuple[str, str, str]]:
    """(colour, marker, line style) per profile: fixed for built-in profiles, then the rest of the
    Okabe-Ito palette (and then other markers and dashes) for custom ones, by name."""
    styles = {}
    extra = 0
    for model in model_order(models):
        i = PROFILE_ORDER.index(model) if model in PROFILE_ORDER else len(PROFILE_ORDER) + extra
        extra += model not in PROFILE_ORDER
        cycle = i // len(OKABE_ITO)
        styles[model] = (OKABE_ITO[i % len(OKABE_ITO)], MARKERS[i % len(MARKERS)], LINESTYLES[cycle % len(LINESTYLES)])
    return styles


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


def _headline(sessions: pd.DataFrame, headline: pd.DataFrame | None, resamples: int, seed: int,
              confidence: float) -> pd.DataFrame:
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
    head = _headline(sessions, headline, resamples, seed, confidence)
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
    head = _headline(sessions, headline, resamples, seed, confidence)
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


# Plots ---------------------------------------------------------------------------------------------------


def sweep_plot_name(param: str) -> str:
    """The PNG file name of a swept param's plot: ``sweep-<param>.png`` with anything but letters,
    digits, ``.``, ``_`` and ``-`` replaced by ``_``."""
    return f"sweep-{re.sub(r'[^A-Za-z0-9._-]+', '_', param).strip('.') or '_'}.png"


def _panel_metrics(points: pd.DataFrame) -> list[Metric]:
    """Every headline metric the points hold (an optional one a run lacks is left out), success first: it
    is what a sweep is usually read for."""
    have = set(points["metric"]) if "metric" in points else set()
    return sorted((m for m in METRICS.values() if not m.optional or m.name in have), key=lambda m: m.name != SUCCESS)


def _y_formatter(metric: Metric) -> FuncFormatter | PercentFormatter:
    if is_share(metric):
        return PercentFormatter(1.0)
    if metric.unit == "tokens":
        return FuncFormatter(thousands)
    if metric.unit == "USD":
        return FuncFormatter(lambda v, _p: f"${v:,.3g}")
    return FuncFormatter(lambda v, _p: f"{v:,.4g}")


def _value_text(variant: str) -> str:
    """The grid value as written in the variant label ``<strategy>[<param>=<value>]``."""
    inside = variant.rpartition("[")[2]
    return inside.partition("=")[2].removesuffix("]") or variant


def _x_positions(rows: pd.DataFrame) -> tuple[dict[str, float], list[float], list[str], bool]:
    """(x per variant, tick positions, tick labels, log scale) for one param's rows. Numbers go on a
    numeric axis (log when they span LOG_X_SPAN or more); text and booleans go at 0, 1, 2, ..."""
    grid = rows.drop_duplicates("variant")[["variant", "sweep_value"]]
    values = grid["sweep_value"].to_numpy(dtype=float)
    if grid.empty or not np.isfinite(values).all():
        names = list(grid["variant"])
        return ({v: float(i) for i, v in enumerate(names)}, [float(i) for i in range(len(names))],
                [_value_text(v) for v in names], False)
    order = np.argsort(values, kind="stable")
    positions = {str(grid["variant"].iloc[i]): float(values[i]) for i in order}
    ticks = sorted(set(positions.values()))
    log = bool(ticks[0] > 0 and ticks[-1] / ticks[0] >= LOG_X_SPAN)
    return positions, ticks, [f"{t:g}" for t in ticks], log


def _dodged(x: np.ndarray, offset: float, ticks: list[float], log: bool) -> np.ndarray:
    if log:
        span = math.log10(ticks[-1] / ticks[0])
        return np.asarray(x * 10 ** (offset * DODGE * span))
    span = (ticks[-1] - ticks[0]) if len(ticks) > 1 else 1.0
    return np.asarray(x + offset * DODGE * span)


def sweep_figure(points: pd.DataFrame, param: str) -> Figure:
    """One swept param: a panel per headline metric, the value (with its 95% interval as error bars)
    against the param's grid value, one line per model profile."""
    rows = points[points["sweep_param"] == param]
    metrics = _panel_metrics(points)
    models = model_order(rows["model"].astype(str))
    styles = profile_styles(models)
    with plot_style():
        fig = Figure(figsize=SWEEP_FIGSIZE, dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        ncols = 3
        axes: list[Axes] = list(fig.subplots(math.ceil(len(metrics) / ncols), ncols, squeeze=False).ravel())
        fig.suptitle(f"Sweep of {param} (95% CI)", fontweight="bold", fontsize=12)
        positions, ticks, tick_labels, log = _x_positions(rows)
        fig.supxlabel(f"{param}{' (log scale)' if log else ''}", fontsize=10)
        for ax, metric in zip(axes, metrics, strict=False):
            ax.set_title(f"{metric.label}", fontsize=10, fontweight="normal")
            ax.set_ylabel(metric.unit, fontsize=8)
            ax.tick_params(labelsize=8)
            chosen = rows[rows["metric"] == metric.name]
            if chosen.empty:
                no_data(ax, "no sessions")
                continue
            for k, model in enumerate(models):
                line = chosen[chosen["model"] == model]
                if line.empty:
                    continue
                line = line.assign(x=line["variant"].map(positions)).sort_values("x", kind="stable")
                value = line["value"].to_numpy(dtype=float)
                low = np.nan_to_num(value - line["ci_low"].to_numpy(dtype=float), nan=0.0).clip(min=0)
                high = np.nan_to_num(line["ci_high"].to_numpy(dtype=float) - value, nan=0.0).clip(min=0)
                x = _dodged(line["x"].to_numpy(dtype=float), k - (len(models) - 1) / 2, ticks, log)
                colour, marker, linestyle = styles[model]
                ax.errorbar(x, value, yerr=[low, high], color=colour, marker=marker, markersize=4,
                            linestyle=linestyle, linewidth=1.4, elinewidth=0.9, capsize=2.5, label=short_label(model))
            if log:
                ax.set_xscale("log")
            ax.set_xticks(ticks, tick_labels)
            ax.xaxis.set_minor_locator(NullLocator())
            ax.yaxis.set_major_formatter(_y_formatter(metric))
            if is_share(metric):
                # A little room below 0%, so a point at 0% keeps its whole marker.
                top = max(ax.get_ylim()[1], 0.01)
                ax.set_ylim(-0.03 * top, top)
        for ax in axes[len(metrics):]:
            ax.set_visible(False)
        handles = [Line2D([], [], color=styles[m][0], marker=styles[m][1], linestyle=cast(Any, styles[m][2]),
                          linewidth=1.4, label=short_label(m)) for m in models]
        if handles:
            fig.legend(handles=handles, loc="outside right upper", title="model profile", frameon=False)
    return fig


def draw_sweep_plots(points: pd.DataFrame, out_dir: str | Path) -> dict[str, Png]:
    """One PNG per swept param (:func:`sweep_plot_name`) bound for ``out_dir``, from :func:`sweep_points`,
    by param in param order; nothing is written. Equal points give byte-identical PNGs."""
    out = Path(out_dir)
    params = sorted(p for p in set(points["sweep_param"].astype(str)) if p) if not points.empty else []
    drawn: dict[str, Png] = {}
    for param in params:
        path = out / sweep_plot_name(param)
        while any(png.path == path for png in drawn.values()):  # two params that differ only in unsafe characters
            path = path.with_name(path.stem + "_.png")
        drawn[param] = Png(path, png_bytes(sweep_figure(points, param)))
    return drawn


def plot_sweep(points: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """Write :func:`draw_sweep_plots` into ``out_dir`` (created if missing); the paths in param order."""
    drawn = draw_sweep_plots(points, out_dir)
    if drawn:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    for png in drawn.values():
        write_atomically(png.path, png.data)
    return [png.path for png in drawn.values()]


# The page ------------------------------------------------------------------------------------------------

SWEEP_PAGE = "sweep"

HOW_TO_READ = {
    "page": "Every variant replayed the very same sessions, so the grid is paired throughout. A sweep is "
            "one-factor-at-a-time: a swept param moves while every other param of that strategy keeps its "
            "configured value, and the unswept strategies ran once per profile (the baselines below). "
            "Every number carries a 95% bootstrap interval (sessions resampled with replacement).",
    "grid": "One plot per swept param; one panel per headline metric; x is the param's value, one line per "
            "model profile (fixed colour per profile), error bars are 95% intervals. A flat line means the "
            "metric does not depend on the param in this range; lines that cross mean the best value "
            "depends on the model.",
    "ranking": "Each column is one model profile; each row one strategy variant. The cell holds the variant's "
               "rank by the metric under that profile (1 = best; equal values share a rank) and the value with "
               "its 95% interval. Rows are in the order of the first profile.",
    "stability": "Kendall's tau-b between two profiles' rankings: 1 is the same order, 0 unrelated, -1 reversed "
                 "(ties counted as tau-b does). A flip is a pair of variants in opposite order under two "
                 "profiles. It is significant when the two variants' 95% intervals are apart under both "
                 "profiles (a conservative test: overlapping intervals can still differ); other flips are "
                 "within noise and say little.",
}


@dataclass(frozen=True)
class SweepData:
    """Everything the sweep page shows."""

    run_dir: Path
    run_id: str
    manifest: Manifest
    sessions: pd.DataFrame
    points: pd.DataFrame
    ranks: pd.DataFrame
    stability: RankingStability
    #: Swept param -> its drawn PNG and where it goes (``plots/sweep-<param>.png``).
    plots: dict[str, Png]


def collect_sweep(run_dir: str | Path | OpenRun, *, metric: str = SUCCESS, plots_dir: Path | None = None,
                  headline: pd.DataFrame | None = None, sessions: pd.DataFrame | None = None) -> SweepData:
    """The sweep page's frames for a run directory; plots drawn, bound for ``plots_dir``, when given.
    Reads only; ``sessions`` (the run's, as :meth:`reports.inputs.OpenRun.sessions` reads them) and
    ``headline`` save reading and computing them again when the caller has them."""
    run = run_dir if isinstance(run_dir, OpenRun) else open_run_dir(run_dir)
    sessions = (run.sessions(REPORT_COLUMNS, optional=(*SWEEP_COLUMNS, *OPTIONAL_STATS_COLUMNS)) if sessions is None
                else sessions)
    head = _headline(sessions, headline, DEFAULT_RESAMPLES, DEFAULT_SEED, CONFIDENCE)
    points = sweep_points(sessions, headline=head)
    ranks = ranking(sessions, metric, headline=head)
    plots = draw_sweep_plots(points, plots_dir) if plots_dir is not None else {}
    return SweepData(run.path, run.run_id, run.manifest, sessions, points, ranks, ranking_stability(ranks), plots)


def sweep_files(run: OpenRun, formats: Iterable[str] = FORMATS, *, metric: str = SUCCESS,
                sessions: pd.DataFrame | None = None,
                headline: pd.DataFrame | None = None) -> tuple[dict[Path, bytes], dict[Path, bytes]]:
    """The sweep page's files, drawn and rendered but not written: (pages, plots), each path -> bytes."""
    chosen = check_formats(formats)
    data = collect_sweep(run, metric=metric, plots_dir=run.path / PLOTS_DIR, headline=headline, sessions=sessions)
    pages = {}
    if "html" in chosen:
        pages[run.path / f"{SWEEP_PAGE}.html"] = render_sweep_html(data).encode()
    if "md" in chosen:
        pages[run.path / f"{SWEEP_PAGE}.md"] = render_sweep_markdown(data).encode()
    return pages, {png.path: png.data for png in data.plots.values()}


def write_sweep_page(run_dir: str | Path, formats: Iterable[str] = FORMATS, *, metric: str = SUCCESS,
                     headline: pd.DataFrame | None = None) -> list[Path]:
    """Write ``plots/sweep-*.png`` and ``sweep.html`` / ``sweep.md`` into ``run_dir`` as one set
    (:func:`reports.outputs.write_files`); returns the page files written. ``headline`` is
    :func:`reports.stats.headline` of the run's sessions if the caller has it already; ``metric`` is what
    the ranking orders by."""
    chosen = check_formats(formats)
    run = open_run_dir(run_dir)
    pages, plots = sweep_files(run, chosen, metric=metric, headline=headline)
    write_files(run.path, plots | pages)
    return list(pages)


# What the page is made of ----------------------------------------------------------------------------------


def _manifest_variants(data: SweepData) -> pd.DataFrame:
    """The run's variants from the manifest (config order), else from the sessions."""
    listed = data.manifest.variants
    if listed:
        frame = pd.DataFrame(listed)
        for column, default in (("model", ""), ("sweep_param", ""), ("name", ""), ("sweep_value", np.nan)):
            if column not in frame:
                frame[column] = default
        frame["sweep_value"] = pd.to_numeric(frame["sweep_value"], errors="coerce")
        frame["variant"] = [variant_name(str(label), str(m)) for label, m in
                            zip(frame["label"], frame["model"].fillna(""), strict=True)]
        return frame
    table = variant_table(data.sessions)
    table["name"] = ""
    table["label"] = table["strategy"]
    return table


def swept_table(data: SweepData) -> Table:
    """What the grid is made of: each swept param's values, the unswept strategies, the profiles."""
    variants = _manifest_variants(data)
    rows = []
    swept = variants[variants["sweep_param"].fillna("") != ""]
    for param, group in swept.groupby("sweep_param", sort=True):
        values = list(dict.fromkeys(_value_text(str(v)) for v in group["variant"]))
        rows.append([Cell(str(param), css="name"), Cell(", ".join(values)),
                     Cell(f"{len(values)} values x {group['model'].nunique()} profiles")])
    unswept = list(dict.fromkeys(variants.loc[variants["sweep_param"].fillna("") == "", "variant"].astype(str)))
    if unswept:
        rows.append([Cell("(unswept: run once per profile)", css="name"), Cell(", ".join(unswept)),
                     Cell(f"{len(unswept)} strategies")])
    models = list(dict.fromkeys(variants["model"].astype(str)))
    rows.append([Cell("model profiles", css="name"), Cell(", ".join(models)), Cell(f"{len(models)} profiles")])
    rows.append([Cell("variants", css="name"), Cell(f"{len(variants)}"),
                 Cell(f"{data.sessions[stats.SCRIPT_KEY].drop_duplicates().shape[0] if not data.sessions.empty else 0}"
                      " sessions each")])
    return Table("swept-table", ["swept", "values", "size"], rows, numeric=False)


def _metric_cells(rows: pd.DataFrame, metrics: list[Metric]) -> list[Cell]:
    indexed = rows.set_index("metric")
    cells = []
    for metric in metrics:
        if metric.name not in indexed.index:
            cells.append(Cell("n/a"))
            continue
        cells.append(headline_cell(metric, indexed.loc[metric.name]))
    return cells


def points_table(data: SweepData, param: str) -> Table:
    """One swept param's grid: a row per (value, model), a column per metric."""
    rows = data.points[data.points["sweep_param"] == param]
    metrics = _panel_metrics(data.points)
    header = ["value", "model", *(m.label for m in metrics)]
    body = []
    for (variant, model), group in rows.groupby(["variant", "model"], sort=False):
        body.append([Cell(_value_text(str(variant)), css="name"), Cell(str(model)), *_metric_cells(group, metrics)])
    return Table(f"points-{sweep_plot_name(param).removesuffix('.png')}", header, body)


def baselines_table(data: SweepData) -> Table:
    """The unswept variants' metrics, a row per (strategy, model): what the grid is read against."""
    rows = data.points[data.points["sweep_param"] == ""]
    metrics = _panel_metrics(data.points)
    header = ["strategy", "model", *(m.label for m in metrics)]
    body = [[Cell(str(variant), css="name"), Cell(str(model)), *_metric_cells(group, metrics)]
            for (variant, model), group in rows.groupby(["variant", "model"], sort=False)]
    return Table("baselines-table", header, body)


def ranking_table(data: SweepData) -> Table:
    """A row per variant (in the first profile's order), a column per profile: rank, value and interval."""
    ranks = data.ranks
    metric = METRICS[str(ranks["metric"].iloc[0])] if not ranks.empty else METRICS[SUCCESS]
    models = model_order(ranks["model"].astype(str)) if not ranks.empty else []
    order = list(dict.fromkeys(ranks["variant"].astype(str)))
    indexed = ranks.set_index(["model", "variant"]) if not ranks.empty else None
    body = []
    for variant in order:
        row = [Cell(variant, css="name")]
        for model in models:
            if indexed is None or (model, variant) not in indexed.index:
                row.append(Cell("n/a"))
                continue
            r = indexed.loc[(model, variant)]
            rank = f"#{int(r['rank'])}" if np.isfinite(r["rank"]) else "n/a"
            row.append(Cell(rank, note=format_value(metric, float(r["value"])),
                            sub=format_interval(metric, float(r["ci_low"]), float(r["ci_high"]))))
        body.append(row)
    return Table("ranking-table", ["variant", *models], body)


def tau_table(data: SweepData) -> Table:
    """Kendall's tau-b of the ranking between every two profiles, as a matrix."""
    matrix = data.stability.tau_matrix()
    body = [[Cell(str(a), css="name"),
             *(Cell(f"{matrix.loc[a, b]:+.2f}" if np.isfinite(matrix.loc[a, b]) else "n/a") for b in matrix.columns)]
            for a in matrix.index]
    return Table("tau-table", ["tau-b", *map(str, matrix.columns)], body)


def pairs_table(data: SweepData) -> Table:
    """A row per pair of profiles: variants ranked under both, tau-b, flips and significant flips."""
    body = [[Cell(f"{r.model_a} vs {r.model_b}", css="name"), Cell(str(r.variants)),
             Cell(f"{r.tau:+.2f}" if np.isfinite(r.tau) else "n/a"), Cell(str(r.flips)), Cell(str(r.significant_flips))]
            for r in data.stability.tau.itertuples(index=False)]
    return Table("pairs-table", ["profiles", "variants", "tau-b", "flips", "significant flips"], body)


def flips_table(data: SweepData) -> Table:
    """A row per significant flip: which variant is ahead under each of the two profiles."""
    metric = METRICS.get(data.stability.metric, METRICS[SUCCESS])
    body = [[Cell(f"{r.model_a} vs {r.model_b}", css="name"),
             Cell(f"{r.better_a} ahead of {r.better_b}",
                  sub=f"{format_value(metric, r.better_a_in_a)} vs {format_value(metric, r.better_b_in_a)}"),
             Cell(f"{r.better_b} ahead of {r.better_a}",
                  sub=f"{format_value(metric, r.better_b_in_b)} vs {format_value(metric, r.better_a_in_b)}")]
            for r in data.stability.significant_flips.itertuples(index=False)]
    return Table("flips-table", ["profiles", "under the first", "under the second"], body, numeric=False)


def _counts_line(data: SweepData) -> str:
    flips = data.stability.flips
    significant = int(flips["significant"].sum()) if not flips.empty else 0
    return (f"{len(flips)} flips across {len(data.stability.tau)} pairs of profiles; {significant} significant, "
            f"{len(flips) - significant} within noise.")


def _subtitle(data: SweepData) -> str:
    variants = _manifest_variants(data)
    sessions = data.sessions[stats.SCRIPT_KEY].drop_duplicates().shape[0] if not data.sessions.empty else 0
    return (f"{len(variants)} variants over {variants['model'].nunique()} model profiles, each replaying the same "
            f"{sessions} sessions; ranked by {METRICS.get(data.stability.metric, METRICS[SUCCESS]).label}.")


# HTML --------------------------------------------------------------------------------------------------------


def render_sweep_html(data: SweepData) -> str:
    """``sweep.html``: self-contained like the report (inline CSS, plots as data URIs)."""
    parts = [
        *page_start(f"ctxbench sweep: {data.run_id}"),
        f'<p class="subtitle">{escape(_subtitle(data))} The full report of every variant: '
        '<a href="report.html">report.html</a>.</p>',
        how_box(HOW_TO_READ["page"]),
        '<section id="swept">', "<h2>What was swept</h2>", html_table(swept_table(data)), "</section>",
        '<section id="grid">', "<h2>Each swept param</h2>", how_box(HOW_TO_READ["grid"]),
    ]
    if not data.plots and data.points.empty:
        parts.append("<p>No sessions in this run.</p>")
    for param in sorted(p for p in set(data.points["sweep_param"].astype(str)) if p):
        anchor = sweep_plot_name(param).removesuffix(".png")
        parts.append(f'<h3 id="{escape(anchor)}">{escape(param)}</h3>')
        if param in data.plots:
            parts.append(f'<figure><img alt="{escape(param)} against every headline metric" '
                         f'src="{data_uri(data.plots[param].data)}"></figure>')
        parts.append(html_table(points_table(data, param)))
    baselines = baselines_table(data)
    if baselines.rows:
        parts += ["<h3>Unswept variants (baselines)</h3>", html_table(baselines)]
    parts.append("</section>")
    parts += ['<section id="ranking">', "<h2>Ranking per profile</h2>", how_box(HOW_TO_READ["ranking"]),
              html_table(ranking_table(data)), "</section>"]
    parts += ['<section id="stability">', "<h2>Ranking stability across profiles</h2>",
              how_box(HOW_TO_READ["stability"])]
    if data.stability.tau.empty:
        parts.append("<p>Only one model profile in this run: no ranking to compare with.</p>")
    else:
        parts += [html_table(tau_table(data)), html_table(pairs_table(data)), f"<p>{escape(_counts_line(data))}</p>"]
        flips = flips_table(data)
        parts.append("<h3>Significant flips</h3>")
        parts.append(html_table(flips) if flips.rows else "<p>None: every flip is within noise.</p>")
    parts += ["</section>", *PAGE_END]
    return "\n".join(parts)


# Markdown ----------------------------------------------------------------------------------------------------


def render_sweep_markdown(data: SweepData) -> str:
    """``sweep.md``: the same tables as the HTML, with links to ``plots/sweep-*.png``."""
    out = [f"# ctxbench sweep: {data.run_id}", "", f"{_subtitle(data)} The full report: [report.md](report.md).", "",
           md_how(HOW_TO_READ["page"]), "",
           "## What was swept", "", md_table(swept_table(data)), "",
           "## Each swept param", "", md_how(HOW_TO_READ["grid"]), ""]
    for param in sorted(p for p in set(data.points["sweep_param"].astype(str)) if p):
        out += [f"### {param}", ""]
        if param in data.plots:
            rel = data.plots[param].path.resolve().relative_to(data.run_dir.resolve()).as_posix()
            out += [f"![{param}]({rel})", ""]
        out += [md_table(points_table(data, param)), ""]
    baselines = baselines_table(data)
    if baselines.rows:
        out += ["### Unswept variants (baselines)", "", md_table(baselines), ""]
    out += ["## Ranking per profile", "", md_how(HOW_TO_READ["ranking"]), "",
            md_table(ranking_table(data)), "",
            "## Ranking stability across profiles", "", md_how(HOW_TO_READ["stability"]), ""]
    if data.stability.tau.empty:
        out += ["Only one model profile in this run: no ranking to compare with.", ""]
    else:
        out += [md_table(tau_table(data)), "", md_table(pairs_table(data)), "", _counts_line(data), "",
                "### Significant flips", ""]
        flips = flips_table(data)
        out += [md_table(flips) if flips.rows else "None: every flip is within noise.", ""]
    return "\n".join(out)


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
