"""``ctxbench list`` (harness/cli/listing.py) run as a real process: every registered strategy,
scenario and model profile, one line each."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios
import strategies
from harness.sim.profiles import PROFILE_NAMES
from tests.harness.cli.invoke import ctxbench


def test_list_strategies_prints_each_one_line_with_its_source_research_set_first(tmp_path: Path) -> None:
    result = ctxbench("list", "strategies", cwd=tmp_path)
    assert result.returncode == 0
    lines = result.stdout.strip().splitlines()
    research, sdk = strategies.default_names(), [n for n in strategies.names() if strategies.get(n).sdk]
    assert len(research) == 10 and len(sdk) == 10  # the nine SDK managers and the strands bridge
    assert [line.split()[0] for line in lines] == research + sdk
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines)
    for line in lines:
        name = line.split()[0]
        source = strategies.get(name).source
        assert source and line.endswith(f"[{'SDK: ' if name in sdk else ''}{source}]"), line


def test_list_scenarios_prints_every_scenario_one_line_each(tmp_path: Path) -> None:
    result = ctxbench("list", "scenarios", cwd=tmp_path)
    assert result.returncode == 0
    lines = result.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == scenarios.names()
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines)


def test_list_models_prints_every_profile_with_its_window(tmp_path: Path) -> None:
    result = ctxbench("list", "models", cwd=tmp_path)
    assert result.returncode == 0
    lines = result.stdout.strip().splitlines()
    assert tuple(line.split()[0] for line in lines) == PROFILE_NAMES
    assert "window 200,000 tokens" in lines[PROFILE_NAMES.index("frontier")]


def test_list_runs_names_each_run_directory_with_its_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main
    from harness.run.config import RunConfig
    from harness.run.runner import run

    config = RunConfig(sessions=2, executor="serial", scenarios=[{"name": "log_triage", "turns": 20}],
                       strategies=[{"name": "unbounded"}])
    run(config, tmp_path / "done", quiet=True)
    run(config, tmp_path / "broken", quiet=True)
    (tmp_path / "broken" / "sessions.parquet").write_bytes(b"")
    (tmp_path / "started").mkdir()
    (tmp_path / "started" / "config.toml").write_text("")
    (tmp_path / "not-a-run").mkdir()
    assert main(["list", "runs", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [str(tmp_path / n) for n in ("broken", "done", "started")]
    assert "damaged: sessions.parquet: changed after the run" in lines[0]
    assert "finished: 2 session rows, 1 strategies, model frontier" in lines[1]
    assert lines[2].endswith("unfinished")


def test_list_runs_of_a_missing_folder_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    assert main(["list", "runs", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"ctxbench: error: list runs: {tmp_path / 'nope'}: "
                                                            "no such directory"]
