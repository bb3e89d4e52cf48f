"""A run's report: ``report.html`` (self-contained: inline CSS, plots as PNG data URIs, nothing fetched
from the network) and ``report.md`` (the same tables, with links to ``plots/*.png``).

The report leads with the decision: per goal the best strategy and the strategies statistically tied
with it, and the success-vs-cost Pareto front (:mod:`reports.decision`). The headline metrics, why
sessions fail (:mod:`reports.outcomes`) and what drives the cost follow; then the details (paired
differences, plots, breakdowns); provenance comes last.

Reads only the run directory (``config.toml``, ``manifest.json``, ``sessions.parquet``,
``calls.parquet``), so a run copied to a laptop renders without any runtime state. ``SECTIONS`` declares
the report's sections once, in order; :func:`report_page` builds the page of blocks from them once, and
both formats are rendered from that page (:mod:`reports.blocks`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.core.rundir import ACCOUNTING_MODE, PLOTS_DIR, REPORT_HTML, REPORT_MD, Manifest
from harness.core.suggest import did_you_mean
from reports import blocks, stats
from reports.blocks import (
    HTML,
    Block,
    Bullets,
    Details,
    Figure,
    Only,
    Page,
    Paragraph,
    PerFormat,
    Section,
    Strong,
    TableBlock,
    sibling_page,
)
from reports.decision import (
    RECOMMENDATION_GOAL,
    CostContrast,
    GoalResult,
    Recommendation,
    best_corner,
    cost_contrasts,
    decide,
    decision_order,
    goal_pairs,
    pareto_front,
    recommend,
    recommendation_pairs,
)
from reports.identical import MERGED_SEPARATOR, IdenticalGroup, identical_groups, merge_identical
from reports.inputs import (
    FORMATS,
    OPTIONAL_REPORT_CALL_COLUMNS,
    REPORT_CALL_COLUMNS,
    REPORT_COLUMNS,
    OpenRun,
    ReportInputError,
    check_formats,
    check_run_dir,
    open_run_dir,
)
from reports.memory import memory_blocks
from reports.outcomes import OutcomeHits, explain_outcomes
from reports.outputs import Png, check_targets, write_files
from reports.runtimes import RuntimeGroup, RuntimePair, differing_settings, runtime_groups, runtime_pairs
from reports.stats import METRICS, Metric, metrics_of
from reports.sweep_stats import is_sweep, report_plot_variants
from reports.tables import (
    Cell,
    Table,
    format_diff,
    format_interval,
    format_relative,
    format_value,
    headline_cell,
    interval_cell,
    interval_notes,
    is_share,
    relative_phrase,
    too_few_text,
)
from reports.tool_names import tool_names_blocks
from reports.validation.status import status_for_manifest, validation_status_paragraph

# The CLI imports the input checks from here (they live in reports.inputs).
__all__ = [
    "DEFAULT_BASELINE",
    "FORMATS",
    "HEADLINE_ORDER",
    "PLOTS",
    "SECTIONS",
    "Plot",
    "ReportData",
    "ReportInputError",
    "ReportSection",
    "check_formats",
    "check_run_dir",
    "choose_baseline",
    "collect",
    "headline_metrics",
    "render_html",
    "render_markdown",
    "report_page",
    "write_report",
]


# What the report is made of -------------------------------------------------------------------------


@dataclass(frozen=True)
class Plot:
    """One of the report's plots: its file name (without ``.png``), its title and how to read it."""

    name: str
    title: str
    how: str


PLOTS: tuple[Plot, ...] = (
    Plot("context_tokens_by_turn", "Context tokens by turn",
         "The tokens the model saw at each turn, per strategy. A strategy that manages its context levels off "
         "or saw-tooths; one that does not grows until the window (or the session) ends."),
    Plot("ecdf_input_tokens", "Input tokens per session (ECDF)",
         "One panel per strategy, on shared axes, from the lowest median up: its curve in colour over the other "
         "strategies' in grey. For each x, the share of sessions that used at most x input tokens. Curves further "
         "left send fewer tokens (which is not the same as cheaper: see What drives the cost); a long right tail "
         "means a few sessions dominate the bill."),
    Plot("ecdf_latency", "Latency per session (ECDF)",
         "One panel per strategy, on shared axes, from the lowest median up: its curve in colour over the other "
         "strategies' in grey. For each x, the share of sessions that finished within x seconds of simulated "
         "time. Compare the medians (the dot at y = 0.5) and the tails (y near 1)."),
    Plot("syntax_errors_by_context", "Tool-syntax errors by context size",
         "Malformed tool calls against the context size at the call, one panel per strategy with its 95% Wilson "
         "intervals (vertical bars), the other strategies in grey. A rising curve is the long-context "
         "degradation the mock model is calibrated to; strategies that keep contexts short stay left of it."),
    Plot("cost_vs_success", "Cost per solved session against success",
         f"Each strategy's success rate (x, higher is better) against its cost per solved session (y, lower is "
         f"better), with 95% intervals as whiskers. The best corner is {best_corner()}: more sessions solved for "
         "less money per solved session. Ringed points joined by a dashed line are the Pareto front: no other "
         "strategy is at least as successful and at least as cheap per solved session. A strategy without a "
         "solved session has no cost per solved session and is named in the top-left corner instead."),
    Plot("outcome_mix", "Outcome mix",
         "How each strategy's sessions ended. Success is what you want; stuck, overflow and max_turns are the "
         "failures a context strategy is supposed to prevent."),
    Plot("tokens_freed", "Tokens freed per compaction",
         "For each strategy that changed what the model sees (a clear, summary, slide or mask), the tokens it took "
         "out before a call, as shares of its compactions, over the other strategies' pooled in grey. Many small "
         "edits (a window sliding every turn, results cleared one at a time) each rewrite the prompt cache from "
         "the edit on; few large ones (a summary) cost a summary call each. The thrash rate in the headline "
         "table is the share of compactions within 3 turns of the previous one."),
)
PLOT_BY_NAME = {p.name: p for p in PLOTS}
#: The plot the Decision section shows (the Plots section shows the others).
DECISION_PLOT = "cost_vs_success"

#: The strategy the paired differences are against unless ``baseline`` names another.
DEFAULT_BASELINE = "unbounded"

#: The headline columns in the order a decision reads them: success and what it costs first. A metric
#: not listed (one added to ``reports.stats.METRICS`` later) follows in METRICS order.
HEADLINE_ORDER = ("success_rate", "cost_per_solved_session", "cost_per_session", "cache_hit_share", "input_tokens",
                  "context_tokens_mean", "loop_rate", "tool_syntax_error_rate", "latency_mean", "latency_p50",
                  "latency_p95")


def headline_metrics() -> list[Metric]:
    """Every headline metric, in the report's column order (:data:`HEADLINE_ORDER`)."""
    listed = [METRICS[name] for name in HEADLINE_ORDER if name in METRICS]
    return listed + [m for m in METRICS.values() if m.name not in HEADLINE_ORDER]


def shown_metrics(data: ReportData) -> list[Metric]:
    """The headline metrics this run has (an optional metric it lacks the columns of is left out)."""
    have = {m.name for m in metrics_of(data.sessions)}
    return [m for m in headline_metrics() if m.name in have]


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows, computed from a run directory by :func:`collect`."""

    run_dir: Path
    run_id: str
    manifest: Manifest
    config_text: str
    sessions: pd.DataFrame
    strategies: list[str]
    baseline: str
    baseline_note: str
    headline: pd.DataFrame
    paired: pd.DataFrame
    outcomes: pd.DataFrame
    families: pd.DataFrame
    loops: pd.DataFrame
    #: Plot name -> the drawn PNG and where it goes (``plots/<name>.png``); written by :func:`write_report`.
    plots: dict[str, Png]
    #: A sweep run (``reports.sweep.is_sweep``): the report links the sweep page.
    sweep: bool = False
    #: Which strategies the plots show when not all of them (a sweep run).
    plots_note: str = ""
    #: The strategies in the order the tables list them (:func:`reports.decision.decision_order`).
    ranked: list[str] = field(default_factory=list)
    #: Per goal, the best strategy and the others against it (:func:`reports.decision.decide`).
    decisions: list[GoalResult] = field(default_factory=list)
    #: The success-vs-cost Pareto front, cheapest first (:func:`reports.decision.pareto_front`).
    front: list[str] = field(default_factory=list)
    #: Every failing outcome that happened, with the strategies it hit most.
    failures: list[OutcomeHits] = field(default_factory=list)
    #: Strategies whose tokens and cost move in opposite directions against the baseline's.
    contrasts: list[CostContrast] = field(default_factory=list)
    #: Strategies whose sessions were identical, each group shown as one row (:mod:`reports.identical`).
    identical: list[IdenticalGroup] = field(default_factory=list)
    #: The decision within each runtime the strategies ran under (one block when they all shared one).
    blocks: list[DecisionBlock] = field(default_factory=list)
    #: Each strategy under each named runtime against itself under the run's first runtime.
    runtime_pairs: list[RuntimePair] = field(default_factory=list)
    #: The paired differences of :attr:`runtime_pairs` (rows as :func:`reports.stats.paired_differences`).
    runtime_effects: pd.DataFrame = field(default_factory=pd.DataFrame)


#: The metrics the runtime effect within each strategy is shown for.
RUNTIME_EFFECT_METRICS = ("success_rate", "cost_per_solved_session", "loop_rate", "input_tokens")


@dataclass(frozen=True)
class DecisionBlock:
    """The decision among the strategies that ran under one runtime: its goals, front and sentence."""

    runtime: RuntimeGroup
    decisions: list[GoalResult]
    front: list[str]
    recommendation: Recommendation


def _strategy_order(sessions: pd.DataFrame, manifest: Manifest,
                    identical: Sequence[IdenticalGroup] = ()) -> list[str]:
    """The strategies in config order (from the manifest; a merged row where its first member was), then
    any others by name."""
    present = set(sessions["strategy"]) if not sessions.empty else set()
    configured = [_merged_name(s, identical) or s for s in manifest.strategy_order()]
    ordered = [s for s in dict.fromkeys(configured) if s in present]
    return ordered + sorted(present - set(ordered))


def choose_baseline(strategies: Sequence[str], wanted: str | None) -> tuple[str, str]:
    """(baseline, a note for the report or ""): ``wanted`` when given, which must be one of
    ``strategies`` (else a ReportInputError listing them); else :data:`DEFAULT_BASELINE`, or the run's
    first strategy when it has none, said in the note."""
    if wanted is not None:
        if strategies and wanted not in strategies:
            raise ReportInputError(f"unknown baseline {wanted!r}{did_you_mean(wanted, strategies)}: this run's "
                                   f"strategies are {', '.join(strategies)}")
        return wanted, ""
    if not strategies or DEFAULT_BASELINE in strategies:
        return DEFAULT_BASELINE, ""
    # The unbounded row under another name: under the run's first runtime (``unbounded+plain``), or a row
    # it was merged into (``condense = unbounded``).
    standing_in = [s for s in strategies
                   if any(part.partition("+")[0] == DEFAULT_BASELINE for part in s.split(MERGED_SEPARATOR))]
    if standing_in:
        return standing_in[0], ""
    chosen = strategies[0]
    return chosen, (f"This run has no {DEFAULT_BASELINE!r} strategy and no baseline was chosen: the paired "
                    f"differences are against {chosen!r}, the first strategy of the run (choose another with "
                    "--baseline).")


def _token_budgets(manifest: Manifest) -> dict[str, int]:
    """The token budget of each configured strategy that ran with one (a run made before budgets were
    separate from the breaker had one only with the breaker on)."""
    budgets = {}
    for entry in manifest.strategies:
        budget = entry.get("token_budget")
        separate = "runtime" in entry
        if (separate or entry.get("breaker")) and isinstance(budget, int | float) and budget > 0:
            budgets[str(entry.get("label") or entry.get("name"))] = int(budget)
    return budgets


def collect(run_dir: str | Path | OpenRun, *, baseline: str | None = None,
            plots_dir: Path | None = None, log: Callable[[str], None] | None = None) -> ReportData:
    """Everything the report shows: tables and statistics computed, plots drawn as PNGs bound for
    ``plots_dir`` (no plots when it is None or the run has no sessions). Reads only: nothing is written.
    A damaged input, or a ``baseline`` the run does not have, is a ReportInputError
    (:func:`reports.inputs.open_run_dir`, :func:`choose_baseline`). ``log`` hears each stage as it
    starts (the bootstrap of a large run takes a while)."""
    say = log or (lambda _: None)
    run = run_dir if isinstance(run_dir, OpenRun) else open_run_dir(run_dir)
    path, manifest, run_id = run.path, run.manifest, run.run_id
    config_text = run.config_text()
    # Every column: strategies are merged only when their rows agree in all of them.
    sessions = run.sessions(REPORT_COLUMNS)
    order = _strategy_order(sessions, manifest)
    if sessions.empty:
        chosen, note = choose_baseline(order, baseline)
        empty = pd.DataFrame()
        return ReportData(path, run_id, manifest, config_text, sessions, order, chosen, note, empty, empty, empty,
                          empty, empty, {})
    sweep = is_sweep(sessions)
    # A sweep keeps every grid point (its page reads them by name), identical or not.
    identical = [] if sweep else identical_groups(sessions, order)
    groups = runtime_groups(sessions, order, manifest)
    pairs_by_runtime = _merged_pairs(runtime_pairs(manifest, order), identical)
    sessions = merge_identical(sessions, identical)
    strategies = _strategy_order(sessions, manifest, identical)
    groups = [RuntimeGroup(g.name, g.settings, tuple(s for s in strategies if _member(s, g.strategies)))
              for g in groups]
    chosen, note = choose_baseline(strategies, _merged_name(baseline, identical))
    plots_note = ""
    pending = None
    if plots_dir is not None:
        # Imported here: reports.plots loads matplotlib, which `ctxbench compare` (it imports this module's
        # checks) does not need.
        from reports.plot_child import PendingPlots
        from reports.plots import PLOT_NAMES, PLOTS_WITHOUT_STATISTICS, draw_plots

        calls = merge_identical(run.calls(REPORT_CALL_COLUMNS, optional=OPTIONAL_REPORT_CALL_COLUMNS), identical)
        plot_sessions, shown = sessions, None
        if sweep:
            shown, plots_note = report_plot_variants(sessions, manifest)
            plot_sessions = _only(sessions, shown)
            calls = _only(calls, shown) if "strategy" in calls.columns else calls
        # Drawn by a child process while the statistics are computed here (reports.plot_child.PendingPlots).
        pending = PendingPlots(partial(draw_plots, plot_sessions, calls, names=PLOTS_WITHOUT_STATISTICS))
    say(f"bootstrap intervals of {len(sessions):,} session rows x {len(stats.METRICS)} metrics")
    head = stats.headline(sessions)
    say(f"paired differences against {chosen} and against each goal's best")
    # The report's pairs and the decision's share their resamples (a strategy and a metric name one
    # stream): computed together, each stream is drawn once.
    # The compaction metrics describe what a manager did; the headline shows them with their intervals and
    # `ctxbench compare` gates on them, but the paired table keeps to the outcome and cost metrics.
    outcome_metrics = [name for name, m in stats.METRICS.items() if not m.optional]
    asked = stats.paired_against(sessions, chosen, outcome_metrics) if len(strategies) > 1 else []
    effects = [(p.label, p.baseline_label, metric) for p in pairs_by_runtime for metric in RUNTIME_EFFECT_METRICS]
    heads = {g.name: _only(head, {s: s for s in g.strategies}) for g in groups}
    decided = [(s, b, m) for g in groups for s, b, m in goal_pairs(heads[g.name])]
    pairs = stats.paired_differences(sessions, asked + effects + decided)
    pair, effect_rows = _rows_of(pairs, asked), _rows_of(pairs, effects)
    plots: dict[str, Png] = {}
    if pending is not None and plots_dir is not None:
        say("drawing the plots")
        plot_head = head if shown is None else _only(head, shown)
        drawn = pending.wait() | draw_plots(plot_sessions, calls, headline=plot_head, names=["cost_vs_success"])
        plots = {name: Png(plots_dir / f"{name}.png", drawn[name]) for name in PLOT_NAMES}
    say("the decision: best and tied strategies per goal, within each runtime")
    decisions = {g.name: decide(sessions, heads[g.name], pairs=pairs) for g in groups}
    extra = [p for g in groups for p in recommendation_pairs(heads[g.name], decisions[g.name])]
    more = stats.paired_differences(sessions, extra) if extra else pd.DataFrame()
    blocks = [DecisionBlock(g, decisions[g.name], pareto_front(heads[g.name]),
                            recommend(decisions[g.name], heads[g.name], more, sessions=_common_sessions(sessions, g)))
              for g in groups]
    ranked = [s for block in blocks for s in decision_order(head, list(block.runtime.strategies))]
    return ReportData(
        run_dir=path, run_id=run_id, manifest=manifest, config_text=config_text,
        sessions=sessions, strategies=strategies, baseline=chosen, baseline_note=note, headline=head,
        paired=pair, outcomes=stats.outcome_shares(sessions), families=stats.breakdown(sessions, "family"),
        loops=stats.loop_rules(sessions), plots=plots, sweep=sweep, plots_note=plots_note,
        ranked=ranked, decisions=blocks[0].decisions if blocks else [],
        front=blocks[0].front if len(blocks) == 1 else pareto_front(head),
        failures=explain_outcomes(sessions, _token_budgets(manifest)), contrasts=cost_contrasts(head, chosen),
        identical=identical, blocks=blocks, runtime_pairs=[p for p in pairs_by_runtime if p.label in strategies],
        runtime_effects=effect_rows,
    )


def _rows_of(pairs: pd.DataFrame, wanted: Sequence[tuple[str, str, str]]) -> pd.DataFrame:
    """The rows of ``pairs`` (:func:`reports.stats.paired_differences`) for the (strategy, baseline,
    metric) triples ``wanted``, in that order: a triple asked twice is computed once."""
    if not wanted:
        return pd.DataFrame()
    keys = list(zip(pairs["strategy"], pairs["baseline"], pairs["metric"], strict=True))
    at = {key: i for i, key in enumerate(keys)}
    return pairs.iloc[[at[key] for key in wanted]].reset_index(drop=True)


def _member(strategy: str, members: Sequence[str]) -> bool:
    """``strategy`` (a name, or a merged row's name) stands for one of ``members``."""
    return strategy in members or any(part in members for part in strategy.split(MERGED_SEPARATOR))


def _merged_name(name: str | None, identical: Sequence[IdenticalGroup]) -> str | None:
    """The row ``name`` is shown in: its merged row's name when it was merged, else itself."""
    for group in identical:
        if name in group.strategies:
            return group.name
    return name


def _merged_pairs(pairs: Sequence[RuntimePair], identical: Sequence[IdenticalGroup]) -> list[RuntimePair]:
    """``pairs`` between the rows the report shows: each label replaced by its merged row's name, a pair
    whose two rows are one merged row, or that repeats another, left out."""
    out: list[RuntimePair] = []
    seen: set[tuple[str, str]] = set()
    for p in pairs:
        label = _merged_name(p.label, identical) or p.label
        base = _merged_name(p.baseline_label, identical) or p.baseline_label
        if label == base or (label, base) in seen:
            continue
        seen.add((label, base))
        out.append(RuntimePair(p.strategy, p.runtime, label, p.baseline_runtime, base))
    return out


def _common_sessions(sessions: pd.DataFrame, group: RuntimeGroup) -> int:
    """The sessions every strategy of ``group`` replayed (the pairing's sample size)."""
    rows = sessions[sessions["strategy"].isin(list(group.strategies))]
    counts = rows.groupby("strategy").size()
    return int(counts.min()) if not counts.empty else 0


def _only(frame: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """The rows of the strategies in ``names``, renamed to their plotted names."""
    kept = frame[frame["strategy"].isin(list(names))]
    return kept.assign(strategy=kept["strategy"].map(names))


# Tables -----------------------------------------------------------------------------------------------


def manifest_table(data: ReportData) -> Table:
    """What was run, as field and value rows (empty fields left out)."""
    m = data.manifest
    items: list[tuple[str, Any]] = [
        ("run id", data.run_id),
        ("ctxbench version", m.ctxbench_version),
        ("git sha", m.git_sha),
        ("python / platform", " / ".join(str(x) for x in (m.python, m.platform) if x)),
        ("root seed", m.root_seed),
        ("config hash", str(m.config_hash or "")[:12]),
        ("model profile", m.model_name),
        ("started / finished", " / ".join(str(x) for x in (m.started, m.finished) if x)),
        ("shard", m.shard),
        ("merged from", ", ".join(m.merged_from or [])),
        ("sessions per strategy", ", ".join(f"{s}: {n}" for s, n in
                                            data.sessions.groupby("strategy").size().items())
         if not data.sessions.empty else "0"),
        ("table rows", ", ".join(f"{k}: {v:,}" for k, v in m.rows.items())),
        ("baseline", data.baseline),
    ]
    rows = [[Cell(k), Cell(str(v))] for k, v in items if v not in (None, "")]
    return Table("manifest-table", ["field", "value"], rows, numeric=False)


def _params_text(entry: dict[str, Any], skip: Iterable[str]) -> str:
    skipped = set(skip)
    return ", ".join(f"{k}={json.dumps(v) if isinstance(v, dict | list) else v}"
                     for k, v in entry.items() if k not in skipped)


def strategies_table(data: ReportData) -> Table:
    """One row per configured strategy: its label, its registered name, its params and switches."""
    rows = [[Cell(str(entry.get("label") or entry.get("name"))), Cell(str(entry.get("name"))),
             Cell(_params_text(entry, ("label", "name")))] for entry in data.manifest.strategies]
    return Table("strategies-table", ["strategy", "name", "parameters and switches"], rows, numeric=False)


def scenarios_table(data: ReportData) -> Table:
    """One row per scenario family of the mix: its name, weight and params."""
    rows = [[Cell(str(entry.get("name"))), Cell(str(entry.get("weight", ""))),
             Cell(_params_text(entry, ("name", "weight")))] for entry in data.manifest.scenarios]
    return Table("scenarios-table", ["scenario", "weight", "parameters"], rows, numeric=False)


def _wilson_rows(data: ReportData) -> set[tuple[str, str]]:
    """The (strategy, metric) pairs of the headline table whose interval is Wilson's."""
    if data.headline.empty or "interval" not in data.headline.columns:
        return set()
    rows = data.headline[data.headline["interval"] == "wilson"]
    return set(zip(rows["strategy"].astype(str), rows["metric"].astype(str), strict=True))


def headline_table(data: ReportData) -> Table:
    """A row per strategy (in decision order), a column per headline metric (:func:`headline_metrics`):
    the value with its 95% interval as its kind says (:func:`reports.tables.headline_cell`): marked when
    Wilson's, "too few successes (k in n sessions)" instead of one under :data:`reports.stats.MIN_SUPPORT`."""
    metrics = shown_metrics(data)
    header = ["strategy", *(m.label for m in metrics)]
    rows = []
    indexed = data.headline.set_index(["strategy", "metric"]) if not data.headline.empty else None
    for strategy in data.ranked or data.strategies:
        row = [Cell(strategy, sub=f"n = {int((data.sessions['strategy'] == strategy).sum())}", css="name")]
        for metric in metrics:
            if indexed is None or (strategy, metric.name) not in indexed.index:
                row.append(Cell("n/a"))
                continue
            row.append(headline_cell(metric, indexed.loc[(strategy, metric.name)]))
        rows.append(row)
    return Table("headline-table", header, rows)


def paired_table(data: ReportData) -> Table:
    """A row per strategy but the baseline (in decision order): each metric's paired difference against
    the baseline, its interval (none under :data:`reports.stats.MIN_SUPPORT` successes on a side: "too
    few successes"), its relative change (:func:`reports.tables.format_relative`), and the colour of a
    difference whose interval excludes zero. The outcome and cost metrics only (see `collect`)."""
    metrics = [m for m in shown_metrics(data) if not m.optional]
    header = ["strategy", *(m.label for m in metrics)]
    rows: list[list[Cell]] = []
    if data.paired.empty:
        return Table("paired-table", header, rows)
    indexed = data.paired.set_index(["strategy", "metric"])
    for strategy in data.ranked or data.strategies:
        if strategy == data.baseline:
            continue
        n = int(data.paired.loc[data.paired["strategy"] == strategy, "n"].max())
        row = [Cell(strategy, sub=f"{n} paired sessions", css="name")]
        for metric in metrics:
            r = indexed.loc[(strategy, metric.name)]
            css = ""
            if bool(r["excludes_zero"]):
                better = (r["diff"] < 0) == metric.lower_is_better
                css = "better" if better else "worse"
            rel = r["relative"]
            note = format_relative(rel) if np.isfinite(rel) and not is_share(metric) else ""
            kind = str(r.get("interval", stats.BOOTSTRAP))
            sub = (too_few_text(metric, float(r["support"]), float(r["n"])) if kind == stats.TOO_FEW
                   else "" if kind == stats.UNDEFINED
                   else format_interval(metric, r["ci_low"], r["ci_high"], diff=True))
            row.append(Cell(format_diff(metric, r["diff"]), note=note, sub=sub, css=css))
        rows.append(row)
    return Table("paired-table", header, rows)


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%" if np.isfinite(x) else "n/a"


def _names(names: Sequence[str], limit: int = 8) -> str:
    """Up to ``limit`` names in the order given, then how many more: a sweep can have seventy."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def decision_table(data: ReportData, block: DecisionBlock | None = None) -> Table:
    """A row per goal: the best strategy, its value with its 95% interval, and the strategies
    statistically tied with it (then, on the small line, the ones behind it). A goal whose best is tied
    with every other strategy names no best. ``block``: the decision within one runtime (default: the
    run's only one)."""
    wilson = _wilson_rows(data)
    decisions = block.decisions if block is not None else data.decisions
    rows = []
    for result in decisions:
        metric = METRICS[result.goal.metric]
        goal = Cell(result.goal.title, sub=metric.label, css="name")
        if result.best is None:
            rows.append([goal, Cell("none"), Cell(metric.undefined), Cell("")])
            continue
        undefined = " ".join(n for n in (
            f"({metric.undefined}: {_names(result.undefined)})" if result.undefined else "",
            f"(too few successes to compare: {_names(result.too_few)})" if result.too_few else "") if n)
        if result.all_tied:
            rows.append([goal, Cell("none: all tied", sub=f"(best point estimate: {result.best})"),
                         interval_cell(metric, result.value, result.ci_low, result.ci_high,
                                       wilson=(result.best, metric.name) in wilson, interval=result.interval),
                         Cell(f"every strategy ({len(result.others) + 1}): no difference is detectable at this "
                              "sample size", sub=undefined)])
            continue
        tied = _names(result.tied) if result.tied else "none: every other strategy is behind"
        notes = [f"(behind: {_names(result.behind)})" if result.tied and result.behind else "", undefined]
        rows.append([goal, Cell(result.best),
                     interval_cell(metric, result.value, result.ci_low, result.ci_high,
                                   wilson=(result.best, metric.name) in wilson, interval=result.interval),
                     Cell(tied, sub=" ".join(n for n in notes if n))])
    place = data.blocks.index(block) if block is not None and block in data.blocks else 0
    return Table("decision-table" if place == 0 else f"decision-table-{place + 1}",
                 ["goal", "best", "its value (95% CI)", "statistically tied with the best"], rows, numeric=False)


def runtime_effect_table(data: ReportData) -> Table:
    """A row per strategy and runtime: what running under that runtime instead of the run's first changes
    for that strategy (paired over the same sessions, 95% interval)."""
    effects = data.runtime_effects
    rows = []
    if effects.empty:
        return Table("runtime-effect-table", [], [])
    table = effects.set_index(["strategy", "baseline", "metric"])
    for pair in data.runtime_pairs:
        cells = [Cell(pair.strategy, css="name"), Cell(f"{pair.runtime} vs {pair.baseline_runtime}")]
        for name in RUNTIME_EFFECT_METRICS:
            metric = METRICS[name]
            key = (pair.label, pair.baseline_label, name)
            if key not in table.index:
                cells.append(Cell("n/a"))
                continue
            row = table.loc[key]
            comparable = str(row.get("interval", "")) not in (stats.TOO_FEW, stats.UNDEFINED)
            sub = (format_interval(metric, float(row["ci_low"]), float(row["ci_high"]), diff=True) if comparable
                   else "too few events to compare")
            cells.append(Cell(format_diff(metric, float(row["diff"])), sub=sub))
        rows.append(cells)
    return Table("runtime-effect-table", ["strategy", "runtime", *(METRICS[n].label for n in RUNTIME_EFFECT_METRICS)],
                 rows)


def _value(data: ReportData, strategy: str, metric: str) -> float:
    rows = data.headline[(data.headline["strategy"] == strategy) & (data.headline["metric"] == metric)]
    return float(rows["value"].iloc[0]) if not rows.empty else float("nan")


def _front_text(data: ReportData, block: DecisionBlock | None = None) -> str:
    """The Pareto front in one paragraph, or why there is none (``block``: within one runtime)."""
    front = block.front if block is not None else data.front
    members = block.runtime.strategies if block is not None else data.strategies
    if not front:
        return "No strategy solved a session: there is no success-vs-cost front."
    cost, success = METRICS["cost_per_solved_session"], METRICS["success_rate"]
    points = "; ".join(f"{s} ({format_value(success, _value(data, s, success.name))} success, "
                       f"{format_value(cost, _value(data, s, cost.name))} per solved session)" for s in front)
    rest = len(members) - len(front)
    beaten = (f" Each of the other {rest} strategies is beaten on both by a strategy of the front (or solved "
              "nothing)." if rest else "")
    return (f"Success-vs-cost Pareto front, cheapest first: {points}. No other strategy is at least as successful "
            f"and at least as cheap per solved session.{beaten} The front uses point estimates; the ties above say "
            "which differences are within noise.")


def _contrast_text(c: CostContrast) -> str:
    return (f"{c.strategy} sends {relative_phrase(c.tokens_change, 'more', 'fewer')} input tokens per session than "
            f"{c.baseline} yet costs {relative_phrase(c.cost_change, 'more', 'less')}: "
            f"{_pct(c.baseline_cache_share)} of {c.baseline}'s input tokens are prompt-cache hits, against "
            f"{_pct(c.cache_share)} of {c.strategy}'s.")


def _contrast_paragraph(data: ReportData) -> str:
    """Why cost is not token count, from the largest cost contrast against the baseline ("" when none)."""
    if not data.contrasts:
        return ""
    return (f"Why cost is not token count: {_contrast_text(data.contrasts[0])} Cache hits are billed at a fraction "
            "of the input price (see What drives the cost).")


def _runtime_warning(data: ReportData) -> str:
    """The first thing the Decision section says when the strategies did not share one runtime."""
    if len(data.blocks) < 2:
        return ""
    settings = differing_settings([b.runtime for b in data.blocks])
    named = "; ".join(f"{b.runtime.name}: {_names(list(b.runtime.strategies), 4)}" for b in data.blocks)
    return (f"Not like for like: these strategies ran under {len(data.blocks)} different runtimes, which differ in "
            f"{_and(settings)} ({named}). A ranking across runtimes would mix each strategy's effect with its "
            "runtime's, so the decision below is given within each runtime; compare strategies only within one.")


def _and(words: Sequence[str]) -> str:
    words = list(words)
    return ", ".join(words[:-1]) + f" and {words[-1]}" if len(words) > 1 else "".join(words)


def _identical_notes(data: ReportData) -> list[str]:
    return [group.note() for group in data.identical]


def _block_heading(block: DecisionBlock) -> str:
    runtime = block.runtime
    described = runtime.description
    settings = f" ({described})" if described and described != runtime.name else ""
    return f"Under the {runtime.name} runtime{settings}: {len(runtime.strategies)} strategies"


def cost_table(data: ReportData) -> Table:
    """A row per strategy, cheapest per session first: input tokens, the share of them that were cache
    hits, the uncached rest, and the cost per session and per solved session."""
    frame = data.sessions
    grouped = frame.groupby("strategy")
    uncached = (grouped["input_tokens"].sum() - grouped["cached_input_tokens"].sum()) / grouped.size()
    order = sorted(data.strategies, key=lambda s: (_value(data, s, "cost_per_session"), s))
    columns = ("input_tokens", "cache_hit_share", "uncached", "cost_per_session", "cost_per_solved_session",
               "success_rate")
    rows = []
    for strategy in order:
        row = [Cell(strategy, css="name")]
        for name in columns:
            if name == "uncached":
                row.append(Cell(f"{float(uncached.get(strategy, np.nan)):,.0f}"))
                continue
            metric, value = METRICS[name], _value(data, strategy, name)
            row.append(Cell(format_value(metric, value) if np.isfinite(value) else metric.undefined))
        rows.append(row)
    header = ["strategy", "input tokens per session", "cache-hit share", "uncached input tokens per session",
              "cost per session", "cost per solved session", "success rate"]
    return Table("cost-table", header, rows)


def outcomes_table(data: ReportData) -> Table:
    """A row per strategy (in decision order): the share of its sessions that ended in each outcome,
    success first, then the failures in the order they are explained."""
    shares = data.outcomes
    present = [str(c) for c in shares.columns]
    explained = [f.outcome for f in data.failures]
    columns = [c for c in ("success", *explained) if c in present] + sorted(
        c for c in present if c != "success" and c not in explained)
    rows = [[Cell(str(strategy), css="name"), *(Cell(_pct(float(shares.loc[strategy, c]))) for c in columns)]
            for strategy in data.ranked or data.strategies if strategy in shares.index]
    return Table("outcomes-table", ["strategy", *columns], rows)


def _failure_text(hits: OutcomeHits) -> str:
    """One failing outcome explained: what it means, whom it hits most, and a detail from the data."""
    most = ", ".join(f"{s} {_pct(k / n)} ({k} of {n})" for s, k, n in hits.most)
    others = f", and {hits.others} other strateg{'ies' if hits.others > 1 else 'y'}" if hits.others else ""
    alone = " (no other strategy)" if len(hits.most) == 1 and not hits.others else ""
    top, ended = hits.most[0][0], hits.most[0][1]
    elsewhere = (f" Another strategy solved {hits.solved_elsewhere} of those {ended} {top} sessions."
                 if hits.solved_elsewhere else f" No other strategy solved any of those {ended} {top} sessions.")
    detail = f" {hits.detail}" if hits.detail else ""
    return f"{hits.outcome}: {hits.meaning}. Hits {most}{others}{alone}.{elsewhere}{detail}"


def families_table(data: ReportData) -> Table:
    """A row per (strategy, scenario family), strategies in decision order: sessions, success rate,
    context tokens and cost."""
    rank = {s: i for i, s in enumerate(data.ranked or data.strategies)}
    frame = data.families.assign(_rank=data.families["strategy"].map(rank)).sort_values(
        ["_rank", "strategy", "family"], kind="stable")
    rows = [[Cell(str(r["strategy"]), css="name"), Cell(str(r["family"])), Cell(f"{int(r['sessions'])}"),
             Cell(_pct(float(r["success_rate"]))), Cell(f"{r['context_tokens_mean']:,.0f}"),
             Cell(f"${r['cost_per_session']:,.4f}")]
            for _, r in frame.iterrows()]
    return Table("families-table", ["strategy", "family", "sessions", "success rate", "mean context tokens",
                                    "cost per session"], rows)


def loops_table(data: ReportData) -> Table:
    """A row per strategy: the share of its sessions stopped by each loop rule."""
    frame = data.loops
    columns = [str(c) for c in frame.columns]
    rows = [[Cell(str(strategy), css="name"), *(Cell(_pct(float(frame.loc[strategy, c]))) for c in frame.columns)]
            for strategy in data.ranked or data.strategies if strategy in frame.index]
    return Table("loops-table", ["strategy", *columns], rows)


def _plot_entries(data: ReportData) -> list[tuple[Plot, Png]]:
    """The plots of the Plots section: every plot but the Decision section's."""
    known = [(PLOT_BY_NAME[name], data.plots[name]) for name in PLOT_BY_NAME
             if name in data.plots and name != DECISION_PLOT]
    extra = [(Plot(name, name.replace("_", " ").capitalize(), "See the plot's axis labels."), p)
             for name, p in sorted(data.plots.items()) if name not in PLOT_BY_NAME]
    return known + extra


def _session_count(data: ReportData) -> int:
    return 0 if data.sessions.empty else len(data.sessions[stats.SCRIPT_KEY].drop_duplicates())


# The sections --------------------------------------------------------------------------------------------
# Each function returns a section's body as blocks: what follows its heading and its "how to read this"
# note. Both formats are rendered from them (reports.blocks).

def headline_notes(data: ReportData) -> list[tuple[str, str]]:
    """The footnotes under the headline table, as (HTML id, text): on Wilson intervals when a cell has
    one, on values without an interval when a cell has one, each told with the first such cell of the
    table (:func:`reports.tables.interval_notes`), so its numbers are this run's."""
    notes = interval_notes(data.headline, data.ranked or data.strategies, [m.name for m in shown_metrics(data)])
    return [(f"{kind.replace('_', '-')}-note", text) for kind, text in notes]


def _figure(data: ReportData, plot: Plot, png: Png) -> Figure:
    """A plot with its title and how to read it; the Markdown links its PNG relative to the run directory."""
    rel = png.path.resolve().relative_to(data.run_dir.resolve()).as_posix()
    return Figure(png.data, rel, alt=plot.title, caption=plot.title, how=plot.how, id=f"plot-{plot.name}",
                  markdown_heading=True)


def _decision_plot(data: ReportData) -> tuple[Plot, Png] | None:
    png = data.plots.get(DECISION_PLOT)
    return (PLOT_BY_NAME[DECISION_PLOT], png) if png is not None else None


def _decision_lead(data: ReportData) -> str:
    sessions = _session_count(data)
    merged = sum(len(g.strategies) - 1 for g in data.identical)
    rows = f" (in {len(data.strategies)} rows: identical ones are one)" if merged else ""
    return (f"{len(data.strategies) + merged} strategies{rows}, each replaying the same {sessions} sessions (same "
            f"scenario and session index), so every comparison here is paired. The goal decided: "
            f"{RECOMMENDATION_GOAL}.")


#: How to read the runtime-effect table.
_RUNTIME_EFFECT_HOW = ("Each strategy under a runtime minus the same strategy under the run's first runtime, over the "
                       "very same sessions (95% paired bootstrap interval): the runtime's effect with the strategy "
                       "held fixed.")


def _decision_blocks(data: ReportData) -> list[Block]:
    """The deciding sentence, per goal the best and the tied, and the Pareto front (within each runtime),
    then what stands beside them: the runtime's effect, merged rows, the cost driver, the validation status."""
    if data.sessions.empty:
        return [Paragraph("No sessions: nothing to decide.")]
    out: list[Block] = []
    warning = _runtime_warning(data)
    if warning:
        out.append(Paragraph(Strong(warning), kind="note", id="runtime-warning"))
    out.append(Paragraph(_decision_lead(data)))
    several = len(data.blocks) > 1
    for i, block in enumerate(data.blocks):
        decision: list[Block] = [
            Paragraph(Strong(block.recommendation.sentence), kind="recommendation"),
            TableBlock(decision_table(data, block)),
            Paragraph(_front_text(data, block), id="pareto-front" if i == 0 else f"pareto-front-{i + 1}")]
        out += [Section(_block_heading(block), decision, level=3, id=f"runtime-{i + 1}")] if several else decision
    if data.runtime_pairs:
        out.append(Section("What the runtime changes, within each strategy", level=3,
                              blocks=[Paragraph(_RUNTIME_EFFECT_HOW), TableBlock(runtime_effect_table(data))]))
    out += [Paragraph(note, kind="note", id=f"identical-{i + 1}", quote=True)
               for i, note in enumerate(_identical_notes(data))]
    contrast = _contrast_paragraph(data)
    if contrast:
        out.append(Paragraph(contrast, id="cost-driver"))
    # The Markdown report is also copied into the validation document's folder, where a link relative to
    # the run directory would not resolve: only the HTML links the document.
    status = validation_status_paragraph(status_for_manifest(data.manifest), html_dir=data.run_dir)
    if status is not None:
        out.append(status)
    plot = _decision_plot(data)
    if plot is not None:
        out.append(_figure(data, *plot))
    return out


def _headline_blocks(data: ReportData) -> list[Block]:
    return [TableBlock(headline_table(data)),
            *(Paragraph(text, kind="footnote", id=key) for key, text in headline_notes(data))]


def _failures_blocks(data: ReportData) -> list[Block]:
    if data.sessions.empty:
        return []
    outcomes = TableBlock(outcomes_table(data))
    if not data.failures:
        return [Paragraph("Every session of every strategy succeeded."), outcomes]
    return [Bullets([_failure_text(f) for f in data.failures], id="failures"), outcomes]


def _cost_paragraphs(data: ReportData) -> list[str]:
    if not data.contrasts:
        return [f"No strategy's cost moves against its input tokens relative to {data.baseline}: in this run, cost "
                "follows the input tokens."]
    return [_contrast_text(c) for c in data.contrasts]


def _cost_blocks(data: ReportData) -> list[Block]:
    if data.sessions.empty:
        return []
    return [TableBlock(cost_table(data)), Bullets(_cost_paragraphs(data), id="cost-contrasts")]


def _paired_blocks(data: ReportData) -> list[Block]:
    if data.paired.empty:
        return [Paragraph("Only one strategy in this run: nothing to pair.")]
    return [Paragraph(("Each strategy minus ", Strong(data.baseline), ".")), TableBlock(paired_table(data))]


def _plots_blocks(data: ReportData) -> list[Block]:
    out: list[Block] = []
    if data.plots_note:
        out.append(Paragraph(data.plots_note, kind="note", id="plots-note", quote=True))
    entries = _plot_entries(data)
    if not entries and not data.plots:
        out.append(Only(HTML, [Paragraph("No plots (no sessions).")]))
    out += [_figure(data, plot, png) for plot, png in entries]
    return out


def _breakdowns_blocks(data: ReportData) -> list[Block]:
    if data.sessions.empty:
        return []
    loops = loops_table(data)
    out: list[Block] = [
        Section("By scenario family", [TableBlock(families_table(data))], level=3),
        Section("Loop rate by rule", [TableBlock(loops) if len(loops.header) > 1
                                      else Paragraph("No loops were detected.")], level=3)]
    return [*out, *tool_names_blocks(data.sessions), *memory_blocks(data.sessions)]


def _run_blocks(data: ReportData) -> list[Block]:
    out: list[Block] = [TableBlock(manifest_table(data), css="kv")]
    strategies, scenarios = strategies_table(data), scenarios_table(data)
    if strategies.rows:
        out.append(Section("Strategies", [TableBlock(strategies)], level=3))
    if scenarios.rows:
        out.append(Section("Scenarios", [TableBlock(scenarios)], level=3))
    if data.config_text:
        out.append(Details("config.toml (resolved)", data.config_text))
    return out


@dataclass(frozen=True)
class ReportSection:
    """One section of the report: its anchor, heading and "how to read this" note, and its body."""

    key: str
    title: str
    how: str
    body: Callable[[ReportData], list[Block]]
    #: Said after ``how`` in the Markdown version only (which has no colours).
    markdown_how: str = ""

    def section(self, data: ReportData) -> Section:
        """The section of ``data``'s report."""
        how = (self.how, PerFormat("", f" {self.markdown_how}")) if self.markdown_how else self.how
        return Section(self.title, self.body(data), id=self.key, how=how)


#: The report's sections, in order. The decision first, the evidence behind it next, provenance last.
SECTIONS: tuple[ReportSection, ...] = (
    ReportSection(
        "decision", "Decision",
        "First, the one sentence that decides (the report's goal: the most successful strategy, and the "
        "cheapest per solved session of those tied for it). Then, for each goal, the strategy with the best "
        "value, and the strategies statistically tied with it: "
        "their paired difference against the best (the same sessions resampled jointly, 95% bootstrap "
        "interval) includes zero, so at this sample size they are as good, and the choice among them is "
        "yours to make on the other goals. Cost per solved session is the total cost over the solved "
        "sessions: unlike cost per session it does not reward failing early and cheaply.",
        _decision_blocks),
    ReportSection(
        "headline", "Headline metrics",
        "One row per strategy, most successful first (then cheapest per solved session), one column per "
        "headline metric, over all of that strategy's sessions. The small line under each value is its 95% "
        "confidence interval: the percentile bootstrap's (sessions resampled with replacement), or Wilson's "
        "where marked (a rate near none or all of its events), or none where a cost per solved session rests "
        "on too few successes (the footnotes say which). Cache-hit share is the share of "
        "input tokens that were prompt-cache hits. Overlapping intervals do not mean 'no difference': use "
        "the Decision and paired tables for that.",
        _headline_blocks),
    ReportSection(
        "failures", "Why sessions fail",
        "Every outcome other than success that ended at least one session: what it means, the strategies "
        "it hits most (share of that strategy's sessions), and whether another strategy solved those same "
        "sessions (then the failure is the strategy's, not the task's). The table gives every share.",
        _failures_blocks),
    ReportSection(
        "cost", "What drives the cost",
        "Cost follows the input tokens that are not prompt-cache hits more than the input tokens: a cache "
        "hit is billed at a fraction of the input price, and the cache reuses only the unchanged start of "
        "the previous prompt, so a strategy that edits earlier messages (masking, summarising, sliding a "
        "window) loses its hits and pays full price for a shorter prompt. Rows from cheapest per session.",
        _cost_blocks),
    ReportSection(
        "paired", "Paired differences against the baseline",
        "Each strategy minus the baseline, over the very same sessions (every strategy replays the same "
        "scripts), with a 95% bootstrap interval of the difference. Pairing removes the session-to-session "
        "noise, so these intervals are much narrower than the headline ones. Green: the interval excludes "
        "zero and the strategy is better; red: it excludes zero and the strategy is worse; uncoloured: "
        "no detectable difference at this sample size.",
        _paired_blocks,
        markdown_how="(In this Markdown version, bold marks a difference whose interval excludes zero.)"),
    ReportSection(
        "plots", "Plots",
        "Distributions behind the headline numbers. Each plot has its own note on how to read it.",
        _plots_blocks),
    ReportSection(
        "breakdowns", "Breakdowns",
        "The same sessions split up: by scenario family, and by the loop rule that fired. Shares are of the "
        "strategy's sessions; a family with few sessions is noisy.",
        _breakdowns_blocks),
    ReportSection(
        "run", "Provenance",
        "What was run: the resolved config (every default filled in), the model profile, the root seed, the "
        "checksums of the tables, and each strategy's and scenario's parameters. Two runs with the same "
        "config hash replay the same sessions.",
        _run_blocks),
)


# The page ----------------------------------------------------------------------------------------------------


def report_page(data: ReportData) -> Page:
    """The report as blocks: the page notes, then every section of ``SECTIONS``."""
    # The Markdown version has no subtitle: its title is followed at once by the notes and sections.
    subtitle = PerFormat(f"{len(data.strategies)} strategies replaying {_session_count(data)} sessions; baseline "
                         f"{data.baseline}.", "")
    notes: list[Block] = []
    if data.sweep:
        from reports.sweep import SWEEP_PAGE  # imported here: see write_report

        notes.append(Paragraph(("This run is a sweep: ", sibling_page(SWEEP_PAGE), " plots every headline metric "
                                "against each swept param and ranks the variants per model profile."),
                               kind="note", id="sweep-link", quote=True))
    if data.baseline_note:
        notes.append(Paragraph(data.baseline_note, kind="note", id="baseline-note", quote=True))
    if data.sessions.empty:
        notes.append(Paragraph("This run directory has no sessions (a shard without batches?): nothing to report.",
                               kind="note"))
    return Page(f"ctxbench report: {data.run_id}", subtitle, [*notes, *(s.section(data) for s in SECTIONS)])


def render_html(data: ReportData) -> str:
    """``report.html`` (:func:`report_page` in HTML)."""
    return blocks.render_html(report_page(data))


def render_markdown(data: ReportData) -> str:
    """``report.md``: the same sections as the HTML, in the same order, with links to the plots."""
    return blocks.render_markdown(report_page(data))


def write_report(run_dir: str | Path, formats: Iterable[str] = FORMATS, *, baseline: str | None = None,
                 log: Callable[[str], None] | None = None) -> list[Path]:
    """Write ``plots/*.png`` and the chosen formats (``report.html``, ``report.md``) into ``run_dir``;
    returns the report files written. ``baseline`` is the strategy the paired differences are against
    (:func:`choose_baseline`: one the run does not have is a ReportInputError). A sweep run also gets
    its sweep page (``sweep.html``, ``sweep.md``, ``plots/sweep-*.png``; see :mod:`reports.sweep`),
    linked from the report and listed after it.

    Every input is checked and every file drawn before the first is written, and the files are
    written as one set (:func:`reports.outputs.write_files`): a ReportInputError leaves the run
    directory as it was. ``log`` hears each stage as it starts."""
    chosen = check_formats(formats)
    run = open_run_dir(run_dir)
    if run.manifest.mode == ACCOUNTING_MODE:
        from reports.accounting import write_accounting_report

        return write_accounting_report(run, chosen)
    # The outputs in the way are found before the work, not after the bootstrap and the plots.
    pages_asked = {"html": REPORT_HTML, "md": REPORT_MD}
    from reports.plots import PLOT_NAMES  # loads matplotlib, as the drawing does anyway

    check_targets(run.path, [run.path / pages_asked[f] for f in chosen]
                  + [run.path / PLOTS_DIR / f"{name}.png" for name in PLOT_NAMES])
    say = log or (lambda _: None)
    data = collect(run, baseline=baseline, plots_dir=run.path / PLOTS_DIR, log=log)
    report_pages = blocks.page_files(report_page(data), chosen, run.path / REPORT_HTML, run.path / REPORT_MD)
    files = {png.path: png.data for png in data.plots.values()} | report_pages
    pages = list(report_pages)
    if data.sweep:
        # Imported here, as reports.plots in collect: the sweep page loads matplotlib.
        from reports.sweep import sweep_files

        say("the sweep page")
        sweep_pages, sweep_plots = sweep_files(run, chosen, sessions=data.sessions, headline=data.headline)
        files = sweep_plots | files | sweep_pages  # every plot before every page
        pages += list(sweep_pages)
    say(f"writing {len(files)} files")
    write_files(run.path, files)
    return pages
