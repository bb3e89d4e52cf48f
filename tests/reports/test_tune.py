"""`reports.tune`: objective values from a sessions table, the front with intervals and paired differences
against the default settings, the page and the stdout table, read from a tune directory only."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.run.config import TuneRange, config_from_data
from harness.run.tune import Objective, SimulatedEvaluator, TuneSettings, tune
from harness.run.tune_space import search_space
from reports.inputs import ReportInputError
from reports.tune import front_table, front_text, objective_values, read_tune, write_tune_report

OBJECTIVES = ("success_rate", "cost_per_solved_session")


def sessions_frame() -> pd.DataFrame:
    """Two strategies on four sessions: ``a`` solves 3 for 1 USD each, ``b`` solves 1 for 2 USD."""
    rows = []
    for i in range(4):
        rows.append({"scenario": "s", "session_index": i, "strategy": "a", "outcome": "success" if i < 3 else "stuck",
                     "loop_detected": False, "cost_usd": 1.0})
        rows.append({"scenario": "s", "session_index": i, "strategy": "b", "outcome": "success" if i == 0 else "stuck",
                     "loop_detected": False, "cost_usd": 2.0})
    return pd.DataFrame(rows)


def test_objective_values_are_the_metrics_point_values() -> None:
    values = objective_values(sessions_frame(), ["a", "b", "none"], OBJECTIVES)
    assert values["a"] == [0.75, pytest.approx(4 / 3)]
    assert values["b"] == [0.25, 8.0]
    assert all(math.isnan(v) for v in values["none"])  # no sessions: undefined, not zero


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tune") / "out"
    config = config_from_data({"sessions": 6, "seed": 5, "executor": "serial", "jobs": 1, "batch_size": 3,
                               "scenarios": [{"name": "db_slow_query", "turns": 20}]})
    space = search_space("sliding_window", {"window_size": TuneRange(low=4, high=60)})
    objectives = (Objective("success_rate", True), Objective("cost_per_solved_session", False))
    settings = TuneSettings(space, objectives, 4, 2, 3, "nsga2", 5)
    tune(settings, SimulatedEvaluator(config), lambda f, labels: objective_values(f, labels, OBJECTIVES), out,
         quiet=True)
    return out


def test_front_table_has_intervals_and_paired_differences(tuned: Path) -> None:
    data = read_tune(tuned)
    frame = front_table(data)
    assert set(frame["label"]) == {data.default, *data.front}
    assert (frame["n"] == 6).all()  # every point and the default on the full session count
    for _, row in frame.iterrows():
        if math.isfinite(row["ci_low"]):
            assert row["ci_low"] <= row["value"] <= row["ci_high"]
    default = frame[frame["is_default"]]
    assert (default["diff"] == 0).all()
    # A point's difference is its value minus the default's, over the same sessions.
    values = frame.set_index(["label", "objective"])["value"]
    for _, row in frame[~frame["is_default"]].iterrows():
        expected = values[row["label"], row["objective"]] - values[data.default, row["objective"]]
        assert row["diff"] == pytest.approx(expected, nan_ok=True)


def test_the_page_plot_and_stdout_table(tuned: Path) -> None:
    written = write_tune_report(tuned)
    assert {p.name for p in written} == {"tune.html", "tune.md"}
    html = (tuned / "tune.html").read_text()
    assert "Pareto front" in html and "data:image/png;base64," in html
    assert "plots/tune-front.png" in (tuned / "tune.md").read_text()
    frame = pd.read_parquet(tuned / "front.parquet")
    text = front_text(frame)
    assert text.splitlines()[0].startswith("label")
    assert "(default)" in text and len(text.splitlines()) == 1 + frame["label"].nunique()
    assert np.isfinite(frame["value"]).any()


def test_a_directory_without_a_finished_tune_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ReportInputError, match="not a tune directory"):
        read_tune(tmp_path)
    (tmp_path / "tune.json").write_text('{"identity": {}}')
    with pytest.raises(ReportInputError, match="no finished tune"):
        read_tune(tmp_path)
