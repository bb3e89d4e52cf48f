"""``ctxbench run`` (harness/cli/run.py) run as a real process (docs/design.md, "CLI"): --json, resume, exit
code 2 with one stderr line and nothing left behind for every bad input, and resume after the process
is killed part-way."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import scenarios
from harness.run.config import RunConfig
from harness.run.directory import read_parts
from harness.run.plan import plan
from harness.sim.profiles import PROFILE_NAMES
from tests.harness.cli.invoke import BAD_FILES, TINY, assert_usage_error, ctxbench, start, write_config

KEY = ["scenario", "session_index", "strategy"]
TABLES = ("sessions.parquet", "calls.parquet")
#: Long enough (a few seconds, serial) that a signal lands while batches are still running.
LONG = TINY | {"sessions": 60, "seed": 9}


def files_of(run_dir: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(run_dir)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


def table_bytes(run_dir: Path) -> dict[str, bytes]:
    return {name: (run_dir / name).read_bytes() for name in TABLES}


def plan_of(data: dict[str, Any]) -> list[Any]:
    return plan(RunConfig(**data))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("cli")
    write_config(directory, TINY)
    return directory


@pytest.fixture(scope="module")
def existing_run(workdir: Path) -> Path:
    """A finished run directory of the tiny config."""
    result = ctxbench("run", "tiny.toml", "--out", "existing", "--quiet", cwd=workdir)
    assert result.returncode == 0, result.stderr
    return workdir / "existing"


def test_run_json_prints_a_parseable_summary(tmp_path: Path) -> None:
    write_config(tmp_path, TINY)
    result = ctxbench("run", "tiny.toml", "--out", "out", "--json", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    meta = printed["run"]
    assert meta["run_dir"] == "out" and meta["run_id"] == "out" and len(meta["config_hash"]) == 64
    assert (meta["batches_run"], meta["batches_resumed"], meta["sessions_errored"]) == (2, 0, 0)
    assert meta["model"] == "frontier" and meta["rows"]["sessions.parquet"] == 8
    records = printed["strategies"]
    assert sorted(r["strategy"] for r in records) == ["sw20", "unbounded"]
    assert all(r["sessions"] == 4 for r in records)
    for r in records:
        assert 0 <= r["success_rate"] <= 1
        assert {"context_tokens_mean", "tool_syntax_error_rate", "loop_rate", "latency_p95"} <= set(r)
        for metric in ("success_rate", "context_tokens_mean", "latency_p95", "cost_per_session"):
            low, high = r[f"{metric}_ci"]
            assert low <= r[metric] + 1e-9 and r[metric] <= high + 1e-9, (metric, r)
    assert all((tmp_path / "out" / name).exists() for name in TABLES)


def test_run_again_into_the_same_directory_exits_0_and_resumes(existing_run: Path, workdir: Path) -> None:
    before = table_bytes(existing_run)
    result = ctxbench("run", "tiny.toml", "--out", "existing", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert f"0 batches run, {len(plan_of(TINY))} resumed" in result.stdout
    assert table_bytes(existing_run) == before


# Every bad input: exit 2, one line, no traceback, nothing left behind ------------------------------------


@pytest.mark.parametrize(("text", "expected"), list(BAD_FILES.values()), ids=list(BAD_FILES))
def test_run_with_bad_config_exits_2_with_one_line_and_no_output(tmp_path: Path, text: str,
                                                                 expected: list[str]) -> None:
    (tmp_path / "bad.toml").write_text(text)
    result = ctxbench("run", "bad.toml", "--out", "out", cwd=tmp_path)
    assert_usage_error(result, *expected)
    assert result.stdout == ""
    assert not (tmp_path / "out").exists()


BAD_FLAGS: dict[str, tuple[list[str], list[str]]] = {
    "unknown-strategy-flag": (["--strategies", "sw20,nope"], ["--strategies", "'nope'", "sw20", "unbounded"]),
    "unknown-scenario-flag": (["--scenarios", "nope"], ["--scenarios: unknown 'nope'", ", ".join(scenarios.names())]),
    "unknown-model-flag": (["--model", "gpt-9"], ["unknown profile 'gpt-9'", ", ".join(PROFILE_NAMES)]),
    "sessions-flag-out-of-range": (["--sessions", "0"], ["sessions", "ge 1"]),
    "jobs-flag-out-of-range": (["--jobs", "-1"], ["jobs", "ge 0"]),
    "shard-k-above-n": (["--shard", "3/2"], ["--shard", "'3/2'"]),
    "shard-k-zero": (["--shard", "0/2"], ["--shard", "'0/2'"]),
    "shard-n-zero": (["--shard", "1/0"], ["--shard", "'1/0'"]),
    "shard-not-a-fraction": (["--shard", "half"], ["--shard", "'half'"]),
    "shard-negative": (["--shard=-1/2"], ["--shard", "'-1/2'"]),
}


@pytest.mark.parametrize(("flags", "expected"), list(BAD_FLAGS.values()), ids=list(BAD_FLAGS))
def test_run_with_bad_flag_exits_2_with_one_line_and_no_output(tmp_path: Path, flags: list[str],
                                                               expected: list[str]) -> None:
    write_config(tmp_path, TINY)
    result = ctxbench("run", "tiny.toml", *flags, "--out", "out", cwd=tmp_path)
    assert_usage_error(result, *expected)
    assert not (tmp_path / "out").exists()


def test_run_with_missing_config_file_exits_2_naming_it(tmp_path: Path) -> None:
    result = ctxbench("run", "absent.toml", "--out", "out", cwd=tmp_path)
    assert_usage_error(result, "absent.toml", "no such file")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flags", [["--seed", "99"], ["--sessions", "5"], ["--strategies", "unbounded"],
                                   ["--model", "mid"]])
def test_run_into_directory_of_another_config_exits_2_and_leaves_it_untouched(existing_run: Path, workdir: Path,
                                                                              flags: list[str]) -> None:
    before = files_of(existing_run)
    result = ctxbench("run", "tiny.toml", *flags, "--out", "existing", cwd=workdir)
    assert_usage_error(result, "existing", "holds a run of another config", "--out")
    assert files_of(existing_run) == before


def test_no_resume_on_an_existing_run_exits_2_and_leaves_it_untouched(existing_run: Path, workdir: Path) -> None:
    before = files_of(existing_run)
    result = ctxbench("run", "tiny.toml", "--out", "existing", "--no-resume", cwd=workdir)
    assert_usage_error(result, "already holds this run", "--no-resume")
    assert files_of(existing_run) == before


def test_run_of_a_shard_without_batches_exits_cleanly(tmp_path: Path) -> None:
    write_config(tmp_path, TINY | {"sessions": 2})
    assert len(plan_of(TINY | {"sessions": 2})) == 1
    result = ctxbench("run", "tiny.toml", "--shard", "2/2", "--out", "out", "--quiet", cwd=tmp_path)
    assert "Traceback" not in result.stderr
    assert result.returncode in (0, 2), result.stderr
    assert len(result.stderr.strip().splitlines()) <= 1


@pytest.mark.parametrize("flags", [["--executor", "threads"], ["--sessions", "many"]], ids=["executor", "sessions"])
def test_run_with_unparseable_flag_exits_2_with_one_line(tmp_path: Path, flags: list[str]) -> None:
    write_config(tmp_path, TINY)
    result = ctxbench("run", "tiny.toml", *flags, "--out", "out", cwd=tmp_path)
    assert not (tmp_path / "out").exists()
    assert_usage_error(result)


def test_run_with_out_naming_a_file_exits_2_with_one_line(tmp_path: Path) -> None:
    write_config(tmp_path, TINY)
    (tmp_path / "afile").write_text("keep me\n")
    result = ctxbench("run", "tiny.toml", "--out", "afile", cwd=tmp_path)
    assert (tmp_path / "afile").read_text() == "keep me\n"
    assert_usage_error(result, "afile")


def test_run_with_bad_scheduler_address_exits_2_and_leaves_no_directory(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="the dask executor needs the optional extra `distributed`")
    write_config(tmp_path, TINY)
    result = ctxbench("run", "tiny.toml", "--executor", "dask", "--scheduler", "not-an-address", "--out", "out",
                      cwd=tmp_path, env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
    assert not (tmp_path / "out").exists()
    assert_usage_error(result, "scheduler")


# Resume after the process is killed part-way ------------------------------------------------------------


@pytest.fixture(scope="module")
def long_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted run of the long config."""
    directory = tmp_path_factory.mktemp("long")
    write_config(directory, LONG, "long.toml")
    result = ctxbench("run", "long.toml", "--out", "reference", "--executor", "serial", "--quiet", cwd=directory)
    assert result.returncode == 0, result.stderr
    return directory / "reference"


def start_and_kill(cwd: Path, out: str, sig: signal.Signals) -> int:
    """Start a long run, wait for its first finished batch, send ``sig``; the exit status."""
    # An ignored SIGINT is inherited across exec: a runner started in the background must not hide it.
    proc = start("run", "long.toml", "--out", out, "--executor", "serial", "--quiet", cwd=cwd,
                 stderr=subprocess.DEVNULL)
    parts = cwd / out / "parts"
    deadline = time.monotonic() + 60
    try:
        while not (parts.is_dir() and any(parts.glob("*.jsonl"))):
            assert proc.poll() is None, "the run ended before its first batch was seen"
            assert time.monotonic() < deadline, "no batch finished within 60 s"
            time.sleep(0.02)
        proc.send_signal(sig)
        return proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_killed_run_resumes_to_the_same_tables_as_an_uninterrupted_run(tmp_path: Path, long_reference: Path,
                                                                       sig: signal.Signals) -> None:
    write_config(tmp_path, LONG, "long.toml")
    total = len(plan_of(LONG))
    status = start_and_kill(tmp_path, "killed", sig)
    assert status != 0
    if sig == signal.SIGKILL:
        assert status == -signal.SIGKILL
    killed = tmp_path / "killed"
    done_before = len(list((killed / "parts").glob("*.jsonl")))
    assert 1 <= done_before < total
    assert not (killed / "sessions.parquet").exists()

    result = ctxbench("run", "long.toml", "--out", "killed", "--executor", "serial", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    match = re.search(r"(\d+) batches run, (\d+) resumed", result.stdout)
    assert match, result.stdout
    ran, resumed = int(match[1]), int(match[2])
    assert resumed >= done_before
    assert ran + resumed == total

    assert table_bytes(killed) == table_bytes(long_reference)
    sessions = pd.read_parquet(killed / "sessions.parquet")
    assert len(sessions) == LONG["sessions"] * len(LONG["strategies"])
    assert not sessions.duplicated(KEY).any()
    session_rows, _ = read_parts(killed)
    assert len(session_rows) == len({(r["scenario"], r["session_index"], r["strategy"]) for r in session_rows})
