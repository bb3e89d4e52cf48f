"""ctxbench compare: threshold parsing, the gate's exit codes through the CLI, identical runs, and
one-line usage errors. Run B is run A with known changes written into its sessions table, so every
difference (and whether a threshold is crossed) is known exactly."""

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
from reports.compare import Threshold, compare, parse_metrics, parse_threshold
from reports.stats import METRICS
from tests.reports.runs import SMALL_RUN, replace_table

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


@pytest.mark.parametrize(("text", "a", "diff", "crossed"), [
    ("loop_rate:+2pp", 0.10, 0.03, True),
    ("loop_rate:+2pp", 0.10, 0.02, False),  # exactly at the threshold: not crossed
    ("loop_rate:+2pp", 0.10, -0.30, False),  # the other direction never fails
    ("success_rate:-2pp", 0.80, -0.05, True),
    ("success_rate:-2pp", 0.80, 0.05, False),
    ("context_tokens_mean:+5%", 1000.0, 51.0, True),
    ("context_tokens_mean:+5%", 1000.0, 49.0, False),
    ("context_tokens_mean:+5%", 0.0, 1.0, True),  # any increase from zero is infinitely relative
    ("context_tokens_mean:+5%", 0.0, 0.0, False),
    ("input_tokens:+1000", 5e5, 1001.0, True),
    ("input_tokens:+1000", 5e5, 999.0, False),
    ("input_tokens:-1000", 5e5, -1001.0, True),
    ("input_tokens:+1000", 5e5, math.nan, False),
])
def test_threshold_crossing(text: str, a: float, diff: float, crossed: bool) -> None:
    assert parse_threshold(text).crossed(a, diff) is crossed


# compare() ---------------------------------------------------------------------------------------------


def test_identical_runs_give_zero_differences_with_intervals_around_zero(runs: tuple[Path, Path, Path]) -> None:
    a, same, _ = runs
    result = compare(a, same)
    table = result.table
    assert len(table) == len(METRICS) * len(STRATEGIES)
    assert set(table["strategy"]) == set(STRATEGIES)
    assert (table["diff"] == 0).all()
    assert (table["a"] == table["b"]).all()
    assert ((table["ci_low"] <= 0) & (table["ci_high"] >= 0)).all()
    assert not table["excludes_zero"].any()
    # The two runs are resampled independently: intervals have width where the metric varies.
    tokens = table[table["metric"] == "context_tokens_mean"]
    assert ((tokens["ci_low"] < 0) & (tokens["ci_high"] > 0)).all()
    assert not result.failed


def test_known_differences_are_measured(runs: tuple[Path, Path, Path]) -> None:
    a, _, b = runs
    table = compare(a, b, ["loop_rate", "context_tokens_mean"]).table.set_index(["metric", "strategy"])
    assert table.loc[("loop_rate", "unbounded"), "diff"] == pytest.approx(1 / 12)
    assert table.loc[("loop_rate", "sw20"), "diff"] == 0
    for strategy in STRATEGIES:
        row = table.loc[("context_tokens_mean", strategy)]
        assert row["diff"] / row["a"] == pytest.approx(CONTEXT_FACTOR - 1)
        assert row["ci_low"] <= row["diff"] <= row["ci_high"]
        assert row["a_low"] <= row["a"] <= row["a_high"]


def test_thresholds_add_their_metric_to_the_table(runs: tuple[Path, Path, Path]) -> None:
    a, _, b = runs
    result = compare(a, b, ["success_rate"], [Threshold("loop_rate:+2pp", "loop_rate", 1, 2.0, "pp")])
    assert list(dict.fromkeys(result.table["metric"])) == ["success_rate", "loop_rate"]
    assert [(x.strategy, x.threshold.metric) for x in result.breaches] == [("unbounded", "loop_rate")]


# The CLI gate ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fail_on", "code"), [
    (["loop_rate:+2pp"], 1),
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
                     "--fail-on", "loop_rate:+2pp", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert data["failed"] is True
    assert {r["metric"] for r in data["rows"]} == {"loop_rate", "success_rate", "latency_p95"}
    assert len(data["rows"]) == 3 * len(STRATEGIES)
    assert [(x["threshold"], x["strategy"]) for x in data["breaches"]] == [("loop_rate:+2pp", "unbounded")]
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
