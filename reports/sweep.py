"""A sweep run's own page: every headline metric against each swept strategy param, one line per model
profile, the ranking of the strategy variants per profile, and how stable that ranking is across
profiles (Kendall's tau-b and the pairs of variants whose order flips).

Reads the run directory only (``sessions.parquet``, ``manifest.json``). The statistics are
:mod:`reports.sweep_stats` (frames: the API), the figures :mod:`reports.sweep_plots`; this module is the
page (``sweep.html``, ``sweep.md``, ``plots/sweep-*.png``), one rendering of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness.core.rundir import PLOTS_DIR, Manifest
from reports import blocks, stats
from reports.blocks import HTML, Block, Figure, Only, Page, Paragraph, PerFormat, Section, TableBlock, sibling_page
from reports.inputs import (
    FORMATS,
    OPTIONAL_STATS_COLUMNS,
    REPORT_COLUMNS,
    SWEEP_COLUMNS,
    OpenRun,
    check_formats,
    open_run_dir,
)
from reports.outputs import Png, write_files
from reports.stats import METRICS, Metric
from reports.sweep_plots import draw_sweep_plots, sweep_plot_name
from reports.sweep_stats import (
    SUCCESS,
    RankingStability,
    grid_value_text,
    model_order,
    panel_metrics,
    ranking,
    ranking_stability,
    sweep_headline,
    sweep_points,
    variant_name,
    variant_table,
)
from reports.tables import Cell, Table, format_interval, format_value, headline_cell

__all__ = [
    "HOW_TO_READ",
    "SWEEP_PAGE",
    "SweepData",
    "baselines_table",
    "collect_sweep",
    "flips_table",
    "pairs_table",
    "points_table",
    "ranking_table",
    "render_sweep_html",
    "render_sweep_markdown",
    "sweep_files",
    "sweep_page",
    "swept_table",
    "tau_table",
    "write_sweep_page",
]


# The data --------------------------------------------------------------------------------------------------

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
    head = sweep_headline(sessions, headline)
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
    pages = blocks.page_files(sweep_page(data), chosen, run.path / f"{SWEEP_PAGE}.html", run.path / f"{SWEEP_PAGE}.md")
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
        values = list(dict.fromkeys(grid_value_text(str(v)) for v in group["variant"]))
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
    metrics = panel_metrics(data.points)
    header = ["value", "model", *(m.label for m in metrics)]
    body = []
    for (variant, model), group in rows.groupby(["variant", "model"], sort=False):
        body.append([Cell(grid_value_text(str(variant)), css="name"), Cell(str(model)), *_metric_cells(group, metrics)])
    return Table(f"points-{sweep_plot_name(param).removesuffix('.png')}", header, body)


def baselines_table(data: SweepData) -> Table:
    """The unswept variants' metrics, a row per (strategy, model): what the grid is read against."""
    rows = data.points[data.points["sweep_param"] == ""]
    metrics = panel_metrics(data.points)
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


# The page ------------------------------------------------------------------------------------------------------


def _grid_blocks(data: SweepData) -> list[Block]:
    """Each swept param's plot and table, then the unswept variants' table."""
    out: list[Block] = []
    if not data.plots and data.points.empty:
        out.append(Only(HTML, [Paragraph("No sessions in this run.")]))
    for param in sorted(p for p in set(data.points["sweep_param"].astype(str)) if p):
        param_blocks: list[Block] = []
        if param in data.plots:
            png = data.plots[param]
            rel = png.path.resolve().relative_to(data.run_dir.resolve()).as_posix()
            param_blocks.append(Figure(png.data, rel, alt=f"{param} against every headline metric", markdown_alt=param))
        param_blocks.append(TableBlock(points_table(data, param)))
        out.append(Section(param, param_blocks, level=3, id=sweep_plot_name(param).removesuffix(".png")))
    baselines = baselines_table(data)
    if baselines.rows:
        out.append(Section("Unswept variants (baselines)", [TableBlock(baselines)], level=3))
    return out


def _stability_blocks(data: SweepData) -> list[Block]:
    """Tau-b between the profiles, the flips counted, and the significant ones."""
    if data.stability.tau.empty:
        return [Paragraph("Only one model profile in this run: no ranking to compare with.")]
    flips = flips_table(data)
    return [TableBlock(tau_table(data)), TableBlock(pairs_table(data)), Paragraph(_counts_line(data)),
            Section("Significant flips", [TableBlock(flips) if flips.rows
                                          else Paragraph("None: every flip is within noise.")], level=3)]


def sweep_page(data: SweepData) -> Page:
    """The sweep page as blocks: self-contained in HTML like the report (inline CSS, plots as data URIs),
    plots linked from ``plots/sweep-*.png`` in Markdown."""
    subtitle = (_subtitle(data), PerFormat(" The full report of every variant: ", " The full report: "),
                sibling_page("report"), ".")
    return Page(f"ctxbench sweep: {data.run_id}", subtitle, [
        Paragraph(HOW_TO_READ["page"], kind="how"),
        Section("What was swept", [TableBlock(swept_table(data))], id="swept"),
        Section("Each swept param", _grid_blocks(data), id="grid", how=HOW_TO_READ["grid"]),
        Section("Ranking per profile", [TableBlock(ranking_table(data))], id="ranking", how=HOW_TO_READ["ranking"]),
        Section("Ranking stability across profiles", _stability_blocks(data), id="stability",
                how=HOW_TO_READ["stability"]),
    ])


def render_sweep_html(data: SweepData) -> str:
    """``sweep.html`` (:func:`sweep_page` in HTML)."""
    return blocks.render_html(sweep_page(data))


def render_sweep_markdown(data: SweepData) -> str:
    """``sweep.md``: the same tables as the HTML, with links to ``plots/sweep-*.png``."""
    return blocks.render_markdown(sweep_page(data))
