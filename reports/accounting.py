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
from reports.blocks import Block, Figure, Page, Paragraph, Section, TableBlock, page_files
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
    Metric("needed_hidden", "needed values hidden per session", "values", "mean", "needed_hidden"),
)
#: The metrics each strategy is compared on against unbounded.
PAIRED = ("input_tokens", "cost_per_session", "hidden_output_tokens", "needed_hidden")

_SESSIONS_READ = {"scenario": TEXT, "session_index": NUMBER, "strategy": TEXT, "trace": TEXT, "session_id": TEXT,
                    "format": TEXT, "recorded_calls": NUMBER, "output_tokens": NUMBER, "needed_values": NUMBER,
                    **{c: NUMBER for m in ACCOUNTING_METRICS for c in m.columns}}
#: Columns of a replay's sessions table that its report reads when present (a directory written before they
#: existed lacks them).
_SESSIONS_OPTIONAL = ("trace_model", "tokenizer", "recorded_input_tokens", "recorded_usage_calls", "reading_notes")
_CALLS_READ = {"session_index": NUMBER, "strategy": TEXT, "call_index": NUMBER, "call_kind": TEXT,
                 "input_tokens": NUMBER}
_CALLS_OPTIONAL = ("recorded_input_tokens",)
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


def never_triggered(sessions: pd.DataFrame, order: Sequence[str]) -> list[str]:
    """The strategies that changed nothing on these sessions: every session sent what unbounded sent (the same
    input tokens), with no compaction, summary call or hidden output."""
    if BASELINE not in order:
        return []
    base = sessions[sessions["strategy"] == BASELINE].set_index("session_index")["input_tokens"]
    out = []
    for strategy in order:
        if strategy == BASELINE:
            continue
        rows = sessions[sessions["strategy"] == strategy].set_index("session_index")
        same = rows["input_tokens"].reindex(base.index).to_numpy(dtype=float) == base.to_numpy(dtype=float)
        if (len(rows) and same.all() and not rows["compactions"].any() and not rows["summary_calls"].any()
                and not rows["hidden_outputs"].any()):
            out.append(strategy)
    return out


_PRICE_FIELDS = (("price_in", "input"), ("price_cache_read", "cached input"), ("price_cache_write", "cache write"),
                 ("price_out", "output"))


def assumptions_table(run: OpenRun, sessions: pd.DataFrame, order: Sequence[str]) -> Table:
    """What the numbers assumed: the traces' models, the profile's window, prices and cache rules, and each
    strategy's parameters (those that never triggered marked)."""
    model = run.manifest.model
    models = sorted({str(m) for m in sessions.get("trace_model", pd.Series(dtype=str)).dropna() if str(m)})
    tokenizers = sorted({str(t) for t in sessions.get("tokenizer", pd.Series(dtype=str)).dropna() if str(t)})
    rows = [[Cell("models the traces name", css="name"), Cell(", ".join(models) or "none named")],
            [Cell("tokenizer", css="name"), Cell(", ".join(tokenizers) or "-",
                                                 sub="the model's own where it is public (OpenAI); cl100k_base "
                                                     "elsewhere, an estimate")],
            [Cell("model profile", css="name"), Cell(str(model.get("name") or "custom"))],
            [Cell("window", css="name"), Cell(f"{int(model.get('window_tokens', 0)):,} tokens")],
            [Cell("prices (USD per million tokens)", css="name"),
             Cell("; ".join(f"{label} {float(model[key]):g}" for key, label in _PRICE_FIELDS if key in model))]]
    if model.get("caching") is False:
        cache = "off"
    else:
        cache = (f"prefix cache from {model.get('cache_min_tokens')} tokens, lifetime {model.get('cache_ttl_s')} s, "
                 f"in steps of {model.get('cache_granularity')} tokens")
    rows.append([Cell("cache rules", css="name"), Cell(cache)])
    params = {str(v.get("label") or v.get("name")): v.get("params") for v in run.manifest.variants}
    quiet = set(never_triggered(sessions, order))
    controls = _controls(run)
    for strategy in order:
        given = params.get(strategy)
        text = ", ".join(f"{k} = {v}" for k, v in sorted((given or {}).items())) or "defaults"
        if strategy in quiet:
            text += " (never triggered: identical to unbounded)"
        if strategy in controls:
            text += " (a control)"
        rows.append([Cell(f"strategy {strategy}", css="name"), Cell(text)])
    return Table("assumptions", ["what", "value"], rows, numeric=False)


def _controls(run: OpenRun) -> set[str]:
    return {str(v.get("label") or v.get("name")) for v in run.manifest.variants if v.get("control")}


def usage_tables(sessions: pd.DataFrame, calls: pd.DataFrame) -> tuple[Table | None, Table | None]:
    """ctxbench's unbounded count against the usage the traces recorded: per session (with the ratio) and per
    trace model (the ratio of sums); None where nothing was recorded."""
    if "recorded_input_tokens" not in sessions or BASELINE not in set(sessions["strategy"]):
        return None, None
    base = sessions[(sessions["strategy"] == BASELINE) & sessions["recorded_input_tokens"].notna()]
    if base.empty:
        return None, None
    per_call = calls[(calls["strategy"] == BASELINE) & (calls["call_kind"] == "agent")] if not calls.empty else calls
    if "recorded_input_tokens" in per_call:
        per_call = per_call[per_call["recorded_input_tokens"].notna()]
    rows: list[list[Cell]] = []
    sums: dict[str, tuple[float, float]] = {}
    for r in base.itertuples():
        recorded = float(r.recorded_input_tokens)
        covered = per_call[per_call["session_index"] == r.session_index] if "recorded_input_tokens" in per_call \
            else per_call.iloc[0:0]
        # Per-call usage: compare the calls it covers; a session total: the whole session.
        ours = float(covered["input_tokens"].sum()) if len(covered) else float(r.input_tokens)
        model = str(getattr(r, "trace_model", "") or "unnamed")
        ours_sum, recorded_sum = sums.get(model, (0.0, 0.0))
        sums[model] = (ours_sum + ours, recorded_sum + recorded)
        rows.append([Cell(str(int(r.session_index)), css="name", sub=str(r.session_id)), Cell(model),
                     Cell(str(int(getattr(r, "recorded_usage_calls", 0) or 0))), Cell(f"{recorded:,.0f}"),
                     Cell(f"{ours:,.0f}"), Cell(f"{ours / recorded:.3f}" if recorded else "-")])
    per_session = Table("usage", ["session", "model", "calls recorded", "recorded input tokens",
                                  "ctxbench (unbounded)", "ratio"], rows)
    per_model = Table("usage-models", ["model", "recorded input tokens", "ctxbench (unbounded)", "ratio"],
                      [[Cell(m, css="name"), Cell(f"{rec:,.0f}"), Cell(f"{ours:,.0f}"),
                        Cell(f"{ours / rec:.3f}" if rec else "-")] for m, (ours, rec) in sorted(sums.items())])
    return per_session, per_model


def _usage_plot(calls: pd.DataFrame) -> bytes | None:
    """ctxbench's input tokens per call against the recorded ones (unbounded), on log axes with y = x."""
    if calls.empty or "recorded_input_tokens" not in calls:
        return None
    rows = calls[(calls["strategy"] == BASELINE) & (calls["call_kind"] == "agent")
                 & calls["recorded_input_tokens"].notna()]
    if rows.empty:
        return None
    with plot_style():
        fig, ax = new_figure()
        recorded = rows["recorded_input_tokens"].to_numpy(dtype=float)
        ours = rows["input_tokens"].to_numpy(dtype=float)
        ax.scatter(recorded, ours, s=14, alpha=0.7)
        low, high = max(1.0, float(min(recorded.min(), ours.min()))), float(max(recorded.max(), ours.max()))
        ax.plot([low, high], [low, high], color="#999999", linewidth=1, linestyle="--", label="equal")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("recorded input tokens of the call (the provider's count)")
        ax.set_ylabel("ctxbench's count (unbounded)")
        ax.legend(frameon=False)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        return buffer.getvalue()


def _notes(sessions: pd.DataFrame) -> list[str]:
    if "reading_notes" not in sessions:
        return []
    notes: dict[str, None] = {}
    for text in sessions.drop_duplicates("session_index")["reading_notes"].dropna():
        for line in str(text).splitlines():
            if line:
                notes.setdefault(line, None)
    return list(notes)


def accounting_page(title: str, lead: str, tables: dict[str, Table], png: bytes, png_path: str, *,
                    usage_png: bytes | None = None, usage_path: str = "", notes: Sequence[str] = ()) -> Page:
    """The report as blocks: what it assumed (``tables["assumptions"]``, when given), what is exact and what is
    not, then a section per table of :func:`accounting_tables`, the recorded usage (when the traces hold it),
    the reading notes, then the prompt-tokens plot (``png``, linked at ``png_path`` from Markdown)."""
    sections = []
    if "assumptions" in tables:
        sections.append(Section("What these numbers assume", [TableBlock(tables["assumptions"])],
                                how="The model the traces name, the profile whose window, prices and cache rules "
                                    "priced every call, and each strategy's parameters. A strategy that never "
                                    "triggered sent what unbounded sent on every session."))
    sections += [
        Section("Exact accounting", [Paragraph(EXACT_NOTE, kind="note-box")]),
        Section("Per strategy", [TableBlock(tables["strategies"])],
                how="Each cell: the mean over the recorded sessions (the cache-hit share: cached over all input "
                    "tokens) and its 95% bootstrap interval over sessions. A needed value is one the agent wrote in "
                    "a later call's arguments or its answer that first appeared in an earlier tool output; hidden: "
                    "visible nowhere in the window sent with the call that used it."),
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
    if "usage" in tables:
        blocks: list[Block] = [TableBlock(tables["usage-models"]), TableBlock(tables["usage"])]
        if usage_png is not None:
            blocks.append(Figure(usage_png, usage_path, alt="ctxbench's input tokens against the recorded ones"))
        sections.append(Section("Token counts against the recorded usage", blocks,
                                how="The provider's own input-token counts, as the trace recorded them (per call, or "
                                    "the session's total), against ctxbench's count of what unbounded sent (the "
                                    "same calls): the ratio says how far the tokenizer and the prompt ctxbench "
                                    "rebuilds (system prompt, tool schemas, messages) are from what was billed."))
    if notes:
        sections.append(Section("How the traces were read", [Paragraph("; ".join(notes))],
                                how="What reading had to assume or change (fragments, reused tool ids, text actions "
                                    "read as tool calls, transcripts with no tool call)."))
    sections += [
        Section("Recorded sessions", [TableBlock(tables["traces"])],
                how="The sessions read, in the order of the run's session index."),
        Section("Prompt tokens per call", [Figure(png, png_path, alt="prompt tokens per call")]),
    ]
    return Page(title, lead, sections)


def write_accounting_report(run: OpenRun, formats: Sequence[str]) -> list[Path]:
    """Write ``report.html`` / ``report.md`` and its plots (``plots/accounting-*.png``) for an accounting run."""
    sessions = read_table(run.path / SESSIONS_TABLE, _SESSIONS_READ)
    if sessions.empty:
        raise ReportInputError(f"{run.path / SESSIONS_TABLE}: no sessions")
    calls = read_table(run.path / CALLS_TABLE, _CALLS_READ, optional=_CALLS_OPTIONAL)
    hidden_path = run.path / HIDDEN_TABLE
    hidden = read_table(hidden_path, _HIDDEN_COLUMNS) if hidden_path.exists() else pd.DataFrame(
        columns=list(_HIDDEN_COLUMNS))
    order = _order(sorted(set(sessions["strategy"])), run.manifest.strategy_order())
    tables = accounting_tables(sessions, hidden, order)
    tables["assumptions"] = assumptions_table(run, sessions, order)
    per_session, per_model = usage_tables(sessions, calls)
    if per_session is not None and per_model is not None:
        tables["usage"], tables["usage-models"] = per_session, per_model
    png_path = run.path / PLOTS_DIR / "accounting-prompt-tokens.png"
    usage_path = run.path / PLOTS_DIR / "accounting-recorded-usage.png"
    png = _prompt_plot(calls, order)
    usage_png = _usage_plot(calls) if "usage" in tables else None
    lead = _lead(sessions, order, _controls(run), never_triggered(sessions, order))
    title = f"ctxbench accounting report: {run.run_id}"
    page = accounting_page(title, lead, tables, png, f"{PLOTS_DIR}/{png_path.name}", usage_png=usage_png,
                           usage_path=f"{PLOTS_DIR}/{usage_path.name}", notes=_notes(sessions))
    pages = page_files(page, formats, run.path / REPORT_HTML, run.path / REPORT_MD)
    files: dict[Path, bytes] = {png_path: png, **pages}
    if usage_png is not None:
        files[usage_path] = usage_png
    write_files(run.path, files)
    return list(pages)


def _lead(sessions: pd.DataFrame, order: Sequence[str], controls: set[str] = frozenset(),  # type: ignore[assignment]
          quiet: Sequence[str] = ()) -> str:
    """The recommendation: among the strategies that sent every call and are not controls, those that hid no
    needed value (else the fewest, with the count; never the one that hid the most), the lowest cost, with its
    tokens against unbounded; then the controls and the strategies that never triggered."""
    means = sessions.groupby("strategy")[["input_tokens", "cost_usd", "hidden_outputs", "hidden_output_tokens",
                                          "calls_not_sent"]].mean()
    needed_hidden = sessions.groupby("strategy")["needed_hidden"].sum()
    needed = int(sessions[sessions["strategy"] == order[0]]["needed_values"].sum()) if order else 0
    count = sessions["session_index"].nunique()
    # A strategy that never triggered sent what unbounded sent: it is unbounded here, not a choice of its own.
    fitting = [s for s in order if s in means.index and means.loc[s, "calls_not_sent"] == 0 and s not in controls
               and s not in quiet]
    if not fitting:
        return f"{count} recorded sessions; no strategy (controls aside) fit every call into the profile's window."

    def against_baseline(strategy: str, column: str) -> str:
        if BASELINE in means.index and strategy != BASELINE and means.loc[BASELINE, column]:
            change = means.loc[strategy, column] / means.loc[BASELINE, column] - 1
            return f", {change:+.0%} against {BASELINE}"
        return ""

    fewest_hidden = min(int(needed_hidden.get(s, 0)) for s in fitting)
    if needed and 2 * fewest_hidden > needed:
        return (f"{count} recorded sessions, {len(order)} strategies: none to recommend. Every strategy that sent "
                f"every call hid most of the {needed:,} values the agents used from earlier tool outputs (the fewest, "
                f"{fewest_hidden:,}).")
    pool = [s for s in fitting if int(needed_hidden.get(s, 0)) == fewest_hidden]
    pick = min(pool, key=lambda s: (means.loc[s, "cost_usd"], means.loc[s, "input_tokens"], order.index(s)))
    if not needed:
        safety = "the transcripts show no value the agent took from a tool output, so nothing says what a strategy " \
                 "may hide"
    elif fewest_hidden == 0:
        safety = f"it hid none of the {needed:,} values the agents used from earlier tool outputs"
    else:
        safety = (f"every strategy hid some of the {needed:,} values the agents used from earlier tool outputs; it "
                  f"hid the fewest, {fewest_hidden:,}")
    text = (f"{count} recorded sessions, {len(order)} strategies. Recommended: {pick}, the lowest cost among the "
            f"strategies that sent every call and hid the fewest needed values (${means.loc[pick, 'cost_usd']:,.4f} "
            f"per session{against_baseline(pick, 'cost_usd')}; {means.loc[pick, 'input_tokens']:,.0f} input tokens"
            f"{against_baseline(pick, 'input_tokens')}); {safety}.")
    shown = [c for c in order if c in controls]
    if shown:
        text += f" Controls, not candidates: {', '.join(shown)}."
    if quiet:
        text += f" Never triggered on these sessions (identical to {BASELINE}): {', '.join(quiet)}."
    return text
