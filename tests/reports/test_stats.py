"""reports.stats: bootstrap intervals that cover at their nominal rate, paired comparisons that use
the pairing, headline values equal to direct computations (cost per solved session and cache-hit share
included), and Wilson intervals where a rate of none or all of its events leaves nothing to resample."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from reports.stats import (
    BLOCK_INDICES,
    CONFIDENCE,
    METRICS,
    SCRIPT_KEY,
    block_statistic,
    bootstrap,
    content_digest,
    events_and_trials,
    headline,
    interval_kind,
    loop_rules,
    metric_arrays,
    outcome_shares,
    paired,
    paired_differences,
    percentile_interval,
    quantile_rows,
    resample_rows,
    rng_for,
    statistic,
    wilson_interval,
    with_success,
)
from reports.tables import headline_cell, interval_cell

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
                "compactions": (compactions := int(rng.integers(0, 12))),
                "thrash": int(rng.integers(0, compactions + 1)),
                "tokens_freed": compactions * int(rng.integers(100, 5000)),
                "cache_breaking_edits": int(rng.integers(0, compactions + 1)),
                "redone_steps": int(rng.integers(0, 4)),
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
    frame.loc[frame.index[:15], ["loop_detected", "loop_rule"]] = [True, "repeat"]  # unbounded loops 15 of 40
    table = headline(frame, resamples=400).set_index(["strategy", "metric"])
    zero = table.loc[("hybrid", "loop_rate")]
    assert (zero["value"], zero["ci_low"], zero["interval"]) == (0.0, 0.0, "wilson")
    assert (zero["events"], zero["trials"]) == (0, 40)
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


@pytest.mark.parametrize(("loops", "kind"), [(0, "wilson"), (1, "wilson"), (9, "wilson"), (10, "bootstrap"),
                                             (30, "bootstrap"), (31, "wilson"), (40, "wilson")])
def test_a_share_of_sessions_with_fewer_than_10_events_or_non_events_is_wilsons(loops: int, kind: str) -> None:
    """The success-failure condition: the percentile bootstrap of a proportion of few events covers
    too rarely (1 loop in 40 gives a lower bound of 0, a rate never seen); Wilson's holds."""
    frame = sessions_frame(np.random.default_rng(6), {"unbounded": 0.0}, n=40).assign(loop_detected=False)
    frame.loc[frame.index[:loops], "loop_detected"] = True
    row = headline(frame, resamples=200, metrics=["loop_rate"]).iloc[0]
    assert row["interval"] == kind
    if kind == "wilson":
        assert (row["ci_low"], row["ci_high"]) == wilson_interval(loops, 40)
    if loops == 1:
        assert row["ci_low"] > 0


def test_metrics_added_for_the_decision_keep_the_old_names() -> None:
    old = {"context_tokens_mean", "input_tokens", "tool_syntax_error_rate", "loop_rate", "latency_mean", "latency_p50",
           "latency_p95", "success_rate", "cost_per_session"}
    added = {"cost_per_solved_session", "cache_hit_share", "compactions", "tokens_freed", "cache_breaking_edits",
             "thrash_rate", "redone_steps"}
    assert old | added == set(METRICS)
    assert list(METRICS)[:len(old)] == [m for m in METRICS if m in old]


# Block-wise resampling: the same draws and the same bits as one index matrix per stream ---------------
# The references below are the computation before the resamples were drawn in blocks (one
# ``rng.integers`` matrix per metric and strategy, reduced by ``statistic``); every comparison is exact.


def _reference_headline(sessions: pd.DataFrame, resamples: int, seed: int) -> pd.DataFrame:
    rows = []
    for strategy, group in with_success(sessions).groupby("strategy", sort=True):
        group = group.sort_values(SCRIPT_KEY)
        for metric in METRICS.values():
            values, den = metric_arrays(group, metric)
            n, stat = len(values), statistic(metric)
            kind = interval_kind(metric, values, den)
            rng = rng_for(seed, "headline", metric.name, content_digest(values, den))
            idx = rng.integers(0, n, size=(resamples, n))
            lo, hi = percentile_interval(stat(values, den, idx), CONFIDENCE) if kind == "bootstrap" else (np.nan,) * 2
            if kind == "wilson":
                lo, hi = wilson_interval(*events_and_trials(metric, values, den))
            events, trials = events_and_trials(metric, values, den) if metric.events else (np.nan, np.nan)
            rows.append({"strategy": strategy, "metric": metric.name, "value": float(stat(values, den, np.arange(n))),
                         "ci_low": lo, "ci_high": hi, "n": n, "interval": kind,
                         "support": float(den.sum()) if metric.kind == "per" else np.nan,
                         "events": events, "trials": trials})
    return pd.DataFrame(rows)


def _reference_paired(sessions: pd.DataFrame, baseline: str, resamples: int, seed: int) -> pd.DataFrame:
    sessions = with_success(sessions)
    base = sessions[sessions["strategy"] == baseline].set_index(SCRIPT_KEY).sort_index()
    rows = []
    for strategy, group in sessions.groupby("strategy", sort=True):
        if strategy == baseline:
            continue
        other = group.set_index(SCRIPT_KEY).sort_index()
        common = base.index.intersection(other.index)
        a, b, n = other.loc[common], base.loc[common], len(common)
        for metric in METRICS.values():
            stat = statistic(metric)
            (va, da), (vb, db) = metric_arrays(a, metric), metric_arrays(b, metric)
            full = np.arange(n)
            diff = float(stat(va, da, full) - stat(vb, db, full))
            base_value = float(stat(vb, db, full))
            digests = sorted((content_digest(va, da), content_digest(vb, db)))
            idx = rng_for(seed, "paired", metric.name, *digests).integers(0, n, size=(resamples, n))
            lo, hi = percentile_interval(stat(va, da, idx) - stat(vb, db, idx), CONFIDENCE)
            rows.append({"strategy": strategy, "baseline": baseline, "metric": metric.name, "n": n, "diff": diff,
                         "ci_low": lo, "ci_high": hi,
                         "relative": diff / base_value if base_value and np.isfinite(base_value) else np.nan,
                         "excludes_zero": bool(lo > 0 or hi < 0), "interval": "bootstrap",
                         "support": min(da.sum(), db.sum()) if metric.kind == "per" else np.nan})
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("n", "resamples"), [(1, 7), (5, 300), (300, 41), (BLOCK_INDICES + 3, 3)])
def test_resample_rows_are_one_integers_matrix_in_blocks_and_leave_the_generator_alike(n: int,
                                                                                      resamples: int) -> None:
    """The blocks (int32) hold the integers of one int64 ``rng.integers`` matrix, in order, and the
    generator draws the same numbers afterwards: numpy's bounded integers come from one stream of
    32-bit words whatever the dtype and however the draws are split."""
    ours, theirs = np.random.default_rng([3, n]), np.random.default_rng([3, n])
    blocks = list(resample_rows(ours, n, resamples))
    assert all(block.dtype == np.int32 for block in blocks)
    assert len(blocks) > 1 or resamples * n <= BLOCK_INDICES
    np.testing.assert_array_equal(np.concatenate(blocks), theirs.integers(0, n, size=(resamples, n)))
    assert ours.integers(0, 2**40, size=5).tolist() == theirs.integers(0, 2**40, size=5).tolist()
    assert ours.random() == theirs.random()


def _columns(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Session columns like a run's: integers, flags, prices and seconds, with ties and zeros."""
    return {
        "context_tokens_mean": rng.lognormal(9, 1, n).round(3), "input_tokens": rng.integers(0, 5_000_000, n),
        "cached_input_tokens": rng.integers(0, 4_000_000, n), "tool_calls": rng.integers(0, 90, n),
        "tool_syntax_errors": rng.integers(0, 4, n), "loop_detected": rng.random(n) < 0.1,
        "latency_s": rng.choice(rng.lognormal(6, 0.5, max(2, n // 3)), n), "success": rng.random(n) < 0.7,
        "cost_usd": rng.lognormal(0, 1, n), "compactions": (compactions := rng.integers(0, 12, n)),
        "thrash": rng.integers(0, compactions + 1), "tokens_freed": compactions * rng.integers(100, 5000, n),
        "cache_breaking_edits": rng.integers(0, compactions + 1),
        "redone_steps": rng.integers(0, 4, n),
    }


@pytest.mark.parametrize("n", [1, 2, 3, 17, 400])
@pytest.mark.parametrize("name", list(METRICS))
def test_block_statistic_is_statistic_to_the_bit(name: str, n: int) -> None:
    """Every metric's block statistic equals ``statistic`` on the same index rows exactly: gathered
    into a buffer, means as sums over n, quantiles from partitioned ranks."""
    metric = METRICS[name]
    rng = np.random.default_rng(n)
    frame = pd.DataFrame(_columns(rng, n))
    values, den = metric_arrays(frame, metric)
    idx = rng.integers(0, n, size=(257, n))
    block = block_statistic(metric, values, den)
    ours = np.concatenate([block(idx[:100].astype(np.int32)), block(idx[100:].astype(np.int32))])
    np.testing.assert_array_equal(ours, statistic(metric)(values, den, idx))


def test_a_quantile_over_more_sessions_than_int16_ranks_hold_is_still_numpys() -> None:
    values = np.random.default_rng(40).lognormal(6, 0.5, 40_000)
    idx = np.random.default_rng(41).integers(0, len(values), size=(3, len(values)))
    for name in ("latency_p50", "latency_p95"):
        stat = block_statistic(METRICS[name], values, values)
        np.testing.assert_array_equal(stat(idx.astype(np.int32)), statistic(METRICS[name])(values, values, idx))


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf, as numpy's own
@pytest.mark.parametrize("q", [0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 0.975, 1.0, 1 / 3])
@pytest.mark.parametrize("m", [1, 2, 3, 10, 41, 1000])
def test_quantile_rows_is_numpys_quantile_to_the_bit(q: float, m: int) -> None:
    rng = np.random.default_rng(m)
    values = np.concatenate([rng.normal(0, 1e3, m), [0.0, -0.0, 1e300, -1e300, np.inf, -np.inf], rng.normal(0, 1, 3)])
    values[rng.integers(0, len(values), 5)] = values[0]  # ties
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.int64)
    ranks[order] = np.arange(len(values))
    idx = rng.integers(0, len(values), size=(64, m))
    expected = np.quantile(values[idx], q, axis=-1)
    np.testing.assert_array_equal(quantile_rows(ranks[idx], q, values[order]), expected)


def test_a_quantile_over_a_nan_is_nan_as_numpy_says() -> None:
    values = np.array([1.0, np.nan, 3.0, 2.0])
    idx = np.array([[0, 2, 3, 0], [0, 1, 2, 3]])
    stat = block_statistic(METRICS["latency_p95"], values, values)
    np.testing.assert_array_equal(stat(idx), np.quantile(values[idx], 0.95, axis=-1))


def test_headline_and_paired_equal_one_index_matrix_per_stream_to_the_bit() -> None:
    """headline and paired (block-wise, on threads, with streams shared across baselines) give exactly
    what one ``rng.integers`` matrix per (metric, strategy) reduced by ``statistic`` gives."""
    rng = np.random.default_rng(21)
    frame = sessions_frame(rng, {"unbounded": 0.0, "hybrid": 4.0, "drop_all": -20.0}, n=150)
    frame.loc[frame.index[::7], "loop_detected"] = True
    frame = frame[~((frame["strategy"] == "hybrid") & (frame["session_index"] % 11 == 0))]  # unequal n
    pd.testing.assert_frame_equal(headline(frame, resamples=333, seed=5), _reference_headline(frame, 333, 5),
                                  check_exact=True)
    for baseline in ("unbounded", "hybrid"):
        pd.testing.assert_frame_equal(paired(frame, baseline, resamples=333, seed=5),
                                      _reference_paired(frame, baseline, 333, 5), check_exact=True)


def test_paired_differences_answer_each_pair_as_paired_against_its_baseline_would() -> None:
    """Pairs against several baselines in one call (a strategy's stream shared by them, a repeat asked
    once) equal the rows of ``paired`` against each baseline."""
    frame = sessions_frame(np.random.default_rng(8), {"unbounded": 0.0, "hybrid": 2.0, "pipeline": -3.0}, n=90)
    asked = [("hybrid", "unbounded", "latency_p95"), ("pipeline", "unbounded", "success_rate"),
             ("pipeline", "hybrid", "success_rate"), ("hybrid", "unbounded", "latency_p95"),
             ("unbounded", "pipeline", "cost_per_solved_session")]
    table = paired_differences(frame, asked, resamples=250, seed=2)
    assert list(zip(table["strategy"], table["baseline"], table["metric"], strict=True)) == list(dict.fromkeys(asked))
    for _, row in table.iterrows():
        alone = paired(frame, row["baseline"], resamples=250, seed=2, metrics=[row["metric"]])
        expected = alone[alone["strategy"] == row["strategy"]].iloc[0]
        pd.testing.assert_series_equal(row, expected, check_names=False, check_exact=True)


# Streams seeded from what they resample ------------------------------------------------------------------


def _twins() -> pd.DataFrame:
    """unbounded and hybrid, and ``copy``: hybrid's sessions row for row under another name."""
    frame = sessions_frame(np.random.default_rng(13), {"unbounded": 0.0, "hybrid": 3.0}, n=70)
    return pd.concat([frame, frame[frame["strategy"] == "hybrid"].assign(strategy="copy")], ignore_index=True)


def test_strategies_with_identical_sessions_get_identical_intervals() -> None:
    """Seeded from the resampled arrays, not the strategy's name: the same sessions, the same bits,
    whatever the name, the row order or the other strategies of the frame."""
    frame = _twins()
    table = headline(frame, resamples=300).set_index(["strategy", "metric"])
    twin, copy = table.loc["hybrid"], table.loc["copy"]
    pd.testing.assert_frame_equal(twin, copy, check_exact=True)
    assert not twin["ci_low"].equals(table.loc["unbounded"]["ci_low"])
    shuffled = frame.sample(frac=1.0, random_state=5).assign(
        strategy=lambda f: f["strategy"].replace({"copy": "zz_renamed"}))
    again = headline(shuffled[shuffled["strategy"] != "unbounded"], resamples=300).set_index(["strategy", "metric"])
    pd.testing.assert_frame_equal(again.loc["zz_renamed"], copy, check_exact=True)
    pd.testing.assert_frame_equal(again.loc["hybrid"], twin, check_exact=True)


def test_paired_differences_of_identical_sessions_are_identical_and_a_self_pair_is_zero() -> None:
    frame = _twins()
    pairs = paired_differences(frame, [("hybrid", "unbounded", m) for m in METRICS]
                               + [("copy", "unbounded", m) for m in METRICS]
                               + [("copy", "hybrid", "latency_mean")], resamples=300)
    twin = pairs[(pairs["strategy"] == "hybrid")].drop(columns="strategy").reset_index(drop=True)
    copy = pairs[(pairs["strategy"] == "copy") & (pairs["baseline"] == "unbounded")].drop(columns="strategy")
    pd.testing.assert_frame_equal(twin, copy.reset_index(drop=True), check_exact=True)
    self_pair = pairs[pairs["baseline"] == "hybrid"].iloc[0]
    assert (self_pair["diff"], self_pair["ci_low"], self_pair["ci_high"]) == (0.0, 0.0, 0.0)


def test_a_pair_reversed_draws_the_same_resamples() -> None:
    """Both sides' digests seed the stream in sorted order: B against A is A against B negated, so the
    decision's pairs (against the best) and the paired table's (against the baseline) agree."""
    frame = _twins()
    forward = paired_differences(frame, [("hybrid", "unbounded", "latency_p95")], resamples=400).iloc[0]
    reverse = paired_differences(frame, [("unbounded", "hybrid", "latency_p95")], resamples=400).iloc[0]
    assert reverse["diff"] == -forward["diff"]
    assert reverse["ci_low"] == pytest.approx(-forward["ci_high"], rel=1e-12)
    assert reverse["ci_high"] == pytest.approx(-forward["ci_low"], rel=1e-12)


def test_content_digest_reads_values_lengths_and_order() -> None:
    a = np.array([1.0, 2.0, 3.0])
    assert content_digest(a, a) == content_digest(a.copy(), a.astype(np.float32).astype(float))
    assert content_digest(a, a) != content_digest(a[::-1], a[::-1])
    assert content_digest(a, a) != content_digest(a, a[:2])
    assert content_digest(np.array([0.0]), np.array([0.0])) == content_digest(np.array([-0.0]), np.array([0.0]))


# Too few successes for a cost per solved session ------------------------------------------------------------


def _solving(successes: int, n: int = 100) -> pd.DataFrame:
    frame = sessions_frame(np.random.default_rng(17), {"drop_all": 0.0, "unbounded": 0.0}, n=n).assign(outcome="stuck")
    frame.loc[frame.index[(frame["strategy"] == "drop_all")][:successes], "outcome"] = "success"
    frame.loc[frame["strategy"] == "unbounded", "outcome"] = "success"
    return frame


@pytest.mark.parametrize(("successes", "kind"), [(0, "undefined"), (1, "too_few"), (9, "too_few"),
                                                 (10, "bootstrap"), (40, "bootstrap")])
def test_a_cost_per_solved_session_of_fewer_than_10_successes_has_no_interval(successes: int, kind: str) -> None:
    frame = _solving(successes)
    table = headline(frame, resamples=300).set_index(["strategy", "metric"])
    row = table.loc[("drop_all", "cost_per_solved_session")]
    assert row["interval"] == kind
    assert row["support"] == successes and row["n"] == 100
    group = frame[frame["strategy"] == "drop_all"]
    if successes:
        assert row["value"] == pytest.approx(group["cost_usd"].sum() / successes)
    assert np.isnan(row["ci_low"]) == np.isnan(row["ci_high"]) == (kind != "bootstrap")
    # The rule is the denominator's, never the other metrics': the success rate keeps its interval.
    assert table.loc[("drop_all", "success_rate"), "interval"] in ("wilson", "bootstrap")
    pair = paired(frame, "unbounded", resamples=300, metrics=["cost_per_solved_session"]).iloc[0]
    assert pair["interval"] == kind and pair["support"] == successes
    assert np.isnan(pair["ci_low"]) == (kind != "bootstrap") and (not pair["excludes_zero"] or kind == "bootstrap")


def test_one_success_in_100_prints_too_few_successes() -> None:
    """The reported case: $1.6879 [$0.4875, $1.9976] from 1 success in 100 sessions, the bootstrap having
    dropped the resamples without a success. Now the value, and that there are too few."""
    frame = _solving(1)
    row = headline(frame, resamples=300).set_index(["strategy", "metric"]).loc[("drop_all", "cost_per_solved_session")]
    cell = headline_cell(METRICS["cost_per_solved_session"], row)
    assert cell.text == f"${row['value']:,.4f}"
    assert cell.sub == "too few successes (1 in 100 sessions)"
    assert "[" not in cell.sub
