"""reports.stats: bootstrap intervals that cover at their nominal rate, paired comparisons that use
the pairing, headline values equal to direct computations (cost per solved session and cache-hit share
included), and Wilson intervals where a rate of none or all of its events leaves nothing to resample."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from reports.stats import (
    METRICS,
    bootstrap,
    headline,
    loop_rules,
    metric_arrays,
    outcome_shares,
    paired,
    wilson_interval,
    with_success,
)
from reports.tables import interval_cell

MEAN = METRICS["latency_mean"]


def sessions_frame(rng: np.random.Generator, strategies: dict[str, float], n: int = 60) -> pd.DataFrame:
    """Synthetic sessions: per strategy, latency = shared session effect + strategy shift + noise."""
    effect = rng.lognormal(6.0, 0.6, n)
    rows = []
    for strategy, shift in strategies.items():
        noise = rng.normal(0, 5, n)
        for i in range(n):
            calls = int(rng.integers(20, 80))
            rows.append({
                "scenario": "mix", "session_index": i, "strategy": strategy,
                "outcome": "success" if rng.random() < 0.6 else "stuck",
                "loop_detected": False, "loop_rule": "",
                "context_tokens_mean": float(effect[i] * 50 + shift), "input_tokens": int(effect[i] * 3000),
                "cached_input_tokens": int(effect[i] * 2000),
                "tool_calls": calls, "tool_syntax_errors": int(rng.binomial(calls, 0.05)),
                "latency_s": float(effect[i] + shift + noise[i]), "cost_usd": float(effect[i] / 100),
            })
    return pd.DataFrame(rows)


def test_bootstrap_interval_covers_the_true_mean_at_about_the_nominal_rate() -> None:
    """Over 400 samples from a skewed distribution with a known mean, the 95% percentile interval
    holds the mean in 92-98% of them (binomial sd 1.1 pp at 400 trials: the band is about +-2.7 sd,
    and an interval that is too narrow or too wide by a fifth falls outside it)."""
    rng = np.random.default_rng(12345)
    sigma = 0.5
    true_mean = float(np.exp(sigma**2 / 2))
    trials, n = 400, 120
    covered = 0
    for t in range(trials):
        sample = rng.lognormal(0.0, sigma, n)
        _, lo, hi = bootstrap(sample, MEAN, resamples=1000, rng=np.random.default_rng(t))
        covered += lo <= true_mean <= hi
    assert 0.92 <= covered / trials <= 0.98, covered / trials


def test_a_wrong_interval_would_fail_the_coverage_band() -> None:
    """The band above can fail: an interval from half the resampled spread covers far too rarely."""
    rng = np.random.default_rng(7)
    true_mean = float(np.exp(0.125))
    covered = 0
    for t in range(200):
        sample = rng.lognormal(0.0, 0.5, 120)
        value, lo, hi = bootstrap(sample, MEAN, resamples=1000, rng=np.random.default_rng(t))
        covered += value - (value - lo) / 2 <= true_mean <= value + (hi - value) / 2
    assert covered / 200 < 0.92


def test_paired_interval_is_narrower_than_unpaired_on_correlated_sessions() -> None:
    rng = np.random.default_rng(3)
    frame = sessions_frame(rng, {"unbounded": 0.0, "sliding_window": 20.0}, n=80)
    pairs = paired(frame, "unbounded", resamples=2000)
    row = pairs[pairs["metric"] == "latency_mean"].iloc[0]
    paired_width = row["ci_high"] - row["ci_low"]
    a = frame[frame["strategy"] == "sliding_window"]["latency_s"].to_numpy()
    b = frame[frame["strategy"] == "unbounded"]["latency_s"].to_numpy()
    ga, gb = np.random.default_rng(1), np.random.default_rng(2)
    diffs = (a[ga.integers(0, len(a), (2000, len(a)))].mean(axis=1)
             - b[gb.integers(0, len(b), (2000, len(b)))].mean(axis=1))
    unpaired_width = float(np.quantile(diffs, 0.975) - np.quantile(diffs, 0.025))
    assert paired_width < unpaired_width / 3
    assert row["ci_low"] <= row["diff"] <= row["ci_high"]
    assert row["diff"] == pytest.approx(a.mean() - b.mean())
    assert bool(row["excludes_zero"])


def test_headline_values_equal_direct_computations() -> None:
    frame = sessions_frame(np.random.default_rng(5), {"unbounded": 0.0, "drop_all": -30.0})
    table = headline(frame, resamples=500).set_index(["strategy", "metric"])
    for strategy, group in frame.groupby("strategy"):
        assert table.loc[(strategy, "latency_mean"), "value"] == pytest.approx(group["latency_s"].mean())
        assert table.loc[(strategy, "latency_p95"), "value"] == pytest.approx(group["latency_s"].quantile(0.95))
        assert table.loc[(strategy, "tool_syntax_error_rate"), "value"] == pytest.approx(
            group["tool_syntax_errors"].sum() / group["tool_calls"].sum())
        assert table.loc[(strategy, "success_rate"), "value"] == pytest.approx(
            (group["outcome"] == "success").mean())
        for metric in METRICS:
            lo, value, hi = (table.loc[(strategy, metric), c] for c in ("ci_low", "value", "ci_high"))
            assert lo <= value + 1e-9 and value <= hi + 1e-9, (strategy, metric)


def test_headline_is_deterministic_for_a_seed_and_per_strategy_independent() -> None:
    frame = sessions_frame(np.random.default_rng(9), {"unbounded": 0.0, "hybrid": 5.0})
    first = headline(frame, resamples=300, seed=4)
    assert first.equals(headline(frame, resamples=300, seed=4))
    extra = pd.concat([frame, frame[frame["strategy"] == "hybrid"].assign(strategy="zz_other")])
    again = headline(extra, resamples=300, seed=4)
    kept = again[again["strategy"] != "zz_other"].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, first.reset_index(drop=True))


def test_paired_uses_only_sessions_both_strategies_ran() -> None:
    frame = sessions_frame(np.random.default_rng(2), {"unbounded": 0.0, "summarize": 3.0}, n=40)
    frame = frame[~((frame["strategy"] == "summarize") & (frame["session_index"] >= 30))]
    row = paired(frame, "unbounded", resamples=200).query("metric == 'latency_mean'").iloc[0]
    assert row["n"] == 30


def test_paired_without_the_baseline_names_the_strategies() -> None:
    frame = sessions_frame(np.random.default_rng(2), {"hybrid": 0.0})
    with pytest.raises(KeyError, match="hybrid"):
        paired(frame, "unbounded")


def test_outcome_shares_and_loop_rules_are_shares_of_sessions() -> None:
    frame = sessions_frame(np.random.default_rng(1), {"unbounded": 0.0, "drop_all": 0.0}, n=20)
    looping = frame.index[frame["strategy"] == "drop_all"][:5]
    frame.loc[looping, ["outcome", "loop_detected", "loop_rule"]] = ["stuck", True, "repeat"]
    shares = outcome_shares(frame)
    assert np.allclose(shares.sum(axis=1), 1.0)
    rules = loop_rules(frame)
    assert list(rules.columns) == ["repeat"]
    assert rules.loc["drop_all", "repeat"] == pytest.approx(5 / 20)
    assert rules.loc["unbounded", "repeat"] == 0


# Cost per solved session, cache-hit share, and the interval of a rate of none or all --------------------


def test_cost_per_solved_session_and_cache_hit_share_equal_direct_computations() -> None:
    frame = sessions_frame(np.random.default_rng(11), {"unbounded": 0.0, "hybrid": 4.0}, n=50)
    table = headline(frame, resamples=400).set_index(["strategy", "metric"])
    for strategy, group in frame.groupby("strategy"):
        solved = int((group["outcome"] == "success").sum())
        row = table.loc[(strategy, "cost_per_solved_session")]
        assert row["value"] == pytest.approx(group["cost_usd"].sum() / solved)
        assert row["ci_low"] < row["value"] < row["ci_high"]
        assert row["interval"] == "bootstrap"
        share = table.loc[(strategy, "cache_hit_share"), "value"]
        assert share == pytest.approx(group["cached_input_tokens"].sum() / group["input_tokens"].sum())
    # By hand on four sessions: $1 + $2 + $3 + $4 over the two solved ones.
    tiny = pd.DataFrame({"outcome": ["success", "stuck", "success", "overflow"], "cost_usd": [1.0, 2.0, 3.0, 4.0]})
    values, den = metric_arrays(with_success(tiny.assign(loop_detected=False)), METRICS["cost_per_solved_session"])
    assert bootstrap(values, METRICS["cost_per_solved_session"], denominators=den, resamples=200)[0] == 5.0


def test_cost_per_solved_session_is_undefined_without_a_solved_session() -> None:
    frame = sessions_frame(np.random.default_rng(4), {"drop_all": 0.0}, n=20).assign(outcome="stuck")
    row = headline(frame, resamples=100).set_index(["strategy", "metric"]).loc[("drop_all", "cost_per_solved_session")]
    assert np.isnan(row["value"]) and np.isnan(row["ci_low"]) and np.isnan(row["ci_high"])
    metric = METRICS["cost_per_solved_session"]
    assert interval_cell(metric, row["value"], row["ci_low"], row["ci_high"]).text == "no solved session"
    # Paired against a strategy that solves: the difference is undefined too, never a number.
    other = sessions_frame(np.random.default_rng(4), {"unbounded": 0.0}, n=20)
    pair = paired(pd.concat([frame, other]), "unbounded", resamples=100, metrics=["cost_per_solved_session"])
    assert list(pair["metric"]) == ["cost_per_solved_session"]
    assert np.isnan(pair["diff"].iloc[0]) and not bool(pair["excludes_zero"].iloc[0])


def test_wilson_interval_of_zero_events_has_a_real_upper_bound() -> None:
    low, high = wilson_interval(0, 40)
    assert low == 0.0
    # z^2 / (n + z^2) at 95%: 3.84 / 43.84; between the rule of three (3 / n) and 4 / n.
    assert high == pytest.approx(1.959964**2 / (40 + 1.959964**2), rel=1e-6)
    assert 3 / 40 < high < 4 / 40
    low, high = wilson_interval(40, 40)
    assert high == 1.0 and low == pytest.approx(1 - 1.959964**2 / (40 + 1.959964**2), rel=1e-6)
    # Away from the edges it is the textbook interval: 10 of 40 -> about [14.2%, 40.2%].
    low, high = wilson_interval(10, 40)
    assert (round(low, 3), round(high, 3)) == (0.142, 0.402)


@pytest.mark.parametrize(("hits", "n"), [(0, 10), (10, 10), (3, 7), (1999, 2000)])
def test_wilson_interval_contains_the_share_and_stays_in_0_1(hits: int, n: int) -> None:
    low, high = wilson_interval(hits, n)
    assert 0 <= low <= hits / n <= high <= 1
    assert high - low > 0


def test_wilson_interval_of_nothing_is_nan() -> None:
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


def test_headline_uses_wilson_at_zero_or_all_events_and_the_bootstrap_otherwise() -> None:
    frame = sessions_frame(np.random.default_rng(6), {"unbounded": 0.0, "hybrid": 0.0}, n=40)
    frame.loc[frame["strategy"] == "hybrid", "outcome"] = "success"
    frame.loc[frame.index[:5], ["loop_detected", "loop_rule"]] = [True, "repeat"]  # unbounded loops 5 of 40
    table = headline(frame, resamples=400).set_index(["strategy", "metric"])
    zero = table.loc[("hybrid", "loop_rate")]
    assert (zero["value"], zero["ci_low"], zero["interval"]) == (0.0, 0.0, "wilson")
    assert zero["ci_high"] == pytest.approx(wilson_interval(0, 40)[1])
    every = table.loc[("hybrid", "success_rate")]
    assert (every["value"], every["ci_high"], every["interval"]) == (1.0, 1.0, "wilson")
    assert every["ci_low"] < 1.0
    some = table.loc[("unbounded", "loop_rate")]
    assert some["interval"] == "bootstrap"
    assert some["ci_low"] < some["value"] < some["ci_high"]
    metric = METRICS["loop_rate"]
    cell = interval_cell(metric, zero["value"], zero["ci_low"], zero["ci_high"], wilson=True)
    assert (cell.text, cell.sub) == ("0.00%", "[0.00%, 8.76%] †")
    # The tool-syntax error rate counts calls, not sessions: none of 40 x 50 calls is a narrow interval.
    clean = frame.assign(tool_syntax_errors=0, tool_calls=50)
    row = headline(clean, resamples=100).set_index(["strategy", "metric"]).loc[("hybrid", "tool_syntax_error_rate")]
    assert row["interval"] == "wilson"
    assert row["ci_high"] == pytest.approx(wilson_interval(0, 2000)[1])


def test_metrics_added_for_the_decision_keep_the_old_names() -> None:
    old = {"context_tokens_mean", "input_tokens", "tool_syntax_error_rate", "loop_rate", "latency_mean", "latency_p50",
           "latency_p95", "success_rate", "cost_per_session"}
    assert old | {"cost_per_solved_session", "cache_hit_share"} == set(METRICS)
    assert list(METRICS)[:len(old)] == [m for m in METRICS if m in old]
