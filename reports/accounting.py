"""The report of an accounting run (``ctxbench replay``): recorded sessions replayed under each strategy
with exact token accounting (`harness.sim.recorded`).

It says first that its numbers are exact and not simulated, and what is not exact (the stand-in
summaries). Its tables: per strategy, the tokens, cost, cache hits, compactions and hidden tool outputs
per session with 95% bootstrap intervals over the recorded sessions; each strategy against
``unbounded`` (what the session really sent), paired over the same sessions; the largest outputs each
strategy hid. The behavioural metrics of a simulated run (success, tool-syntax errors, loops, latency)
are absent: a recorded session goes on as it happened whatever a strategy hid.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter

from harness.core.rundir import CALLS_TABLE, HIDDEN_TABLE, PLOTS_DIR, REPORT_HTML, REPORT_MD, SESSIONS_TABLE
from reports.blocks import Figure, Page, Paragraph, Section, TableBlock, page_files
from reports.inputs import NUMBER, TEXT, OpenRun, ReportInputError, read_table
from reports.outputs import write_files
from reports.plots import new_figure, no_data, plot_style, strategy_colours, thousands
from reports.stats import Metric, bootstrap, rng_for
from reports.tables import Cell, Table, format_diff, format_value

__all__ = ["ACCOUNTING_METRICS", "accounting_page", "accounting_tables", "write_accounting_report"]

BASELINE = "unbounded"

#: What an accounting report shows per strategy (every one a per-session mean or a ratio of sums).
ACCOUNTING_METRICS: tuple[Metric, ...] = (
    Metric("input_tokens", "input tokens per session", "tokens", "mean", "input_tokens"),
    Metric("context_tokens_mean", "mean prompt tokens per call", "tokens", "mean", "context_tokens_mean"),
    Metric("context_tokens_peak", "peak prompt tokens", "tokens", "mean", "context_tokens_peak"),
    Metric("cost_per_session", "cost per session", "USD", "mean", "cost_usd"),
    Metric("cache_hit_share", "cache-hit share", "share of input tokens", "ratio", "cached_input_tokens",
           "input_tokens", lower_is_better=False),
    Metric("compactions", "compactions per session", "compactions", "mean", "compactions"),
    Metric("tokens_freed", "tokens freed per session", "tokens", "mean", "tokens_freed"),
    Metric("summary_calls", "summary calls per session", "calls", "mean", "summary_calls"),
    Metric("hidden_outputs", "tool outputs hidden per session", "outputs", "mean", "hidden_outputs"),
    Metric("hidden_output_tokens", "tokens of hidden tool outputs per session", "tokens", "mean",
           "hidden_output_tokens"),
    Metric("calls_not_sent", "calls that did not fit the window per session", "calls", "mean", "calls_not_sent"),
)
#: The metrics each strategy is compared on against unbounded.
PAIRED = ("input_tokens", "cost_per_session", "hidden_output_tokens")

_SESSIONS_READ = {"scenario": TEXT, "session_index": NUMBER, "strategy": TEXT, "trace": TEXT, "session_id": TEXT,
                    "format": TEXT, "recorded_calls": NUMBER, "output_tokens": NUMBER,
                    **{c: NUMBER for m in ACCOUNTING_METRICS for c in m.columns}}
_CALLS_READ = {"session_index": NUMBER, "strategy": TEXT, "call_index": NUMBER, "call_kind": TEXT,
                 "input_tokens": NUMBER}
_HIDDEN_COLUMNS = {"session_index": NUMBER, "strategy": TEXT, "tool_use_id": TEXT, "tool": TEXT, "tokens": NUMBER,
                   "first_hidden_call": NUMBER, "how": TEXT}

EXACT_NOTE = (
    "Exact accounting, not a simulation: each recorded session's own calls and outputs were replayed under each "
    "strategy, and every number below is what that strategy would have sent, counted with the real tokenizer and "
    "priced with the model profile's prices and prefix-cache rules. The recorded session goes on as it happened "
    "whatever a strategy hid, so this mode says nothing about whether the agent would still have succeeded: "
    "success, tool-syntax errors, loops and latency are absent (run the simulation for them). Not exact: what a "
    "summarizing strategy's summary says (a transcript has none; a stand-in lists the summarized tool calls, "
    "capped at the profile's summary size), and cache freshness, which assumes each call follows the previous "
    "within the cache's lifetime.")


def _order(strategies: Sequence[str], manifest_order: Sequence[str]) -> list[str]:
    known = [s for s in manifest_order if s in strategies]
    return known + sorted(set(strategies) - set(known))


def accounting_tables(sessions: pd.DataFrame, hidden: pd.DataFrame, order: Sequence[str], *,
                      resamples: int = 2000) -> dict[str, Table]:
    """The report's tables: ``strategies`` (each metric with its interval), ``paired`` (against
    unbounded, when the run has it), ``hidden`` (the largest hidden outputs) and ``traces``."""
    tables: dict[str, Table] = {}
    rows: list[list[Cell]] = []
    for strategy in order:
        group = sessions[sessions["strategy"] == strategy]
        row = [Cell(strategy, css="name", sub=f"n={len(group)}")]
        for metric in ACCOUNTING_METRICS:
            values = group[metric.column].to_numpy(dtype=float)
            den = group[metric.denominator].to_numpy(dtype=float) if metric.denominator else None
            value, lo, hi = bootstrap(values, metric, denominators=den, resamples=resamples,
                                      rng=rng_for(0, "accounting", metric.name, strategy))
            interval = f"[{format_value(metric, lo)}, {format_value(metric, hi)}]"
            row.append(Cell(format_value(metric, value), sub=interval))
        rows.append(row)
    tables["strategies"] = Table("strategies", ["strategy", *(m.label for m in ACCOUNTING_METRICS)], rows)
    if BASELINE in order:
        base = sessions[sessions["strategy"] == BASELINE].set_index("session_index")
        paired_rows: list[list[Cell]] = []
        by_name = {m.name: m for m in ACCOUNTING_METRICS}
        for strategy in order:
            if strategy == BASELINE:
                continue
            other = sessions[sessions["strategy"] == strategy].set_index("session_index")
            common = base.index.intersection(other.index)
            row = [Cell(strategy, css="name", sub=f"{len(common)} sessions")]
            for name in PAIRED:
                metric = by_name[name]
                diff = (other.loc[common, metric.column].to_numpy(dtype=float)
                        - base.loc[common, metric.column].to_numpy(dtype=float))
                value, lo, hi = bootstrap(diff, metric, resamples=resamples,
                                          rng=rng_for(0, "accounting-paired", name, strategy))
                baseline_mean = float(base.loc[common, metric.column].mean()) if len(common) else float("nan")
                relative = f"{value / baseline_mean:+.1%}" if baseline_mean else ""
                excludes = np.isfinite(lo) and (lo > 0 or hi < 0)
                css = "" if not excludes else ("better" if (value < 0) == metric.lower_is_better else "worse")
                row.append(Cell(format_diff(metric, value), note=relative,
                                sub=f"[{format_diff(metric, lo)}, {format_diff(metric, hi)}]", css=css))
            paired_rows.append(row)
        tables["paired"] = Table("paired", ["strategy", *(f"{by_name[n].label} vs {BASELINE}" for n in PAIRED)],
                                 paired_rows)
    if not hidden.empty:
        largest = hidden.sort_values(["tokens", "strategy", "session_index", "tool_use_id"],
                                     ascending=[False, True, True, True]).head(20)
        header = ["strategy", "session", "tool call", "tool", "tokens", "first call without it", "how"]
        tables["hidden"] = Table("hidden", header,
                                 [[Cell(str(r.strategy), css="name"), Cell(str(r.session_index)),
                                   Cell(str(r.tool_use_id)), Cell(str(r.tool)), Cell(f"{int(r.tokens):,}"),
                                   Cell(str(int(r.first_hidden_call))), Cell(str(r.how))]
                                  for r in largest.itertuples()])
    first = sessions.drop_duplicates("session_index").sort_values("session_index")
    tables["traces"] = Table("traces", ["session", "trace", "format", "id", "recorded calls"],
                             [[Cell(str(int(r.session_index)), css="name"), Cell(str(r.trace)), Cell(str(r.format)),
                               Cell(str(r.session_id)), Cell(str(int(r.recorded_calls)))] for r in first.itertuples()],
                             numeric=False)
    return tables


def _prompt_plot(calls: pd.DataFrame, order: Sequence[str]) -> bytes:
    """Mean prompt tokens per agent call, by call index, one line per strategy."""
    with plot_style():
        fig, ax = new_figure()
        agent = calls[calls["call_kind"] == "agent"] if not calls.empty else calls
        if agent.empty:
            no_data(ax, "no calls")
        else:
            colours = strategy_colours(order)
            for strategy in order:
                rows = agent[agent["strategy"] == strategy]
                if rows.empty:
                    continue
                index = rows.groupby("session_index").cumcount()
                mean = rows.groupby(index.to_numpy())["input_tokens"].mean()
                ax.plot(mean.index, mean.to_numpy(), label=strategy, color=colours[strategy], linewidth=1.4)
            ax.set_xlabel("agent call of the recorded session")
            ax.set_ylabel("prompt tokens (mean over sessions)")
            ax.yaxis.set_major_formatter(FuncFormatter(thousands))
            handles, labels = ax.get_legend_handles_labels()
            fig.legend(handles, labels, loc="outside right upper", title="strategy", frameon=False)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        return buffer.getvalue()


def accounting_page(title: str, lead: str, tables: dict[str, Table], png: bytes, png_path: str) -> Page:
    """The report as blocks: what is exact and what is not, then a section per table of
    :func:`accounting_tables`, then the prompt-tokens plot (``png``, linked at ``png_path`` from Markdown)."""
    sections = [
        Section("Exact accounting", [Paragraph(EXACT_NOTE, kind="note-box")]),
        Section("Per strategy", [TableBlock(tables["strategies"])],
                how="Each cell: the mean over the recorded sessions (the cache-hit share: cached over all input "
                    "tokens) and its 95% bootstrap interval over sessions."),
    ]
    if "paired" in tables:
        sections.append(Section(f"Against {BASELINE} (what the sessions really sent)", [TableBlock(tables["paired"])],
                                how="Each strategy minus unbounded over the same sessions, with the relative change "
                                    "and a 95% bootstrap interval; green: fewer tokens or lower cost with an interval "
                                    "that excludes zero."))
    if "hidden" in tables:
        sections.append(Section("The largest tool outputs hidden", [TableBlock(tables["hidden"])],
                                how="A recorded tool output a strategy removed from the window or replaced "
                                    "(placeholder, stub, truncation, summary) at some call; 'first call without it' "
                                    "counts agent calls from 0."))
    sections += [
        Section("Recorded sessions", [TableBlock(tables["traces"])],
                how="The sessions read, in the order of the run's session index."),
        Section("Prompt tokens per call", [Figure(png, png_path, alt="prompt tokens per call")]),
    ]
    return Page(title, lead, sections)


def write_accounting_report(run: OpenRun, formats: Sequence[str]) -> list[Path]:
    """Write ``report.html`` / ``report.md`` and ``plots/accounting-prompt-tokens.png`` for an accounting run."""
    sessions = read_table(run.path / SESSIONS_TABLE, _SESSIONS_READ)
    if sessions.empty:
        raise ReportInputError(f"{run.path / SESSIONS_TABLE}: no sessions")
    calls = read_table(run.path / CALLS_TABLE, _CALLS_READ)
    hidden_path = run.path / HIDDEN_TABLE
    hidden = read_table(hidden_path, _HIDDEN_COLUMNS) if hidden_path.exists() else pd.DataFrame(
        columns=list(_HIDDEN_COLUMNS))
    order = _order(sorted(set(sessions["strategy"])), run.manifest.strategy_order())
    tables = accounting_tables(sessions, hidden, order)
    png_path = run.path / PLOTS_DIR / "accounting-prompt-tokens.png"
    png = _prompt_plot(calls, order)
    lead = _lead(sessions, order)
    title = f"ctxbench accounting report: {run.run_id}"
    page = accounting_page(title, lead, tables, png, f"{PLOTS_DIR}/{png_path.name}")
    pages = page_files(page, formats, run.path / REPORT_HTML, run.path / REPORT_MD)
    write_files(run.path, {png_path: png, **pages})
    return list(pages)


def _lead(sessions: pd.DataFrame, order: Sequence[str]) -> str:
    """The fewest input tokens and the lowest cost among the strategies that sent every call, each against
    unbounded, with what that strategy hides."""
    means = sessions.groupby("strategy")[["input_tokens", "cost_usd", "hidden_outputs", "hidden_output_tokens",
                                          "calls_not_sent"]].mean()
    fitting = [s for s in order if s in means.index and means.loc[s, "calls_not_sent"] == 0]
    count = sessions["session_index"].nunique()
    if not fitting:
        return f"{count} recorded sessions; no strategy fit every call into the profile's window."

    def against_baseline(strategy: str, column: str) -> str:
        if BASELINE in means.index and strategy != BASELINE and means.loc[BASELINE, column]:
            change = means.loc[strategy, column] / means.loc[BASELINE, column] - 1
            return f", {change:+.0%} against {BASELINE}"
        return ""

    def hides(strategy: str) -> str:
        return (f"hiding {means.loc[strategy, 'hidden_outputs']:.1f} tool outputs "
                f"({means.loc[strategy, 'hidden_output_tokens']:,.0f} tokens) per session")

    fewest = min(fitting, key=lambda s: (means.loc[s, "input_tokens"], order.index(s)))
    cheapest = min(fitting, key=lambda s: (means.loc[s, "cost_usd"], order.index(s)))
    text = (f"{count} recorded sessions, {len(order)} strategies, among those that sent every call: fewest input "
            f"tokens, {fewest} ({means.loc[fewest, 'input_tokens']:,.0f} per session"
            f"{against_baseline(fewest, 'input_tokens')}; {hides(fewest)}); lowest cost, {cheapest} "
            f"(${means.loc[cheapest, 'cost_usd']:,.4f} per session{against_baseline(cheapest, 'cost_usd')}; "
            f"{hides(cheapest)}).")
    return text
