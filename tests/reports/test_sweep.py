"""reports.sweep: the grid's points and intervals from a tiny real sweep run, rankings and Kendall's
tau-b on hand-made frames whose answers are known (ties, a significant flip and flips within noise),
byte-identical sweep plots, a self-contained sweep.html linked from the report, the ordinary report's
plots of a sweep run, and no sweep page for a plain run or a run from before the sweep columns."""

from __future__ import annotations

import math
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from harness.core.rundir import Manifest
from harness.run.config import RunConfig
from harness.run.runner import run
from reports import stats
from reports.plots import DPI
from reports.render import write_report
from reports.stats import METRICS
from reports.sweep import write_sweep_page
from reports.sweep_plots import SWEEP_FIGSIZE, plot_sweep, sweep_figure, sweep_plot_name
from reports.sweep_stats import (
    is_sweep,
    kendall_tau_b,
    ranking,
    ranking_stability,
    report_plot_variants,
    sweep_points,
    variant_name,
)
from tests.reports.runs import SMALL_RUN, replace_table
from tests.test_reports_imports import forbidden, loaded

PARAM = "sliding_window.window_size"
TINY_SWEEP: dict[str, Any] = SMALL_RUN | {
    "sessions": 6,
    "batch_size": 6,
    "strategies": [{"name": "unbounded"}, {"name": "sliding_window"}, {"name": "offload_contracts"}],
    "sweep": {"models": ["frontier", "small"], "params": {PARAM: [10, 40]}},
}
MODELS = ["frontier", "small"]
VARIANTS = ["unbounded", "sliding_window[window_size=10]", "sliding_window[window_size=40]", "offload_contracts"]
RESAMPLES = 200


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sweep") / "run"
    run(RunConfig(**TINY_SWEEP), out, quiet=True)
    return out


@pytest.fixture(scope="module")
def reported(sweep_dir: Path) -> tuple[Path, list[Path]]:
    return sweep_dir, write_report(sweep_dir)


@pytest.fixture(scope="module")
def plain_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plain") / "run"
    run(RunConfig(**(SMALL_RUN | {"sessions": 4})), out, quiet=True)
    return out


@pytest.fixture(scope="module")
def sessions(sweep_dir: Path) -> pd.DataFrame:
    return stats.load_sessions(sweep_dir)


# Hand-made tables --------------------------------------------------------------------------------------


def session_rows(model: str, variant: str, successes: int, n: int, *, cost: float = 1.0,
                 sweep_param: str = "", sweep_value: float = math.nan) -> list[dict[str, Any]]:
    """``n`` sessions of one variant on one model, the first ``successes`` of them successful."""
    return [{"scenario": "mix", "session_index": i, "strategy": f"{variant}@{model}", "model": model,
             "sweep_param": sweep_param, "sweep_value": sweep_value,
             "outcome": "success" if i < successes else "stuck", "loop_detected": False,
             "context_tokens_mean": 1000.0 + i, "input_tokens": 5000 + i, "cached_input_tokens": 4000,
             "tool_syntax_errors": 0,
             "tool_calls": 10, "latency_s": 10.0 + i, "cost_usd": cost} for i in range(n)]


def frame(*groups: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([row for group in groups for row in group])


def ranks(rows: list[tuple[str, str, float, float, float]], metric: str = "success_rate") -> pd.DataFrame:
    """A ranking frame from (model, variant, value, ci_low, ci_high)."""
    return pd.DataFrame([{"model": m, "variant": v, "metric": metric, "value": x, "ci_low": lo, "ci_high": hi}
                         for m, v, x, lo, hi in rows])


# is_sweep ----------------------------------------------------------------------------------------------


def test_is_sweep_on_a_sweep_run_a_plain_run_and_a_run_from_before_the_columns(
        sessions: pd.DataFrame, plain_dir: Path) -> None:
    plain = stats.load_sessions(plain_dir)
    assert is_sweep(sessions)
    assert not is_sweep(plain)
    assert not is_sweep(plain.drop(columns=["model", "sweep_param", "sweep_value"]))
    assert not is_sweep(pd.DataFrame())


def test_is_sweep_with_models_only_or_params_only() -> None:
    two_models = frame(session_rows("frontier", "a", 1, 2), session_rows("mid", "a", 1, 2))
    assert is_sweep(two_models)
    one_param = frame(session_rows("frontier", "a[x=1]", 1, 2, sweep_param="a.x", sweep_value=1.0))
    assert is_sweep(one_param)


def test_variant_name_drops_only_the_models_own_suffix() -> None:
    assert variant_name("sliding_window[window_size=10]@mid", "mid") == "sliding_window[window_size=10]"
    assert variant_name("unbounded", "frontier") == "unbounded"
    assert variant_name("unbounded@mid", "small") == "unbounded@mid"


# sweep_points --------------------------------------------------------------------------------------------


def test_sweep_points_has_one_row_per_param_value_model_and_metric(sessions: pd.DataFrame) -> None:
    points = sweep_points(sessions, resamples=RESAMPLES)
    assert list(points.columns) == ["sweep_param", "sweep_value", "model", "variant", "strategy", "metric", "value",
                                    "ci_low", "ci_high", "n", "interval", "support"]
    swept = points[points["sweep_param"] != ""]
    assert set(swept["sweep_param"]) == {PARAM}
    assert sorted(set(swept["sweep_value"])) == [10.0, 40.0]
    assert not swept.duplicated(["sweep_param", "sweep_value", "model", "metric"]).any()
    assert len(swept) == 2 * len(MODELS) * len(METRICS)
    assert set(swept["metric"]) == set(METRICS)
    # The unswept strategies come once per model, as baselines.
    baselines = points[points["sweep_param"] == ""]
    assert baselines["sweep_value"].isna().all()
    assert set(zip(baselines["variant"], baselines["model"], strict=True)) == {
        (v, m) for v in ("unbounded", "offload_contracts") for m in MODELS}
    assert len(points) == len(VARIANTS) * len(MODELS) * len(METRICS)
    assert (points["n"] == 6).all()
    # Swept rows first, in grid order.
    assert list(points["sweep_param"].iloc[: len(swept)]) == [PARAM] * len(swept)
    assert list(swept["sweep_value"]) == sorted(swept["sweep_value"])


def test_sweep_points_are_the_headline_values_and_intervals(sessions: pd.DataFrame) -> None:
    points = sweep_points(sessions, resamples=RESAMPLES, seed=4)
    head = stats.headline(sessions, resamples=RESAMPLES, seed=4)
    joined = points.merge(head, on=["strategy", "metric"], suffixes=("", "_headline"))
    assert len(joined) == len(points)
    for column in ("value", "ci_low", "ci_high"):
        np.testing.assert_array_equal(joined[column].to_numpy(), joined[f"{column}_headline"].to_numpy())
    np.testing.assert_array_equal(joined["interval"].to_numpy(), joined["interval_headline"].to_numpy())
    # Bounds exist only for the intervals that have them (not for a cost over too few successes).
    finite = points[points["interval"].isin(["bootstrap", "wilson"])].dropna(subset=["value"])
    assert not finite.empty
    assert (finite["ci_low"] <= finite["value"] + 1e-12).all()
    assert (finite["value"] <= finite["ci_high"] + 1e-12).all()
    # A precomputed headline is used as given.
    pd.testing.assert_frame_equal(sweep_points(sessions, headline=head), points)


def test_sweep_points_of_no_sessions_is_an_empty_frame_with_the_columns() -> None:
    points = sweep_points(pd.DataFrame(columns=["strategy", "outcome", "loop_detected"]))
    assert points.empty and "sweep_value" in points.columns


# ranking ---------------------------------------------------------------------------------------------------


def test_ranking_orders_each_model_by_success_with_ties_sharing_the_lower_rank() -> None:
    sessions = frame(session_rows("frontier", "a", 9, 10), session_rows("frontier", "b", 5, 10),
                     session_rows("frontier", "c", 5, 10), session_rows("frontier", "d", 1, 10),
                     session_rows("mid", "a", 2, 10), session_rows("mid", "b", 8, 10),
                     session_rows("mid", "c", 4, 10), session_rows("mid", "d", 4, 10))
    table = ranking(sessions, resamples=RESAMPLES)
    assert list(table.columns) == ["model", "rank", "variant", "strategy", "metric", "value", "ci_low", "ci_high",
                                   "n"]
    assert set(table["metric"]) == {"success_rate"}
    got = {(r.model, r.variant): r.rank for r in table.itertuples()}
    assert got == {("frontier", "a"): 1, ("frontier", "b"): 2, ("frontier", "c"): 2, ("frontier", "d"): 4,
                   ("mid", "b"): 1, ("mid", "c"): 2, ("mid", "d"): 2, ("mid", "a"): 4}
    assert list(table["model"]) == ["frontier"] * 4 + ["mid"] * 4
    assert list(table["variant"]) == ["a", "b", "c", "d", "b", "c", "d", "a"]
    row = table[(table["model"] == "frontier") & (table["variant"] == "a")].iloc[0]
    assert row["value"] == pytest.approx(0.9)
    assert row["strategy"] == "a@frontier"
    assert row["ci_low"] <= row["value"] <= row["ci_high"]


def test_ranking_by_a_lower_is_better_metric_puts_the_cheapest_first() -> None:
    sessions = frame(session_rows("frontier", "cheap", 1, 4, cost=0.1), session_rows("frontier", "dear", 4, 4,
                                                                                     cost=2.0))
    table = ranking(sessions, "cost_per_session", resamples=RESAMPLES)
    assert list(table["variant"]) == ["cheap", "dear"]
    assert list(table["rank"]) == [1, 2]


def test_ranking_of_an_unknown_metric_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="success_rate"):
        ranking(frame(session_rows("frontier", "a", 1, 2)), "speed")


def test_ranking_rows_align_across_models_on_the_tiny_sweep(sessions: pd.DataFrame) -> None:
    table = ranking(sessions, resamples=RESAMPLES)
    assert {m: sorted(g["variant"]) for m, g in table.groupby("model")} == {m: sorted(VARIANTS) for m in MODELS}
    assert (table.groupby("model")["rank"].min() == 1).all()


# Kendall's tau-b ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("x", "y", "expected"), [
    ([1, 2, 3, 4], [10, 20, 30, 40], 1.0),
    ([1, 2, 3, 4], [4, 3, 2, 1], -1.0),
    ([1, 2, 3, 4, 5], [3, 1, 2, 5, 4], 0.4),
    # Ties: 4 concordant-minus-discordant of 6 pairs, one tied in each: 4 / sqrt(5 * 5).
    ([1, 2, 2, 3], [1, 2, 3, 3], 0.8),
    # One tie in x only: S = 3 of 10 pairs: 3 / sqrt(9 * 10).
    ([0.9, 0.5, 0.52, 0.2, 0.2], [0.3, 0.8, 0.5, 0.2, 0.1], 3 / math.sqrt(90)),
])
def test_kendall_tau_b_known_values(x: list[float], y: list[float], expected: float) -> None:
    assert kendall_tau_b(x, y) == pytest.approx(expected)
    assert kendall_tau_b(y, x) == pytest.approx(expected)


def test_kendall_tau_b_is_nan_for_a_constant_sample_or_one_pair_and_refuses_unequal_lengths() -> None:
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))
    assert math.isnan(kendall_tau_b([1], [2]))
    with pytest.raises(ValueError, match="one length"):
        kendall_tau_b([1, 2], [1, 2, 3])


# ranking_stability ---------------------------------------------------------------------------------------------

#: Under A, p leads q with intervals apart; under B, q leads p with intervals apart: a significant flip.
#: r swaps with q (intervals overlap under A) and with p (they overlap under B): two flips within
#: noise. s and t tie under A, so they are not a flip though they differ under B.
STABILITY = [
    ("A", "p", 0.90, 0.85, 0.95), ("A", "q", 0.50, 0.40, 0.60), ("A", "r", 0.52, 0.30, 0.70),
    ("A", "s", 0.20, 0.10, 0.30), ("A", "t", 0.20, 0.10, 0.30),
    ("B", "p", 0.30, 0.25, 0.35), ("B", "q", 0.80, 0.75, 0.85), ("B", "r", 0.50, 0.30, 0.70),
    ("B", "s", 0.20, 0.10, 0.30), ("B", "t", 0.10, 0.05, 0.15),
]


def test_ranking_stability_tau_and_flips_on_a_known_frame() -> None:
    result = ranking_stability(ranks(STABILITY))
    assert result.models == ["A", "B"]
    assert result.metric == "success_rate"
    tau = result.tau.iloc[0]
    assert (tau["model_a"], tau["model_b"], tau["variants"]) == ("A", "B", 5)
    assert tau["tau"] == pytest.approx(3 / math.sqrt(90))
    assert (tau["flips"], tau["significant_flips"]) == (3, 1)
    flips = {(f.better_a, f.better_b): (f.separated_a, f.separated_b, f.significant)
             for f in result.flips.itertuples()}
    assert flips == {("p", "q"): (True, True, True), ("r", "q"): (False, True, False),
                     ("p", "r"): (True, False, False)}
    significant = result.significant_flips
    assert len(significant) == 1
    row = significant.iloc[0]
    assert (row["better_a"], row["better_b"]) == ("p", "q")
    assert (row["better_a_in_a"], row["better_b_in_a"], row["better_a_in_b"], row["better_b_in_b"]) == (
        0.90, 0.50, 0.30, 0.80)
    # The significant flip is listed first.
    assert bool(result.flips["significant"].iloc[0])
    matrix = result.tau_matrix()
    assert list(matrix.index) == list(matrix.columns) == ["A", "B"]
    assert matrix.loc["A", "A"] == matrix.loc["B", "B"] == 1.0
    assert matrix.loc["A", "B"] == matrix.loc["B", "A"] == pytest.approx(3 / math.sqrt(90))


def test_ranking_stability_reads_direction_from_the_metric() -> None:
    result = ranking_stability(ranks(STABILITY, metric="cost_per_session"))
    assert result.tau["tau"].iloc[0] == pytest.approx(3 / math.sqrt(90))  # tau does not depend on direction
    significant = result.significant_flips.iloc[0]
    assert (significant["better_a"], significant["better_b"]) == ("q", "p")  # lower cost is ahead


def test_ranking_stability_of_identical_profiles_has_tau_one_and_no_flips() -> None:
    rows = [(m, v, x, x - 0.05, x + 0.05) for m in ("frontier", "mid", "small")
            for v, x in (("a", 0.9), ("b", 0.6), ("c", 0.3))]
    result = ranking_stability(ranks(rows))
    assert list(zip(result.tau["model_a"], result.tau["model_b"], strict=True)) == [
        ("frontier", "mid"), ("frontier", "small"), ("mid", "small")]
    assert (result.tau["tau"] == 1.0).all()
    assert result.flips.empty and (result.tau["flips"] == 0).all()
    assert result.significant_flips.empty


def test_ranking_stability_compares_only_variants_both_profiles_ranked() -> None:
    rows = [("A", "a", 0.9, 0.8, 1.0), ("A", "b", 0.5, 0.4, 0.6), ("A", "only_a", 0.1, 0.0, 0.2),
            ("B", "a", 0.8, 0.7, 0.9), ("B", "b", 0.4, 0.3, 0.5), ("B", "c", float("nan"), np.nan, np.nan)]
    result = ranking_stability(ranks(rows))
    assert result.tau["variants"].iloc[0] == 2
    assert result.tau["tau"].iloc[0] == 1.0


def test_ranking_stability_of_one_profile_or_nothing_has_no_pairs(sessions: pd.DataFrame) -> None:
    assert ranking_stability(ranks([("A", "a", 0.5, 0.4, 0.6)])).tau.empty
    assert ranking_stability(ranking(pd.DataFrame())).tau.empty
    real = ranking_stability(ranking(sessions, resamples=RESAMPLES))
    assert list(real.tau["model_a"]) == ["frontier"] and list(real.tau["model_b"]) == ["small"]
    assert real.tau["variants"].iloc[0] == len(VARIANTS)


# Plots -------------------------------------------------------------------------------------------------------


def test_plot_sweep_writes_one_png_per_param_byte_identical_on_a_second_call(sessions: pd.DataFrame,
                                                                             tmp_path: Path) -> None:
    points = sweep_points(sessions, resamples=RESAMPLES)
    first = plot_sweep(points, tmp_path / "a")
    second = plot_sweep(points, tmp_path / "b")
    assert [p.name for p in first] == ["sweep-sliding_window.window_size.png"]
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    with Image.open(first[0]) as image:
        assert image.size == (round(SWEEP_FIGSIZE[0] * DPI), round(SWEEP_FIGSIZE[1] * DPI))


def test_sweep_figure_has_a_panel_per_metric_a_line_per_model_and_log_x_for_a_wide_span() -> None:
    rows = [row for model, successes in (("frontier", (8, 6, 3)), ("mid", (5, 4, 1)))
            for value, won in zip((10, 40, 160), successes, strict=True)
            for row in session_rows(model, f"sw[window_size={value}]", won, 8, sweep_param="sw.window_size",
                                    sweep_value=float(value))]
    points = sweep_points(pd.DataFrame(rows), resamples=RESAMPLES)
    fig = sweep_figure(points, "sw.window_size")
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == len([m for m in METRICS.values() if not m.optional])  # these rows predate compactions
    assert axes[0].get_title() == METRICS["success_rate"].label
    assert all(ax.get_xscale() == "log" for ax in axes)
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["10", "40", "160"]
    assert len(axes[0].lines) >= 2  # one line per model (plus error-bar caps)
    legend_texts = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert legend_texts == ["frontier", "mid"]
    narrow = sweep_figure(points[points["sweep_value"] < 100], "sw.window_size")
    assert narrow.axes[0].get_xscale() == "linear"


def test_sweep_figure_of_a_text_param_uses_its_values_as_categories(tmp_path: Path) -> None:
    rows = [row for value, won in (("true", 3), ("false", 1))
            for row in session_rows("frontier", f"sw[proactive={value}]", won, 4, sweep_param="sw.proactive")]
    points = sweep_points(pd.DataFrame(rows), resamples=RESAMPLES)
    fig = sweep_figure(points, "sw.proactive")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["false", "true"]  # by variant name
    assert plot_sweep(points, tmp_path)[0].name == "sweep-sw.proactive.png"


def test_sweep_plot_names_are_file_name_safe() -> None:
    assert sweep_plot_name(PARAM) == "sweep-sliding_window.window_size.png"
    assert sweep_plot_name("my label/1.window size") == "sweep-my_label_1.window_size.png"
    assert "/" not in sweep_plot_name("../../etc.x")


# The page ------------------------------------------------------------------------------------------------------


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.sections: list[str] = []
        self.tables: list[str] = []
        self.images = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.links += [a[k] for k in ("src", "href", "srcset", "action") if k in a]
        if tag == "section":
            self.sections.append(a.get("id", ""))
        elif tag == "table":
            self.tables.append(a.get("id", ""))
        elif tag == "img":
            self.images += 1


def parse(path: Path) -> Links:
    page = Links()
    page.feed(path.read_text())
    page.close()
    return page


def local(link: str) -> bool:
    return link.startswith(("data:", "#")) or link in ("report.html", "sweep.html")


def test_write_report_of_a_sweep_writes_and_links_the_sweep_page(reported: tuple[Path, list[Path]]) -> None:
    run_dir, written = reported
    assert written == [run_dir / n for n in ("report.html", "report.md", "sweep.html", "sweep.md")]
    assert 'href="sweep.html"' in (run_dir / "report.html").read_text()
    assert "(sweep.md)" in (run_dir / "report.md").read_text()
    assert (run_dir / "plots" / "sweep-sliding_window.window_size.png").is_file()


def test_sweep_html_is_self_contained_with_every_section(reported: tuple[Path, list[Path]]) -> None:
    run_dir, _ = reported
    text = (run_dir / "sweep.html").read_text()
    page = parse(run_dir / "sweep.html")
    assert page.sections == ["swept", "grid", "ranking", "stability"]
    assert page.images == 1
    assert all(local(link) for link in page.links), page.links
    for needle in ("http://", "https://", 'src="//', 'href="//', "<script", "<link", "@import", "url("):
        assert needle not in text, needle
    assert {"swept-table", "ranking-table", "tau-table", "pairs-table", "baselines-table"} <= set(page.tables)
    for variant in VARIANTS:
        assert variant in text
    assert "How to read this" in text


def test_sweep_md_has_the_tables_and_links_to_existing_plots(reported: tuple[Path, list[Path]]) -> None:
    run_dir, _ = reported
    text = (run_dir / "sweep.md").read_text()
    for heading in ("## What was swept", "## Each swept param", "## Ranking per profile",
                    "## Ranking stability across profiles", f"### {PARAM}"):
        assert f"\n{heading}\n" in text
    assert "](plots/sweep-sliding_window.window_size.png)" in text
    assert "| variant | frontier | small |" in text
    assert "| tau-b | frontier | small |" in text


def test_write_sweep_page_alone_and_html_only(sweep_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("config.toml", "manifest.json", "sessions.parquet", "calls.parquet", "events.parquet"):
        shutil.copy2(sweep_dir / name, copy / name)
    assert write_sweep_page(copy, ["html"]) == [copy / "sweep.html"]
    assert not (copy / "sweep.md").exists() and not (copy / "report.html").exists()


def test_the_ordinary_report_of_a_sweep_plots_the_first_profiles_unswept_strategies(
        sessions: pd.DataFrame, sweep_dir: Path) -> None:
    manifest = Manifest.read(sweep_dir)
    shown, note = report_plot_variants(sessions, manifest)
    assert shown == {"unbounded@frontier": "unbounded", "offload_contracts@frontier": "offload_contracts"}
    assert "frontier" in note and "2 unswept strategies" in note
    # When every strategy is swept, the first profile's variants are plotted.
    swept_only = sessions[sessions["sweep_param"] != ""]
    shown, _ = report_plot_variants(swept_only, manifest)
    assert shown == {f"sliding_window[window_size={v}]@frontier": f"sliding_window[window_size={v}]" for v in (10, 40)}


def test_write_report_of_a_plain_run_writes_no_sweep_page(plain_dir: Path) -> None:
    written = write_report(plain_dir)
    assert written == [plain_dir / "report.html", plain_dir / "report.md"]
    assert not (plain_dir / "sweep.html").exists() and not (plain_dir / "sweep.md").exists()
    assert not list((plain_dir / "plots").glob("sweep-*"))
    assert "sweep" not in (plain_dir / "report.html").read_text().replace("[sweep]", "")


def test_write_report_of_a_run_from_before_the_sweep_columns(plain_dir: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    old.mkdir()
    for name in ("config.toml", "manifest.json", "calls.parquet", "events.parquet"):
        shutil.copy2(plain_dir / name, old / name)
    table = pd.read_parquet(plain_dir / "sessions.parquet").drop(columns=["model", "sweep_param", "sweep_value"])
    replace_table(old, "sessions.parquet", table)
    assert write_report(old, ["md"]) == [old / "report.md"]
    assert not (old / "sweep.md").exists()


def test_writing_a_sweep_report_loads_no_runtime(sweep_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("config.toml", "manifest.json", "sessions.parquet", "calls.parquet", "events.parquet"):
        shutil.copy2(sweep_dir / name, copy / name)
    data = loaded(str(copy))
    assert (copy / "sweep.html").exists()
    assert "reports.sweep" in data["modules"]
    assert forbidden(data["modules"]) == []
