"""reports.plots: every plot renders a readable, labelled PNG of the fixed size from synthetic tables;
strategy colours are one map per strategy set; the ECDFs stay readable with a dozen strategies; the
cost plot rings the Pareto front; with twenty strategies each has its own colour and marker and the
cost plot's names do not overlap; equal inputs give equal bytes; empty and lopsided inputs do not
crash; the module stays off the runtime."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import matplotlib.image
import matplotlib.pyplot
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text
from PIL import Image

from reports import plots
from reports.decision import pareto_front
from reports.plots import (
    DPI,
    FIGSIZE,
    PLOT_NAMES,
    STRATEGY_MARKERS,
    TOL_MUTED,
    context_tokens_by_turn,
    cost_vs_success,
    ecdf_input_tokens,
    ecdf_latency,
    outcome_mix,
    save_png,
    strategy_colours,
    strategy_styles,
    syntax_errors_by_context,
    tokens_freed_histogram,
    write_plots,
)
from reports.stats import headline, wilson_interval

STRATEGIES = ("sliding_window", "unbounded", "summarize")
EXPECTED_SIZE = (round(FIGSIZE[0] * DPI), round(FIGSIZE[1] * DPI))


def make_tables(strategies: tuple[str, ...] = STRATEGIES, sessions_per_strategy: int = 8,
                seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Synthetic sessions and calls with the run-directory columns the plots read."""
    rng = np.random.default_rng(seed)
    session_rows, call_rows = [], []
    for s_i, strategy in enumerate(strategies):
        for index in range(sessions_per_strategy):
            turns = int(rng.integers(15, 40))
            growth = 800 * (s_i + 1)
            context = (np.arange(turns) * growth + rng.integers(0, 2000, turns)).astype(int)
            malformed = rng.random(turns) < 0.05
            for turn in range(turns):
                call_rows.append({
                    "scenario": "mix", "session_index": index, "strategy": strategy, "agent": "agent",
                    "call_index": turn, "call_kind": "agent", "action": "malformed" if malformed[turn] else "step",
                    "malformed_kind": "invalid_json" if malformed[turn] else "",
                    "input_tokens": int(context[turn] + 2000), "context_tokens": int(context[turn]),
                })
            # A summary call in the middle must not count as a turn.
            call_rows.append({
                "scenario": "mix", "session_index": index, "strategy": strategy, "agent": "agent",
                "call_index": turns, "call_kind": "summary", "action": "summary", "malformed_kind": "",
                "input_tokens": 5000, "context_tokens": 3000,
            })
            success = rng.random() < 0.4 + 0.15 * s_i
            session_rows.append({
                "scenario": "mix", "session_index": index, "seed": index, "strategy": strategy,
                "outcome": "success" if success else ("stuck" if rng.random() < 0.5 else "wrong_answer"),
                "turns": turns, "tool_calls": turns, "tool_syntax_errors": int(malformed.sum()),
                "loop_detected": False, "loop_rule": "", "input_tokens": int((context + 2000).sum()),
                "cached_input_tokens": int(context.sum() // 2),
                "context_tokens_mean": float(context.mean()), "latency_s": float(turns * rng.uniform(3, 6)),
                "cost_usd": float(context.sum() * 3e-6),
            })
    return pd.DataFrame(session_rows), pd.DataFrame(call_rows)


@pytest.fixture(scope="module")
def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    return make_tables()


@pytest.fixture(scope="module")
def small_headline(tables: tuple[pd.DataFrame, pd.DataFrame]) -> pd.DataFrame:
    return headline(tables[0], resamples=200)


def figures(sessions: pd.DataFrame, calls: pd.DataFrame, head: pd.DataFrame | None) -> dict[str, Figure]:
    return {
        "context_tokens_by_turn": context_tokens_by_turn(calls),
        "ecdf_input_tokens": ecdf_input_tokens(sessions),
        "ecdf_latency": ecdf_latency(sessions),
        "syntax_errors_by_context": syntax_errors_by_context(calls, min_calls=5),
        "cost_vs_success": cost_vs_success(sessions, headline=head),
        "outcome_mix": outcome_mix(sessions),
    }


def assert_png(path: Path) -> None:
    assert path.exists() and path.stat().st_size > 0
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.size == EXPECTED_SIZE


def main_axes(fig: Figure) -> Axes:
    return fig.axes[0]


#: Small multiples: one panel per strategy on shared axes, the figure carrying title and axis labels.
PANELLED = ("context_tokens_by_turn", "ecdf_input_tokens", "ecdf_latency", "syntax_errors_by_context")
#: The colours of what is not a strategy in a panel: the other strategies (grey) and the key's marks.
NEUTRAL = {"#BBBBBB", "#333333"}


def panel_colours(fig: Figure) -> dict[str, str]:
    """Panel title (its strategy) -> the one strategy colour drawn in that panel."""
    found = {}
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        coloured = {to_hex(line.get_color()).upper() for line in ax.get_lines()} - NEUTRAL
        assert len(coloured) == 1, (ax.get_title(), coloured)
        found[ax.get_title()] = coloured.pop()
    return found


# ----------------------------------------------------------------------------------------- rendering


def test_every_plot_function_writes_a_readable_png(tmp_path: Path, tables: tuple[pd.DataFrame, pd.DataFrame],
                                                   small_headline: pd.DataFrame) -> None:
    sessions, calls = tables
    for name, fig in figures(sessions, calls, small_headline).items():
        path = save_png(fig, tmp_path / f"{name}.png")
        assert_png(path)
        # Matplotlib can read it back too.
        assert matplotlib.image.imread(path).shape[:2] == EXPECTED_SIZE[::-1]


def test_write_plots_returns_all_seven(tmp_path: Path, tables: tuple[pd.DataFrame, pd.DataFrame],
                                     small_headline: pd.DataFrame) -> None:
    sessions, calls = tables
    out = tmp_path / "nested" / "plots"
    written = write_plots(sessions, calls, out, headline=small_headline)
    assert set(written) == set(PLOT_NAMES) and len(written) == 7
    for name, path in written.items():
        assert path.parent == out and path.name == f"{name}.png"
        assert_png(path)


def test_write_plots_computes_the_headline_when_not_given(tmp_path: Path) -> None:
    sessions, calls = make_tables(sessions_per_strategy=4)
    written = write_plots(sessions, calls, tmp_path)
    assert_png(written["cost_vs_success"])


def test_titles_and_axis_labels_are_present(tables: tuple[pd.DataFrame, pd.DataFrame],
                                            small_headline: pd.DataFrame) -> None:
    sessions, calls = tables
    for name, fig in figures(sessions, calls, small_headline).items():
        if name in PANELLED:
            # Small multiples: the figure carries the title and the shared axis labels, each panel a name.
            assert fig.get_suptitle() and fig.get_supxlabel() and fig.get_supylabel()
            assert "(" in fig.get_supxlabel(), name
            assert sorted(ax.get_title() for ax in fig.axes if ax.get_visible()) == sorted(STRATEGIES)
            assert fig.legends, f"{name} has no key"
            continue
        ax = main_axes(fig)
        assert ax.get_title(), name
        assert ax.get_xlabel() and ax.get_ylabel(), name
        # Units or the quantity's scale are stated in parentheses on each measured axis.
        assert "(" in ax.get_xlabel(), name
        assert fig.legends, f"{name} has no legend"


def test_legends_name_each_strategy_once(tables: tuple[pd.DataFrame, pd.DataFrame],
                                         small_headline: pd.DataFrame) -> None:
    sessions, calls = tables
    figs = figures(sessions, calls, small_headline)
    labels = [t.get_text() for t in figs["cost_vs_success"].legends[0].get_texts()
              if t.get_text() != plots.FRONT_LABEL]
    assert labels == sorted(STRATEGIES)


def test_outcome_mix_bars_sum_to_one(tables: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    sessions, _ = tables
    ax = main_axes(outcome_mix(sessions))
    totals: dict[float, float] = {}
    for patch in ax.patches:
        y = round(patch.get_y(), 6)
        totals[y] = totals.get(y, 0.0) + patch.get_width()
    assert len(totals) == len(STRATEGIES)
    assert all(total == pytest.approx(1.0) for total in totals.values())
    assert [t.get_text() for t in ax.get_yticklabels()] == sorted(STRATEGIES)


def test_turns_count_agent_calls_only() -> None:
    _, calls = make_tables(strategies=("a",), sessions_per_strategy=1)
    fig = context_tokens_by_turn(calls)
    median = next(line for line in fig.axes[0].get_lines() if line.get_color() != "#BBBBBB")
    turns = median.get_xdata()
    agent_calls = int((calls["call_kind"] == "agent").sum())
    assert list(turns) == list(range(1, agent_calls + 1))



def _reference_turn_curves(calls: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The turn curves as context_tokens_by_turn computed them before turn_curves: a sort of the agent
    calls, a cumcount per session, and per strategy a groupby with Series.quantile per turn."""
    agent = calls[calls["call_kind"] == "agent"]
    session = ["strategy", "scenario", "session_index"]
    agent = agent.sort_values([*session, "call_index"], kind="stable")
    agent = agent.assign(turn=agent.groupby(session, sort=False).cumcount() + 1)
    curves = {}
    for strategy, group in agent.groupby("strategy", sort=True):
        sessions = group[["scenario", "session_index"]].drop_duplicates().shape[0]
        stats = group.groupby("turn")["context_tokens"].agg(
            median="median", q1=lambda s: s.quantile(0.25), q3=lambda s: s.quantile(0.75), n="size")
        curves[str(strategy)] = stats[stats["n"] >= max(1, math.ceil(plots.MIN_SESSION_SHARE_PER_TURN * sessions))]
    return curves


def _shuffled_calls(seed: int, tokens_dtype: str) -> pd.DataFrame:
    """make_tables' calls with ties in call_index, two scenarios, a summary call, and rows shuffled."""
    _, calls = make_tables(sessions_per_strategy=12, seed=seed)
    rng = np.random.default_rng(seed)
    calls = calls.assign(scenario=np.where(rng.random(len(calls)) < 0.5, "mix", "k8s"),
                         call_index=calls["call_index"] // 2,  # two calls per index: ties keep table order
                         context_tokens=(calls["context_tokens"] // 500).astype(tokens_dtype))
    return calls.sample(frac=1.0, random_state=seed).reset_index(drop=True)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("tokens_dtype", ["int64", "float64"])
def test_turn_curves_equal_the_groupby_per_turn_to_the_bit(seed: int, tokens_dtype: str) -> None:
    calls = _shuffled_calls(seed, tokens_dtype)
    ours, reference = plots.turn_curves(calls), _reference_turn_curves(calls)
    assert list(ours) == list(reference)
    for strategy, expected in reference.items():
        pd.testing.assert_frame_equal(ours[strategy], expected, check_exact=True)


def _reference_bucket_rates(calls: pd.DataFrame, min_calls: int) -> dict[str, pd.DataFrame]:
    """The syntax-error rates as syntax_errors_by_context computed them before bucket_rates."""
    agent = calls[calls["call_kind"] == "agent"]
    edges = [low for low, _high, _label in plots.CONTEXT_BUCKETS] + [np.inf]
    agent = agent.assign(bucket=pd.cut(agent["input_tokens"].astype(float), bins=edges, right=False, labels=False),
                         malformed=agent["malformed_kind"].fillna("").astype(str) != "")
    rates = {}
    for strategy, group in agent.groupby("strategy", sort=True):
        counts = group.groupby("bucket")["malformed"].agg(["sum", "size"])
        counts = counts[counts["size"] >= min_calls]
        if not counts.empty:
            bounds = [wilson_interval(float(k), float(n)) for k, n in zip(counts["sum"], counts["size"], strict=True)]
            rates[str(strategy)] = counts.assign(rate=counts["sum"] / counts["size"], low=[b[0] for b in bounds],
                                                 high=[b[1] for b in bounds])
    return rates


@pytest.mark.parametrize("min_calls", [1, 5, 20])
def test_bucket_rates_equal_the_groupby_per_bucket(min_calls: int) -> None:
    calls = _shuffled_calls(4, "int64")
    calls["input_tokens"] = calls["input_tokens"] * np.random.default_rng(4).integers(1, 12, len(calls))
    ours, reference = plots.bucket_rates(calls, min_calls) or {}, _reference_bucket_rates(calls, min_calls)
    assert list(ours) == list(reference) and len(reference) > 0
    for strategy, expected in reference.items():
        got = ours[strategy]
        np.testing.assert_array_equal(got.index.to_numpy(dtype=float), expected.index.to_numpy(dtype=float))
        for column in ("sum", "size", "rate", "low", "high"):
            np.testing.assert_array_equal(got[column].to_numpy(), expected[column].to_numpy())
    assert plots.bucket_rates(calls.assign(call_kind="summary")) is None


# ------------------------------------------------------------------------------------------- colours


def strategy_line_colours(fig: Figure) -> dict[str, str]:
    handles = fig.legends[0].legend_handles
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    return {label: to_hex(handle.get_color()).upper()
            for label, handle in zip(labels, handles, strict=True) if label != plots.FRONT_LABEL}


def test_strategy_colours_are_tol_muted_by_sorted_name() -> None:
    colours = strategy_colours(["zeta", "alpha", "mid"])
    assert colours == {"alpha": TOL_MUTED[0], "mid": TOL_MUTED[1], "zeta": TOL_MUTED[2]}
    # The order the names arrive in, and repeats, do not matter.
    assert strategy_colours(["mid", "zeta", "alpha", "mid"]) == colours


def test_strategy_colours_stable_when_a_strategy_is_added() -> None:
    before = strategy_colours(STRATEGIES)
    after = strategy_colours([*STRATEGIES, "zz_new_strategy"])
    assert {k: after[k] for k in before} == before
    # A name sorting in between only moves the strategies after it.
    middle = strategy_colours([*STRATEGIES, "tiered"])
    for name in sorted(STRATEGIES):
        if name < "tiered":
            assert middle[name] == before[name]


def test_more_strategies_than_colours_differ_in_line_style() -> None:
    names = [f"s{i:02d}" for i in range(len(TOL_MUTED) + 3)]
    styles = strategy_styles(names)
    combos = {(s.colour, s.linestyle) for s in styles.values()}
    assert len(combos) == len(names)
    assert len({(s.colour, s.hatch) for s in styles.values()}) == len(names)
    assert len({(s.colour, s.marker) for s in styles.values()}) == len(names)


def test_plots_use_the_same_colour_for_a_strategy(tables: tuple[pd.DataFrame, pd.DataFrame],
                                                  small_headline: pd.DataFrame) -> None:
    sessions, calls = tables
    expected = strategy_colours(STRATEGIES)
    figs = figures(sessions, calls, small_headline)
    seen = strategy_line_colours(figs["cost_vs_success"])
    assert seen == {k: v.upper() for k, v in expected.items()}
    for name in PANELLED:
        assert panel_colours(figs[name]) == {k: v.upper() for k, v in expected.items()}, name


def test_write_plots_shares_one_colour_map_across_tables(tmp_path: Path) -> None:
    # A strategy present in calls only must not shift the colours of the sessions plots.
    sessions, calls = make_tables(strategies=("b", "c"), sessions_per_strategy=3)
    extra = make_tables(strategies=("a",), sessions_per_strategy=2)[1]
    calls = pd.concat([calls, extra], ignore_index=True)
    styles = plots.strategy_styles(plots.strategies_of(sessions, calls))
    fig = ecdf_latency(sessions, styles=styles)
    assert panel_colours(fig)["b"] == TOL_MUTED[1].upper()


# ------------------------------------------------------------------------------------- determinism


def test_same_inputs_give_byte_identical_pngs(tmp_path: Path, tables: tuple[pd.DataFrame, pd.DataFrame],
                                              small_headline: pd.DataFrame) -> None:
    sessions, calls = tables
    first = write_plots(sessions, calls, tmp_path / "one", headline=small_headline)
    second = write_plots(sessions.sample(frac=1.0, random_state=3), calls.sample(frac=1.0, random_state=4),
                         tmp_path / "two", headline=small_headline)
    for name in PLOT_NAMES:
        assert first[name].read_bytes() == second[name].read_bytes(), name


def test_png_embeds_no_software_or_date(tmp_path: Path, tables: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    sessions, _ = tables
    path = save_png(ecdf_latency(sessions), tmp_path / "latency.png")
    with Image.open(path) as image:
        text = {k.lower(): v for k, v in image.info.items() if isinstance(v, str)}
    assert "software" not in text
    assert not any("matplotlib" in v.lower() for v in text.values())


# ----------------------------------------------------------------------------------------- edge cases


EMPTY_SESSIONS = make_tables(sessions_per_strategy=1)[0].iloc[0:0]
EMPTY_CALLS = make_tables(sessions_per_strategy=1)[1].iloc[0:0]


@pytest.mark.parametrize("sessions, calls", [
    (EMPTY_SESSIONS, EMPTY_CALLS),
    (pd.DataFrame(), pd.DataFrame()),
    (make_tables(sessions_per_strategy=3)[0], EMPTY_CALLS),
], ids=["empty-with-columns", "empty-no-columns", "no-calls"])
def test_empty_inputs_do_not_crash(tmp_path: Path, sessions: pd.DataFrame, calls: pd.DataFrame) -> None:
    written = write_plots(sessions, calls, tmp_path)
    assert set(written) == set(PLOT_NAMES)
    for path in written.values():
        assert_png(path)


def test_single_strategy(tmp_path: Path) -> None:
    sessions, calls = make_tables(strategies=("only",), sessions_per_strategy=1)
    for path in write_plots(sessions, calls, tmp_path).values():
        assert_png(path)


def test_strategy_without_agent_calls(tmp_path: Path) -> None:
    sessions, calls = make_tables(sessions_per_strategy=3)
    calls = calls[~((calls["strategy"] == "unbounded") & (calls["call_kind"] == "agent"))]
    written = write_plots(sessions, calls, tmp_path)
    for path in written.values():
        assert_png(path)
    fig = syntax_errors_by_context(calls, min_calls=1)
    panels = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert "unbounded" not in panels and panels


def test_headline_with_nan_and_unknown_outcomes(tmp_path: Path) -> None:
    sessions, _ = make_tables(sessions_per_strategy=3)
    sessions.loc[sessions.index[0], "outcome"] = "some_future_outcome"
    head = headline(sessions, resamples=50)
    head.loc[head["strategy"] == "summarize", ["value", "ci_low", "ci_high"]] = np.nan
    assert_png(save_png(cost_vs_success(sessions, headline=head), tmp_path / "c.png"))
    assert_png(save_png(outcome_mix(sessions), tmp_path / "o.png"))


def test_long_strategy_names_are_shortened(tables: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    sessions, _ = tables
    long = "a_third_party_strategy_with_a_remarkably_long_registry_name"
    sessions = sessions.assign(strategy=sessions["strategy"].replace({"unbounded": long}))
    ax = main_axes(outcome_mix(sessions))
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert max(len(label) for label in labels) <= plots.MAX_LABEL
    assert any(label.endswith("…") for label in labels)


# ------------------------------------------------------------------------------------------ layering


def test_module_does_not_import_the_runtime() -> None:
    code = ("import sys, reports.plots; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('strategies', 'scenarios') "
            "or m in ('harness.sim.kernel', 'harness.sim.model', 'harness.run.runner') or m == 'matplotlib.pyplot']; "
            "print(','.join(sorted(bad)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == ""



# ------------------------------------------------------------------------------- many strategies, the front


def test_ecdfs_stay_readable_with_twelve_strategies() -> None:
    """One panel per strategy on shared axes, each with exactly one coloured curve (the others grey):
    no panel carries ten overlapping coloured lines."""
    names = tuple(f"strategy_{i:02d}" for i in range(12))
    sessions, _ = make_tables(strategies=names, sessions_per_strategy=6)
    for fig in (ecdf_latency(sessions), ecdf_input_tokens(sessions)):
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert sorted(ax.get_title() for ax in panels) == sorted(names)
        assert all(panels[0].get_shared_x_axes().joined(panels[0], ax) for ax in panels)
        assert all(panels[0].get_shared_y_axes().joined(panels[0], ax) for ax in panels)
        colours = panel_colours(fig)
        assert len(set(colours.items())) == 12
        for ax in panels:
            grey = [line for line in ax.get_lines() if to_hex(line.get_color()).upper() == "#BBBBBB"]
            assert len(grey) == 11


def test_ecdf_panels_go_from_the_lowest_median_up() -> None:
    sessions, _ = make_tables(sessions_per_strategy=8)
    medians = sessions.groupby("strategy")["latency_s"].median().sort_values(kind="stable")
    titles = [ax.get_title() for ax in ecdf_latency(sessions).axes if ax.get_visible()]
    assert titles == list(medians.index)


def front_markers(fig: Figure) -> list[tuple[float, float]]:
    """The points ringed as the Pareto front (hollow markers of the ring's size)."""
    rings = [line for line in fig.axes[0].get_lines() if line.get_markersize() == 15]
    return [(float(x), float(y)) for line in rings for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)]


def test_cost_vs_success_rings_the_pareto_front_and_plots_cost_per_solved_session(
        tables: tuple[pd.DataFrame, pd.DataFrame], small_headline: pd.DataFrame) -> None:
    sessions, _ = tables
    fig = cost_vs_success(sessions, headline=small_headline)
    wide = small_headline.pivot(index="strategy", columns="metric", values="value")
    front = pareto_front(small_headline)
    assert front
    expected = [float(wide.loc[s, m]) for s in front for m in ("success_rate", "cost_per_solved_session")]
    assert [v for point in front_markers(fig) for v in point] == pytest.approx(expected)
    assert "cost per solved session" in fig.axes[0].get_ylabel()
    assert plots.FRONT_LABEL in [t.get_text() for t in fig.legends[0].get_texts()]


def test_a_strategy_without_a_solved_session_is_named_not_drawn() -> None:
    sessions, _ = make_tables(sessions_per_strategy=6)
    sessions.loc[sessions["strategy"] == "unbounded", "outcome"] = "stuck"
    fig = cost_vs_success(sessions, headline=headline(sessions, resamples=100))
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "no solved session, not drawn: unbounded" in texts
    assert "unbounded" not in [t.get_text() for t in fig.legends[0].get_texts()]


def test_tokens_freed_has_a_panel_per_strategy_that_compacted_and_names_the_others() -> None:
    calls = pd.DataFrame({"strategy": ["a"] * 4 + ["b"] * 3 + ["c"] * 2,
                          "tokens_freed": [0, 120, 5000, 0, 300, 300, 0, 0, 0]})
    fig = tokens_freed_histogram(calls)
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert sorted(ax.get_title() for ax in panels) == ["a", "b"]  # c never compacted
    assert any("never compacted: c" in t.get_text() for t in fig.texts)
    matplotlib.pyplot.close(fig)
    # Without the column (a run made before compactions were counted) it says so instead of failing.
    empty = tokens_freed_histogram(calls.drop(columns="tokens_freed"))
    assert any("no strategy compacted" in t.get_text() for ax in empty.axes for t in ax.texts)
    matplotlib.pyplot.close(empty)


# ------------------------------------------------------------------------------------- twenty strategies


#: Twenty strategy names of the lengths a run has (the longest is cut to 22 characters on the plot).
TWENTY = ("unbounded", "sliding_window", "truncate_then_slide", "observation_masking", "summarize", "condense",
          "hybrid", "offload_contracts", "pipeline", "drop_all", "tiered", "rolling_summary", "keep_last_k",
          "tool_result_clearing", "semantic_dedupe", "hierarchical_memo", "checkpoint_restart",
          "retrieval_augmented", "lru_eviction", "adaptive_budget")
#: (success rate, cost per solved session) of the clusters the twenty strategies fall in, as they do in
#: practice: strategies that share a mechanism land at nearly the same success and cost.
CLUSTERS = ((0.55, 0.40), (0.56, 0.41), (0.80, 0.90), (0.30, 0.20), (0.81, 0.88), (0.55, 0.40), (0.97, 1.60))


def clustered_sessions(names: tuple[str, ...] = TWENTY, sessions_per_strategy: int = 120, seed: int = 7,
                       spots: Sequence[tuple[float, float]] = CLUSTERS) -> pd.DataFrame:
    """A sessions table with the columns reports.stats.headline reads, each strategy at one of ``spots``
    (success rate, cost per solved session; by its position in ``names``, cycling) a hair away from the
    others there: its share of sessions succeeds, and its cost per solved session is the spot's, give or
    take 1%."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, strategy in enumerate(names):
        rate, cost = spots[i % len(spots)]
        solved = round(sessions_per_strategy * min(rate + rng.normal(0, 0.006), 0.99))
        wins = set(rng.choice(sessions_per_strategy, solved, replace=False).tolist())
        per_session = cost * (1 + rng.normal(0, 0.01)) * solved / sessions_per_strategy
        for index in range(sessions_per_strategy):
            turns = int(rng.integers(15, 40))
            rows.append({
                "scenario": "mix", "session_index": index, "seed": index, "strategy": strategy,
                "outcome": "success" if index in wins else "stuck", "turns": turns, "tool_calls": turns,
                "tool_syntax_errors": int(rng.integers(0, 2)), "loop_detected": False, "loop_rule": "",
                "input_tokens": 40_000, "cached_input_tokens": 10_000, "context_tokens_mean": 8_000.0,
                "latency_s": float(turns * 4), "cost_usd": float(per_session * rng.uniform(0.8, 1.2)),
            })
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def twenty_sessions() -> pd.DataFrame:
    return clustered_sessions()


@pytest.fixture(scope="module")
def twenty_headline(twenty_sessions: pd.DataFrame) -> pd.DataFrame:
    return headline(twenty_sessions, resamples=200)


def _relative_luminance(hex_colour: str) -> float:
    channels = np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    linear = np.where(channels <= 0.04045, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)
    return float(linear @ np.array([0.2126, 0.7152, 0.0722]))


@pytest.mark.parametrize("count", [20, 70, 150])
def test_every_strategy_gets_its_own_colour_and_marker(count: int) -> None:
    names = [f"{TWENTY[i % len(TWENTY)]}_{i // len(TWENTY)}" for i in range(count)]
    styles = strategy_styles(names)
    assert len({(s.colour, s.marker) for s in styles.values()}) == count
    ordered = [styles[name] for name in sorted(names)]
    # As many distinct colours as the palette has, for the first strategies by name.
    assert len({s.colour for s in ordered[:len(TOL_MUTED)]}) == len(TOL_MUTED)
    # Strategies of one colour differ in marker, and (up to four of a colour) in line style too.
    by_colour: dict[str, list[plots.StrategyStyle]] = {}
    for style in ordered:
        by_colour.setdefault(style.colour, []).append(style)
    for shared in by_colour.values():
        assert len({s.marker for s in shared}) == len(shared)
        assert len({s.linestyle for s in shared[:len(plots.LINESTYLES)]}) == min(len(shared), len(plots.LINESTYLES))
    # Markers beyond the named ones still differ from each other.
    assert len({s.marker for s in ordered}) == math.ceil(count / len(TOL_MUTED))
    # The order names arrive in does not matter.
    assert strategy_styles(reversed(names)) == styles


def test_twenty_strategies_get_nine_colours_then_markers() -> None:
    styles = strategy_styles(TWENTY)
    ordered = [styles[name] for name in sorted(TWENTY)]
    # Nine strategies, nine colours: two more than Okabe-Ito without its yellow gave.
    assert len({s.colour for s in ordered[:9]}) == 9
    assert [s.colour for s in ordered] == [TOL_MUTED[i % len(TOL_MUTED)] for i in range(20)]
    assert [s.marker for s in ordered] == [STRATEGY_MARKERS[i // len(TOL_MUTED)] for i in range(20)]


def test_strategy_colours_are_neither_grey_nor_pale() -> None:
    """Grey draws the other strategies in every panel plot, and a near-white line vanishes on white."""
    for colour in TOL_MUTED:
        r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
        # Far from any grey: its channels differ by a quarter of their range at least.
        assert max(r, g, b) - min(r, g, b) >= 60, colour
        # WCAG contrast against white of at least 1.5:1 (Okabe-Ito's yellow, left out, has 1.3:1).
        assert 1.05 / (_relative_luminance(colour) + 0.05) >= 1.5, colour


Box = tuple[float, float, float, float]


def name_box_list(fig: Figure) -> list[tuple[str, Box]]:
    """The strategy names written at the cost plot's points, each with its window extent (x0, y0, x1, y1)
    in the PNG's pixels, from the figure drawn on its Agg canvas."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    boxes = []
    for text in main_axes(fig).texts:
        if isinstance(text, Annotation):
            # The text's own box: an annotation's window extent would include its arrow, if it had one.
            box = Text.get_window_extent(text, renderer)
            boxes.append((text.get_text(), (box.x0, box.y0, box.x1, box.y1)))
    return boxes


def name_boxes(fig: Figure) -> dict[str, Box]:
    """:func:`name_box_list` by name (the names must be distinct)."""
    boxes = dict(name_box_list(fig))
    assert len(boxes) == len(name_box_list(fig))
    return boxes


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def point_pixels(fig: Figure, head: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """Each strategy's point (success rate, cost per solved session) in the drawn figure's pixels."""
    wide = head.pivot(index="strategy", columns="metric", values="value")
    ax = main_axes(fig)
    return {plots.short_label(str(s), 22): (float(x), float(y)) for s, (x, y) in zip(
        wide.index, ax.transData.transform(wide[["success_rate", "cost_per_solved_session"]].to_numpy()), strict=True)}


def test_cost_vs_success_names_do_not_overlap_with_twenty_clustered_strategies(
        twenty_sessions: pd.DataFrame, twenty_headline: pd.DataFrame) -> None:
    """Twenty strategies, clusters of them at nearly one success and cost: every name is written once,
    inside the axes, over no other name and no marker, and is either beside its point or joined to it by
    a leader line."""
    fig = cost_vs_success(twenty_sessions, headline=twenty_headline)
    boxes = name_boxes(fig)
    assert sorted(boxes) == sorted(plots.short_label(s, 22) for s in TWENTY)
    overlapping = [(a, b) for i, a in enumerate(boxes) for b in list(boxes)[i + 1:] if _overlap(boxes[a], boxes[b])]
    assert overlapping == []
    ax = main_axes(fig)
    frame = ax.get_window_extent()
    assert all(frame.x0 <= x0 and x1 <= frame.x1 and frame.y0 <= y0 and y1 <= frame.y1
               for x0, y0, x1, y1 in boxes.values())
    points = point_pixels(fig, twenty_headline)
    half = plots.POINT_SIZE / 2 * DPI / 72
    covering = [(name, other) for name, box in boxes.items() for other, (x, y) in points.items()
                if _overlap(box, (x - half, y - half, x + half, y + half))]
    assert covering == []
    # A name far from its point has a leader line that ends at the point's marker and starts at the name.
    leaders = [segment for collection in ax.collections if isinstance(collection, LineCollection)
               and collection.get_zorder() == 1.5 for segment in collection.get_segments()]
    ends = [ax.transData.transform(np.asarray(segment)) for segment in leaders]
    for name, (x0, y0, x1, y1) in boxes.items():
        x, y = points[name]
        gap = math.hypot(max(x0 - x, 0, x - x1), max(y0 - y, 0, y - y1))
        if gap <= 2 * plots.RING_SIZE / 2 * DPI / 72:
            continue
        joined = [e for e in ends if math.hypot(*(e[1] - (x, y))) <= plots.RING_SIZE * DPI / 72
                  and x0 - 4 <= e[0][0] <= x1 + 4 and y0 - 4 <= e[0][1] <= y1 + 4]
        assert joined, f"{name} is {gap:.0f} px from its point without a leader line"


def test_cost_vs_success_names_are_placed_whatever_the_row_order(twenty_sessions: pd.DataFrame,
                                                                  twenty_headline: pd.DataFrame) -> None:
    first = name_boxes(cost_vs_success(twenty_sessions, headline=twenty_headline))
    shuffled = twenty_headline.sample(frac=1.0, random_state=5).reset_index(drop=True)
    again = name_boxes(cost_vs_success(twenty_sessions.sample(frac=1.0, random_state=6), headline=shuffled))
    assert again == first


def test_cost_vs_success_names_stay_apart_with_seventy_strategies() -> None:
    """A sweep's worth of variants (14 strategies, each at 5 window sizes: success and cost grow with the
    window): the names still do not overlap, and the legend, which could not hold seventy entries, keys
    only the front."""
    rng = np.random.default_rng(3)
    names, spots = [], []
    for strategy in TWENTY[:14]:
        rate, cost = rng.uniform(0.3, 0.8), rng.uniform(0.2, 1.0)
        for step in range(5):
            names.append(f"{strategy}@w{2 ** (step + 2)}k")
            spots.append((min(rate + 0.04 * step, 0.99), cost * (1 + 0.15 * step)))
    sessions = clustered_sessions(tuple(names), sessions_per_strategy=100, spots=spots)
    fig = cost_vs_success(sessions, headline=headline(sessions, resamples=50,
                                                      metrics=["success_rate", "cost_per_solved_session"]))
    boxes = name_box_list(fig)
    assert len(boxes) == 70
    values = [box for _name, box in boxes]
    assert not any(_overlap(a, b) for i, a in enumerate(values) for b in values[i + 1:])
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == [plots.FRONT_LABEL]
    assert "70 strategies" in legend.get_title().get_text()


def test_leader_geometry() -> None:
    box = np.array([[0.0, 0.0, 10.0, 10.0]])
    segments = np.array([[-5, 5, 15, 5], [-5, 15, 15, 15], [5, -5, 5, 20], [12, -5, 12, 20], [-5, -5, -1, -1],
                         [2, 2, 3, 3]], dtype=float)
    assert plots._crosses(segments, box)[:, 0].tolist() == [True, False, True, False, False, True]
    others = np.array([[0, 10, 10, 0], [20, 0, 30, 0]], dtype=float)
    assert plots._intersect(np.array([[0.0, 0.0, 10.0, 10.0]]), others).tolist() == [[True, False]]
