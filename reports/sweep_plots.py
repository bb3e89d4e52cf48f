"""The sweep page's plots: one figure per swept param, a panel per headline metric, the value with its
95% interval against the param's grid value, one line per model profile (a fixed colour and marker per
built-in profile, so a profile looks the same in every sweep plot).

Drawn from :func:`reports.sweep_stats.sweep_points`; nothing here computes a statistic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
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
from reports.outputs import Png
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
from reports.stats import Metric
from reports.sweep_stats import PROFILE_ORDER, grid_value_text, model_order, panel_metrics
from reports.tables import is_share

__all__ = ["DODGE", "LOG_X_SPAN", "SWEEP_FIGSIZE", "draw_sweep_plots", "plot_sweep", "profile_styles", "sweep_figure",
           "sweep_plot_name"]

#: Sweep plots are a grid of one panel per metric: taller than the report's single-axes plots.
SWEEP_FIGSIZE = (12.0, 9.0)
#: A swept param whose largest value is at least this many times its smallest gets a log x axis.
LOG_X_SPAN = 8.0
#: Models' points at one grid value are spread this share of the axis apart, so error bars do not hide
#: each other.
DODGE = 0.012


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



def sweep_plot_name(param: str) -> str:
    """The PNG file name of a swept param's plot: ``sweep-<param>.png`` with anything but letters,
    digits, ``.``, ``_`` and ``-`` replaced by ``_``."""
    return f"sweep-{re.sub(r'[^A-Za-z0-9._-]+', '_', param).strip('.') or '_'}.png"



def _y_formatter(metric: Metric) -> FuncFormatter | PercentFormatter:
    if is_share(metric):
        return PercentFormatter(1.0)
    if metric.unit == "tokens":
        return FuncFormatter(thousands)
    if metric.unit == "USD":
        return FuncFormatter(lambda v, _p: f"${v:,.3g}")
    return FuncFormatter(lambda v, _p: f"{v:,.4g}")



def _x_positions(rows: pd.DataFrame) -> tuple[dict[str, float], list[float], list[str], bool]:
    """(x per variant, tick positions, tick labels, log scale) for one param's rows. Numbers go on a
    numeric axis (log when they span LOG_X_SPAN or more); text and booleans go at 0, 1, 2, ..."""
    grid = rows.drop_duplicates("variant")[["variant", "sweep_value"]]
    values = grid["sweep_value"].to_numpy(dtype=float)
    if grid.empty or not np.isfinite(values).all():
        names = list(grid["variant"])
        return ({v: float(i) for i, v in enumerate(names)}, [float(i) for i in range(len(names))],
                [grid_value_text(v) for v in names], False)
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
    metrics = panel_metrics(points)
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
