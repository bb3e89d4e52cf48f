"""The workload-fit report of ``ctxbench fit``: the measured transcripts and the sessions the fitted config
generates, side by side (a table, the tool mix, the payload lognormal and its goodness of fit, QQ plots),
as ``report.html``, ``report.md`` and ``plots/*.png`` in one folder.

It takes plain data (`harness.run.fitting.report_inputs` makes it): two measure dicts with the keys of
``WorkloadMeasures.as_dict`` (``model_calls``, ``tool_calls``, ``distinct_calls``, ``payload_bytes``,
``growth_per_turn`` lists; ``tool_mix``; ``error_share``, ``observation_share``, ``growth_median``,
``growth_q25``, ``growth_q75``), ``fit`` (``median``, ``sigma``, ``n``, ``ks_statistic``, ``ks_p_value``),
``params``, ``weights``, ``fallback``, ``notes`` and ``sources``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from reports import blocks
from reports.blocks import (
    Block,
    Page,
    Paragraph,
    PerFormat,
    Section,
    TableBlock,
    write_report_folder,
)
from reports.plots import log_ticks, new_figure, no_data, plot_style, png_bytes, short_label, thousands
from reports.tables import Cell, Table

__all__ = ["PLOT_NAMES", "comparison_table", "draw_fit_plots", "fit_page", "ks_words",
           "write_fit_report"]

#: The plots, in the order the report shows them, with their captions.
PLOT_CAPTIONS: dict[str, str] = {
    "qq_payload_fit": "Measured payload sizes against the fitted lognormal (QQ)",
    "qq_payload_generated": "Measured against generated payload sizes (QQ)",
    "qq_turns": "Measured against generated model calls per session (QQ)",
    "tool_mix": "Tool mix: measured and generated",
}
PLOT_NAMES = tuple(PLOT_CAPTIONS)
#: Quantiles drawn in a two-sample QQ plot: enough to show the tails, not one per point.
QQ_POINTS = 99
#: The significance level the p-value is read against in words.
ALPHA = 0.05
#: Tools listed in the tool-mix table and plot, the most used first (the rest summed as "other").
MAX_TOOLS = 15


def _median(values: Sequence[float]) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.median(finite)) if finite else math.nan


def _quantile(values: Sequence[float], q: float) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.quantile(finite, q)) if finite else math.nan


def _log_sigma(values: Sequence[float]) -> float:
    positive = np.asarray([v for v in values if v > 0], dtype=float)
    return float(np.log(positive).std()) if positive.size else math.nan


def _number(value: float, digits: int = 0) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:,.{digits}f}"


def _share(value: float) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value * 100:.1f}%"


def _spread(values: Sequence[float], digits: int = 0) -> str:
    """Median with quartiles: ``41 (38-45)``."""
    return (f"{_number(_median(values), digits)} ({_number(_quantile(values, 0.25), digits)}–"
            f"{_number(_quantile(values, 0.75), digits)})")


#: The comparison table's rows: label, and how a side's measures are written.
ROWS: tuple[tuple[str, Callable[[Mapping[str, Any]], str]], ...] = (
    ("sessions", lambda m: f"{len(m['model_calls']):,}"),
    ("model calls per session, median (IQR)", lambda m: _spread(m["model_calls"])),
    ("tool calls per session, median (IQR)", lambda m: _spread(m["tool_calls"])),
    ("distinct successful calls per session, median (IQR)", lambda m: _spread(m["distinct_calls"])),
    ("payloads (every tool output)", lambda m: f"{len(m['payload_bytes']):,}"),
    ("payload median, bytes", lambda m: _number(_median(m["payload_bytes"]))),
    ("payload p95, bytes", lambda m: _number(_quantile(m["payload_bytes"], 0.95))),
    ("payload sigma (std of log bytes)", lambda m: _number(_log_sigma(m["payload_bytes"]), 3)),
    ("error share of tool results", lambda m: _share(m["error_share"])),
    ("observation share of tokens", lambda m: _share(m["observation_share"])),
    ("context growth per turn, tokens, median (IQR)",
     lambda m: f"{_number(m['growth_median'])} ({_number(m['growth_q25'])}–{_number(m['growth_q75'])})"),
)


def comparison_table(measured: Mapping[str, Any], generated: Mapping[str, Any]) -> Table:
    """Measured against generated, one row per measure."""
    rows = [[Cell(label, css="name"), Cell(show(measured)), Cell(show(generated))] for label, show in ROWS]
    return Table("comparison", ["measure", "measured (transcripts)", "generated (fitted config)"], rows)


def ks_words(fit: Mapping[str, Any]) -> str:
    """The lognormal fit and its Kolmogorov-Smirnov test, in words."""
    p, d, n = float(fit["ks_p_value"]), float(fit["ks_statistic"]), int(fit["n"])
    head = (f"The {n:,} measured payload sizes have a lognormal fit of median {fit['median']:,.0f} bytes and sigma "
            f"{fit['sigma']:.3f} (maximum likelihood on log bytes). Kolmogorov-Smirnov: the largest gap between "
            f"their distribution and the fitted one is D = {d:.3f}, p = {p:.3g}. ")
    if not math.isfinite(p):
        verdict = "There are too few sizes to test the fit."
    elif p < ALPHA:
        verdict = (f"At the {ALPHA:.0%} level the sizes are not lognormal: the generator's lognormal is an "
                   "approximation of them; the QQ plot shows where they part (usually the tails).")
    else:
        verdict = (f"At the {ALPHA:.0%} level the test cannot tell the sizes from a lognormal. Since the fit's "
                   "params come from the same sizes, this p-value is larger than the exact one (Lilliefors): "
                   "weak evidence of a good fit, not proof.")
    return head + verdict


def _tool_rows(measured: Mapping[str, float], generated: Mapping[str, float]) -> list[tuple[str, float, float]]:
    tools = sorted(set(measured) | set(generated), key=lambda t: (-measured.get(t, 0.0), -generated.get(t, 0.0), t))
    rows = [(t, measured.get(t, 0.0), generated.get(t, 0.0)) for t in tools[:MAX_TOOLS]]
    rest = tools[MAX_TOOLS:]
    if rest:
        rows.append(("other", sum(measured.get(t, 0.0) for t in rest), sum(generated.get(t, 0.0) for t in rest)))
    return rows


def tool_mix_table(measured: Mapping[str, Any], generated: Mapping[str, Any]) -> Table:
    """Each tool's share of the tool calls, measured and generated."""
    rows = [[Cell(t, css="name"), Cell(_share(a)), Cell(_share(b))]
            for t, a, b in _tool_rows(measured["tool_mix"], generated["tool_mix"])]
    return Table("tool-mix", ["tool", "measured share", "generated share"], rows)


def params_table(data: Mapping[str, Any]) -> Table:
    """The generator params written to the config, and the family weights."""
    rows = [[Cell(k, css="name"), Cell(f"{v:,}" if isinstance(v, int) else f"{v:g}")]
            for k, v in data["params"].items()]
    rows += [[Cell(f"weight of {f}", css="name"), Cell(_share(w))] for f, w in data["weights"].items()]
    return Table("params", ["param", "value"], rows)


# Plots ------------------------------------------------------------------------------------------------------


def _probabilities(n: int) -> np.ndarray:
    """Plotting positions (i - 0.5) / n."""
    return (np.arange(1, n + 1) - 0.5) / n


def _qq(ax: Any, x: np.ndarray, y: np.ndarray, *, log: bool) -> None:
    ax.plot(x, y, marker="o", markersize=3, linestyle="none", color="#0072B2")
    low, high = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
    ax.plot([low, high], [low, high], color="#555555", linewidth=1, linestyle="--", label="y = x")
    if log and low > 0:
        ax.set_xscale("log")
        ax.set_yscale("log")
        log_ticks(ax.xaxis, thousands)
        log_ticks(ax.yaxis, thousands)
    else:
        ax.xaxis.set_major_formatter(FuncFormatter(thousands))
        ax.yaxis.set_major_formatter(FuncFormatter(thousands))
    ax.legend(loc="upper left", frameon=False)


def qq_payload_fit(sizes: Sequence[float], median: float, sigma: float) -> Figure:
    """Each measured payload size (sorted) against the fitted lognormal's quantile at its position."""
    with plot_style():
        fig, ax = new_figure()
        values = np.sort(np.asarray([s for s in sizes if s > 0], dtype=float))
        if not values.size:
            no_data(ax, "no payload sizes")
        else:
            normal = statistics.NormalDist()
            z = np.array([normal.inv_cdf(float(p)) for p in _probabilities(values.size)])
            _qq(ax, np.exp(math.log(median) + sigma * z), values, log=True)
            ax.set_xlabel("fitted lognormal quantile, bytes (log scale)")
            ax.set_ylabel("measured payload size, bytes (log scale)")
        ax.set_title(PLOT_CAPTIONS["qq_payload_fit"])
    return fig


def qq_two_samples(measured: Sequence[float], generated: Sequence[float], *, name: str, unit: str,
                   log: bool) -> Figure:
    """Quantiles of ``generated`` against the same quantiles of ``measured`` (`QQ_POINTS` of them)."""
    with plot_style():
        fig, ax = new_figure()
        a = np.asarray([v for v in measured if math.isfinite(v)], dtype=float)
        b = np.asarray([v for v in generated if math.isfinite(v)], dtype=float)
        if not a.size or not b.size:
            no_data(ax, "no values on one side")
        else:
            probabilities = _probabilities(min(QQ_POINTS, a.size, b.size))
            _qq(ax, np.quantile(a, probabilities), np.quantile(b, probabilities), log=log and a.min() > 0 < b.min())
            scale = " (log scale)" if log else ""
            ax.set_xlabel(f"measured {unit}{scale}")
            ax.set_ylabel(f"generated {unit}{scale}")
        ax.set_title(PLOT_CAPTIONS[name])
    return fig


def tool_mix_plot(measured: Mapping[str, float], generated: Mapping[str, float]) -> Figure:
    """Horizontal bars: each tool's share of the calls, measured and generated."""
    with plot_style():
        fig, ax = new_figure()
        rows = _tool_rows(measured, generated)
        if not rows:
            no_data(ax, "no tool calls")
        else:
            y = np.arange(len(rows))
            ax.barh(y - 0.2, [r[1] for r in rows], height=0.4, color="#0072B2", label="measured")
            ax.barh(y + 0.2, [r[2] for r in rows], height=0.4, color="#E69F00", label="generated")
            # A tool's name as the trace spells it, cut for the tick (the table beside the plot has it whole).
            ax.set_yticks(y, [short_label(r[0]) for r in rows])
            ax.invert_yaxis()
            ax.set_xlabel("share of tool calls")
            ax.legend(loc="lower right", frameon=False)
        ax.set_title(PLOT_CAPTIONS["tool_mix"])
    return fig


def draw_fit_plots(data: Mapping[str, Any]) -> dict[str, bytes]:
    """Plot name -> PNG bytes of every plot of the report."""
    measured, generated, fit = data["measured"], data["generated"], data["fit"]
    figures = {
        "qq_payload_fit": qq_payload_fit(measured["payload_bytes"], fit["median"], fit["sigma"]),
        "qq_payload_generated": qq_two_samples(measured["payload_bytes"], generated["payload_bytes"],
                                               name="qq_payload_generated", unit="payload size, bytes", log=True),
        "qq_turns": qq_two_samples(measured["model_calls"], generated["model_calls"], name="qq_turns",
                                   unit="model calls per session", log=False),
        "tool_mix": tool_mix_plot(measured["tool_mix"], generated["tool_mix"]),
    }
    return {name: png_bytes(figure) for name, figure in figures.items()}


# Pages ------------------------------------------------------------------------------------------------------

TITLE = "ctxbench workload fit"
HOW_TABLE = ("Each row measures the transcripts (left) and the sessions the fitted config generates, replayed "
             "under unbounded with the mock model (right). Close values mean the config reproduces the workload; "
             "the payload rows are the ones the params were fitted to, the others follow from the generators.")
HOW_QQ = ("A QQ plot puts the same quantiles of two distributions against each other: points on the dashed line "
          "mean the distributions agree; points above it mean the vertical one is larger at that quantile.")


def _sources_line(data: Mapping[str, Any]) -> str:
    sources = data.get("sources") or []
    return f"Fitted to {len(data['measured']['model_calls']):,} sessions" + (
        f" from {', '.join(sources)}." if sources else ".")


def fit_page(data: Mapping[str, Any], plots: Mapping[str, bytes]) -> Page:
    """The report as blocks: the measured against the generated sessions, the lognormal fit, the fitted
    config, the tool mix and the QQ plots (``plots``: name -> PNG, linked from ``plots/<name>.png``)."""
    measured, generated = data["measured"], data["generated"]
    notes: list[Block] = [Paragraph((PerFormat("", "Note: "), note), kind="note", quote=True)
                          for note in data.get("notes", [])]
    # blocks.Figure: a figure of the page (Figure alone is matplotlib's, which draws the plots).
    figures: list[Block] = [
        blocks.Figure(plots[name], f"plots/{name}.png", alt=caption, caption=caption, id=f"plot-{name}")
        for name, caption in PLOT_CAPTIONS.items() if name in plots]
    return Page(TITLE, _sources_line(data), [
        *notes,
        Section("Measured and generated", [TableBlock(comparison_table(measured, generated))], id="comparison",
                how=HOW_TABLE),
        Section("Payload sizes: the lognormal fit", [Paragraph(ks_words(data["fit"]))], id="lognormal"),
        Section("The fitted config", [TableBlock(params_table(data))], id="params"),
        Section("Tool mix", [TableBlock(tool_mix_table(measured, generated))], id="tools"),
        Section("QQ plots", figures, id="plots", how=HOW_QQ),
    ])


def write_fit_report(out_dir: Path, data: Mapping[str, Any]) -> list[Path]:
    """Write the report folder (`reports.blocks.write_report_folder`) into ``out_dir``; the paths written, the two
    pages first."""
    plots = draw_fit_plots(data)
    return write_report_folder(out_dir, fit_page(data, plots), plots)
