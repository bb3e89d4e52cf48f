"""A run's report: ``report.html`` (self-contained: inline CSS, plots as PNG data URIs, nothing fetched
from the network) and ``report.md`` (the same tables, with links to ``plots/*.png``).

Reads only the run directory (``config.toml``, ``manifest.json``, ``sessions.parquet``,
``calls.parquet``), so a run copied to a laptop renders without any runtime state.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.core.files import write_atomically
from reports import stats
from reports.stats import METRICS, Metric

FORMATS = ("html", "md")
SESSIONS_TABLE, CALLS_TABLE, MANIFEST, CONFIG = "sessions.parquet", "calls.parquet", "manifest.json", "config.toml"


class ReportInputError(ValueError):
    """The report or compare cannot start from what it was given (not a run directory, an unknown
    format): one line naming the problem."""


def check_run_dir(run_dir: str | Path) -> Path:
    """``run_dir`` as a Path when it holds a finished run's tables; else a ReportInputError."""
    path = Path(run_dir)
    if not path.exists():
        raise ReportInputError(f"{path}: no such directory")
    if not path.is_dir():
        raise ReportInputError(f"{path}: not a directory")
    if not (path / SESSIONS_TABLE).is_file():
        raise ReportInputError(f"{path}: not a finished run directory (no {SESSIONS_TABLE}; run `ctxbench run` "
                               "into it to finish it)")
    return path


def check_formats(formats: Iterable[str]) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(f.strip().lower() for f in formats if f.strip()))
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown:
        raise ReportInputError(f"unknown report format {unknown[0]!r} (known: {', '.join(FORMATS)})")
    if not chosen:
        raise ReportInputError(f"no report format given (known: {', '.join(FORMATS)})")
    return chosen


# Number formatting, shared with the compare table ---------------------------------------------------


def is_share(metric: Metric) -> bool:
    return metric.unit.startswith("share")


def format_value(metric: Metric, value: float) -> str:
    if value is None or not np.isfinite(value):
        return "n/a"
    if is_share(metric):
        return f"{value * 100:.2f}%"
    if metric.unit == "tokens":
        return f"{value:,.0f}"
    if metric.unit == "USD":
        return f"${value:,.4f}"
    if metric.unit.startswith("s "):
        return f"{value:,.1f} s"
    return f"{value:,.4g}"


def format_diff(metric: Metric, value: float) -> str:
    if value is None or not np.isfinite(value):
        return "n/a"
    if is_share(metric):
        return f"{value * 100:+.2f} pp"
    if metric.unit == "tokens":
        return f"{value:+,.0f}"
    if metric.unit == "USD":
        return f"{'-' if value < 0 else '+'}${abs(value):,.4f}"
    if metric.unit.startswith("s "):
        return f"{value:+,.1f} s"
    return f"{value:+,.4g}"


def format_interval(metric: Metric, low: float, high: float, *, diff: bool = False) -> str:
    fmt = format_diff if diff else format_value
    return f"[{fmt(metric, low)}, {fmt(metric, high)}]"


# What the report is made of -------------------------------------------------------------------------


@dataclass(frozen=True)
class Plot:
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

HOW_TO_READ = {
    "run": "What was run: the resolved config (every default filled in), the model profile, the root seed and "
           "the checksums of the tables. Two runs with the same config hash replay the same sessions.",
    "headline": "One row per strategy, one column per headline metric, over all of that strategy's sessions. "
                "The small line under each value is its 95% bootstrap confidence interval (sessions resampled "
                "with replacement). Overlapping intervals do not mean 'no difference': use the paired table "
                "for that.",
    "paired": "Each strategy minus the baseline, over the very same sessions (every strategy replays the same "
              "scripts), with a 95% bootstrap interval of the difference. Pairing removes the session-to-session "
              "noise, so these intervals are much narrower than the headline ones. Green: the interval excludes "
              "zero and the strategy is better; red: it excludes zero and the strategy is worse; uncoloured: "
              "no detectable difference at this sample size.",
    "plots": "Distributions behind the headline numbers. Each plot has its own note on how to read it.",
    "breakdowns": "The same sessions split up: by how they ended, by scenario family, and by the loop rule that "
                  "fired. Shares are of the strategy's sessions; a family with few sessions is noisy.",
}

SECTIONS = (
    ("run", "Run"),
    ("headline", "Headline metrics"),
    ("paired", "Paired differences against the baseline"),
    ("plots", "Plots"),
    ("breakdowns", "Breakdowns"),
)


@dataclass(frozen=True)
class ReportData:
    run_dir: Path
    run_id: str
    manifest: dict[str, Any]
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
    plots: dict[str, Path]
    #: A sweep run (``reports.sweep.is_sweep``): the report links the sweep page.
    sweep: bool = False
    #: Which strategies the plots show when not all of them (a sweep run).
    plots_note: str = ""


def _strategy_order(sessions: pd.DataFrame, manifest: dict[str, Any]) -> list[str]:
    """The strategies in config order (from the manifest), then any others by name."""
    present = set(sessions["strategy"]) if not sessions.empty else set()
    entries = manifest.get("variants") or manifest.get("strategies") or []
    listed = [str(s.get("label") or s.get("name")) for s in entries if isinstance(s, dict)]
    ordered = [s for s in dict.fromkeys(listed) if s in present]
    return ordered + sorted(present - set(ordered))


def _choose_baseline(strategies: Sequence[str], wanted: str) -> tuple[str, str]:
    if not strategies:
        return wanted, ""
    if wanted in strategies:
        return wanted, ""
    chosen = strategies[0]
    return chosen, (f"The baseline strategy {wanted!r} is not in this run; the paired differences are against "
                    f"{chosen!r}, the first strategy of the run.")


def collect(run_dir: str | Path, *, baseline: str = "unbounded", plots_dir: Path | None = None) -> ReportData:
    """Everything the report shows: tables and statistics computed, plots written to ``plots_dir``
    (no plots when it is None or the run has no sessions)."""
    path = check_run_dir(run_dir)
    manifest_path = path / MANIFEST
    manifest: dict[str, Any] = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    config_path = path / CONFIG
    config_text = config_path.read_text() if config_path.is_file() else ""
    sessions = stats.load_sessions(path)
    strategies = _strategy_order(sessions, manifest)
    chosen, note = _choose_baseline(strategies, baseline)
    if sessions.empty:
        empty = pd.DataFrame()
        return ReportData(path, str(manifest.get("run_id") or path.name), manifest, config_text, sessions,
                          strategies, chosen, note, empty, empty, empty, empty, empty, {})
    head = stats.headline(sessions)
    pair = stats.paired(sessions, chosen) if len(strategies) > 1 else pd.DataFrame()
    # Imported here: reports.sweep builds its page from this module's helpers.
    from reports.sweep import is_sweep, report_plot_variants

    sweep = is_sweep(sessions)
    plots: dict[str, Path] = {}
    plots_note = ""
    if plots_dir is not None:
        from reports.plots import write_plots

        calls_path = path / CALLS_TABLE
        calls = pd.read_parquet(calls_path) if calls_path.is_file() else pd.DataFrame()
        plot_sessions, plot_head = sessions, head
        if sweep:
            shown, plots_note = report_plot_variants(sessions, manifest)
            plot_sessions, plot_head = (_only(frame, shown) for frame in (sessions, head))
            calls = _only(calls, shown) if "strategy" in calls.columns else calls
        plots_dir.mkdir(parents=True, exist_ok=True)
        plots = dict(write_plots(plot_sessions, calls, plots_dir, headline=plot_head))
    return ReportData(
        run_dir=path, run_id=str(manifest.get("run_id") or path.name), manifest=manifest, config_text=config_text,
        sessions=sessions, strategies=strategies, baseline=chosen, baseline_note=note, headline=head,
        paired=pair, outcomes=stats.outcome_shares(sessions), families=stats.breakdown(sessions, "family"),
        loops=stats.loop_rules(sessions), plots=plots, sweep=sweep, plots_note=plots_note,
    )


def _only(frame: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """The rows of the strategies in ``names``, renamed to their plotted names."""
    kept = frame[frame["strategy"].isin(list(names))]
    return kept.assign(strategy=kept["strategy"].map(names))


def write_report(run_dir: str | Path, formats: Iterable[str] = FORMATS, *, baseline: str = "unbounded") -> list[Path]:
    """Write ``plots/*.png`` and the chosen formats (``report.html``, ``report.md``) into ``run_dir``;
    returns the report files written. A sweep run also gets its sweep page (``sweep.html``, ``sweep.md``,
    ``plots/sweep-*.png``; see :mod:`reports.sweep`), linked from the report and listed after it."""
    chosen = check_formats(formats)
    path = check_run_dir(run_dir)
    data = collect(path, baseline=baseline, plots_dir=path / "plots")
    written = []
    if "html" in chosen:
        target = path / "report.html"
        write_atomically(target, render_html(data).encode())
        written.append(target)
    if "md" in chosen:
        target = path / "report.md"
        write_atomically(target, render_markdown(data).encode())
        written.append(target)
    if data.sweep:
        from reports.sweep import write_sweep_page

        written += write_sweep_page(path, chosen, headline=data.headline)
    return written


# Table models shared by both formats ----------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    text: str
    sub: str = ""
    css: str = ""
    #: A second small line above ``sub`` (a relative change).
    note: str = ""


@dataclass(frozen=True)
class Table:
    id: str
    header: list[str]
    rows: list[list[Cell]]
    #: Numbers are right-aligned; text tables (the manifest, the strategies) are not.
    numeric: bool = True


def _run_rows(data: ReportData) -> list[tuple[str, str]]:
    m = data.manifest
    model = m.get("model")
    model_name = model.get("name") if isinstance(model, dict) else model
    rows_count = m.get("rows") or {}
    items: list[tuple[str, Any]] = [
        ("run id", data.run_id),
        ("ctxbench version", m.get("ctxbench_version")),
        ("git sha", m.get("git_sha")),
        ("python / platform", " / ".join(str(x) for x in (m.get("python"), m.get("platform")) if x)),
        ("root seed", m.get("root_seed")),
        ("config hash", str(m.get("config_hash") or "")[:12]),
        ("model profile", model_name),
        ("started / finished", " / ".join(str(x) for x in (m.get("started"), m.get("finished")) if x)),
        ("shard", m.get("shard")),
        ("merged from", ", ".join(m.get("merged_from") or [])),
        ("sessions per strategy", ", ".join(f"{s}: {n}" for s, n in
                                            data.sessions.groupby("strategy").size().items())
         if not data.sessions.empty else "0"),
        ("table rows", ", ".join(f"{k}: {v:,}" for k, v in rows_count.items())),
        ("baseline", data.baseline),
    ]
    return [(k, str(v)) for k, v in items if v not in (None, "")]


def _params_text(entry: dict[str, Any], skip: Iterable[str]) -> str:
    skipped = set(skip)
    return ", ".join(f"{k}={json.dumps(v) if isinstance(v, dict | list) else v}"
                     for k, v in entry.items() if k not in skipped)


def strategies_table(data: ReportData) -> Table:
    rows = []
    for entry in data.manifest.get("strategies") or []:
        if isinstance(entry, dict):
            rows.append([Cell(str(entry.get("label") or entry.get("name"))), Cell(str(entry.get("name"))),
                         Cell(_params_text(entry, ("label", "name")))])
    return Table("strategies-table", ["strategy", "name", "parameters and switches"], rows, numeric=False)


def scenarios_table(data: ReportData) -> Table:
    rows = []
    for entry in data.manifest.get("scenarios") or []:
        if isinstance(entry, dict):
            rows.append([Cell(str(entry.get("name"))), Cell(str(entry.get("weight", ""))),
                         Cell(_params_text(entry, ("name", "weight")))])
    return Table("scenarios-table", ["scenario", "weight", "parameters"], rows, numeric=False)


def headline_table(data: ReportData) -> Table:
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
            row.append(Cell(format_value(metric, r["value"]), sub=format_interval(metric, r["ci_low"], r["ci_high"])))
        rows.append(row)
    return Table("headline-table", header, rows)


def paired_table(data: ReportData) -> Table:
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
    shares = data.outcomes
    columns = [str(c) for c in shares.columns]
    rows = [[Cell(str(strategy), css="name"), *(Cell(_pct(float(shares.loc[strategy, c]))) for c in shares.columns)]
            for strategy in data.strategies if strategy in shares.index]
    return Table("outcomes-table", ["strategy", *columns], rows)


def families_table(data: ReportData) -> Table:
    frame = data.families
    rows = [[Cell(str(r["strategy"]), css="name"), Cell(str(r["family"])), Cell(f"{int(r['sessions'])}"),
             Cell(_pct(float(r["success_rate"]))), Cell(f"{r['context_tokens_mean']:,.0f}"),
             Cell(f"${r['cost_per_session']:,.4f}")]
            for _, r in frame.iterrows()]
    return Table("families-table", ["strategy", "family", "sessions", "success rate", "mean context tokens",
                                    "cost per session"], rows)


def loops_table(data: ReportData) -> Table:
    frame = data.loops
    columns = [str(c) for c in frame.columns]
    rows = [[Cell(str(strategy), css="name"), *(Cell(_pct(float(frame.loc[strategy, c]))) for c in frame.columns)]
            for strategy in data.strategies if strategy in frame.index]
    return Table("loops-table", ["strategy", *columns], rows)


def _plot_entries(data: ReportData) -> list[tuple[Plot, Path]]:
    known = [(PLOT_BY_NAME[name], data.plots[name]) for name in PLOT_BY_NAME if name in data.plots]
    extra = [(Plot(name, name.replace("_", " ").capitalize(), "See the plot's axis labels."), p)
             for name, p in sorted(data.plots.items()) if name not in PLOT_BY_NAME]
    return known + extra


# HTML -------------------------------------------------------------------------------------------------

CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; background: #ffffff; color: #1a1a1a;
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 8px; padding-bottom: 4px; border-bottom: 2px solid #d0d7de; }
h3 { font-size: 15px; margin: 20px 0 6px; }
.subtitle { color: #57606a; margin: 0 0 16px; }
.how { background: #f6f8fa; border-left: 4px solid #8c959f; padding: 8px 12px; margin: 8px 0 12px;
       color: #24292f; max-width: 1100px; }
.how strong { display: block; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: #57606a; }
.note { background: #fff8c5; border-left: 4px solid #d4a72c; padding: 8px 12px; margin: 8px 0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 5px 8px; text-align: right; vertical-align: top; }
th { background: #eaeef2; color: #1a1a1a; font-weight: 600; }
td.name, th:first-child { text-align: left; font-weight: 600; }
td .sub { display: block; font-size: 11px; color: #57606a; font-weight: 400; white-space: nowrap; }
td.better { background: #dafbe1; }
td.worse { background: #ffebe9; }
table.text td, table.text th { text-align: left; }
table.kv td:first-child { color: #57606a; white-space: nowrap; }
figure { margin: 12px 0 24px; }
figure img { max-width: 100%; height: auto; border: 1px solid #d0d7de; }
figcaption { font-weight: 600; margin-bottom: 4px; }
pre { background: #f6f8fa; padding: 10px; overflow-x: auto; font-size: 12px; }
details summary { cursor: pointer; color: #0550ae; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _html_table(table: Table, *, css: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in table.header)
    body = []
    for row in table.rows:
        cells = []
        for cell in row:
            cls = f' class="{_e(cell.css)}"' if cell.css else ""
            sub = "".join(f'<span class="sub">{_e(x)}</span>' for x in (cell.note, cell.sub) if x)
            cells.append(f"<td{cls}>{_e(cell.text)}{sub}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    classes = " ".join(c for c in (css, "" if table.numeric else "text") if c)
    cls = f' class="{classes}"' if classes else ""
    return (f'<div class="scroll"><table id="{_e(table.id)}"{cls}><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _how(key: str) -> str:
    return f'<div class="how"><strong>How to read this</strong>{_e(HOW_TO_READ[key])}</div>'


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _session_count(data: ReportData) -> int:
    return 0 if data.sessions.empty else len(data.sessions[stats.SESSION_KEY].drop_duplicates())


def render_html(data: ReportData) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>ctxbench report: {_e(data.run_id)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>ctxbench report: {_e(data.run_id)}</h1>",
        f'<p class="subtitle">{len(data.strategies)} strategies replaying {_session_count(data)} sessions; '
        f"baseline {_e(data.baseline)}.</p>",
    ]
    if data.sweep:
        parts.append('<p class="note" id="sweep-link">This run is a sweep: <a href="sweep.html">sweep.html</a> plots '
                     "every headline metric against each swept param and ranks the variants per model profile.</p>")
    if data.baseline_note:
        parts.append(f'<p class="note" id="baseline-note">{_e(data.baseline_note)}</p>')
    if data.sessions.empty:
        parts.append('<p class="note">This run directory has no sessions (a shard without batches?): nothing '
                     "to report.</p>")

    parts += ['<section id="run">', "<h2>Run</h2>", _how("run"),
              _html_table(Table("manifest-table", ["field", "value"], [[Cell(k), Cell(v)] for k, v in _run_rows(data)],
                               numeric=False),
                          css="kv")]
    strategies, scenarios = strategies_table(data), scenarios_table(data)
    if strategies.rows:
        parts += ["<h3>Strategies</h3>", _html_table(strategies)]
    if scenarios.rows:
        parts += ["<h3>Scenarios</h3>", _html_table(scenarios)]
    if data.config_text:
        parts.append(f"<details><summary>config.toml (resolved)</summary><pre>{_e(data.config_text)}</pre></details>")
    parts.append("</section>")

    parts += ['<section id="headline">', "<h2>Headline metrics</h2>", _how("headline"),
              _html_table(headline_table(data)), "</section>"]

    parts += ['<section id="paired">', "<h2>Paired differences against the baseline</h2>", _how("paired")]
    if data.paired.empty:
        parts.append("<p>Only one strategy in this run: nothing to pair.</p>")
    else:
        parts.append(f"<p>Each strategy minus <strong>{_e(data.baseline)}</strong>.</p>")
        parts.append(_html_table(paired_table(data)))
    parts.append("</section>")

    parts += ['<section id="plots">', "<h2>Plots</h2>", _how("plots")]
    if data.plots_note:
        parts.append(f'<p class="note" id="plots-note">{_e(data.plots_note)}</p>')
    entries = _plot_entries(data)
    if not entries:
        parts.append("<p>No plots (no sessions).</p>")
    for plot, path in entries:
        parts.append(f'<figure id="plot-{_e(plot.name)}"><figcaption>{_e(plot.title)}</figcaption>'
                     f'<img alt="{_e(plot.title)}" src="{_data_uri(path)}">'
                     f'<div class="how"><strong>How to read this</strong>{_e(plot.how)}</div></figure>')
    parts.append("</section>")

    parts += ['<section id="breakdowns">', "<h2>Breakdowns</h2>", _how("breakdowns")]
    if not data.sessions.empty:
        parts += ["<h3>Outcomes</h3>", _html_table(outcomes_table(data)),
                  "<h3>By scenario family</h3>", _html_table(families_table(data)),
                  "<h3>Loop rate by rule</h3>"]
        loops = loops_table(data)
        parts.append(_html_table(loops) if len(loops.header) > 1 else "<p>No loops were detected.</p>")
    parts += ["</section>", "</body></html>", ""]
    return "\n".join(parts)


# Markdown ---------------------------------------------------------------------------------------------


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(table: Table) -> str:
    def cell(c: Cell) -> str:
        text = f"**{c.text}**" if c.css in ("better", "worse") else c.text
        if c.note:
            text = f"{text} ({c.note})"
        if c.sub:
            text = f"{text} ({c.sub})" if c.css == "name" else f"{text} {c.sub}"
        return _md_escape(text)

    align = "---:" if table.numeric else "---"
    lines = ["| " + " | ".join(_md_escape(h) for h in table.header) + " |",
             "|" + "|".join(["---"] + [align] * (len(table.header) - 1)) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


def render_markdown(data: ReportData) -> str:
    out = [f"# ctxbench report: {data.run_id}", ""]
    if data.sweep:
        out += ["> This run is a sweep: [sweep.md](sweep.md) plots every headline metric against each swept param "
                "and ranks the variants per model profile.", ""]
    if data.baseline_note:
        out += [f"> {data.baseline_note}", ""]
    if data.sessions.empty:
        out += ["This run directory has no sessions (a shard without batches?): nothing to report.", ""]
    out += ["## Run", "", f"*How to read this:* {HOW_TO_READ['run']}", "",
            _md_table(Table("manifest-table", ["field", "value"], [[Cell(k), Cell(v)] for k, v in _run_rows(data)],
                               numeric=False)),
            ""]
    strategies = strategies_table(data)
    if strategies.rows:
        out += ["### Strategies", "", _md_table(strategies), ""]
    out += ["## Headline metrics", "", f"*How to read this:* {HOW_TO_READ['headline']}", "",
            _md_table(headline_table(data)), ""]
    out += ["## Paired differences against the baseline", "", f"*How to read this:* {HOW_TO_READ['paired']} "
            "(In this Markdown version, bold marks a difference whose interval excludes zero.)", ""]
    if data.paired.empty:
        out += ["Only one strategy in this run: nothing to pair.", ""]
    else:
        out += [f"Each strategy minus **{data.baseline}**.", "", _md_table(paired_table(data)), ""]
    out += ["## Plots", "", f"*How to read this:* {HOW_TO_READ['plots']}", ""]
    if data.plots_note:
        out += [f"> {data.plots_note}", ""]
    for plot, path in _plot_entries(data):
        rel = path.resolve().relative_to(data.run_dir.resolve()).as_posix()
        out += [f"### {plot.title}", "", f"![{plot.title}]({rel})", "", plot.how, ""]
    out += ["## Breakdowns", "", f"*How to read this:* {HOW_TO_READ['breakdowns']}", ""]
    if not data.sessions.empty:
        out += ["### Outcomes", "", _md_table(outcomes_table(data)), "",
                "### By scenario family", "", _md_table(families_table(data)), "", "### Loop rate by rule", ""]
        loops = loops_table(data)
        out += [_md_table(loops) if len(loops.header) > 1 else "No loops were detected.", ""]
    return "\n".join(out)
