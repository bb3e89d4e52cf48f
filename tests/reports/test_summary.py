"""The summary a run prints: its columns and ``--json`` keys are the names of ``reports.stats.METRICS``,
so every number it shows can be asked of ``ctxbench compare --metric`` under the same name; an unknown
name is a one-line usage error listing the valid ones."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.cli import main as cli_main
from harness.run.config import RunConfig
from harness.run.runner import run
from reports.stats import METRICS
from reports.summary import SUMMARY_METRICS, summary_records, summary_text
from tests.reports.runs import SMALL_RUN


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("summary") / "run"
    run(RunConfig(**SMALL_RUN), out, quiet=True)
    return out


def test_the_summary_names_are_metric_names() -> None:
    assert set(SUMMARY_METRICS) <= set(METRICS)


def test_the_printed_columns_and_json_keys_are_the_metric_names(small_run: Path) -> None:
    sessions = pd.read_parquet(small_run / "sessions.parquet")
    header = summary_text(sessions).splitlines()[0].split()
    assert header == ["sessions", *SUMMARY_METRICS]
    per = [n for n in SUMMARY_METRICS if METRICS[n].kind == "per"]
    for record in summary_records(sessions):
        assert set(record) == {"strategy", "sessions", *SUMMARY_METRICS, *(f"{n}_ci" for n in SUMMARY_METRICS),
                               *(f"{n}_interval" for n in SUMMARY_METRICS), *(f"{n}_support" for n in per)}


def test_every_summary_name_is_accepted_by_compare(small_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["compare", str(small_run), str(small_run), "--metric", ",".join(SUMMARY_METRICS)])
    out = capsys.readouterr().out
    assert code == 0
    for name in SUMMARY_METRICS:
        assert f"\n{name} (" in out


def test_an_unknown_metric_exits_2_with_one_line_listing_the_valid_names(
        small_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["compare", str(small_run), str(small_run), "--metric", "latency_s_mean"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("ctxbench: error: compare: unknown metric 'latency_s_mean' "
                                   "(did you mean 'latency_mean'?) (known: ")
    assert all(name in captured.err for name in METRICS)
