"""``ctxbench sweep`` (harness/cli/sweep.py) run as a real process: --param and --models make one run
directory with the sweep columns and page, byte-identical whatever the jobs, and every bad grid is one
error line with exit 2."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from tests.harness.cli.invoke import TINY, assert_usage_error, ctxbench, write_config

SWEEP_FLAGS = ["--param", "sw20.window_size=10,40", "--models", "frontier,small"]
SWEEP_LABELS = {f"{label}@{model}" for model in ("frontier", "small")
                for label in ("sw20[window_size=10]", "sw20[window_size=40]", "unbounded")}


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ctxbench sweep`` of the tiny config (no [sweep] table) with --param and --models, one job."""
    directory = tmp_path_factory.mktemp("sweep")
    write_config(directory, TINY)
    result = ctxbench("sweep", "tiny.toml", *SWEEP_FLAGS, "--jobs", "1", "--out", "swept", "--quiet", cwd=directory)
    assert result.returncode == 0, result.stderr
    return directory / "swept"


def test_sweep_with_param_and_models_writes_one_run_dir_with_the_sweep_columns(sweep_dir: Path) -> None:
    assert [p.name for p in sweep_dir.parent.iterdir() if p.is_dir()] == ["swept"]
    sessions = pd.read_parquet(sweep_dir / "sessions.parquet")
    assert {"model", "sweep_param", "sweep_value"} <= set(sessions.columns)
    assert set(sessions["strategy"]) == SWEEP_LABELS
    assert len(sessions) == TINY["sessions"] * len(SWEEP_LABELS)
    swept = sessions[sessions["strategy"].str.startswith("sw20[")]
    assert set(swept["sweep_param"]) == {"sw20.window_size"}
    assert set(swept["sweep_value"]) == {10.0, 40.0}
    assert set(sessions["model"]) == {"frontier", "small"}
    assert (sessions["model"] == sessions["strategy"].str.rpartition("@")[2]).all()
    unswept = sessions[sessions["strategy"].str.startswith("unbounded@")]
    assert (unswept["sweep_param"] == "").all() and unswept["sweep_value"].isna().all()
    manifest = json.loads((sweep_dir / "manifest.json").read_text())
    assert {v["label"] for v in manifest["variants"]} == SWEEP_LABELS


def test_sweep_report_links_the_sweep_page(sweep_dir: Path) -> None:
    assert 'href="sweep.html"' in (sweep_dir / "report.html").read_text()
    assert "(sweep.md)" in (sweep_dir / "report.md").read_text()
    assert (sweep_dir / "sweep.html").is_file() and (sweep_dir / "sweep.md").is_file()
    assert (sweep_dir / "plots" / "sweep-sw20.window_size.png").is_file()


def test_sweep_tables_are_byte_identical_with_two_jobs(sweep_dir: Path, tmp_path: Path) -> None:
    write_config(tmp_path, TINY)
    result = ctxbench("sweep", "tiny.toml", *SWEEP_FLAGS, "--executor", "process", "--jobs", "2", "--no-report",
                      "--out", "two", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sha256_of(tmp_path / "two" / "sessions.parquet") == sha256_of(sweep_dir / "sessions.parquet")
    assert sha256_of(tmp_path / "two" / "calls.parquet") == sha256_of(sweep_dir / "calls.parquet")


def test_sweep_of_a_config_without_a_sweep_table_and_no_flags_exits_2_with_one_line(tmp_path: Path) -> None:
    write_config(tmp_path, TINY)
    result = ctxbench("sweep", "tiny.toml", "--out", "out", cwd=tmp_path)
    assert_usage_error(result, "tiny.toml", "no [sweep] table", "--param", "--models")
    assert not (tmp_path / "out").exists()


BAD_SWEEP_FLAGS: dict[str, tuple[list[str], list[str]]] = {
    "param-without-values": (["--param", "sw20.window_size"], ["--param", "STRATEGY.PARAM=V1,V2"]),
    "param-with-empty-values": (["--param", "sw20.window_size="], ["--param", "STRATEGY.PARAM=V1,V2"]),
    "param-without-key": (["--param", "=10,20"], ["--param", "STRATEGY.PARAM=V1,V2"]),
    "param-without-dot": (["--param", "window_size=10"], ["sweep.params", "window_size"]),
    "param-unknown-strategy": (["--param", "nope.window_size=10"], ["sweep.params.nope.window_size", "'nope'"]),
    "param-unknown-param": (["--param", "sw20.windw=10"], ["sweep.params.sw20.windw", "no param 'windw'"]),
    "param-out-of-range": (["--param", "sw20.window_size=10,-5"], ["sweep.params.sw20.window_size[1]", "ge 0"]),
    "param-duplicate-values": (["--param", "sw20.window_size=10,10"], ["sw20.window_size", "appears twice"]),
    "models-unknown-profile": (["--models", "frontier,gpt-9"], ["sweep.models", "unknown profile 'gpt-9'"]),
}


@pytest.mark.parametrize(("flags", "expected"), list(BAD_SWEEP_FLAGS.values()), ids=list(BAD_SWEEP_FLAGS))
def test_sweep_with_bad_flag_exits_2_with_one_line_and_no_output(tmp_path: Path, flags: list[str],
                                                                 expected: list[str]) -> None:
    write_config(tmp_path, TINY)
    result = ctxbench("sweep", "tiny.toml", *flags, "--out", "out", cwd=tmp_path)
    assert_usage_error(result, *expected)
    assert not (tmp_path / "out").exists()
