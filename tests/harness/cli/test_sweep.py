"""``ctxbench sweep`` (harness/cli/sweep.py) run as a real process: --param and --models make one run
directory with the sweep columns and page, byte-identical whatever the jobs, and every bad grid is one
error line with exit 2. The run flags it shares with ``run`` are checked in-process for both commands:
each wrong value is one line naming the flag, and nothing runs."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.cli import main
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


def main_exit(argv: list[str]) -> int:
    """``ctxbench`` in-process: its exit code, argparse's own errors included (they exit)."""
    try:
        return main(argv)
    except SystemExit as e:
        return int(e.code or 0)


#: The run flags `run` and `sweep` share (`add_run_flags`, `load_run_config`): each wrong value is one line
#: naming the flag, before anything runs.
BAD_RUN_FLAGS: dict[str, tuple[list[str], str]] = {
    "sessions-negative": (["--sessions", "-1"], "--sessions: Input should be greater than or equal to 1"),
    "sessions-zero": (["--sessions", "0"], "--sessions: Input should be greater than or equal to 1"),
    "sessions-huge": (["--sessions", "99999999999"], "--sessions: Input should be less than or equal to 10000000"),
    "sessions-float": (["--sessions", "2.5"], "argument --sessions: invalid int value: '2.5'"),
    "seed-negative": (["--seed", "-1"], "--seed: Input should be greater than or equal to 0"),
    "seed-past-64-bits": (["--seed", str(2**70)], "--seed: Input should be less than or equal to 9223372036854775807"),
    "jobs-negative": (["--jobs", "-3"], "--jobs: Input should be greater than or equal to 0"),
    "jobs-huge": (["--jobs", "100000"], "--jobs: Input should be less than or equal to 1024"),
    "model-unknown": (["--model", "nosuch"], "--model: unknown profile 'nosuch' (known: frontier, mid"),
    "strategies-empty": (["--strategies", ",,,"], "--strategies: expected comma-separated names, got ',,,'"),
    "strategies-unknown": (["--strategies", "nosuch"], "--strategies: unknown 'nosuch' (known: sliding_window, sw20"),
    "scenarios-empty": (["--scenarios", " , "], "--scenarios: expected comma-separated names, got ' , '"),
    "scenarios-unknown": (["--scenarios", "nosuch"], "--scenarios: unknown 'nosuch' (known: alert_chain"),
    "scenarios-twice": (["--scenarios", "mix,mix"], "--scenarios: 'mix' appears twice"),
    "shard-zero": (["--shard", "0/2"], "--shard: expected K/N with 1 <= K <= N, got '0/2'"),
    "shard-past-n": (["--shard", "3/2"], "--shard: expected K/N with 1 <= K <= N, got '3/2'"),
    "shard-letters": (["--shard", "a/b"], "--shard: expected K/N with 1 <= K <= N, got 'a/b'"),
    "shard-of-zero": (["--shard", "1/0"], "--shard: expected K/N with 1 <= K <= N, got '1/0'"),
    "scheduler-not-an-address": (["--scheduler", "nope"], "--scheduler: expected an address like tcp://HOST:8786"),
}


@pytest.mark.parametrize("command", ["run", "sweep"])
@pytest.mark.parametrize(("flags", "expected"), list(BAD_RUN_FLAGS.values()), ids=list(BAD_RUN_FLAGS))
def test_a_bad_run_flag_exits_2_with_one_line_naming_it_and_runs_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str,
        flags: list[str], expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, TINY)
    grid = ["--param", "sw20.window_size=10,20"] if command == "sweep" else []
    assert main_exit([command, "tiny.toml", *grid, *flags, "--out", "out"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    assert err.startswith("ctxbench: error: ") and expected in err, err
    assert "Traceback" not in err and "tiny.toml" not in err  # the flag is wrong, not the file
    assert not (tmp_path / "out").exists()


#: Grid flags of `sweep` beyond BAD_SWEEP_FLAGS: values no one means, a flag given twice, an empty list.
HOSTILE_SWEEP_FLAGS: dict[str, tuple[list[str], str]] = {
    "param-twice": (["--param", "sw20.window_size=10", "--param", "sw20.window_size=20"],
                    "--param: sw20.window_size is given twice (list every value in one --param)"),
    "param-text-for-a-number": (["--param", "sw20.window_size=10,inf"],
                                'tiny.toml with --param: sweep.params.sw20.window_size[1]: window_size: Input should '
                                'be a valid integer (got "inf")'),
    "param-json-nan": (["--param", "sw20.threshold=0.5,NaN"],
                       "tiny.toml with --param: sweep.params.sw20.threshold[1]: nan is not a finite number"),
    "param-overflowing-to-inf": (["--param", "sw20.threshold=1e999"],
                                 "tiny.toml with --param: sweep.params.sw20.threshold[0]: inf is not a finite number"),
    "param-quoted-number": (["--param", 'sw20.window_size="10"'], 'Input should be a valid integer (got "10")'),
    "param-past-64-bits": (["--param", f"sw20.window_size={2**63}"], "not a 64-bit integer"),
    "models-empty": (["--models", ",,"], "--models: expected comma-separated names, got ',,'"),
    "models-unknown": (["--models", "nosuch"], "tiny.toml with --models: sweep.models[0]: unknown profile 'nosuch'"),
}


@pytest.mark.parametrize(("flags", "expected"), list(HOSTILE_SWEEP_FLAGS.values()), ids=list(HOSTILE_SWEEP_FLAGS))
def test_a_hostile_grid_flag_exits_2_with_one_line_and_runs_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flags: list[str],
        expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, TINY)
    assert main_exit(["sweep", "tiny.toml", *flags, "--out", "out"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("ctxbench: error: "), err
    assert expected in err, err
    assert not (tmp_path / "out").exists()


def test_a_sweep_at_the_edges_of_every_bound_runs_with_finite_numbers(tmp_path: Path) -> None:
    """The bounds are what keeps a run finite: the steepest recall curve at the shortest half-length, the
    noisiest and slowest latency and the dearest prices the profile allows still give a finite summary."""
    extreme = {"base": "mid", "L_half": 1.0, "k": 20.0, "L_half_literal": math.inf, "sigma": 5.0, "decode_tps": 0.1,
               "base_s": 3600.0, "b_uncached": 1.0, "price_in": 10_000.0, "price_out": 10_000.0, "g_L": 100.0,
               "g_N": 100.0}
    data = TINY | {"sessions": 2, "model": extreme, "scenarios": [{"name": "log_triage", "turns": 20}]}
    write_config(tmp_path, data)
    result = ctxbench("sweep", "tiny.toml", "--param", "sw20.window_size=0,1000000", "--no-report", "--json",
                      "--quiet", "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "NaN" not in result.stdout and "Infinity" not in result.stdout
    sessions = pd.read_parquet(tmp_path / "out" / "sessions.parquet")
    numbers = sessions.select_dtypes("number").drop(columns=["sweep_value"])
    assert numbers.notna().all().all() and np.isfinite(numbers.to_numpy(dtype=float)).all()
