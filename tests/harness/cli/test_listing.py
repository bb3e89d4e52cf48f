"""``ctxbench list`` (harness/cli/listing.py) run as a real process: every registered strategy,
scenario and model profile, one line each."""

from __future__ import annotations

from pathlib import Path

import scenarios
import strategies
from harness.sim.profiles import PROFILE_NAMES
from tests.harness.cli.invoke import ctxbench


def test_list_strategies_prints_all_ten_one_line_each(tmp_path: Path) -> None:
    result = ctxbench("list", "strategies", cwd=tmp_path)
    assert result.returncode == 0
    lines = result.stdout.strip().splitlines()
    assert len(strategies.names()) == 10
    assert [line.split()[0] for line in lines] == strategies.names()
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines)


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
