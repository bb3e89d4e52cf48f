"""The ``ctxbench`` command run as a real process (DESIGN.md, "CLI"): listings, validate, run with
--json, exit code 2 with one stderr line and nothing left behind for every bad input, and resume
after the process is killed part-way."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import tomli_w

import scenarios
import strategies
from harness.run.config import RunConfig
from harness.run.runner import plan, read_parts
from harness.sim.profiles import PROFILE_NAMES

ROOT = Path(__file__).resolve().parents[3]
KEY = ["scenario", "session_index", "strategy"]
TABLES = ("sessions.parquet", "calls.parquet")

TINY: dict[str, Any] = {
    "sessions": 4,
    "seed": 2,
    "batch_size": 2,
    "executor": "serial",
    "scenarios": [{"name": "mix", "turns": 20}],
    "strategies": [{"name": "sliding_window", "label": "sw20", "window_size": 20}, {"name": "unbounded"}],
}
#: Long enough (a few seconds, serial) that a signal lands while batches are still running.
LONG = TINY | {"sessions": 60, "seed": 9}


def command() -> list[str]:
    script = Path(sys.executable).parent / "ctxbench"
    return [str(script)] if script.exists() else [sys.executable, "-m", "harness.cli"]


def ctxbench(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command(), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=None if env is None else os.environ | env, check=False)


def write_config(directory: Path, data: dict[str, Any], name: str = "tiny.toml") -> Path:
    path = directory / name
    path.write_text(tomli_w.dumps(data))
    return path


def files_of(run_dir: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(run_dir)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


def table_bytes(run_dir: Path) -> dict[str, bytes]:
    return {name: (run_dir / name).read_bytes() for name in TABLES}


def plan_of(data: dict[str, Any]) -> list[Any]:
    return plan(RunConfig(**data))


def assert_usage_error(result: subprocess.CompletedProcess[str], *expected: str) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ctxbench: error: ")
    for part in expected:
        assert part in lines[0], (part, lines[0])
    return lines[0]


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


# Informational subcommands ---------------------------------------------------------------------------


def test_version_prints_the_package_version(tmp_path: Path) -> None:
    result = ctxbench("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"ctxbench {version('ctxbench')}"


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


def test_validate_default_example_exits_0(tmp_path: Path) -> None:
    result = ctxbench("validate", ROOT / "examples" / "default.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ok (1000 sessions, 10 strategies" in result.stdout
    assert result.stderr == ""


def test_validate_seed_article_example_exits_0(tmp_path: Path) -> None:
    result = ctxbench("validate", ROOT / "examples" / "seed-article.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ok (5000 sessions, 2 strategies" in result.stdout


def test_validate_complexity_trap_example_exits_0(tmp_path: Path) -> None:
    result = ctxbench("validate", ROOT / "examples" / "complexity-trap.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ok (1000 sessions, 4 strategies" in result.stdout


def test_validate_creates_no_run_directory(tmp_path: Path) -> None:
    write_config(tmp_path, TINY)
    result = ctxbench("validate", "tiny.toml", cwd=tmp_path)
    assert result.returncode == 0
    assert "ok (4 sessions, 2 strategies" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.toml"]


# run ---------------------------------------------------------------------------------------------------


def test_run_json_prints_a_parseable_summary(tmp_path: Path) -> None:
    write_config(tmp_path, TINY)
    result = ctxbench("run", "tiny.toml", "--out", "out", "--json", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    records = json.loads(result.stdout)
    assert sorted(r["strategy"] for r in records) == ["sw20", "unbounded"]
    assert all(r["sessions"] == 4 for r in records)
    for r in records:
        assert 0 <= r["success_rate"] <= 1
        assert {"context_tokens_mean", "tool_syntax_error_rate", "loop_rate", "latency_s_p95"} <= set(r)
        for metric in ("success_rate", "context_tokens_mean", "latency_s_p95", "cost_usd_per_session"):
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

BAD_FILES: dict[str, tuple[str, list[str]]] = {
    "unknown-strategy": ('sessions = 2\n[[strategies]]\nname = "nope"\n',
                         ["bad.toml", "unknown strategy 'nope'", ", ".join(strategies.names())]),
    "unknown-scenario": ('sessions = 2\n[[scenarios]]\nname = "nope"\n',
                         ["bad.toml", "unknown scenario 'nope'", ", ".join(scenarios.names())]),
    "strategy-param-out-of-range": ('sessions = 2\n[[strategies]]\nname = "sliding_window"\nwindow_size = -1\n',
                                    ["bad.toml", "window_size", "ge 0"]),
    "scenario-param-out-of-range": ('sessions = 2\n[[scenarios]]\nname = "mix"\nturns = 5\n',
                                    ["bad.toml", "turns", "ge 20"]),
    "sessions-out-of-range": ("sessions = 0\n", ["bad.toml", "sessions", "ge 1"]),
    "bad-toml": ("sessions = 2\nseed = = 3\n", ["bad.toml", "line 2"]),
    "unknown-model": ('sessions = 2\nmodel = "gpt-9"\n',
                      ["bad.toml", "unknown profile 'gpt-9'", ", ".join(PROFILE_NAMES)]),
    "unknown-model-base": ('sessions = 2\n[model]\nbase = "gpt-9"\n', ["bad.toml", "model.base", "gpt-9"]),
    "duplicate-label": ('sessions = 2\n[[strategies]]\nname = "unbounded"\nlabel = "x"\n'
                        '[[strategies]]\nname = "drop_all"\nlabel = "x"\n', ["bad.toml", "'x' is used twice"]),
}


@pytest.mark.parametrize(("text", "expected"), list(BAD_FILES.values()), ids=list(BAD_FILES))
def test_run_with_bad_config_exits_2_with_one_line_and_no_output(tmp_path: Path, text: str,
                                                                 expected: list[str]) -> None:
    (tmp_path / "bad.toml").write_text(text)
    result = ctxbench("run", "bad.toml", "--out", "out", cwd=tmp_path)
    assert_usage_error(result, *expected)
    assert result.stdout == ""
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("text", "expected"), [BAD_FILES["unknown-strategy"], BAD_FILES["bad-toml"],
                                                 BAD_FILES["strategy-param-out-of-range"]],
                         ids=["unknown-strategy", "bad-toml", "param-out-of-range"])
def test_validate_with_bad_config_exits_2_with_one_line(tmp_path: Path, text: str, expected: list[str]) -> None:
    (tmp_path / "bad.toml").write_text(text)
    assert_usage_error(ctxbench("validate", "bad.toml", cwd=tmp_path), *expected)


BAD_FLAGS: dict[str, tuple[list[str], list[str]]] = {
    "unknown-strategy-flag": (["--strategies", "sw20,nope"], ["--strategies", "'nope'", "sw20", "unbounded"]),
    "unknown-scenario-flag": (["--scenarios", "nope"], ["unknown scenario 'nope'", ", ".join(scenarios.names())]),
    "unknown-model-flag": (["--model", "gpt-9"], ["unknown profile 'gpt-9'", ", ".join(PROFILE_NAMES)]),
    "sessions-flag-out-of-range": (["--sessions", "0"], ["sessions", "ge 1"]),
    "jobs-flag-out-of-range": (["--jobs", "-1"], ["jobs", "ge 0"]),
    "shard-k-above-n": (["--shard", "3/2"], ["--shard", "'3/2'"]),
    "shard-k-zero": (["--shard", "0/2"], ["--shard", "'0/2'"]),
    "shard-n-zero": (["--shard", "1/0"], ["--shard", "'1/0'"]),
    "shard-not-a-fraction": (["--shard", "half"], ["--shard", "'half'"]),
    "shard-negative": (["--shard=-1/2"], ["--shard", "'-1/2'"]),
}


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


def test_merge_of_different_configs_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    write_config(tmp_path, TINY)
    for k, seed in ((1, "1"), (2, "2")):
        done = ctxbench("run", "tiny.toml", "--seed", seed, "--shard", f"{k}/2", "--out", f"s{k}", "--quiet",
                        cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    result = ctxbench("merge", "merged", "s1", "s2", cwd=tmp_path)
    assert_usage_error(result, "different configs")
    assert not (tmp_path / "merged").exists()


def test_merge_of_a_missing_directory_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    result = ctxbench("merge", "merged", "nowhere", cwd=tmp_path)
    assert_usage_error(result, "nowhere")
    assert not (tmp_path / "merged").exists()


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
    previous = signal.getsignal(signal.SIGINT)
    if previous == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen([*command(), "run", "long.toml", "--out", out, "--executor", "serial", "--quiet"],
                                cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        signal.signal(signal.SIGINT, previous)
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
    session_rows, _ = read_parts(killed / "parts")
    assert len(session_rows) == len({(r["scenario"], r["session_index"], r["strategy"]) for r in session_rows})



# sweep ---------------------------------------------------------------------------------------------------

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


BAD_FLAG_CASES = [("run", *case) for case in BAD_FLAGS.values()] + [("sweep", *case) for case in
                                                                     BAD_SWEEP_FLAGS.values()]


@pytest.mark.parametrize(("command", "flags", "expected"), BAD_FLAG_CASES,
                         ids=[f"run-{k}" for k in BAD_FLAGS] + [f"sweep-{k}" for k in BAD_SWEEP_FLAGS])
def test_bad_flag_exits_2_with_one_line_and_no_output(tmp_path: Path, command: str, flags: list[str],
                                                      expected: list[str]) -> None:
    write_config(tmp_path, TINY)
    result = ctxbench(command, "tiny.toml", *flags, "--out", "out", cwd=tmp_path)
    assert_usage_error(result, *expected)
    assert not (tmp_path / "out").exists()
