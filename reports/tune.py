"""A tune's results (``ctxbench tune``): the objective values of trials, the Pareto front with bootstrap intervals
over sessions, each front point's paired difference against the default settings, the front plot and the tune
page (``tune.html``, ``tune.md``).

Reads the tune directory only: ``tune.json`` (what was searched and which working runs hold the full-count
sessions), ``trials.parquet`` and the working runs' ``sessions.parquet``. The intervals are
:mod:`reports.stats`' (`estimates`, `paired_differences`), the page is built from :mod:`reports.blocks` like
the sweep page (`reports.sweep`).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.core.rundir import PLOTS_DIR, SESSIONS_TABLE
from reports.accounting import ACCOUNTING_METRICS
from reports.blocks import Figure, Page, Paragraph, Section, TableBlock, page_files
from reports.inputs import FORMATS, ReportInputError
from reports.outputs import write_files
from reports.plots import new_figure, plot_style
from reports.stats import (
    CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    METRICS,
    SCRIPT_KEY,
    Metric,
    estimates,
    in_session_order,
    metric_arrays,
    paired_differences,
    percentile_interval,
    rng_for,
    statistic,
)
from reports.tables import Cell, Table

__all__ = [
    "FRONT_TABLE",
    "TUNE_PAGE",
    "TuneData",
    "front_table",
    "front_text",
    "is_tune_dir",
    "objective_metric",
    "objective_values",
    "read_tune",
    "write_front",
    "write_tune_report",
]

TUNE_FILE = "tune.json"
TRIALS_TABLE = "trials.parquet"
FRONT_TABLE = "front.parquet"
TUNE_PAGE = "tune"
PLOT_NAME = "tune-front.png"


def objective_metric(name: str) -> Metric:
    """The metric an objective names: one of `reports.stats.METRICS`, or of the accounting report's metrics
    (`reports.accounting.ACCOUNTING_METRICS`: ``needed_hidden``, ``hidden_output_tokens`` and the like)."""
    if name in METRICS:
        return METRICS[name]
    return {m.name: m for m in ACCOUNTING_METRICS}[name]


def known_objectives(accounting: bool) -> list[str]:
    """The objective names a tune may use: the accounting metrics on recorded sessions, the report's otherwise."""
    return [m.name for m in ACCOUNTING_METRICS] if accounting else list(METRICS)


def _with_success(sessions: pd.DataFrame) -> pd.DataFrame:
    """The frame with ``success`` as `reports.stats` reads it; an accounting run's rows have no outcome (a
    recorded session is not graded), so none of its metrics reads it and it is False there."""
    if "success" in sessions:
        return sessions
    out = sessions.copy()
    out["success"] = out["outcome"] == "success" if "outcome" in out else False
    out["loop_detected"] = out["loop_detected"].astype(bool) if "loop_detected" in out else False
    return out


def objective_values(sessions: pd.DataFrame, labels: Sequence[str],
                     objectives: Sequence[str]) -> dict[str, list[float]]:
    """Each label's value of each objective over its sessions (NaN where undefined): the point values of the
    report's metrics, what ``ctxbench tune`` optimizes."""
    sessions = _with_success(sessions)
    metrics = [objective_metric(name) for name in objectives]
    out: dict[str, list[float]] = {}
    for label in labels:
        group = in_session_order(sessions[sessions["strategy"] == label])
        values = []
        for metric in metrics:
            v, d = metric_arrays(group, metric)
            values.append(float(statistic(metric)(v, d, np.arange(len(v)))) if len(v) else math.nan)
        out[label] = values
    return out


@dataclass(frozen=True, slots=True)
class TuneData:
    """What the tune page shows: the record, the trials, the full-count sessions of the front and default."""

    path: Path
    record: dict[str, object]
    trials: pd.DataFrame
    objectives: list[tuple[str, str]]
    front: list[str]
    default: str
    sessions: pd.DataFrame


def is_tune_dir(path: Path) -> bool:
    """True for a directory ``ctxbench tune`` wrote (its ``tune.json``)."""
    return (Path(path) / TUNE_FILE).is_file()


def read_tune(path: str | Path) -> TuneData:
    """The tables of a finished tune directory; ReportInputError, naming the file, otherwise."""
    path = Path(path)
    try:
        record = json.loads((path / TUNE_FILE).read_text())
        result = record["result"]
        objectives = [(str(n), str(d)) for n, d in result["objectives"]]
        front = [str(x) for x in result["front"]]
        default = str(result["default"])
        runs = [str(r) for r in result["runs"]]
    except FileNotFoundError:
        raise ReportInputError(f"{path / TUNE_FILE}: not a tune directory (no {TUNE_FILE})") from None
    except (ValueError, KeyError, TypeError):
        raise ReportInputError(f"{path / TUNE_FILE}: no finished tune in it (run the tune to its end)") from None
    try:
        trials = pd.read_parquet(path / TRIALS_TABLE)
        frames = [pd.read_parquet(path / r / SESSIONS_TABLE) for r in runs]
    except (OSError, ValueError) as e:
        raise ReportInputError(f"{path}: a tune table cannot be read ({e})") from None
    sessions = pd.concat(frames, ignore_index=True)
    sessions = sessions[sessions["strategy"].isin([*front, default])]
    return TuneData(path, record, trials, objectives, front, default, sessions)


def front_table(data: TuneData) -> pd.DataFrame:
    """One row per (front point, objective): the value over the full-count sessions with its 95% interval,
    and the paired difference against the default settings (estimate and interval), the default's own
    row included (difference 0)."""
    sessions = _with_success(data.sessions)
    labels = [data.default, *[x for x in data.front if x != data.default]]
    cells, keys = [], []
    for label in labels:
        group = in_session_order(sessions[sessions["strategy"] == label])
        for name, _ in data.objectives:
            metric = objective_metric(name)
            cells.append((metric, *metric_arrays(group, metric)))
            keys.append((label, name))
    found = estimates(cells)
    pairs = [(label, data.default, name) for label in labels if label != data.default for name, _ in data.objectives
             if name in METRICS]
    diffs = paired_differences(sessions, pairs) if pairs else pd.DataFrame(
        columns=["strategy", "baseline", "metric", "diff", "ci_low", "ci_high", "excludes_zero"])
    by_pair: dict[tuple[str, str], Any] = {(r.strategy, r.metric): r for r in diffs.itertuples()}
    for label in labels:
        for name, _ in data.objectives:
            if label != data.default and name not in METRICS:
                by_pair[label, name] = _paired_accounting(sessions, label, data.default, objective_metric(name))
    trials = data.trials.set_index("label")
    rows = []
    for (label, name), estimate in zip(keys, found, strict=True):
        diff = by_pair.get((label, name))
        rows.append({
            "label": label, "trial": int(trials.loc[label, "trial"]), "on_front": label in data.front,
            "is_default": label == data.default, "params": str(trials.loc[label, "params"]),
            "objective": name, "direction": dict(data.objectives)[name],
            "value": estimate.value, "ci_low": estimate.ci_low, "ci_high": estimate.ci_high, "n": estimate.n,
            "diff": 0.0 if diff is None else float(diff.diff),
            "diff_ci_low": math.nan if diff is None else float(diff.ci_low),
            "diff_ci_high": math.nan if diff is None else float(diff.ci_high),
            "diff_excludes_zero": False if diff is None else bool(diff.excludes_zero),
        })
    return pd.DataFrame(rows)


@dataclass(frozen=True, slots=True)
class _Difference:
    diff: float
    ci_low: float
    ci_high: float
    excludes_zero: bool


def _paired_accounting(sessions: pd.DataFrame, label: str, baseline: str, metric: Metric) -> _Difference:
    """``label`` minus ``baseline`` of an accounting metric (not one of `METRICS`, which `paired_differences`
    takes) over the sessions both ran, with a percentile bootstrap interval from resampling those sessions
    jointly, seeded from the names as `reports.stats` seeds its streams."""
    a = sessions[sessions["strategy"] == label].set_index(SCRIPT_KEY).sort_index()
    b = sessions[sessions["strategy"] == baseline].set_index(SCRIPT_KEY).sort_index()
    common = a.index.intersection(b.index).sort_values()
    a, b = a.loc[common].reset_index(), b.loc[common].reset_index()
    (va, da), (vb, db) = metric_arrays(a, metric), metric_arrays(b, metric)
    n = len(common)
    if n == 0:
        return _Difference(math.nan, math.nan, math.nan, False)
    stat = statistic(metric)
    diff = float(stat(va, da, np.arange(n)) - stat(vb, db, np.arange(n)))
    idx = rng_for(DEFAULT_SEED, "tune-paired", metric.name, label, baseline).integers(0, n, (DEFAULT_RESAMPLES, n))
    low, high = percentile_interval(stat(va, da, idx) - stat(vb, db, idx), CONFIDENCE)
    return _Difference(diff, low, high, bool(low > 0 or high < 0))


def write_front(path: str | Path) -> pd.DataFrame:
    """Write ``front.parquet`` of a finished tune (atomically); the frame."""
    data = read_tune(path)
    frame = front_table(data)
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    write_files(data.path, {data.path / FRONT_TABLE: buffer.getvalue()})
    return frame


def _fmt(value: float) -> str:
    if not math.isfinite(value):
        return "n/a"
    return f"{value:.4g}"


def front_text(frame: pd.DataFrame) -> str:
    """The front as a plain table for stdout: one line per point, each objective's value, interval and
    difference against the default."""
    objectives = list(dict.fromkeys(frame["objective"]))
    header = ["label", *[f"{o} [95% CI] (vs default)" for o in objectives], "params"]
    lines = []
    for label, group in frame.groupby("label", sort=False):
        row = [str(label) + (" (default)" if bool(group["is_default"].iloc[0]) else "")
               + ("" if bool(group["on_front"].iloc[0]) else " (not on front)")]
        for o in objectives:
            r = group[group["objective"] == o].iloc[0]
            ci = f"[{_fmt(r['diff_ci_low'])}, {_fmt(r['diff_ci_high'])}]"
            diff = "" if r["is_default"] else f" ({r['diff']:+.4g} {ci})"
            row.append(f"{_fmt(r['value'])} [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]{diff}")
        row.append(str(group["params"].iloc[0]))
        lines.append(row)
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header) - 1)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header[:-1], widths, strict=True)) + "  " + header[-1]]
    for r in lines:
        out.append("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1])
    return "\n".join(out)


def front_plot(data: TuneData) -> bytes:
    """The first two objectives of every trial at its last rung: dominated trials in grey, the front
    highlighted, the default marked."""
    (x_name, x_dir), (y_name, y_dir) = data.objectives[:2]
    trials = data.trials
    with plot_style():
        fig, ax = new_figure()
        other = trials[~trials["on_front"] & ~trials["is_default"]]
        ax.scatter(other[x_name], other[y_name], color="0.7", s=18, label="other trials (last rung reached)")
        front = trials[trials["on_front"]].sort_values(x_name)
        ax.plot(front[x_name], front[y_name], "o-", color="tab:blue", label="Pareto front (full sessions)")
        default = trials[trials["is_default"]]
        ax.scatter(default[x_name], default[y_name], marker="*", s=160, color="tab:red", zorder=5,
                   label="default settings")
        ax.set_xlabel(f"{x_name} ({'higher' if x_dir == 'maximize' else 'lower'} is better)")
        ax.set_ylabel(f"{y_name} ({'higher' if y_dir == 'maximize' else 'lower'} is better)")
        ax.legend(loc="best", fontsize="small")
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        return buffer.getvalue()


def _page(data: TuneData, frame: pd.DataFrame) -> Page:
    objectives = [name for name, _ in data.objectives]
    header = ["point", *objectives, *[f"{o} vs default" for o in objectives], "params"]
    rows = []
    for label, group in frame.groupby("label", sort=False):
        cells = [Cell(str(label) + (" (default)" if bool(group["is_default"].iloc[0]) else ""), css="name")]
        diffs = []
        for o in objectives:
            r = group[group["objective"] == o].iloc[0]
            cells.append(Cell(_fmt(r["value"]), sub=f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]"))
            better = (r["diff"] > 0) == (r["direction"] == "maximize")
            css = ("better" if better else "worse") if r["diff_excludes_zero"] else ""
            diffs.append(Cell("" if r["is_default"] else f"{r['diff']:+.4g}",
                              sub="" if r["is_default"] else f"[{_fmt(r['diff_ci_low'])}, {_fmt(r['diff_ci_high'])}]",
                              css=css))
        rows.append([*cells, *diffs, Cell(str(group["params"].iloc[0]))])
    table = Table("front", header, rows)
    trials = data.trials
    t_header = ["trial", "rung", "sessions", "front", *objectives, "params"]
    t_rows = [[Cell(str(r["label"]), css="name"), Cell(str(r["rung"])), Cell(str(r["sessions"])),
               Cell("yes" if r["on_front"] else ""), *[Cell(_fmt(float(r[o]))) for o in objectives],
               Cell(str(r["params"]))] for _, r in trials.iterrows()]
    result = data.record.get("result", {})
    rungs = result.get("rungs", []) if isinstance(result, dict) else []
    lead = (f"{len(trials)} trials of {result.get('strategy', '') if isinstance(result, dict) else ''}, raced over "
            f"{' -> '.join(map(str, rungs))} sessions; {len(data.front)} on the Pareto front of the trials run on "
            f"all sessions. Every trial replayed the same sessions, so the differences against the default "
            f"settings ({data.default}) are paired.")
    return Page(f"ctxbench tune: {data.path.name}", lead, [
        Section("Pareto front", [TableBlock(table)],
                how="Each value over the full-count sessions with its 95% bootstrap interval over sessions; each "
                    "difference is the point minus the default settings over the same sessions, with its paired "
                    "95% interval (green: better with an interval excluding zero; red: worse)."),
        Section("Front plot", [Figure(front_plot(data), f"{PLOTS_DIR}/{PLOT_NAME}", "the Pareto front of the tune",
                                      how="Grey: trials off the front, at the last rung each reached (fewer "
                                          "sessions for the trials dropped early); blue: the front; red star: "
                                          "the default settings.")]),
        Section("Every trial", [TableBlock(Table("trials", t_header, t_rows))],
                how="Each trial at the last rung it reached; the sampler learned from the first rung's values."),
        Paragraph("Each front point's settings are a ready config in front/<label>.toml (`ctxbench run` it)."),
    ])


def write_tune_report(path: str | Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Write ``front.parquet``, ``tune.html`` / ``tune.md`` and ``plots/tune-front.png`` of a finished tune."""
    frame = write_front(path)
    data = read_tune(path)
    page = _page(data, frame)
    pages = page_files(page, formats, data.path / f"{TUNE_PAGE}.html", data.path / f"{TUNE_PAGE}.md")
    files: Mapping[Path, bytes] = {data.path / PLOTS_DIR / PLOT_NAME: front_plot(data), **pages}
    write_files(data.path, files)
    return list(pages)
