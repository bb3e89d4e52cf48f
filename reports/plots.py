"""The report's plots: PNG figures of token use, latency, tool-syntax errors, cost against success and
outcomes per strategy, drawn from a run's ``sessions`` and ``calls`` tables only.

Every plot function takes the tables (and optionally the strategy styles) and returns a matplotlib
``Figure`` without saving it, so a caller or a test can inspect it; :func:`save_png` writes one and
:func:`write_plots` draws and writes all of them. Figures are built with the object-oriented API on the
Agg canvas: no pyplot, no global figure registry, no window, and importing this module does not switch
the backend of a notebook that happens to import it.
"""

from __future__ import annotations

import io
import math
import signal
import threading
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import matplotlib
import matplotlib.style
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, LogFormatter, PercentFormatter
from matplotlib.transforms import Bbox

from harness.core.files import write_atomically
from harness.core.tables import OUTCOMES
from reports.decision import FRONT_X, FRONT_Y, pareto_front
from reports.stats import headline as compute_headline
from reports.stats import outcome_shares, wilson_interval

#: Fixed size and resolution: every PNG of every run has the same pixel size (990 x 550), but for small
#: multiples of more than :data:`PANEL_ROWS` rows, which grow by :data:`PANEL_ROW_HEIGHT` a row.
FIGSIZE = (9.0, 5.0)
DPI = 110
#: The rows of panels the fixed figure height holds (twenty strategies, five a row); past that each row
#: adds this many inches, so a sweep's seventy panels keep a readable size instead of collapsing to
#: nothing (constrained layout gives up on such a figure and leaves the panels overlapping).
PANEL_ROWS = 4
PANEL_ROW_HEIGHT = 1.1

#: Okabe & Ito (2008), the colour-blind-safe qualitative palette, most distinct colours first, for the
#: outcomes and the calibration and sweep plots (which name a few fixed things). Its yellow (#F0E442) is
#: left out here: a thin yellow line all but vanishes on white. It still fills an outcome's bar.
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000")
#: Paul Tol's "muted" qualitative scheme, for strategies: nine colours that stay distinct for the common
#: colour-vision deficiencies (P. Tol, "Colour Schemes", SRON/EPS/TN/09-002, https://personal.sron.nl/~pault/,
#: "Qualitative colour schemes"), two more than Okabe-Ito without its yellow, so a run of nine strategies
#: has no two alike. Its pale grey for bad data (#DDDDDD) is left out: grey draws the other strategies.
#: The order is Tol's colours re-ranked so that any first k are as far apart as they can be: each next
#: one the farthest (CIELAB distance, the least under normal and simulated protan, deutan and tritan
#: vision, Machado et al. 2009) from those before, the two pale ones (sand, pale cyan: under 2:1 contrast
#: on white) last, so they appear only from the eighth strategy on.
TOL_MUTED = ("#332288", "#CC6677", "#999933", "#882255", "#117733", "#AA4499", "#44AA99", "#DDCC77", "#88CCEE")
#: Once the palette is used up, colours repeat with the next line style / hatch / marker, so two
#: strategies never share every visual channel. LINESTYLES, HATCHES and MARKERS are also the sweep
#: plots' channels.
LINESTYLES = ("-", "--", ":", "-.")
HATCHES = ("", "//", "..", "xx")
MARKERS = ("o", "s", "^", "D")
#: A strategy's marker is the n-th of these in the n-th pass through :data:`TOL_MUTED`: filled shapes
#: (a colour reads on a filled shape, not on a thin cross), the easiest to tell apart first. With 12
#: shapes and 9 colours, 108 strategies get a pair of their own; past that, stars with ever more points.
STRATEGY_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p", "h", "*")

#: A matplotlib marker: a name (``"o"``) or a (points, style, angle) tuple (style 1: a star).
Marker = str | tuple[int, int, int]

#: Outcome order and colours for the outcome mix: success first (green), then failures by kind
#: (`harness.core.tables.OUTCOMES`).
OUTCOME_ORDER: tuple[str, ...] = OUTCOMES
OUTCOME_STYLE: dict[str, tuple[str, str]] = {
    "success": ("#009E73", ""),
    "wrong_answer": ("#E69F00", ""),
    "stuck": ("#D55E00", ""),
    "overflow": ("#CC79A7", ""),
    "throttled": ("#56B4E9", ""),
    "blocked": ("#0072B2", ""),
    "budget_exceeded": ("#F0E442", ""),
    "step_failed": ("#999999", ""),
    "max_turns": ("#000000", ""),
    "error": ("#999999", "//"),
}

#: Context-size buckets for the syntax-error plot (input tokens of the call, K = 1,000).
CONTEXT_BUCKETS: tuple[tuple[int, float, str], ...] = (
    (0, 8_000, "0–8K"),
    (8_000, 16_000, "8–16K"),
    (16_000, 32_000, "16–32K"),
    (32_000, 64_000, "32–64K"),
    (64_000, 128_000, "64–128K"),
    (128_000, math.inf, "128K+"),
)
#: A bucket's error rate is drawn only from this many agent calls up: a rate over three calls is noise.
MIN_CALLS_PER_BUCKET = 20
#: A turn's median and quartiles are drawn only while at least this share of the strategy's sessions
#: is still running; past that the line follows a few long sessions and jumps around.
MIN_SESSION_SHARE_PER_TURN = 0.25

PLOT_NAMES = ("context_tokens_by_turn", "ecdf_input_tokens", "ecdf_latency", "syntax_errors_by_context",
              "cost_vs_success", "outcome_mix", "tokens_freed")

#: The rcParams every figure is drawn with, on top of matplotlib's defaults: a user's matplotlibrc
#: or an active style must not change the PNG bytes.
_RC: dict[str, Any] = {
    "font.size": 10,
    "axes.titlesize": 12,
    "axes.titleweight": "bold",
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    # Strategy labels are the user's text: "$x", "a$b$c" or "$\frac{a}$" must be drawn as written, not
    # parsed as mathtext (which draws something else, or raises on a bad expression while saving).
    "text.parse_math": False,
}


@dataclass(frozen=True, slots=True)
class StrategyStyle:
    """How one strategy is drawn in every plot of a report."""

    colour: str
    linestyle: str
    hatch: str
    marker: Marker


def strategy_styles(names: Iterable[str]) -> dict[str, StrategyStyle]:
    """Colour, line style, hatch and marker per strategy, assigned by sorted strategy name.

    The first :data:`TOL_MUTED` strategies get a colour each; past that colours repeat, each pass
    through the palette with its own marker, line style and hatch, so no two strategies share a
    (colour, marker) pair, and two of one colour also differ in line style within four passes. The same
    set of names always gets the same styles whatever order the names arrive in; adding a strategy only
    moves the strategies that sort after it.
    """
    styles = {}
    for i, name in enumerate(sorted(set(names))):
        cycle = i // len(TOL_MUTED)
        styles[name] = StrategyStyle(
            colour=TOL_MUTED[i % len(TOL_MUTED)],
            linestyle=LINESTYLES[cycle % len(LINESTYLES)],
            hatch=HATCHES[cycle % len(HATCHES)],
            marker=_strategy_marker(cycle),
        )
    return styles


def _strategy_marker(cycle: int) -> Marker:
    """The marker of the ``cycle``-th pass through the palette (:data:`STRATEGY_MARKERS`)."""
    if cycle < len(STRATEGY_MARKERS):
        return STRATEGY_MARKERS[cycle]
    # Six points and up: a five-pointed star is "*" already.
    return (cycle - len(STRATEGY_MARKERS) + 6, 1, 0)


def strategy_colours(names: Iterable[str]) -> dict[str, str]:
    """Hex colour per strategy (Tol's muted, by sorted strategy name); see :func:`strategy_styles`."""
    return {name: style.colour for name, style in strategy_styles(names).items()}


def strategies_of(*frames: pd.DataFrame) -> list[str]:
    """Sorted union of the ``strategy`` columns of the frames, so every plot of a report shares one map."""
    names: set[str] = set()
    for frame in frames:
        if "strategy" in frame.columns:
            names.update(str(s) for s in frame["strategy"].unique())
    return sorted(names)


# --------------------------------------------------------------------------------------------------- helpers


@contextmanager
def plot_style() -> Iterator[None]:
    """Draw (and save) inside this to get the reports' fixed look whatever the user's matplotlibrc:
    every figure of every reports module is made under it."""
    # "default" resets every rcParam to matplotlib's defaults before ours apply (see _RC).
    with matplotlib.style.context("default"), matplotlib.rc_context(cast(Any, _RC)), warnings.catch_warnings():
        # A label in a script the bundled font lacks (CJK, say) is drawn with a box per missing glyph;
        # matplotlib's warning, once per glyph each time a text is measured (a layout, a name placed) or
        # drawn, would bury the command's own output.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font", category=UserWarning)
        yield


def new_figure() -> tuple[Figure, Axes]:
    """A figure of the fixed report size on the Agg canvas (no pyplot), with one axes."""
    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    return fig, ax


def _styles_for(frames: Sequence[pd.DataFrame], styles: dict[str, StrategyStyle] | None) -> dict[str, StrategyStyle]:
    if styles is not None:
        return styles
    return strategy_styles(strategies_of(*frames))


def _has(frame: pd.DataFrame, *columns: str) -> bool:
    return not frame.empty and all(c in frame.columns for c in columns)


def no_data(ax: Axes, message: str) -> None:
    """Say ``message`` in the middle of an empty ``ax`` instead of drawing empty axes."""
    ax.text(0.5, 0.5, message, transform=ax.transAxes, ha="center", va="center", color="#555555")
    ax.set_xticks([])
    ax.set_yticks([])


def _legend(fig: Figure, ax: Axes, title: str = "strategy") -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        # Outside the axes: with up to ten strategies an inside legend always covers some data.
        fig.legend(handles, labels, loc="outside right upper", title=title, frameon=False)


class LogMinorFormatter(LogFormatter):
    """The labels of a log axis's minor ticks, on the ticks matplotlib labels (none over several decades,
    a few over one or two, all within one), written by ``fmt`` as the major ticks are. matplotlib's own
    minor labels are mathtext ("$\\mathdefault{3\\times10^{4}}$"), which the reports' style
    (``text.parse_math`` off) would print as written: long raw strings that run into each other."""

    def __init__(self, fmt: Callable[[float, int], str]) -> None:
        super().__init__(labelOnlyBase=False)
        self._fmt = fmt

    def __call__(self, x: float, pos: int | None = None) -> str:
        return self._fmt(x, pos or 0) if super().__call__(x, pos) else ""


def log_ticks(axis: Axis, fmt: Callable[[float, int], str]) -> None:
    """Label a log-scaled ``axis`` with ``fmt``: its major ticks, and the minor ticks matplotlib would label
    (:class:`LogMinorFormatter`). Call it after ``set_xscale("log")``, which resets the formatters."""
    axis.set_major_formatter(FuncFormatter(fmt))
    axis.set_minor_formatter(LogMinorFormatter(fmt))


def thousands(value: float, _pos: int) -> str:
    """A tick formatter (for ``FuncFormatter``): 1500 -> "1.5K", 2000000 -> "2M"."""
    if abs(value) >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if abs(value) >= 1_000:
        return f"{value / 1_000:g}K"
    return f"{value:g}"


#: Longer strategy names are shortened in legends, panel titles and tick labels, so a third-party
#: strategy with a very long name cannot squeeze the plotting area to nothing.
MAX_LABEL = 28


def short_label(name: str, limit: int = MAX_LABEL) -> str:
    """``name`` cut to ``limit`` characters (an ellipsis marks the cut) for a legend, title or tick label.

    A name starting with ``_`` gets a space before it: matplotlib's legend silently leaves out every
    entry whose label starts with an underscore (its "no legend" mark).
    """
    shown = name if len(name) <= limit else name[:limit - 1] + "…"
    return " " + shown if shown.startswith("_") else shown


def _style_kw(style: StrategyStyle) -> dict[str, Any]:
    return {"color": style.colour, "linestyle": style.linestyle}


# ----------------------------------------------------------------------------------------------------- plots


def _panel_grid(n: int) -> tuple[int, int]:
    """(rows, columns) for n small multiples in the fixed landscape figure."""
    if n <= 4:
        return 1, max(n, 1)
    if n <= 10:
        return 2, math.ceil(n / 2)
    return math.ceil(n / 5), 5


def _panel_figure(n: int) -> tuple[Figure, list[Axes]]:
    """A figure of the fixed report size with ``n`` small multiples on shared axes (:func:`_panel_grid`),
    taller by :data:`PANEL_ROW_HEIGHT` for each row past :data:`PANEL_ROWS`; the panels past ``n`` are
    hidden."""
    rows, cols = _panel_grid(n)
    height = FIGSIZE[1] + PANEL_ROW_HEIGHT * max(rows - PANEL_ROWS, 0)
    fig = Figure(figsize=(FIGSIZE[0], height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = list(fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False).ravel())
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes


#: The calls columns :func:`turn_curves` reads.
_TURN_COLUMNS = ("strategy", "scenario", "session_index", "call_index", "call_kind", "context_tokens")


def _has_agent_turns(calls: pd.DataFrame) -> bool:
    """Whether ``calls`` has the columns :func:`turn_curves` reads and an agent call."""
    return _has(calls, *_TURN_COLUMNS) and bool((calls["call_kind"] == "agent").any())


def _codes(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(codes, values): ``column`` as integer codes into its distinct values, sorted."""
    codes, values = pd.factorize(column, sort=True)
    return codes, np.asarray(values)


def _grouped_order(*keys: np.ndarray) -> np.ndarray:
    """The stable order that sorts rows by ``keys`` (non-negative integers, the first most significant):
    one integer key sorted when the keys fit in one (a radix sort when that fits 16 bits), else a
    lexsort."""
    spans = [int(key.max()) + 1 if key.size else 1 for key in keys]
    if math.prod(spans) >= 2**62:
        return np.lexsort(keys[::-1])
    combined = np.zeros(len(keys[0]), dtype=np.int64)
    for key, span in zip(keys, spans, strict=True):
        combined = combined * span + key
    if math.prod(spans) <= 2**16:
        combined = combined.astype(np.uint16)
    return np.argsort(combined, kind="stable")


def _starts(*keys: np.ndarray) -> np.ndarray:
    """The rows where any of ``keys`` differs from the row before (and the first row)."""
    first = np.zeros(len(keys[0]), dtype=bool)
    first[:1] = True
    for key in keys:
        first[1:] |= key[1:] != key[:-1]
    return np.flatnonzero(first)


def turn_curves(calls: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per strategy (by name), the context tokens of its agent calls per turn (a call's position among
    the agent calls of its session, by ``call_index``): ``median``, ``q1``, ``q3`` and ``n`` (calls)
    indexed by turn, for the turns at least :data:`MIN_SESSION_SHARE_PER_TURN` of its sessions reach.
    The median is pandas' groupby median and the quartiles ``Series.quantile``'s (numpy's linear
    interpolation), on arrays grouped by one sort: two million calls take a fraction of a second."""
    agent = (calls["call_kind"] == "agent").to_numpy(dtype=bool, na_value=False)
    strategy, names = _codes(calls["strategy"])
    scenario, _ = _codes(calls["scenario"])
    session_index = calls["session_index"].to_numpy()
    strategy, scenario, session_index, call_index, tokens = (
        strategy[agent], scenario[agent], session_index[agent], calls["call_index"].to_numpy()[agent],
        calls["context_tokens"].to_numpy()[agent])
    # A session's agent calls in call_index order (ties in table order, as a stable sort leaves them).
    keys = [strategy, scenario, session_index - session_index.min(initial=0), call_index - call_index.min(initial=0)]
    order = _grouped_order(*keys)
    strategy, scenario, session_index, tokens = (a[order] for a in (strategy, scenario, session_index, tokens))
    starts = _starts(strategy, scenario, session_index)
    turn = np.arange(len(order)) - np.repeat(starts, np.diff(np.append(starts, len(order)))) + 1
    sessions = np.bincount(strategy[starts], minlength=len(names))
    # Grouped by (strategy, turn); numpy's quantile needs no order within a group.
    order = _grouped_order(strategy, turn)
    strategy, turn, tokens = strategy[order], turn[order], tokens[order]
    bounds = np.append(_starts(strategy, turn), len(order))
    sizes = np.diff(bounds)
    group_strategy, group_turn = strategy[bounds[:-1]], turn[bounds[:-1]]
    medians = pd.Series(tokens).groupby(np.repeat(np.arange(len(sizes)), sizes)).median().to_numpy()
    curves: dict[str, pd.DataFrame] = {}
    for code, name in enumerate(names):
        if not sessions[code]:
            continue
        least = max(1, math.ceil(MIN_SESSION_SHARE_PER_TURN * int(sessions[code])))
        kept = np.flatnonzero((group_strategy == code) & (sizes >= least))
        quartiles = [_quartiles(tokens[bounds[g]:bounds[g + 1]]) for g in kept]
        curves[str(name)] = pd.DataFrame(
            {"median": medians[kept], "q1": [q[0] for q in quartiles], "q3": [q[1] for q in quartiles],
             "n": sizes[kept]}, index=pd.Index(group_turn[kept], name="turn"))
    return curves


def _quartiles(values: np.ndarray) -> tuple[float, float]:
    """``Series.quantile(0.25)`` and ``(0.75)`` of ``values``: numpy's quantile (which pandas calls,
    one quantile at a time; numpy interpolates each of several the same way) without the NaNs, NaN
    when nothing is left."""
    if values.dtype.kind == "f":
        values = values[~np.isnan(values)]
    if not values.size:
        return float("nan"), float("nan")
    q1, q3 = np.quantile(values, np.array([0.25, 0.75]))
    return float(q1), float(q3)


def context_tokens_by_turn(calls: pd.DataFrame, *,
                           styles: dict[str, StrategyStyle] | None = None) -> Figure:
    """Context tokens of each agent call against its turn (its position among the agent calls of its
    session): the median over sessions as a line and the inter-quartile range as a band, one panel
    per strategy, with the other strategies' medians in grey behind for comparison."""
    styles = _styles_for([calls], styles)
    title = "Context size per agent call, by turn"
    xlabel = "turn (n-th agent call of the session)"
    ylabel = "context tokens per call (tokens)"
    with plot_style():
        if not _has_agent_turns(calls):
            fig, ax = new_figure()
            fig.suptitle(title, fontweight="bold", fontsize=12)
            fig.supxlabel(xlabel, fontsize=10)
            fig.supylabel(ylabel, fontsize=10)
            no_data(ax, "no agent calls in this run")
            return fig
        curves = turn_curves(calls)
        # One panel per strategy: with ten overlapping inter-quartile bands a single axes is unreadable.
        fig, axes = _panel_figure(len(curves))
        for ax, (strategy, stats) in zip(axes, curves.items(), strict=False):
            for other, other_stats in curves.items():
                if other != strategy:
                    ax.plot(other_stats.index.to_numpy(), other_stats["median"].to_numpy(), color="#BBBBBB",
                            linewidth=0.7)
            style = styles[strategy]
            turns = stats.index.to_numpy()
            ax.fill_between(turns, stats["q1"].to_numpy(), stats["q3"].to_numpy(), color=style.colour,
                            alpha=0.25, linewidth=0)
            ax.plot(turns, stats["median"].to_numpy(), linewidth=1.8, **_style_kw(style))
            # Five panels a row leave about 150 px per title: regular weight and a shorter cut.
            ax.set_title(short_label(strategy, 22), fontsize=9, fontweight="normal")
            ax.tick_params(labelsize=8)
        axes[0].set_xlim(left=1)
        axes[0].set_ylim(bottom=0)
        axes[0].yaxis.set_major_formatter(FuncFormatter(thousands))
        fig.suptitle(title, fontweight="bold", fontsize=12)
        fig.supxlabel(xlabel, fontsize=10)
        fig.supylabel(ylabel, fontsize=10)
        key = [Line2D([], [], color="#333333", linewidth=1.8, label="median over\nsessions"),
               Patch(color="#333333", alpha=0.25, linewidth=0, label="25–75% of\nsessions"),
               Line2D([], [], color="#BBBBBB", linewidth=0.7, label="other\nstrategies'\nmedians")]
        # On the right: constrained layout does not keep a top or bottom figure legend clear of the
        # suptitle / supxlabel.
        fig.legend(handles=key, loc="outside right upper", frameon=False, fontsize=8, labelspacing=1.0)
    return fig


def three_digits(value: float) -> str:
    """A number in three significant digits with K or M: 329922 -> "330K", 1138700 -> "1.14M"."""
    for scale, suffix in ((1_000_000, "M"), (1_000, "K")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def _ecdf(sessions: pd.DataFrame, column: str, *, title: str, xlabel: str, empty: str,
          styles: dict[str, StrategyStyle] | None, log_x: bool,
          x_format: Callable[[float, int], str], median_format: Callable[[float], str]) -> Figure:
    """Small multiples of the ECDF of ``column``: one panel per strategy on shared axes, its curve in
    colour over the other strategies' in grey, panels ordered by median (lowest first). With ten
    strategies on one axes the curves cross and hide each other; a panel each keeps every curve
    readable and the grey ones still place it among the rest."""
    styles = _styles_for([sessions], styles)
    ylabel = "share of sessions at or below x"
    with plot_style():
        curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        if _has(sessions, "strategy", column):
            for strategy, group in sessions.groupby("strategy", sort=True):
                values = np.sort(group[column].to_numpy(dtype=float))
                values = values[np.isfinite(values)]
                if values.size:
                    # Start the step at share 0 so a single-session strategy still draws a visible step.
                    curves[str(strategy)] = (np.concatenate([values[:1], values]),
                                             np.concatenate([[0.0], np.arange(1, values.size + 1) / values.size]))
        if not curves:
            fig, ax = new_figure()
            fig.suptitle(title, fontweight="bold", fontsize=12)
            fig.supxlabel(xlabel, fontsize=10)
            fig.supylabel(ylabel, fontsize=10)
            no_data(ax, empty)
            return fig
        medians = {s: float(np.median(x[1:])) for s, (x, _y) in curves.items()}
        order = sorted(curves, key=lambda s: (medians[s], s))
        fig, axes = _panel_figure(len(order))
        for ax, strategy in zip(axes, order, strict=False):
            for other in order:
                if other != strategy:
                    ax.step(*curves[other], where="post", color="#BBBBBB", linewidth=0.7)
            style = styles[strategy]
            ax.step(*curves[strategy], where="post", linewidth=1.8, **_style_kw(style))
            ax.plot([medians[strategy]], [0.5], marker="o", markersize=4, color="#333333", linestyle="none")
            ax.set_title(short_label(strategy, 22), fontsize=9, fontweight="normal")
            ax.text(0.97, 0.05, f"median {median_format(medians[strategy])}", transform=ax.transAxes, ha="right",
                    va="bottom", fontsize=7, color="#333333")
            ax.tick_params(labelsize=8)
        # Token totals span decades across strategies (a window vs. unbounded); a log axis keeps the
        # small-context strategies from collapsing against the y axis.
        if log_x and all(x[0] > 0 for x, _y in curves.values()):
            axes[0].set_xscale("log")
            log_ticks(axes[0].xaxis, x_format)
        else:
            axes[0].xaxis.set_major_formatter(FuncFormatter(x_format))
        axes[0].set_ylim(0, 1.02)
        axes[0].yaxis.set_major_formatter(PercentFormatter(1.0))
        fig.suptitle(title, fontweight="bold", fontsize=12)
        fig.supxlabel(xlabel, fontsize=10)
        fig.supylabel(ylabel, fontsize=10)
        key = [Line2D([], [], color="#333333", linewidth=1.8, label="this panel's\nstrategy"),
               Line2D([], [], color="#BBBBBB", linewidth=0.7, label="other\nstrategies"),
               Line2D([], [], color="#333333", marker="o", markersize=4, linestyle="none", label="median")]
        fig.legend(handles=key, loc="outside right upper", frameon=False, fontsize=8, labelspacing=1.0)
    return fig


def ecdf_input_tokens(sessions: pd.DataFrame, *, styles: dict[str, StrategyStyle] | None = None) -> Figure:
    """ECDF of the input tokens billed per session (all model calls), a panel per strategy."""
    return _ecdf(sessions, "input_tokens", title="Input tokens per session (ECDF)",
                 xlabel="input tokens per session (tokens, log scale)", empty="no sessions in this run",
                 styles=styles, log_x=True, x_format=thousands, median_format=three_digits)


def ecdf_latency(sessions: pd.DataFrame, *, styles: dict[str, StrategyStyle] | None = None) -> Figure:
    """ECDF of the simulated latency per session, a panel per strategy."""
    return _ecdf(sessions, "latency_s", title="Latency per session (ECDF)",
                 xlabel="simulated latency per session (s)", empty="no sessions in this run",
                 styles=styles, log_x=False, x_format=lambda v, _p: f"{v:,.0f} s",
                 median_format=lambda v: f"{v:,.0f} s")


def _bucket_of(tokens: np.ndarray) -> np.ndarray:
    """The :data:`CONTEXT_BUCKETS` index of each token count (low edge included), -1 for none (a
    negative count, NaN)."""
    edges = np.array([low for low, _high, _label in CONTEXT_BUCKETS] + [math.inf])
    bucket = np.searchsorted(edges, tokens.astype(float), side="right") - 1
    return np.where(bucket < len(CONTEXT_BUCKETS), bucket, -1)


def bucket_rates(calls: pd.DataFrame, min_calls: int = MIN_CALLS_PER_BUCKET) -> dict[str, pd.DataFrame] | None:
    """Per strategy (by name), its agent calls per context bucket (:func:`_bucket_of` of their input
    tokens) with at least ``min_calls`` calls: ``sum`` (malformed ones), ``size``, ``rate`` and its 95%
    Wilson interval ``low`` to ``high``, indexed by bucket. None when there is no agent call (or not the
    columns to tell). Counted with one bincount, not a group per strategy and bucket."""
    if not _has(calls, "strategy", "call_kind", "input_tokens", "malformed_kind"):
        return None
    agent = (calls["call_kind"] == "agent").to_numpy(dtype=bool, na_value=False)
    if not agent.any():
        return None
    strategy, names = _codes(calls["strategy"][agent])
    bucket = _bucket_of(calls["input_tokens"].to_numpy()[agent])
    malformed = (calls["malformed_kind"][agent].fillna("").astype(str) != "").to_numpy(dtype=float)
    kept = (bucket >= 0) & (strategy >= 0)
    cell = strategy[kept] * len(CONTEXT_BUCKETS) + bucket[kept]
    cells = len(names) * len(CONTEXT_BUCKETS)
    size = np.bincount(cell, minlength=cells).reshape(len(names), -1)
    errors = np.bincount(cell, weights=malformed[kept], minlength=cells).reshape(len(names), -1)
    rates: dict[str, pd.DataFrame] = {}
    for code, name in enumerate(names):
        shown = np.flatnonzero((size[code] >= min_calls) & (size[code] > 0))
        if not shown.size:
            continue
        k, n = errors[code, shown].astype(np.int64), size[code, shown]
        bounds = [wilson_interval(float(a), float(b)) for a, b in zip(k, n, strict=True)]
        rates[str(name)] = pd.DataFrame({"sum": k, "size": n, "rate": k / n, "low": [b[0] for b in bounds],
                                         "high": [b[1] for b in bounds]}, index=pd.Index(shown, name="bucket"))
    return rates


def syntax_errors_by_context(calls: pd.DataFrame, *, styles: dict[str, StrategyStyle] | None = None,
                             min_calls: int = MIN_CALLS_PER_BUCKET) -> Figure:
    """Tool-syntax error rate (share of agent calls whose output was malformed) per context-size
    bucket of the call's input tokens: one panel per strategy, its rates with their 95% Wilson
    intervals in colour over the other strategies' rates in grey. Buckets with fewer than
    ``min_calls`` calls are left out (their rate is mostly noise)."""
    styles = _styles_for([calls], styles)
    title = "Tool-syntax errors by context size"
    xlabel = f"input tokens of the agent call (buckets with fewer than {min_calls} calls omitted)"
    ylabel = "malformed agent calls (% of calls)"
    with plot_style():
        found = bucket_rates(calls, min_calls)
        rates = found or {}
        if not rates:
            fig, ax = new_figure()
            fig.suptitle(title, fontweight="bold", fontsize=12)
            fig.supxlabel(xlabel, fontsize=10)
            fig.supylabel(ylabel, fontsize=10)
            no_data(ax, "no agent calls in this run" if found is None
                    else f"no context bucket has {min_calls} agent calls")
            return fig
        # One panel per strategy: ten strategies' lines on one axes sit on top of each other (most
        # rates are near 0%), and their intervals could not be drawn at all.
        fig, axes = _panel_figure(len(rates))
        for ax, (strategy, own) in zip(axes, rates.items(), strict=False):
            for other, other_rates in rates.items():
                if other != strategy:
                    ax.plot(other_rates.index.to_numpy(dtype=float), other_rates["rate"].to_numpy(),
                            color="#BBBBBB", linewidth=0.7, marker=".", markersize=3, clip_on=False)
            style = styles[strategy]
            x = own.index.to_numpy(dtype=float)
            ax.vlines(x, own["low"].to_numpy(), own["high"].to_numpy(), color=style.colour, linewidth=1.0,
                      alpha=0.6)
            # Unclipped: a 0% rate sits on the x axis and would otherwise lose half its marker.
            ax.plot(x, own["rate"].to_numpy(), marker=style.marker, markersize=4, linewidth=1.4, clip_on=False,
                    **_style_kw(style))
            ax.set_title(short_label(strategy, 22), fontsize=9, fontweight="normal")
            ax.tick_params(labelsize=7)
        axes[0].set_xticks(range(len(CONTEXT_BUCKETS)), [label for _low, _high, label in CONTEXT_BUCKETS])
        for ax in axes:
            ax.tick_params(axis="x", labelrotation=45)
        axes[0].set_xlim(-0.5, len(CONTEXT_BUCKETS) - 0.5)
        axes[0].set_ylim(bottom=0)
        axes[0].yaxis.set_major_formatter(PercentFormatter(1.0, decimals=1))
        fig.suptitle(title, fontweight="bold", fontsize=12)
        fig.supxlabel(xlabel, fontsize=10)
        fig.supylabel(ylabel, fontsize=10)
        key = [Line2D([], [], color="#333333", linewidth=1.4, marker="o", markersize=4, label="this panel's\nstrategy"),
               Line2D([], [], color="#333333", linewidth=1.0, alpha=0.6, marker="|", markersize=8, linestyle="none",
                      label="95% Wilson\ninterval"),
               Line2D([], [], color="#BBBBBB", linewidth=0.7, marker=".", label="other\nstrategies")]
        fig.legend(handles=key, loc="outside right upper", frameon=False, fontsize=8, labelspacing=1.0)
    return fig


#: The cost plot's strategy marker and the ring around a Pareto-front point (marker sizes, pt).
POINT_SIZE = 7
RING_SIZE = 15
#: Strategy names in the cost plot: font size (pt); the margin around a name that no marker or other
#: name enters (pt; also the pad of its white background, so backgrounds never overlap either); the
#: gap between a marker and a name written next to it (pt).
NAME_FONT = 8
NAME_MARGIN = 1.5
NAME_GAP = 2.5
#: How far a crowded name may move from its point: to this many name heights left or right of it, and
#: this many rows of names above or below.
NAME_COLUMNS = 16
NAME_ROWS = 16
#: How many of a name's spots are checked at once (vectorised), best first.
SPOT_CHUNK = 64


def _name_points(fig: Figure, ax: Axes, points: Sequence[tuple[str, float, float]],
                 ringed: Collection[str] = (), colours: Mapping[str, str] | None = None) -> None:
    """Write each strategy's name by its point so that no two names overlap and no name covers a marker
    or a note already on the axes (with twenty strategies, matching colours against the legend is slow).

    The names are placed in display pixels, measured with the renderer: the figure's layout is worked
    out first and then fixed (a layout engine run again at saving would move the axes under the names).
    Each name, the most crowded points first, takes the first free spot of :func:`_name_spots`: beside
    its marker, else ever farther out in rows and columns with a leader line to the point (in the
    strategy's colour from ``colours``, grey without), one that crosses no name, leader or other marker
    if there is such a spot (:func:`_first_free`). Only where no spot is free at all (some 70 long names
    on one axes) does a name take the spot that covers the fewest others. Points in ``ringed`` have the
    Pareto front's ring around them. Deterministic: the same points give the same spots.
    """
    if not points:
        return
    _fix_layout(fig)
    renderer = cast(FigureCanvasAgg, fig.canvas).get_renderer()
    per_point = fig.dpi / 72
    margin = NAME_MARGIN * per_point
    centres = ax.transData.transform(np.array([(x, y) for _name, x, y in points], dtype=float))
    radii = np.array([(RING_SIZE if name in ringed else POINT_SIZE) / 2 for name, _x, _y in points]) * per_point
    markers = np.column_stack([centres - radii[:, None], centres + radii[:, None]])
    notes = [_box(Text.get_window_extent(text, renderer), margin) for text in ax.texts]
    # What a name may not enter: the markers, then the notes and the names placed so far (with their
    # margins); and the leader lines drawn so far, which no name nor other leader may cross.
    taken = np.vstack([markers, *notes]) if notes else markers
    leaders = np.empty((0, 4))
    leader_colours: list[str] = []
    bounds = ax.get_window_extent(renderer)
    frame = (bounds.x0, bounds.y0, bounds.x1, bounds.y1)
    probe = Text(0, 0, "", fontsize=NAME_FONT)
    probe.set_figure(fig)
    for i in _crowded_first(centres, [name for name, _x, _y in points], 3 * NAME_FONT * per_point):
        name, x, y = points[i]
        label = short_label(name, 22)
        probe.set_text(label)
        size = probe.get_window_extent(renderer)
        spots, far = _name_spots(centres[i], radii[i] + NAME_GAP * per_point, size.width, size.height, margin)
        lines = _leaders(spots, centres[i], radii[i] + per_point, margin)
        choice = _first_free(spots, far, lines, i, taken, len(points), leaders, frame, margin)
        spot = spots[choice]
        ax.annotate(
            label, (x, y), xytext=((spot[0] - centres[i, 0]) / per_point, (spot[1] - centres[i, 1]) / per_point),
            textcoords="offset points", ha="left", va="bottom", fontsize=NAME_FONT, color="#333333",
            # The white behind a name keeps it legible over a whisker or the grid it must cross.
            bbox={"boxstyle": f"square,pad={NAME_MARGIN / NAME_FONT}", "facecolor": "white", "edgecolor": "none",
                  "alpha": 0.8},
            annotation_clip=False, in_layout=False)
        taken = np.vstack([taken, _grown(spot, margin)])
        if far[choice]:
            leaders = np.vstack([leaders, lines[choice]])
            leader_colours.append((colours or {}).get(name, "#777777"))
    if leaders.size:
        # In data coordinates, as the points: a PNG saved at another resolution keeps them joined. Drawn
        # in one collection (an annotation's arrow, clipped to its box when drawn, takes far longer) under
        # the markers, so a leader that must cross a marker does not hide it; in the strategy's colour,
        # which tells its marker among a cluster's.
        back = ax.transData.inverted()
        ends = np.stack([back.transform(leaders[:, :2]), back.transform(leaders[:, 2:])], axis=1)
        ax.add_collection(LineCollection(list(ends), colors=leader_colours, linewidths=0.8, zorder=1.5),
                          autolim=False)


def _fix_layout(fig: Figure) -> None:
    """Work out ``fig``'s layout now and keep it: what is placed next in display pixels stays where it is put
    (a layout engine run again at saving would move the axes under it)."""
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)
        fig.set_layout_engine("none")


def _wrapped(fig: Figure, prefix: str, names: Sequence[str], width: float, *, fontsize: float) -> str:
    """``prefix`` and ``names``, comma-separated, broken between names into lines at most ``width`` pixels
    wide as drawn in ``fig`` (a name wider than that on a line of its own)."""
    renderer = cast(FigureCanvasAgg, fig.canvas).get_renderer()
    probe = Text(0, 0, "", fontsize=fontsize)
    probe.set_figure(fig)
    lines = [prefix + names[0]]
    for name in names[1:]:
        probe.set_text(f"{lines[-1]}, {name}")
        if probe.get_window_extent(renderer).width <= width:
            lines[-1] += f", {name}"
        else:
            lines[-1] += ","
            lines.append(name)
    return "\n".join(lines)


def _box(bbox: Bbox, margin: float) -> np.ndarray:
    """``bbox`` grown by ``margin`` on every side as one (x0, y0, x1, y1) row."""
    return _grown(np.array([[bbox.x0, bbox.y0, bbox.x1, bbox.y1]]), margin)


def _grown(boxes: np.ndarray, margin: float) -> np.ndarray:
    """(x0, y0, x1, y1) ``boxes`` grown by ``margin`` on every side."""
    return boxes + np.array([-margin, -margin, margin, margin])


def _crowded_first(centres: np.ndarray, names: Sequence[str], near: float) -> list[int]:
    """The points in the order their names are placed: those with the most other points within
    ``near`` pixels first (they have the fewest free spots), then from the top, left to right, by name."""
    gaps = np.hypot(*(centres[:, None, :] - centres[None, :, :]).transpose(2, 0, 1))
    crowd = (gaps < near).sum(axis=1)
    return sorted(range(len(names)), key=lambda i: (-int(crowd[i]), -float(centres[i, 1]), float(centres[i, 0]),
                                                     names[i]))


def _name_spots(centre: np.ndarray, reach: float, width: float, height: float,
                margin: float) -> tuple[np.ndarray, np.ndarray]:
    """Where a name of ``width`` x ``height`` pixels may go around a point, best first, as
    (x0, y0, x1, y1) rows, and which of them are far enough from it to need a leader line.

    First the eight spots touching the circle of ``reach`` around the point (right, above and below
    right, left, above and below left, above, below); then, nearest first, spots in columns to the
    right and left (rows of names above and below the point's height) and in stacks above and below it.
    """
    cx, cy = float(centre[0]), float(centre[1])
    diagonal = reach * math.sqrt(0.5)
    beside = np.array([
        (cx + reach, cy - height / 2), (cx + diagonal, cy + diagonal), (cx + diagonal, cy - diagonal - height),
        (cx - reach - width, cy - height / 2), (cx - diagonal - width, cy + diagonal),
        (cx - diagonal - width, cy - diagonal - height), (cx - width / 2, cy + reach),
        (cx - width / 2, cy - reach - height),
    ])
    pitch = height + 2 * margin
    out = reach + pitch * np.arange(NAME_COLUMNS + 1)
    rows = cy - height / 2 + pitch * np.arange(-NAME_ROWS, NAME_ROWS + 1)
    columns_x, columns_y = np.meshgrid(out, rows)
    stacked = reach + pitch * np.arange(1, NAME_ROWS + 1)
    farther = np.vstack([
        np.column_stack([cx + columns_x.ravel(), columns_y.ravel()]),
        np.column_stack([cx - columns_x.ravel() - width, columns_y.ravel()]),
        np.column_stack([np.full(stacked.size, cx - width / 2), cy + stacked]),
        np.column_stack([np.full(stacked.size, cx - width / 2), cy - stacked - height]),
    ])
    away = np.hypot(np.maximum.reduce([farther[:, 0] - cx, np.zeros(len(farther)), cx - farther[:, 0] - width]),
                    np.maximum.reduce([farther[:, 1] - cy, np.zeros(len(farther)), cy - farther[:, 1] - height]))
    # The spots next to the point are the same spots the eight above are: only those farther out stay.
    kept = np.argsort(away, kind="stable")
    kept = kept[away[kept] > reach + pitch / 2]
    corners = np.vstack([beside, farther[kept]])
    spots = np.column_stack([corners, corners + np.array([width, height])])
    return spots, np.arange(len(spots)) >= len(beside)


def _leaders(spots: np.ndarray, centre: np.ndarray, reach: float, margin: float) -> np.ndarray:
    """The leader line of each spot as (x0, y0, x1, y1) rows: on the line from the spot's centre to the
    point, from where it leaves the spot (grown by ``margin``) to ``reach`` short of the point."""
    middles = (spots[:, :2] + spots[:, 2:]) / 2
    half = (spots[:, 2:] - spots[:, :2]) / 2 + margin
    towards = centre - middles
    with np.errstate(divide="ignore"):
        leave = np.min(half / np.abs(towards), axis=1, initial=np.inf)
    length = np.hypot(towards[:, 0], towards[:, 1])
    arrive = 1 - reach / np.maximum(length, 1e-9)
    start = middles + towards * np.minimum(leave, arrive)[:, None]
    return np.column_stack([start, middles + towards * np.maximum(arrive, 0)[:, None]])


def _overlaps(boxes: np.ndarray, others: np.ndarray) -> np.ndarray:
    """(len(boxes), len(others)): whether each box overlaps each other box (x0, y0, x1, y1 rows)."""
    return ((boxes[:, None, 0] < others[None, :, 2]) & (others[None, :, 0] < boxes[:, None, 2])
            & (boxes[:, None, 1] < others[None, :, 3]) & (others[None, :, 1] < boxes[:, None, 3]))


def _crosses(segments: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """(len(segments), len(boxes)): whether each segment (x0, y0, x1, y1) passes through each box, by
    clipping the segment to the box's two slabs (Liang-Barsky)."""
    start, step = segments[:, None, :2], segments[:, None, 2:] - segments[:, None, :2]
    low, high = boxes[None, :, :2], boxes[None, :, 2:]
    flat = step == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        t_low, t_high = (low - start) / step, (high - start) / step
    # A segment parallel to a slab is in it everywhere or nowhere.
    within = (start >= low) & (start <= high)
    enter = np.where(flat, np.where(within, -np.inf, np.inf), np.minimum(t_low, t_high))
    leave = np.where(flat, np.where(within, np.inf, -np.inf), np.maximum(t_low, t_high))
    return np.maximum(enter.max(axis=2), 0.0) < np.minimum(leave.min(axis=2), 1.0)


def _intersect(segments: np.ndarray, others: np.ndarray) -> np.ndarray:
    """(len(segments), len(others)): whether each segment (x0, y0, x1, y1) crosses each other one (the
    ends of each on strictly opposite sides of the other; segments that only touch do not cross)."""
    def side(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """-1, 0 or 1: which side of the line through a and b the point c is on."""
        ab, ac = b - a, c - a
        return np.sign(ab[..., 0] * ac[..., 1] - ab[..., 1] * ac[..., 0])

    p, q = segments[:, None, :2], segments[:, None, 2:]
    r, t = others[None, :, :2], others[None, :, 2:]
    return (side(p, q, r) * side(p, q, t) < 0) & (side(r, t, p) * side(r, t, q) < 0)


def _first_free(spots: np.ndarray, far: np.ndarray, lines: np.ndarray, own: int, taken: np.ndarray,
                n_markers: int, leaders: np.ndarray, frame: tuple[float, float, float, float],
                margin: float) -> int:
    """The index of the spot a name takes among ``spots`` (best first).

    A spot must be inside ``frame`` and overlap nothing ``taken`` (its first ``n_markers`` rows the
    markers, ``own`` this name's point). Of those the first faultless one wins, else the first with the
    least bad faults, from the worst: its box crosses a leader line drawn; its own leader (of ``lines``,
    drawn where ``far``) crosses a name; crosses a leader; crosses another marker. (Leaders fanning out
    of a cluster cut the space into wedges: a name had better cross one than overlap another name.) With
    no such spot, the spot inside that covers the fewest names, then markers (the first spot when none
    is inside).

    The spots are tried a chunk at a time, best first: most names find a faultless spot in the first
    chunk, so the far ones are seldom looked at."""
    best, best_faults = -1, math.inf
    least, least_cover = 0, math.inf
    for begin in range(0, len(spots), SPOT_CHUNK):
        chunk = slice(begin, begin + SPOT_CHUNK)
        grown = _grown(spots[chunk], margin)
        inside = ((grown[:, 0] >= frame[0]) & (grown[:, 1] >= frame[1]) & (grown[:, 2] <= frame[2])
                  & (grown[:, 3] <= frame[3]))
        covered = _overlaps(grown, taken)
        # Every spot is outside the point's own marker by construction (its square corners are not).
        covered[:, own] = False
        cover = np.where(inside, covered[:, n_markers:].sum(axis=1) * len(taken) + covered[:, :n_markers].sum(axis=1),
                         math.inf)
        if cover.min() < least_cover:
            least, least_cover = begin + int(np.argmin(cover)), float(cover.min())
        candidates = np.flatnonzero(inside & ~covered.any(axis=1)) + begin
        if not candidates.size:
            continue
        drawn = far[candidates]
        crossing = _crosses(lines[candidates], taken) & drawn[:, None]
        crossing[:, own] = False
        # One bit per fault, the worst the highest: any worse fault outweighs all lesser ones.
        faults = 4 * crossing[:, n_markers:].any(axis=1) + crossing[:, :n_markers].any(axis=1)
        if leaders.size:
            faults = (faults + 8 * _crosses(leaders, _grown(spots[candidates], margin)).any(axis=0)
                      + 2 * (_intersect(lines[candidates], leaders).any(axis=1) & drawn))
        first = int(np.argmin(faults))
        if faults[first] == 0:
            return int(candidates[first])
        if faults[first] < best_faults:
            best, best_faults = int(candidates[first]), float(faults[first])
    return best if best >= 0 else least


#: How the Pareto front is marked in the cost-against-success plot.
FRONT_LABEL = "Pareto front"
#: The cost axis ends this far above the highest point (its whiskers may be cut).
CVS_HEADROOM = 1.5
#: The entries of the cost plot's legend (a strategy each, and the front) that fit the fixed figure
#: height; with more, the legend keys only the front.
LEGEND_ROWS = 22


def cost_vs_success(sessions: pd.DataFrame, *, headline: pd.DataFrame | None = None,
                    styles: dict[str, StrategyStyle] | None = None) -> Figure:
    """One point per strategy at (success rate, cost per solved session), with the 95% confidence
    interval of each as whiskers (from :func:`reports.stats.headline`), and the success-vs-cost Pareto
    front (:func:`reports.decision.pareto_front`) ringed and joined. A strategy without a solved session
    has no cost per solved session: it is named in a corner instead of drawn.

    Each point carries its strategy's name, placed clear of the other names and markers
    (:func:`_name_points`), which fixes the figure's layout. With more strategies than a legend column
    holds (:data:`LEGEND_ROWS`) the legend keys only the front: the names at the points do the rest."""
    styles = _styles_for([sessions], styles)
    with plot_style():
        fig, ax = new_figure()
        ax.set_title("Cost per solved session against success, per strategy (95% CI)")
        ax.set_xlabel("success rate (% of sessions; higher is better)")
        ax.set_ylabel("cost per solved session (USD; lower is better)")
        if headline is None:
            needed = ("strategy", "outcome", "loop_detected", *_HEADLINE_COLUMNS)
            headline = compute_headline(sessions) if _has(sessions, *needed) else pd.DataFrame()
        if not _has(headline, "strategy", "metric", "value", "ci_low", "ci_high"):
            no_data(ax, "no sessions in this run")
            return fig
        table = headline[headline["metric"].isin([FRONT_X, FRONT_Y])]
        wide = table.pivot(index="strategy", columns="metric", values=["value", "ci_low", "ci_high"])
        if not set(map(str, wide.index)) <= set(styles):
            # A headline computed elsewhere may name strategies the sessions frame does not.
            styles = strategy_styles([*styles, *map(str, wide.index)])
        points, unsolved = _strategy_points(ax, wide, styles)
        if not ax.lines:
            no_data(ax, "no strategy has a solved session" if unsolved else "no strategy has a success rate and a cost")
            return fig
        front = [s for s in pareto_front(table) if s in points]
        if front:
            fx, fy = [points[s][0] for s in front], [points[s][1] for s in front]
            # Under the points: the front is a guide, the strategies are the data.
            ax.plot(fx, fy, color="#333333", linewidth=1.0, linestyle=(0, (4, 3)), zorder=1)
            ax.plot(fx, fy, marker="o", markersize=RING_SIZE, markerfacecolor="none", markeredgecolor="#333333",
                    markeredgewidth=1.4, linestyle="none", zorder=1)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        # Success is a share: never show room below 0% or above 100%.
        low, high = ax.get_xlim()
        ax.set_xlim(max(low, -0.02), min(high, 1.02))
        # A strategy with few solved sessions has a cost interval many times its value (one solved session
        # in a resample makes the cost all of its sessions'); scaling to it would squash every other point
        # against the axis, so the axis stops a little above the highest point and says so.
        top = CVS_HEADROOM * max(y for _x, y in points.values())
        cut_note: Text | None = None
        if ax.get_ylim()[1] > top > 0:
            ax.set_ylim(0, top)
            cut_note = ax.text(0.99, 0.99, "whiskers cut at the top edge", transform=ax.transAxes, ha="right",
                               va="top", fontsize=8, color="#555555")
        else:
            ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"${v:,.2f}"))
        _legend_and_unsolved_note(fig, ax, len(points), bool(front), unsolved, cut_note)
        # Last: the names are placed in the figure's final layout, clear of the notes above.
        _name_points(fig, ax, [(s, x, y) for s, (x, y) in points.items()], ringed=front,
                     colours={s: styles[s].colour for s in points})
    return fig


def _strategy_points(ax: Axes, wide: pd.DataFrame, styles: dict[str, StrategyStyle]
                     ) -> tuple[dict[str, tuple[float, float]], list[str]]:
    """Draw each strategy of ``wide`` (value and interval of success and cost per solved session) as a
    point with whiskers; return the points drawn and the strategies with no solved session."""
    points: dict[str, tuple[float, float]] = {}
    unsolved: list[str] = []
    for strategy in sorted(map(str, wide.index)):
        row = wide.loc[strategy]
        try:
            x, y = float(row[("value", FRONT_X)]), float(row[("value", FRONT_Y)])
        except KeyError:
            continue
        if x == 0 and not np.isfinite(y):
            unsolved.append(strategy)
        if not (np.isfinite(x) and np.isfinite(y)):
            continue
        xerr = [[max(x - float(row[("ci_low", FRONT_X)]), 0.0)], [max(float(row[("ci_high", FRONT_X)]) - x, 0.0)]]
        yerr = [[max(y - float(row[("ci_low", FRONT_Y)]), 0.0)], [max(float(row[("ci_high", FRONT_Y)]) - y, 0.0)]]
        style = styles[strategy]
        bars = ax.errorbar([x], [y], xerr=np.nan_to_num(xerr), yerr=np.nan_to_num(yerr), fmt="",
                           marker=style.marker, linestyle="none", color=style.colour, markersize=POINT_SIZE,
                           elinewidth=1.0, capsize=3, alpha=0.9, label=short_label(strategy))
        for whisker in bars.lines[2]:
            # Strategies that share a colour also differ in whisker style, not only in marker.
            whisker.set_linestyle(cast(Any, style.linestyle))
        points[strategy] = (x, y)
    return points, unsolved


def _legend_and_unsolved_note(fig: Figure, ax: Axes, drawn: int, front: bool, unsolved: list[str],
                              cut_note: Text | None) -> None:
    """The cost plot's legend (only the front's key once the strategies outnumber a legend column) and the
    note naming the strategies with no solved session."""
    handles, labels = ax.get_legend_handles_labels()
    if front:
        handles.append(Line2D([], [], color="#333333", linewidth=1.0, linestyle=(0, (4, 3)), marker="o",
                              markersize=10, markerfacecolor="none", markeredgecolor="#333333"))
        labels.append(FRONT_LABEL)
    title = "strategy"
    if len(labels) > LEGEND_ROWS:
        # A legend taller than the figure is cut off, and one in columns squeezes the axes to nothing;
        # the names at the points say what it would.
        handles, labels = handles[drawn:], labels[drawn:]
        title = f"{drawn} strategies,\nnamed at their points"
    fig.legend(handles, labels, loc="outside right upper", title=title, frameon=False)
    if unsolved:
        # In the final layout, on as many lines as the axes' width takes: a sweep's dozens of names on
        # one line would run off the figure, and constrained layout, making room for them, would
        # squeeze the axes to nothing.
        _fix_layout(fig)
        # Clear of the note on the right, if the whiskers are cut.
        width = ax.get_window_extent().width * 0.98
        if cut_note is not None:
            width -= cut_note.get_window_extent().width
        text = _wrapped(fig, "no solved session, not drawn: ", [short_label(s, 22) for s in unsolved], width,
                        fontsize=8)
        ax.text(0.01, 0.99, text, transform=ax.transAxes, ha="left", va="top", fontsize=8, color="#555555",
                in_layout=False)


#: The columns reports.stats.headline reads (its METRICS).
_HEADLINE_COLUMNS = ("context_tokens_mean", "input_tokens", "cached_input_tokens", "tool_syntax_errors", "tool_calls",
                     "latency_s", "cost_usd")


def _outcome_order(outcomes: Iterable[str]) -> list[str]:
    present = set(outcomes)
    return [o for o in OUTCOME_ORDER if o in present] + sorted(present - set(OUTCOME_ORDER))


def _outcome_style(outcome: str, extra_index: int) -> tuple[str, str]:
    if outcome in OUTCOME_STYLE:
        return OUTCOME_STYLE[outcome]
    # An outcome added after this module was written: grey with its own hatch, still distinguishable.
    return "#BBBBBB", HATCHES[1 + extra_index % (len(HATCHES) - 1)]


def _text_colour(hex_colour: str) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"


def outcome_mix(sessions: pd.DataFrame) -> Figure:
    """Stacked horizontal bars: the share of each outcome among each strategy's sessions."""
    with plot_style():
        fig, ax = new_figure()
        ax.set_title("Session outcomes per strategy")
        ax.set_xlabel("share of sessions (%)")
        ax.set_ylabel("strategy")
        if not _has(sessions, "strategy", "outcome"):
            no_data(ax, "no sessions in this run")
            return fig
        shares = outcome_shares(sessions)
        shares.index = shares.index.map(str)
        shares = shares.sort_index()
        columns = _outcome_order(map(str, shares.columns))
        # Horizontal bars: long strategy names read as y tick labels instead of rotated x labels.
        y = np.arange(len(shares))
        left = np.zeros(len(shares))
        extra = 0
        for outcome in columns:
            values = shares[outcome].to_numpy(dtype=float)
            colour, hatch = _outcome_style(outcome, extra)
            extra += outcome not in OUTCOME_STYLE
            ax.barh(y, values, left=left, color=colour, hatch=hatch, edgecolor="white", linewidth=0.6,
                    label=outcome.replace("_", " "), height=0.7)
            for yi, (start, share) in enumerate(zip(left, values, strict=True)):
                # Only segments wide enough to hold the number get one; the legend carries the rest.
                if share >= 0.07:
                    ax.text(start + share / 2, yi, f"{share:.0%}", ha="center", va="center", fontsize=8,
                            color=_text_colour(colour))
            left += values
        ax.set_yticks(y, [short_label(name) for name in shares.index])
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        ax.grid(axis="y", visible=False)
        _legend(fig, ax, "outcome")
    return fig


# ------------------------------------------------------------------------------------------------- writing


def tokens_freed_histogram(calls: pd.DataFrame, *, styles: dict[str, StrategyStyle] | None = None) -> Figure:
    """How many tokens each compaction took out of the window: one panel per strategy that compacted (a call's
    ``tokens_freed``: what compactions freed since the agent's previous call), on shared log-spaced bins, its
    histogram in colour over the pooled one of the other strategies in grey; strategies that never compacted
    are named below."""
    styles = _styles_for([calls], styles)
    title = "Tokens freed per compaction"
    with plot_style():
        freed: dict[str, np.ndarray] = {}
        never: list[str] = []
        if _has(calls, "strategy", "tokens_freed"):
            # The few calls after a compaction first, then grouped: a run has millions of calls.
            compacted = calls.loc[calls["tokens_freed"].to_numpy() > 0, ["strategy", "tokens_freed"]]
            for strategy, group in compacted.groupby("strategy", sort=True):
                freed[str(strategy)] = group["tokens_freed"].to_numpy(dtype=float)
            never = sorted(set(map(str, calls["strategy"].unique())) - set(freed))
        if not freed:
            fig, ax = new_figure()
            fig.suptitle(title, fontweight="bold", fontsize=12)
            no_data(ax, "no strategy compacted its context in this run")
            return fig
        everything = np.concatenate(list(freed.values()))
        low, high = max(1.0, float(everything.min())), float(everything.max())
        bins = np.geomspace(low, high * 1.0001 if high > low else low * 10, 25).tolist()
        order = sorted(freed, key=lambda s: (float(np.median(freed[s])), s))
        fig, axes = _panel_figure(len(order))
        for ax, strategy in zip(axes, order, strict=False):
            others = [v for s, v in freed.items() if s != strategy]
            if others:
                pooled = np.concatenate(others)
                # Shares, not counts: a strategy that compacts every turn would flatten the others' bars.
                ax.hist(pooled, bins=bins, weights=np.full(pooled.size, 1 / pooled.size), color="#DDDDDD")
            values = freed[strategy]
            ax.hist(values, bins=bins, weights=np.full(values.size, 1 / values.size), histtype="step",
                    linewidth=1.8, color=styles[strategy].colour)
            ax.set_title(short_label(strategy, 22), fontsize=9, fontweight="normal")
            ax.text(0.97, 0.95, f"{values.size:,} compactions\nmedian {three_digits(float(np.median(values)))}",
                    transform=ax.transAxes, ha="right", va="top", fontsize=7, color="#333333")
            ax.tick_params(labelsize=8)
        axes[0].set_xscale("log")
        log_ticks(axes[0].xaxis, thousands)
        axes[0].yaxis.set_major_formatter(PercentFormatter(1.0))
        fig.suptitle(title, fontweight="bold", fontsize=12)
        # The strategies without a panel, on as many lines as the figure's width takes: a long list on one
        # line would run off the figure.
        names = [short_label(s, 24) for s in never]
        lines = [_wrapped(fig, "never compacted: ", names, fig.bbox.width * 0.95, fontsize=9)] if names else []
        fig.supxlabel("\n".join(["tokens freed before a call (log scale)", *lines]), fontsize=9)
        fig.supylabel("share of the strategy's compactions", fontsize=10)
    return fig


def png_bytes(fig: Figure) -> bytes:
    """``fig`` as PNG bytes with no embedded software version or date, so equal inputs give equal bytes."""
    buffer = io.BytesIO()
    with plot_style(), _interrupts_held():
        fig.savefig(buffer, format="png", dpi=DPI, facecolor="white", metadata={"Software": None})
    return buffer.getvalue()


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM while Agg draws: a KeyboardInterrupt raised inside its C++ drawing code comes
    out as ``ValueError: Invalid bounding box`` (an internal error where the user pressed Ctrl-C). The
    signals are delivered the moment the drawing returns, so the interrupt is handled as everywhere else."""
    held = {signal.SIGINT, signal.SIGTERM}
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def save_png(fig: Figure, path: Path) -> Path:
    """Write ``fig`` as a PNG (:func:`png_bytes`) at ``path``, atomically; its directory is created if missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, png_bytes(fig))
    return path


def write_plots(sessions: pd.DataFrame, calls: pd.DataFrame, out_dir: Path, *,
                headline: pd.DataFrame | None = None) -> dict[str, Path]:
    """Draw every plot of a run into ``out_dir`` (created if missing); return plot name -> PNG path.

    ``headline`` is :func:`reports.stats.headline` of ``sessions`` if the caller already has it.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, data in draw_plots(sessions, calls, headline=headline).items():
        path = out_dir / f"{name}.png"
        write_atomically(path, data)
        written[name] = path
    return written


def draw_plots(sessions: pd.DataFrame, calls: pd.DataFrame, *, headline: pd.DataFrame | None = None,
               names: Iterable[str] = PLOT_NAMES) -> dict[str, bytes]:
    """The plots ``names`` (default: every plot of a run) as PNG bytes, by plot name in
    :data:`PLOT_NAMES` order; nothing is written."""
    styles = strategy_styles(strategies_of(sessions, calls))
    builders: dict[str, Callable[[], Figure]] = {
        "context_tokens_by_turn": lambda: context_tokens_by_turn(calls, styles=styles),
        "ecdf_input_tokens": lambda: ecdf_input_tokens(sessions, styles=styles),
        "ecdf_latency": lambda: ecdf_latency(sessions, styles=styles),
        "syntax_errors_by_context": lambda: syntax_errors_by_context(calls, styles=styles),
        "cost_vs_success": lambda: cost_vs_success(sessions, headline=headline, styles=styles),
        "outcome_mix": lambda: outcome_mix(sessions),
        "tokens_freed": lambda: tokens_freed_histogram(calls, styles=styles),
    }
    wanted = set(names)
    return {name: png_bytes(build()) for name, build in builders.items() if name in wanted}


#: The plots drawn from the tables alone; the cost plot also needs the headline's intervals.
PLOTS_WITHOUT_STATISTICS = tuple(name for name in PLOT_NAMES if name != "cost_vs_success")
