"""A run's report: ``report.html`` (self-contained: inline CSS, plots as PNG data URIs, nothing fetched
from the network) and ``report.md`` (the same tables, with links to ``plots/*.png``).

Reads only the run directory (``config.toml``, ``manifest.json``, ``sessions.parquet``,
``calls.parquet``), so a run copied to a laptop renders without any runtime state. ``SECTIONS`` declares
the report's sections once, in order; both formats are built from it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.core.rundir import PLOTS_DIR, REPORT_HTML, REPORT_MD, Manifest
from reports import stats
from reports.inputs import FORMATS, OpenRun, ReportInputError, check_formats, check_run_dir, open_run_dir
from reports.markup import PAGE_END, data_uri, escape, how_box, html_table, md_how, md_table, page_start
from reports.outputs import Png, write_files
from reports.stats import METRICS
from reports.tables import Cell, Table, format_diff, format_interval, interval_cell, is_share

# The CLI imports the input checks from here (they live in reports.inputs).
__all__ = [
    "FORMATS",
    "PLOTS",
    "SECTIONS",
    "Plot",
    "ReportData",
    "ReportInputError",
    "Section",
    "check_formats",
    "check_run_dir",
    "collect",
    "render_html",
    "render_markdown",
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
         "For each x, the share of sessions that used at most x input tokens. Curves further left are cheaper; "
         "a long right tail means a few sessions dominate the bill."),
    Plot("ecdf_latency", "Latency per session (ECDF)",
         "For each x, the share of sessions that finished within x seconds of simulated time. Compare the "
         "medians (y = 0.5) and the tails (y near 1)."),
    Plot("syntax_errors_by_context", "Tool-syntax errors by context size",
         "Malformed tool calls against the context size at the call. A rising curve is the long-context "
         "degradation the mock model is calibrated to; strategies that keep contexts short stay left of it."),
    Plot("cost_vs_success", "Cost against success",
         "Each strategy's mean cost per session against its success rate. Up and to the left is better: "
         "more sessions solved for less money."),
    Plot("outcome_mix", "Outcome mix",
         "How each strategy's sessions ended. Success is what you want; stuck, overflow and max_turns are the "
         "failures a context strategy is supposed to prevent."),
)
PLOT_BY_NAME = {p.name: p for p in PLOTS}


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


def _strategy_order(sessions: pd.DataFrame, manifest: Manifest) -> list[str]:
    """The strategies in config order (from the manifest), then any others by name."""
    present = set(sessions["strategy"]) if not sessions.empty else set()
    ordered = [s for s in manifest.strategy_order() if s in present]
    return ordered + sorted(present - set(ordered))


def _choose_baseline(strategies: Sequence[str], wanted: str) -> tuple[str, str]:
    if not strategies:
        return wanted, ""
    if wanted in strategies:
        return wanted, ""
    chosen = strategies[0]
    return chosen, (f"The baseline strategy {wanted!r} is not in this run; the paired differences are against "
                    f"{chosen!r}, the first strategy of the run.")


def collect(run_dir: str | Path | OpenRun, *, baseline: str = "unbounded",
            plots_dir: Path | None = None) -> ReportData:
    """Everything the report shows: tables and statistics computed, plots drawn as PNGs bound for
    ``plots_dir`` (no plots when it is None or the run has no sessions). Reads only: nothing is written.
    A damaged input is a ReportInputError (:func:`reports.inputs.open_run_dir`)."""
    run = run_dir if isinstance(run_dir, OpenRun) else open_run_dir(run_dir)
    path, manifest, run_id = run.path, run.manifest, run.run_id
    config_text = run.config_text()
    sessions = run.sessions()
    strategies = _strategy_order(sessions, manifest)
    chosen, note = _choose_baseline(strategies, baseline)
    if sessions.empty:
        empty = pd.DataFrame()
        return ReportData(path, run_id, manifest, config_text, sessions, strategies, chosen, note, empty, empty, empty,
                          empty, empty, {})
    head = stats.headline(sessions)
    pair = stats.paired(sessions, chosen) if len(strategies) > 1 else pd.DataFrame()
    # Imported here, as draw_plots below: they load matplotlib, which `ctxbench compare` (it imports this
    # module's checks) does not need.
    from reports.sweep import is_sweep, report_plot_variants

    sweep = is_sweep(sessions)
    plots: dict[str, Png] = {}
    plots_note = ""
    if plots_dir is not None:
        from reports.plots import draw_plots

        calls = run.calls()
        plot_sessions, plot_head = sessions, head
        if sweep:
            shown, plots_note = report_plot_variants(sessions, manifest)
            plot_sessions, plot_head = (_only(frame, shown) for frame in (sessions, head))
            calls = _only(calls, shown) if "strategy" in calls.columns else calls
        plots = {name: Png(plots_dir / f"{name}.png", png)
                 for name, png in draw_plots(plot_sessions, calls, headline=plot_head).items()}
    return ReportData(
        run_dir=path, run_id=run_id, manifest=manifest, config_text=config_text,
        sessions=sessions, strategies=strategies, baseline=chosen, baseline_note=note, headline=head,
        paired=pair, outcomes=stats.outcome_shares(sessions), families=stats.breakdown(sessions, "family"),
        loops=stats.loop_rules(sessions), plots=plots, sweep=sweep, plots_note=plots_note,
    )


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


def headline_table(data: ReportData) -> Table:
    """A row per strategy, a column per headline metric: the value with its 95% interval."""
    header = ["strategy", *(m.label for m in METRICS.values())]
    rows = []
    indexed = data.headline.set_index(["strategy", "metric"]) if not data.headline.empty else None
    for strategy in data.strategies:
        row = [Cell(strategy, sub=f"n = {int((data.sessions['strategy'] == strategy).sum())}", css="name")]
        for metric in METRICS.values():
            if indexed is None or (strategy, metric.name) not in indexed.index:
                row.append(Cell("n/a"))
                continue
            r = indexed.loc[(strategy, metric.name)]
            row.append(interval_cell(metric, r["value"], r["ci_low"], r["ci_high"]))
        rows.append(row)
    return Table("headline-table", header, rows)


def paired_table(data: ReportData) -> Table:
    """A row per strategy but the baseline: each metric's paired difference against the baseline, its
    interval, and the colour of a difference whose interval excludes zero."""
    header = ["strategy", *(m.label for m in METRICS.values())]
    rows: list[list[Cell]] = []
    if data.paired.empty:
        return Table("paired-table", header, rows)
    indexed = data.paired.set_index(["strategy", "metric"])
    for strategy in data.strategies:
        if strategy == data.baseline:
            continue
        n = int(data.paired.loc[data.paired["strategy"] == strategy, "n"].max())
        row = [Cell(strategy, sub=f"{n} paired sessions", css="name")]
        for metric in METRICS.values():
            r = indexed.loc[(strategy, metric.name)]
            css = ""
            if bool(r["excludes_zero"]):
                better = (r["diff"] < 0) == metric.lower_is_better
                css = "better" if better else "worse"
            rel = r["relative"]
            note = f"{rel * 100:+.1f}%" if np.isfinite(rel) and not is_share(metric) else ""
            row.append(Cell(format_diff(metric, r["diff"]), note=note,
                            sub=format_interval(metric, r["ci_low"], r["ci_high"], diff=True), css=css))
        rows.append(row)
    return Table("paired-table", header, rows)


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%" if np.isfinite(x) else "n/a"


def outcomes_table(data: ReportData) -> Table:
    """A row per strategy: the share of its sessions that ended in each outcome."""
    shares = data.outcomes
    columns = [str(c) for c in shares.columns]
    rows = [[Cell(str(strategy), css="name"), *(Cell(_pct(float(shares.loc[strategy, c]))) for c in shares.columns)]
            for strategy in data.strategies if strategy in shares.index]
    return Table("outcomes-table", ["strategy", *columns], rows)


def families_table(data: ReportData) -> Table:
    """A row per (strategy, scenario family): sessions, success rate, context tokens and cost."""
    frame = data.families
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
            for strategy in data.strategies if strategy in frame.index]
    return Table("loops-table", ["strategy", *columns], rows)


def _plot_entries(data: ReportData) -> list[tuple[Plot, Png]]:
    known = [(PLOT_BY_NAME[name], data.plots[name]) for name in PLOT_BY_NAME if name in data.plots]
    extra = [(Plot(name, name.replace("_", " ").capitalize(), "See the plot's axis labels."), p)
             for name, p in sorted(data.plots.items()) if name not in PLOT_BY_NAME]
    return known + extra


def _session_count(data: ReportData) -> int:
    return 0 if data.sessions.empty else len(data.sessions[stats.SESSION_KEY].drop_duplicates())


# The sections, in both formats --------------------------------------------------------------------------
# Each function returns a section's body: what follows its heading and its "how to read this" note.


def _run_html(data: ReportData) -> list[str]:
    parts = [html_table(manifest_table(data), css="kv")]
    strategies, scenarios = strategies_table(data), scenarios_table(data)
    if strategies.rows:
        parts += ["<h3>Strategies</h3>", html_table(strategies)]
    if scenarios.rows:
        parts += ["<h3>Scenarios</h3>", html_table(scenarios)]
    if data.config_text:
        parts.append(f"<details><summary>config.toml (resolved)</summary><pre>{escape(data.config_text)}</pre>"
                     "</details>")
    return parts


def _run_markdown(data: ReportData) -> list[str]:
    out = [md_table(manifest_table(data)), ""]
    strategies = strategies_table(data)
    if strategies.rows:
        out += ["### Strategies", "", md_table(strategies), ""]
    return out


def _headline_html(data: ReportData) -> list[str]:
    return [html_table(headline_table(data))]


def _headline_markdown(data: ReportData) -> list[str]:
    return [md_table(headline_table(data)), ""]


def _paired_html(data: ReportData) -> list[str]:
    if data.paired.empty:
        return ["<p>Only one strategy in this run: nothing to pair.</p>"]
    return [f"<p>Each strategy minus <strong>{escape(data.baseline)}</strong>.</p>", html_table(paired_table(data))]


def _paired_markdown(data: ReportData) -> list[str]:
    if data.paired.empty:
        return ["Only one strategy in this run: nothing to pair.", ""]
    return [f"Each strategy minus **{data.baseline}**.", "", md_table(paired_table(data)), ""]


def _plots_html(data: ReportData) -> list[str]:
    parts = []
    if data.plots_note:
        parts.append(f'<p class="note" id="plots-note">{escape(data.plots_note)}</p>')
    entries = _plot_entries(data)
    if not entries:
        parts.append("<p>No plots (no sessions).</p>")
    for plot, png in entries:
        parts.append(f'<figure id="plot-{escape(plot.name)}"><figcaption>{escape(plot.title)}</figcaption>'
                     f'<img alt="{escape(plot.title)}" src="{data_uri(png.data)}">{how_box(plot.how)}</figure>')
    return parts


def _plots_markdown(data: ReportData) -> list[str]:
    out = []
    if data.plots_note:
        out += [f"> {data.plots_note}", ""]
    for plot, png in _plot_entries(data):
        rel = png.path.resolve().relative_to(data.run_dir.resolve()).as_posix()
        out += [f"### {plot.title}", "", f"![{plot.title}]({rel})", "", plot.how, ""]
    return out


def _breakdowns_html(data: ReportData) -> list[str]:
    if data.sessions.empty:
        return []
    loops = loops_table(data)
    return ["<h3>Outcomes</h3>", html_table(outcomes_table(data)),
            "<h3>By scenario family</h3>", html_table(families_table(data)),
            "<h3>Loop rate by rule</h3>",
            html_table(loops) if len(loops.header) > 1 else "<p>No loops were detected.</p>"]


def _breakdowns_markdown(data: ReportData) -> list[str]:
    if data.sessions.empty:
        return []
    loops = loops_table(data)
    return ["### Outcomes", "", md_table(outcomes_table(data)), "",
            "### By scenario family", "", md_table(families_table(data)), "", "### Loop rate by rule", "",
            md_table(loops) if len(loops.header) > 1 else "No loops were detected.", ""]


@dataclass(frozen=True)
class Section:
    """One section of the report: its anchor, heading and "how to read this" note, and its body in
    each format."""

    key: str
    title: str
    how: str
    html: Callable[[ReportData], list[str]]
    markdown: Callable[[ReportData], list[str]]
    #: Said after ``how`` in the Markdown version only (which has no colours).
    markdown_how: str = ""


#: The report's sections, in order: the single declaration both renderers follow.
SECTIONS: tuple[Section, ...] = (
    Section("run", "Run",
            "What was run: the resolved config (every default filled in), the model profile, the root seed and "
            "the checksums of the tables. Two runs with the same config hash replay the same sessions.",
            _run_html, _run_markdown),
    Section("headline", "Headline metrics",
            "One row per strategy, one column per headline metric, over all of that strategy's sessions. "
            "The small line under each value is its 95% bootstrap confidence interval (sessions resampled "
            "with replacement). Overlapping intervals do not mean 'no difference': use the paired table "
            "for that.",
            _headline_html, _headline_markdown),
    Section("paired", "Paired differences against the baseline",
            "Each strategy minus the baseline, over the very same sessions (every strategy replays the same "
            "scripts), with a 95% bootstrap interval of the difference. Pairing removes the session-to-session "
            "noise, so these intervals are much narrower than the headline ones. Green: the interval excludes "
            "zero and the strategy is better; red: it excludes zero and the strategy is worse; uncoloured: "
            "no detectable difference at this sample size.",
            _paired_html, _paired_markdown,
            markdown_how="(In this Markdown version, bold marks a difference whose interval excludes zero.)"),
    Section("plots", "Plots",
            "Distributions behind the headline numbers. Each plot has its own note on how to read it.",
            _plots_html, _plots_markdown),
    Section("breakdowns", "Breakdowns",
            "The same sessions split up: by how they ended, by scenario family, and by the loop rule that "
            "fired. Shares are of the strategy's sessions; a family with few sessions is noisy.",
            _breakdowns_html, _breakdowns_markdown),
)


# The two formats ----------------------------------------------------------------------------------------


def render_html(data: ReportData) -> str:
    """``report.html``: the page notes, then every section of ``SECTIONS``."""
    parts = [
        *page_start(f"ctxbench report: {data.run_id}"),
        f'<p class="subtitle">{len(data.strategies)} strategies replaying {_session_count(data)} sessions; '
        f"baseline {escape(data.baseline)}.</p>",
    ]
    if data.sweep:
        parts.append('<p class="note" id="sweep-link">This run is a sweep: <a href="sweep.html">sweep.html</a> plots '
                     "every headline metric against each swept param and ranks the variants per model profile.</p>")
    if data.baseline_note:
        parts.append(f'<p class="note" id="baseline-note">{escape(data.baseline_note)}</p>')
    if data.sessions.empty:
        parts.append('<p class="note">This run directory has no sessions (a shard without batches?): nothing '
                     "to report.</p>")
    for section in SECTIONS:
        parts += [f'<section id="{section.key}">', f"<h2>{escape(section.title)}</h2>", how_box(section.how),
                  *section.html(data), "</section>"]
    parts += PAGE_END
    return "\n".join(parts)


def render_markdown(data: ReportData) -> str:
    """``report.md``: the same sections as the HTML, in the same order, with links to the plots."""
    out = [f"# ctxbench report: {data.run_id}", ""]
    if data.sweep:
        out += ["> This run is a sweep: [sweep.md](sweep.md) plots every headline metric against each swept param "
                "and ranks the variants per model profile.", ""]
    if data.baseline_note:
        out += [f"> {data.baseline_note}", ""]
    if data.sessions.empty:
        out += ["This run directory has no sessions (a shard without batches?): nothing to report.", ""]
    for section in SECTIONS:
        how = f"{section.how} {section.markdown_how}" if section.markdown_how else section.how
        out += [f"## {section.title}", "", md_how(how), "", *section.markdown(data)]
    return "\n".join(out)


def write_report(run_dir: str | Path, formats: Iterable[str] = FORMATS, *, baseline: str = "unbounded") -> list[Path]:
    """Write ``plots/*.png`` and the chosen formats (``report.html``, ``report.md``) into ``run_dir``;
    returns the report files written. A sweep run also gets its sweep page (``sweep.html``, ``sweep.md``,
    ``plots/sweep-*.png``; see :mod:`reports.sweep`), linked from the report and listed after it.

    Every input is checked and every file drawn before the first is written, and the files are
    written as one set (:func:`reports.outputs.write_files`): a ReportInputError leaves the run
    directory as it was."""
    chosen = check_formats(formats)
    run = open_run_dir(run_dir)
    data = collect(run, baseline=baseline, plots_dir=run.path / PLOTS_DIR)
    files = {png.path: png.data for png in data.plots.values()}
    pages = []
    if "html" in chosen:
        files[run.path / REPORT_HTML] = render_html(data).encode()
        pages.append(run.path / REPORT_HTML)
    if "md" in chosen:
        files[run.path / REPORT_MD] = render_markdown(data).encode()
        pages.append(run.path / REPORT_MD)
    if data.sweep:
        # Imported here: see collect.
        from reports.sweep import sweep_files

        sweep_pages, sweep_plots = sweep_files(run, chosen, sessions=data.sessions, headline=data.headline)
        files = sweep_plots | files | sweep_pages  # every plot before every page
        pages += list(sweep_pages)
    write_files(run.path, files)
    return pages
