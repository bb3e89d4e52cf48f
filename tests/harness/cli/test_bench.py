"""``ctxbench bench``: one table of P1-P7 from one run of the command (at tiny sizes here), and one
error line for a bad flag or config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import build
from harness.cli import bench
from harness.cli import main as cli_main
from harness.run.speed import SpeedGoal
from tests.harness.cli.invoke import TINY, assert_usage_error, ctxbench, write_config


@pytest.mark.slow
def test_bench_measures_every_goal_in_one_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(bench.SIZES, "quick", (4, 1, 20, 40, (6, 12), (3, 2)))
    config = write_config(tmp_path, TINY)
    assert cli_main(["bench", "--quick", "--json", "--config", str(config), "--jobs", "1"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    goals = {g["name"].split()[0]: g for g in data["goals"]}
    assert list(goals) == ["P1", "P2", "P3", "P4", "P5", "P6", "P7"]
    assert goals["P1"]["values"]["rows"] == 4 * 2  # 4 sessions x 2 strategies
    p4 = goals["P4"]["values"]
    assert p4["run_mb"] > 0 and p4["small_mb"] > 0 and p4["large_mb"] > 0
    assert goals["P6"]["values"]["session_rows"] == 40  # 8 rows a copy, five copies
    assert goals["P6"]["met"] is None  # judged only at 30,000 rows
    p7 = goals["P7"]["values"]
    assert p7["rows"]["sessions.parquet"] == 3 * 2 and p7["files"] == 2  # 3 recorded sessions x 2 strategies
    assert p7["p1_replays_per_s"] == goals["P1"]["values"]["replays_per_s"]
    assert data["machine"]["cpus"] >= 1
    assert data["machine"]["build"] == build.current().describe()  # compiled or the sources: the rates differ
    # Each stage is announced on stderr: the full command takes minutes.
    assert [line.split()[2] for line in err.splitlines() if line.startswith("ctxbench: bench:")] == list(goals)


def test_the_table_aligns_the_goals_and_says_how_each_was_measured() -> None:
    goals = [SpeedGoal("P1 replays per second", ">= 500/s", "123/s", False, "a run", {}),
             SpeedGoal("P5 operations vs strands", "<= 1x", "not measured", None, "strands missing", {})]
    lines = bench.table(goals, 61.0).splitlines()
    assert lines[0].startswith("ctxbench bench: ") and lines[0].endswith("measured in 61 s")
    assert f" {build.current().describe()}, " in lines[0]
    header, first, second = lines[2:5]
    assert header.split() == ["goal", "target", "measured", "met"]
    assert first.index("123/s") == header.index("measured") == second.index("not measured")
    assert first.endswith("no") and second.endswith("-")
    assert lines[-2:] == ["- P1: a run", "- P5: strands missing"]


@pytest.mark.parametrize(("flags", "expected"), [
    (["--jobs", "-1"], ["--jobs", "-1"]),
    (["--config", "missing.toml"], ["missing.toml"]),
    (["--jobs", "two"], ["--jobs", "two"]),
], ids=["negative-jobs", "missing-config", "jobs-not-a-number"])
def test_bench_refuses_bad_flags_in_one_line(tmp_path: Path, flags: list[str], expected: list[str]) -> None:
    assert_usage_error(ctxbench("bench", "--quick", *flags, cwd=tmp_path), *expected)
