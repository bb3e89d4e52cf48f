"""ctxbench compare: threshold parsing, pairing (a run against itself, other seeds, a partial overlap),
the gate reading the CI bound in the failing direction, its exit codes through the CLI, and one-line
usage errors. Run B is run A with known changes written into its sessions table, so every difference
(and whether a threshold is crossed) is known exactly."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from harness.cli import main as cli_main
from harness.run.config import RunConfig
from harness.run.runner import run
from reports import stats
from reports.compare import Threshold, compare, parse_metrics, parse_threshold, relative_change
from reports.stats import METRICS
from tests.reports.runs import SMALL_RUN, edited_copy, replace_table

CONFIG: dict[str, Any] = SMALL_RUN
STRATEGIES = ["offload_contracts", "sw20", "unbounded"]
#: Run B: one more unbounded session loops (+1/12 = +8.33pp) and every context is 3% larger.
CONTEXT_FACTOR = 1.03


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("compare")
    a = root / "a"
    run(RunConfig(**CONFIG), a, quiet=True)
    same = root / "same"
    shutil.copytree(a, same)
    b = root / "b"
    shutil.copytree(a, b)
    sessions = pd.read_parquet(b / "sessions.parquet")
    quiet = sessions.index[(sessions["strategy"] == "unbounded") & ~sessions["loop_detected"].astype(bool)]
    assert len(quiet) > 0
    sessions.loc[quiet[0], "loop_detected"] = True
    sessions["context_tokens_mean"] = sessions["context_tokens_mean"] * CONTEXT_FACTOR
    replace_table(b, "sessions.parquet", sessions)
    return a, same, b


# Thresholds --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "metric", "direction", "amount", "kind"), [
    ("loop_rate:+2pp", "loop_rate", 1, 2.0, "pp"),
    ("success_rate:-1.5pp", "success_rate", -1, 1.5, "pp"),
    ("context_tokens_mean:+5%", "context_tokens_mean", 1, 5.0, "relative"),
    ("latency_p95:-10%", "latency_p95", -1, 10.0, "relative"),
    ("input_tokens:+1000", "input_tokens", 1, 1000.0, "absolute"),
    (" cost_per_session : +0.05 ", "cost_per_session", 1, 0.05, "absolute"),
])
def test_thresholds_parse(text: str, metric: str, direction: int, amount: float, kind: str) -> None:
    t = parse_threshold(text)
    assert (t.metric, t.direction, t.amount, t.kind) == (metric, direction, amount, kind)


@pytest.mark.parametrize(("text", "named"), [
    ("nope:+2pp", "'nope'"),
    ("loop_rate:2pp", "'2pp'"),
    ("loop_rate:+2xx", "'+2xx'"),
    ("loop_rate:+", "'+'"),
    ("loop_rate", "'loop_rate'"),
    ("loop_rate:", "'loop_rate:'"),
    ("input_tokens:+2pp", "input_tokens"),
    ("loop_rate:+inf", "'+inf'"),
])
def test_bad_thresholds_are_one_line_value_errors_naming_them(text: str, named: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_threshold(text)
    message = str(info.value)
    assert named in message
    assert "\n" not in message


def test_unknown_metric_is_a_value_error() -> None:
    assert parse_metrics(["loop_rate,success_rate", "latency_p95", "loop_rate"]) == [
        "loop_rate", "success_rate", "latency_p95"]
    assert parse_metrics(None) == list(METRICS)
    with pytest.raises(ValueError, match="unknown metric 'tokens'"):
        parse_metrics(["loop_rate,tokens"])


@pytest.mark.parametrize(("text", "value", "crossed"), [
    ("loop_rate:+2pp", 3.0, True),
    ("loop_rate:+2pp", 2.0, False),  # exactly at the threshold: not crossed
    ("loop_rate:+2pp", -30.0, False),  # the other direction never fails
    ("success_rate:-2pp", -5.0, True),
    ("success_rate:-2pp", 5.0, False),
    ("context_tokens_mean:+5%", 5.1, True),
    ("context_tokens_mean:+5%", 4.9, False),
    ("context_tokens_mean:+5%", math.inf, True),  # any increase from zero is infinitely relative
    ("context_tokens_mean:-5%", -math.inf, True),
    ("input_tokens:+1000", 1001.0, True),
    ("input_tokens:+1000", 999.0, False),
    ("input_tokens:-1000", -1001.0, True),
    ("input_tokens:+1000", math.nan, False),
])
def test_threshold_crossing_in_its_own_terms(text: str, value: float, crossed: bool) -> None:
    assert parse_threshold(text).crossed(value) is crossed


ROW = {"diff": 0.05, "ci_low": 0.01, "ci_high": 0.09, "rel": 0.5, "rel_low": 0.1, "rel_high": 0.9}


@pytest.mark.parametrize(("text", "bound_name", "bound", "trips"), [
    ("loop_rate:+2pp", "lower", 1.0, False),  # the point (+5pp) is beyond +2pp, the lower bound is not
    ("loop_rate:+0.5pp", "lower", 1.0, True),
    ("loop_rate:-2pp", "upper", 9.0, False),
    ("loop_rate:+20%", "lower", 10.0, False),  # relative: the bound of (B - A) / A, not of B - A over A
    ("loop_rate:+5%", "lower", 10.0, True),
    ("loop_rate:+0.005", "lower", 0.01, True),
])
def test_the_gate_reads_the_bound_in_the_failing_direction(text: str, bound_name: str, bound: float,
                                                           trips: bool) -> None:
    t = parse_threshold(text)
    assert t.bound_name == bound_name
    assert t.bound(ROW) == pytest.approx(bound)
    assert t.trips(ROW) is trips
    assert f"the {bound_name} bound of the 95% CI of" in t.rule()


def test_relative_change_from_zero_is_infinite_and_no_change_is_zero() -> None:
    changes = relative_change(np.array([1.0, -1.0, 0.0, 2.0, math.nan]), np.array([0.0, 0.0, 0.0, -4.0, 1.0]))
    assert changes[:4].tolist() == [math.inf, -math.inf, 0.0, 0.5]
    assert math.isnan(changes[4])


# compare() ---------------------------------------------------------------------------------------------


def test_a_run_against_itself_is_paired_with_zero_differences_and_zero_width_intervals(
        runs: tuple[Path, Path, Path]) -> None:
    a, same, _ = runs
    for b in (a, same):
        result = compare(a, b)
        table = result.table
        assert len(table) == len(METRICS) * len(STRATEGIES)
        assert set(table["strategy"]) == set(STRATEGIES)
        assert result.pairing.paired and result.pairing.shared == CONFIG["sessions"]
        assert (result.pairing.only_a, result.pairing.only_b) == (0, 0)
        assert table["paired"].all()
        defined = table[table["a"].notna()]  # an undefined metric (no value over these sessions) has no difference
        assert (defined["diff"] == 0).all()
        assert (defined["a"] == defined["b"]).all()
        # Too few successes for a cost per solved session: no interval, even of a difference that is zero.
        drawn = defined[defined["interval"] == "bootstrap"]
        assert set(defined["interval"]) <= {"bootstrap", "too_few"} and not drawn.empty
        assert (drawn["ci_low"] == 0).all() and (drawn["ci_high"] == 0).all()
        assert (drawn["rel_low"] == 0).all() and (drawn["rel_high"] == 0).all()
        assert defined.loc[defined["interval"] == "too_few", ["ci_low", "ci_high"]].isna().all().all()
        assert not table["excludes_zero"].any()
        assert not result.failed
        assert "paired on 12 shared sessions" in result.to_text()


def test_known_differences_are_measured_over_the_paired_sessions(runs: tuple[Path, Path, Path]) -> None:
    a, _, b = runs
    table = compare(a, b, ["loop_rate", "context_tokens_mean"]).table.set_index(["metric", "strategy"])
    loops = table.loc[("loop_rate", "unbounded")]
    assert loops["diff"] == pytest.approx(1 / 12)
    # One session's loop: some resamples leave it out, so the interval reaches zero.
    assert loops["ci_low"] == 0 and loops["ci_high"] > loops["diff"]
    assert table.loc[("loop_rate", "sw20"), "diff"] == 0
    for strategy in STRATEGIES:
        row = table.loc[("context_tokens_mean", strategy)]
        assert row["diff"] / row["a"] == pytest.approx(CONTEXT_FACTOR - 1)
        # Every session grew by the same factor: the relative change is that factor in every resample.
        assert row["rel_low"] == pytest.approx(CONTEXT_FACTOR - 1)
        assert row["rel_high"] == pytest.approx(CONTEXT_FACTOR - 1)
        assert 0 < row["ci_low"] <= row["diff"] <= row["ci_high"]
        assert row["a_low"] <= row["a"] <= row["a_high"]


def test_thresholds_add_their_metric_to_the_table(runs: tuple[Path, Path, Path]) -> None:
    a, _, b = runs
    result = compare(a, b, ["success_rate"], [Threshold("context_tokens_mean:+2%", "context_tokens_mean", 1, 2.0,
                                                        "relative")])
    assert list(dict.fromkeys(result.table["metric"])) == ["success_rate", "context_tokens_mean"]
    assert [(x.strategy, x.threshold.metric) for x in result.breaches] == [(s, "context_tokens_mean")
                                                                          for s in STRATEGIES]


def test_runs_with_other_seeds_fall_back_to_unpaired(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    a, _, _ = runs
    other = edited_copy(a, tmp_path / "other", lambda s: s.assign(seed=s["seed"] + 1))
    result = compare(a, other, ["context_tokens_mean"])
    assert not result.pairing.paired
    assert (result.pairing.shared, result.pairing.only_a, result.pairing.only_b) == (0, 12, 12)
    table = result.table
    assert not table["paired"].any()
    assert (table["n_a"] == 12).all() and (table["n_b"] == 12).all()
    assert (table["diff"] == 0).all()
    # Resampled independently: the same values give an interval of real width.
    assert ((table["ci_low"] < 0) & (table["ci_high"] > 0)).all()
    assert result.to_text().splitlines()[2].startswith("unpaired: the runs share no session")
    records = result.to_records()
    assert records["paired"] is False and records["shared_sessions"] == 0


def test_partly_shared_sessions_are_paired_on_the_shared_ones_and_the_rest_counted(
        runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    a, _, _ = runs

    def reseed_first_three(sessions: pd.DataFrame) -> pd.DataFrame:
        sessions.loc[sessions["session_index"] < 3, "seed"] += 1
        return sessions

    partial = edited_copy(a, tmp_path / "partial", reseed_first_three)
    result = compare(a, partial, ["loop_rate"])
    assert (result.pairing.shared, result.pairing.only_a, result.pairing.only_b) == (9, 3, 3)
    assert result.table["paired"].all() and (result.table["n_a"] == 9).all()
    assert (result.table["ci_low"] == 0).all() and (result.table["ci_high"] == 0).all()
    assert "left out 3 sessions only in A and 3 only in B" in result.to_text()
    assert result.to_records()["left_out"] == {"only_a": 3, "only_b": 3}


# One session of 40 against a clear regression ------------------------------------------------------------

FORTY = 40


@pytest.fixture(scope="module")
def forty(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A: 40 unbounded sessions, none looping; B: one of them loops (0% -> 2.5%); C: ten do (-> 25%)."""
    root = tmp_path_factory.mktemp("forty")
    ran = root / "ran"
    run(RunConfig(**(CONFIG | {"sessions": FORTY, "strategies": [{"name": "unbounded"}]})), ran, quiet=True)

    def looping(count: int) -> Any:
        def edit(sessions: pd.DataFrame) -> pd.DataFrame:
            sessions["loop_detected"] = sessions["session_index"] < count
            return sessions
        return edit

    return (edited_copy(ran, root / "a", looping(0)), edited_copy(ran, root / "b", looping(1)),
            edited_copy(ran, root / "c", looping(10)))


def test_one_loop_in_forty_does_not_trip_a_2pp_gate(forty: tuple[Path, Path, Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    a, one, _ = forty
    result = compare(a, one, ["loop_rate"], ["loop_rate:+2pp"])
    row = result.table.iloc[0]
    assert (row["a"], row["b"]) == (0.0, 1 / FORTY)
    assert row["diff"] > 0.02 > row["ci_low"]
    assert not result.failed
    assert "unbounded: not established: B - A is +2.50pp, beyond +2pp, but its lower bound +0.00pp is not" \
        in result.to_text()
    assert cli_main(["compare", str(a), str(one), "--fail-on", "loop_rate:+2pp"]) == 0
    # A rate that leaves zero is infinitely relative, but not in the resamples without the loop.
    assert cli_main(["compare", str(a), str(one), "--fail-on", "loop_rate:+50%"]) == 0
    assert capsys.readouterr().err == ""


def test_a_clear_regression_trips_the_gate_naming_the_bound(forty: tuple[Path, Path, Path],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    a, _, ten = forty
    assert cli_main(["compare", str(a), str(ten), "--metric", "loop_rate", "--fail-on", "loop_rate:+2pp",
                     "--fail-on", "loop_rate:+50%"]) == 1
    captured = capsys.readouterr()
    result = compare(a, ten, ["loop_rate"], ["loop_rate:+2pp"])
    low = result.table.iloc[0]["ci_low"]
    assert low > 0.02
    assert (f"unbounded: the lower bound of the 95% CI of B - A is {low * 100:+.2f}pp, above the threshold +2pp"
            in captured.out)
    assert "unbounded: the lower bound of the 95% CI of (B - A) / A is +inf%, above the threshold +50%" in captured.out
    assert "gate loop_rate:+2pp (fails when the lower bound of the 95% CI of B - A is above +2pp): FAILED" \
        in captured.out
    assert captured.err.startswith("ctxbench: compare: gate failed: loop_rate:+2pp, loop_rate:+50% ")
    # The reverse comparison is an improvement: an increase gate passes, a decrease gate reads the upper bound.
    reverse = compare(ten, a, ["loop_rate"], ["loop_rate:+2pp", "loop_rate:-2pp"])
    assert [b.threshold.text for b in reverse.breaches] == ["loop_rate:-2pp"]
    assert reverse.breaches[0].bound == pytest.approx(reverse.table.iloc[0]["ci_high"] * 100)
    assert "the upper bound of the 95% CI of B - A is" in reverse.breaches[0].message()


# The CLI gate ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fail_on", "code"), [
    (["loop_rate:+2pp"], 0),  # +8.33pp from one session of 12: its lower bound is 0
    (["loop_rate:+0pp"], 0),
    (["loop_rate:+10pp"], 0),
    (["loop_rate:-2pp"], 0),
    (["context_tokens_mean:+2%"], 1),
    (["context_tokens_mean:+5%"], 0),
    (["context_tokens_mean:-2%"], 0),
    (["input_tokens:+1000"], 0),
    (["context_tokens_mean:+1"], 1),
    (["loop_rate:+10pp", "context_tokens_mean:+2%"], 1),
    ([], 0),
])
def test_fail_on_exits_1_when_crossed_and_0_otherwise(runs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str],
                                                      fail_on: list[str], code: int) -> None:
    a, _, b = runs
    flags = [x for t in fail_on for x in ("--fail-on", t)]
    assert cli_main(["compare", str(a), str(b), "--metric", "loop_rate", *flags]) == code
    captured = capsys.readouterr()
    assert "loop_rate (loop rate, share of sessions)" in captured.out
    if code:
        assert captured.err.count("\n") == 1
        assert captured.err.startswith("ctxbench: compare: gate failed: ")
        assert "FAILED" in captured.out
    else:
        assert captured.err == ""


def test_compare_json_lists_every_row_and_the_verdict(runs: tuple[Path, Path, Path],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    a, _, b = runs
    code = cli_main(["compare", str(a), str(b), "--metric", "loop_rate,success_rate", "--metric", "latency_p95",
                     "--fail-on", "loop_rate:+2pp", "--fail-on", "context_tokens_mean:+2%", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert data["failed"] is True
    assert (data["paired"], data["shared_sessions"], data["left_out"]) == (True, 12, {"only_a": 0, "only_b": 0})
    assert {r["metric"] for r in data["rows"]} == {"loop_rate", "success_rate", "latency_p95", "context_tokens_mean"}
    assert len(data["rows"]) == 4 * len(STRATEGIES)
    assert all(r["paired"] for r in data["rows"])
    assert [(t["threshold"], t["bound"], t["failed"]) for t in data["thresholds"]] == [
        ("loop_rate:+2pp", "lower", False), ("context_tokens_mean:+2%", "lower", True)]
    assert [(x["threshold"], x["strategy"], x["bound"]) for x in data["breaches"]] == [
        ("context_tokens_mean:+2%", s, "lower") for s in STRATEGIES]
    assert all(x["bound_value"] == pytest.approx((CONTEXT_FACTOR - 1) * 100) for x in data["breaches"])
    assert all(np.isfinite(r["diff"]) for r in data["rows"])


@pytest.mark.parametrize(("args", "named"), [
    (["{a}", "{b}", "--metric", "nope"], "'nope'"),
    (["{a}", "{b}", "--fail-on", "loop_rate:2pp"], "'loop_rate:2pp'"),
    (["{a}", "{b}", "--fail-on", "nope:+1"], "'nope'"),
    (["{a}", "{b}", "--fail-on", "latency_p95:+2pp"], "latency_p95"),
    (["{a}", "{tmp}/absent"], "absent: no such directory"),
    (["{tmp}", "{b}"], "not a finished run directory"),
    (["{a}"], "run_b"),
])
def test_bad_input_exits_2_with_one_line(runs: tuple[Path, Path, Path], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str], args: list[str], named: str) -> None:
    a, _, b = runs
    with_paths = [x.format(a=a, b=b, tmp=tmp_path) for x in args]
    try:
        code = cli_main(["compare", *with_paths])
    except SystemExit as e:  # argparse's own errors (a missing positional)
        code = int(e.code or 0)
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("ctxbench: error: ")
    assert "Traceback" not in captured.err
    assert named in captured.err
    assert captured.out == ""


def test_each_runs_values_are_its_headline_and_a_reversed_compare_mirrors(runs: tuple[Path, Path, Path]) -> None:
    """A's value and interval of each metric are A's headline numbers, to the bit (one computation,
    seeded from the sessions); B against A draws what A against B draws, so it is its mirror."""
    a, _, b = runs
    names = ["context_tokens_mean", "loop_rate", "latency_p95", "cost_per_solved_session"]
    forward = compare(a, b, names).table.set_index(["metric", "strategy"])
    reverse = compare(b, a, names).table.set_index(["metric", "strategy"])
    for run_dir, side in ((a, "a"), (b, "b")):
        head = stats.headline(stats.load_sessions(run_dir)).set_index(["strategy", "metric"])
        for (metric, strategy), row in forward.iterrows():
            h = head.loc[(strategy, metric)]
            got = [row[side], row[f"{side}_low"], row[f"{side}_high"]]
            np.testing.assert_array_equal(got, [h["value"], h["ci_low"], h["ci_high"]])
            assert row[f"{side}_interval"] == h["interval"]
    for key, row in forward.iterrows():
        back = reverse.loc[key]
        assert back["diff"] == -row["diff"] and back["interval"] == row["interval"]
        if row["interval"] == "bootstrap":
            assert back["ci_low"] == pytest.approx(-row["ci_high"], rel=1e-12, abs=1e-15)
            assert back["ci_high"] == pytest.approx(-row["ci_low"], rel=1e-12, abs=1e-15)
