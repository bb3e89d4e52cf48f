"""The calibration report of ``ctxbench calibrate``: each field of the fitted profile against the preset's
(value, 95% interval, n, preset value, source), the observed-only measures (token-count ratio and cache-hit
share per model, output tokens per call), the latency fit's check (the profile's mean latency over the recorded
calls against the recorded mean) and the tool-error rate against the context length (bins with Wilson
intervals, as a table and a plot), written as ``report.html``, ``report.md`` and ``plots/*.png`` in one folder.

It takes plain data only (`harness.run.profile_fit.report_inputs` makes it, the CLI passes it on): ``preset``,
``profile_name``, ``sources``, ``sessions``, ``calls``, ``main_model``, ``notes``; ``fields`` (per field:
``field``, ``source``, ``value``, ``preset``, ``fit`` (``value``, ``low``, ``high``, ``n``, ``how``) or None,
``why``); ``token_ratios`` and ``cache_shares`` (model -> fit); ``output`` (``mean``, ``median``,
``thought_tokens``: fits or None, ``tool_call_mean``, ``note``); ``bins`` (``low_tokens``, ``high_tokens``,
``median_tokens``, ``errors``, ``outcomes``, ``rate``, ``rate_low``, ``rate_high``); ``error_outcomes``,
``error_count``, ``growth`` ({``base``, ``g_L``, ``g_N``} when fitted); ``check`` (``recorded_mean_s``,
``profile_mean_s``, ``n``, ``gap``, ``within``, ``tolerance``) or None; ``latency_points`` ([recorded, profile]
seconds per call).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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
from reports.plots import log_ticks, new_figure, no_data, plot_style, png_bytes, thousands
from reports.tables import Cell, Table

__all__ = ["PLOT_NAMES", "calibration_page", "draw_calibration_plots", "fields_table",
           "write_calibration_report"]

#: The plots, in the order the report shows them, with their captions.
PLOT_CAPTIONS: dict[str, str] = {
    "error_rate": "Tool-error rate against the context length at the call (Wilson 95% intervals)",
    "latency": "Recorded latency against the fitted profile's mean latency, per call",
}
PLOT_NAMES = tuple(PLOT_CAPTIONS)
TITLE = "ctxbench profile calibration"
#: Where the mock's malformed-call curve starts to grow (`harness.sim.profiles.Profile.p_malformed`).
GROWTH_FROM_TOKENS = 4096

HOW_FIELDS = ("One row per field of the written profile. Source: fitted (from the transcripts, with its 95% "
              "interval and the observations n behind it), price table (the traces' main model's entry in "
              "harness/sim/prices.toml) or preset (a transcript cannot tell it; the last column says why).")
HOW_ERRORS = ("Each tool result whose format records a status counts: an error is any error status (a failing "
              "command, a refused argument, a malformed call), so the rate is an upper bound on malformed calls. "
              "Its context length is ctxbench's count of the input of the call that made the tool call. Bins cut "
              "the results by rank, each with at least 5; the interval is Wilson's. The curve is the mock's "
              "p_malformed with the fitted base and g_L, for a prompt with no raw tool output (noise 0).")
HOW_CHECK = ("The profile's mean latency over the recorded calls: the mock's own formula (Profile.model_seconds) on "
             "each call's recorded uncached, cached and output tokens, times the lognormal's mean exp(sigma^2 / 2), "
             "averaged; against the mean of the recorded latencies. When base_s is fitted, least squares with an "
             "intercept matches the mean by construction, so the gap then measures what the file changes: rounding, "
             "the fields' bounds, coefficients kept at the preset. Calls of every model are pooled into the one "
             "profile.")


def _num(value: Any, digits: int = 4) -> str:
    if isinstance(value, bool) or value is None:
        return "none" if value is None else str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if math.isinf(value):
            return "inf"
        return f"{value:.{digits}g}"
    return str(value)


def _interval(fit: Mapping[str, Any] | None) -> str:
    if not fit or any(not isinstance(fit.get(k), int | float) or math.isnan(fit[k]) for k in ("low", "high")):
        return "-"
    return f"[{_num(fit['low'])}, {_num(fit['high'])}]"


def _fit_cells(name: str, fit: Mapping[str, Any] | None) -> list[Cell]:
    if not fit:
        return [Cell(name, css="name"), Cell("-"), Cell("-"), Cell("-"), Cell("")]
    return [Cell(name, css="name"), Cell(_num(fit["value"])), Cell(_interval(fit)), Cell(_num(fit["n"])),
            Cell(str(fit.get("how", "")))]


def fields_table(data: Mapping[str, Any]) -> Table:
    """Every field: value, interval, n, preset value, source, how or why; fitted first, then the price table's,
    then the preset's."""
    order = {"fitted": 0, "price table": 1, "preset": 2}
    rows = []
    for f in sorted(data["fields"], key=lambda f: order.get(f["source"], 3)):
        fit = f.get("fit")
        rows.append([Cell(f["field"], css="name"), Cell(_num(f["value"])),
                     Cell(_interval(fit) if f["field"] != "caching" else "-"),
                     Cell(_num(fit["n"]) if fit else "-"), Cell(_num(f["preset"])), Cell(f["source"]),
                     Cell(str(f.get("why", "")))])
    return Table("fields", ["field", "value", "95% interval", "n", f"preset {data['preset']}", "source",
                            "how / why"], rows, numeric=False)


def _per_model_table(table_id: str, what: str, fits: Mapping[str, Mapping[str, Any]]) -> Table:
    return Table(table_id, ["model", what, "95% interval", "n (calls)", "how"],
                 [_fit_cells(model, fit) for model, fit in fits.items()])


def output_table(output: Mapping[str, Any]) -> Table:
    rows = [_fit_cells("mean output tokens per call", output.get("mean")),
            _fit_cells("median output tokens per call", output.get("median")),
            _fit_cells("thought_tokens (output minus tool-call tokens)", output.get("thought_tokens"))]
    return Table("output", ["measure", "value", "95% interval", "n (calls)", "how"], rows)


def bins_table(bins: Sequence[Mapping[str, Any]]) -> Table:
    rows = [[Cell(f"{b['low_tokens']:,}-{b['high_tokens']:,}", css="name"), Cell(_num(b["median_tokens"])),
             Cell(f"{b['errors']:,} / {b['outcomes']:,}"), Cell(f"{b['rate']:.1%}"),
             Cell(f"[{b['rate_low']:.1%}, {b['rate_high']:.1%}]")] for b in bins]
    return Table("error-bins", ["context tokens", "median", "errors / results", "rate", "Wilson 95%"], rows)


def check_table(check: Mapping[str, Any]) -> Table:
    verdict = "yes" if check["within"] else "no"
    return Table("latency-check", ["calls", "recorded mean, s", "profile mean, s", "gap",
                                   f"within {check['tolerance']:.0%}"],
                 [[Cell(_num(check["n"])), Cell(_num(check["recorded_mean_s"])), Cell(_num(check["profile_mean_s"])),
                   Cell(f"{check['gap']:+.1%}"), Cell(verdict, css="better" if check["within"] else "worse")]])


# Plots ------------------------------------------------------------------------------------------------------

def error_rate_plot(bins: Sequence[Mapping[str, Any]], growth: Mapping[str, float]) -> Figure:
    """Each bin's rate at its median context length with its Wilson interval, and the fitted curve."""
    with plot_style():
        fig, ax = new_figure()
        if not bins:
            no_data(ax, "no tool results with a recorded status (or too few to bin)")
        else:
            x = np.asarray([max(1.0, b["median_tokens"]) for b in bins])
            rate = np.asarray([b["rate"] for b in bins])
            low = rate - np.asarray([b["rate_low"] for b in bins])
            high = np.asarray([b["rate_high"] for b in bins]) - rate
            ax.errorbar(x, rate, yerr=[low, high], fmt="o", color="#0072B2", capsize=3, label="recorded (bins)")
            if growth:
                span = np.geomspace(max(1.0, float(x.min())), max(float(x.max()), 2.0), 200)
                curve = np.minimum(0.5, growth["base"] * (
                    1 + growth["g_L"] * np.log2(np.maximum(span, GROWTH_FROM_TOKENS) / GROWTH_FROM_TOKENS)))
                ax.plot(span, curve, color="#E69F00", label="fitted p_malformed (noise 0)")
            ax.set_xscale("log")
            log_ticks(ax.xaxis, thousands)
            ax.set_xlabel("context tokens at the call (log scale)")
            ax.set_ylabel("share of tool results with an error status")
            ax.set_ylim(bottom=0)
            ax.legend(loc="upper left", frameon=False)
        ax.set_title(PLOT_CAPTIONS["error_rate"])
    return fig


def latency_plot(points: Sequence[Sequence[float]]) -> Figure:
    """Recorded seconds (y) against the profile's mean seconds (x) per call, with y = x."""
    with plot_style():
        fig, ax = new_figure()
        if not points:
            no_data(ax, "no recorded latencies")
        else:
            recorded = np.asarray([p[0] for p in points], dtype=float)
            fitted = np.asarray([p[1] for p in points], dtype=float)
            ax.plot(fitted, recorded, marker="o", markersize=4, linestyle="none", color="#0072B2")
            low, high = float(min(recorded.min(), fitted.min())), float(max(recorded.max(), fitted.max()))
            ax.plot([low, high], [low, high], color="#555555", linewidth=1, linestyle="--", label="y = x")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
            ax.set_xlabel("profile's mean latency for the call's tokens, s")
            ax.set_ylabel("recorded latency, s")
            ax.legend(loc="upper left", frameon=False)
        ax.set_title(PLOT_CAPTIONS["latency"])
    return fig


def draw_calibration_plots(data: Mapping[str, Any]) -> dict[str, bytes]:
    """Plot name -> PNG bytes of every plot of the report."""
    figures = {"error_rate": error_rate_plot(data["bins"], data.get("growth") or {}),
               "latency": latency_plot(data.get("latency_points") or [])}
    return {name: png_bytes(figure) for name, figure in figures.items()}


# Pages ------------------------------------------------------------------------------------------------------

def _subtitle(data: Mapping[str, Any]) -> str:
    sources = data.get("sources") or []
    return (f"Profile {data['profile_name']!r} fitted to {data['sessions']:,} sessions ({data['calls']:,} agent calls)"
            + (f" from {', '.join(sources)}" if sources else "") + f"; every field not fitted is the {data['preset']} "
            "preset's.")


def _figure(plots: Mapping[str, bytes], name: str) -> list[Block]:
    if name not in plots:
        return []
    caption = PLOT_CAPTIONS[name]
    return [blocks.Figure(plots[name], f"plots/{name}.png", alt=caption, caption=caption, id=f"plot-{name}")]


def calibration_page(data: Mapping[str, Any], plots: Mapping[str, bytes]) -> Page:
    """The report as blocks (``plots``: name -> PNG, linked from ``plots/<name>.png``)."""
    notes: list[Block] = [Paragraph((PerFormat("", "Note: "), note), kind="note", quote=True)
                          for note in data.get("notes", [])]
    check = data.get("check")
    check_blocks: list[Block] = ([TableBlock(check_table(check))] if check is not None
                                 else [Paragraph("No call records its latency: the latency fields are the preset's.")])
    error_words = (f"{data.get('error_count', 0):,} errors in {data.get('error_outcomes', 0):,} tool results with a "
                   "recorded status.")
    if not data["bins"]:
        error_words += " Too few to bin (at least 5 per bin)."
    output = data["output"]
    output_blocks: list[Block] = [TableBlock(output_table(output))]
    if output.get("tool_call_mean") is not None:
        output_blocks.append(Paragraph(
            f"The mock's reply is its thought, padded to thought_tokens, plus the tool call's text (name and JSON "
            f"arguments); the recorded calls' tool-call blocks average {output['tool_call_mean']:.1f} tokens "
            "(ctxbench's count), taken off each call's recorded output tokens."))
    if output.get("note"):
        output_blocks.append(Paragraph(str(output["note"]), kind="note"))
    return Page(TITLE, _subtitle(data), [
        *notes,
        Section("The profile, field by field", [TableBlock(fields_table(data))], id="fields", how=HOW_FIELDS),
        Section("Latency: the fit's check", [*check_blocks, *_figure(plots, "latency")], id="latency",
                how=HOW_CHECK),
        Section("Tool errors against context length",
                [Paragraph(error_words), *([TableBlock(bins_table(data["bins"]))] if data["bins"] else []),
                 *_figure(plots, "error_rate")], id="errors", how=HOW_ERRORS),
        Section("Token-count ratio per model (observed only)",
                [TableBlock(_per_model_table("token-ratio", "ctxbench / recorded input", data["token_ratios"]))],
                id="ratio", how="ctxbench's count of each call's input (as ctxbench replay counts it) over the "
                                "provider's recorded input tokens, pooled; no profile field holds it."),
        Section("Cache-hit share per model (observed only)",
                [TableBlock(_per_model_table("cache-share", "cached / input", data["cache_shares"]))], id="cache",
                how="Recorded cached over recorded input tokens. A provider caches only what its client marks, so "
                    "the share says how this agent used the cache, not the model's cache rules; only caching (on "
                    "when any hit is recorded) is set from it."),
        Section("Output tokens per call", output_blocks, id="output"),
    ])


def write_calibration_report(out_dir: Path, data: Mapping[str, Any]) -> list[Path]:
    """Write the report folder (`reports.blocks.write_report_folder`) into ``out_dir``; the paths written, the two
    pages first."""
    plots = draw_calibration_plots(data)
    return write_report_folder(out_dir, calibration_page(data, plots), plots)
