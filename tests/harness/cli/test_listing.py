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


def test_list_runs_lists_unreadable_run_directories_as_damaged_and_goes_on(tmp_path: Path) -> None:
    """Whatever stands where a run directory's manifest should be (a folder, a named pipe, bytes that are
    no JSON, a manifest naming tables no file system can hold), that directory is listed as damaged, one
    line, and every other directory is still listed; a named pipe is never opened (it would block)."""
    import json
    import os

    from harness.run.config import RunConfig
    from harness.run.runner import run

    config = RunConfig(sessions=2, executor="serial", scenarios=[{"name": "log_triage", "turns": 20}],
                       strategies=[{"name": "unbounded"}])
    run(config, tmp_path / "done", quiet=True)
    manifest = json.loads((tmp_path / "done" / "manifest.json").read_text())
    damaged = {"as-a-folder": "manifest.json: not a file", "as-a-pipe": "manifest.json: not a file",
               "garbage": "manifest.json: not a valid manifest", "long-table-name": "is not a file name",
               "nul-in-table-name": "is not a file name", "line\nbreak": "manifest.json: not a file"}
    for name in damaged:
        (tmp_path / name).mkdir()
    (tmp_path / "as-a-folder" / "manifest.json").mkdir()
    os.mkfifo(tmp_path / "as-a-pipe" / "manifest.json")
    (tmp_path / "garbage" / "manifest.json").write_bytes(b"\x00\xff\xfe garbage \x1b[31m\n")
    for name, table in (("long-table-name", "t" * 300), ("nul-in-table-name", "a\u0000b")):
        (tmp_path / name / "manifest.json").write_text(json.dumps(manifest | {"sha256": {table: "0" * 64}}))
    (tmp_path / "line\nbreak" / "manifest.json").mkdir()
    result = ctxbench("list", "runs", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(damaged) + 1
    listed = dict(line.split(maxsplit=1) for line in lines)
    assert listed[str(tmp_path / "done")].startswith("finished: 2 session rows")
    for name, why in damaged.items():
        shown = str(tmp_path / name).replace("\n", "\\n")
        assert listed[shown].startswith("damaged: ") and why in listed[shown], (name, listed[shown])
