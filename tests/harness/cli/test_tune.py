"""``ctxbench tune`` (harness/cli/tune.py): end to end on a tiny budget (trials table, front with intervals, ready
configs, the page, the front on stdout), the config's ``[tune]`` table, the traces mode on the sample traces, a
second tune into a busy directory, SIGINT keeping the finished trials, and each bad input one line, exit 2."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.cli import main
from harness.run.config import load_config
from tests.harness.cli.invoke import assert_usage_error, ctxbench, start, write_config

TRACES = Path(__file__).resolve().parents[2] / "data" / "traces"
TINY_TUNE: dict[str, Any] = {"sessions": 6, "seed": 1, "executor": "serial", "jobs": 1, "batch_size": 2,
             "scenarios": [{"name": "log_triage", "turns": 20}],
             "tune": {"strategy": "sliding_window", "trials": 4, "min_sessions": 2,
                      "params": {"window_size": {"low": 4, "high": 40, "log": True}}}}


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``ctxbench tune`` of the tiny config's [tune] table, in-process; the directory and stdout."""
    directory = tmp_path_factory.mktemp("tune")
    write_config(directory, TINY_TUNE)
    result = ctxbench("tune", "tiny.toml", "--out", "out", cwd=directory)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return directory / "out", result.stdout


def test_tune_writes_the_trials_front_configs_and_page(tuned: tuple[Path, str]) -> None:
    out, stdout = tuned
    trials = pd.read_parquet(out / "trials.parquet")
    assert list(trials["label"]) == [f"sliding_window@t00{n}" for n in range(4)]
    assert trials.loc[0, "sessions"] == 6 and bool(trials.loc[0, "is_default"])
    front = pd.read_parquet(out / "front.parquet")
    assert set(front["objective"]) == {"success_rate", "cost_per_solved_session"}
    points = sorted(set(front["label"]))
    assert points and set(points) >= set(trials.loc[trials["on_front"], "label"])
    default_rows = front[front["is_default"]]
    assert (default_rows["diff"] == 0).all()
    for label in trials.loc[trials["on_front"], "label"]:
        config = load_config(out / "front" / f"{label}.toml")
        assert config.sessions == 6 and [e.key for e in config.strategies] == [label]
    for page in ("tune.html", "tune.md"):
        assert "Pareto front" in (out / page).read_text()
    assert (out / "plots" / "tune-front.png").read_bytes()[:4] == b"\x89PNG"
    assert stdout.splitlines()[0].startswith("label") and "sliding_window@t000 (default)" in stdout


def test_tune_again_resumes_the_finished_study_and_prints_the_same_front(tuned: tuple[Path, str]) -> None:
    out, stdout = tuned
    before = (out / "trials.parquet").read_bytes(), (out / "front.parquet").read_bytes()
    result = ctxbench("tune", "tiny.toml", "--out", "out", "--quiet", cwd=out.parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout == stdout and result.stderr == ""
    assert ((out / "trials.parquet").read_bytes(), (out / "front.parquet").read_bytes()) == before


def test_a_second_tune_into_a_busy_directory_is_refused(tuned: tuple[Path, str], tmp_path: Path) -> None:
    write_config(tmp_path, TINY_TUNE | {"sessions": 60, "tune": TINY_TUNE["tune"] | {"trials": 40}})
    first = start("tune", "tiny.toml", "--out", "busy", "--quiet", cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "busy" / "study.db").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        second = ctxbench("tune", "tiny.toml", "--out", "busy", cwd=tmp_path)
        assert_usage_error(second, "busy", "in use by another command")
        first.send_signal(signal.SIGINT)
        assert first.wait(timeout=60) == 130
    finally:
        if first.poll() is None:
            first.kill()
    # Ctrl-C kept what was told: the trials told before it, numbered from 0 (a generation may be told in part;
    # tests/harness/run/test_tune.py checks that a resume draws the rest again identically).
    import optuna

    kept = optuna.load_study(study_name="tune", storage=f"sqlite:///{tmp_path / 'busy' / 'study.db'}").trials
    assert [t.number for t in kept] == list(range(len(kept)))
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in kept)


def test_tune_on_recorded_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["tune", "--traces", str(TRACES / "atif"), str(TRACES / "openai-chat"), "--strategy", "sliding_window",
                 "--trials", "3", "--param", "window_size=2:30", "--executor", "serial", "--out",
                 str(tmp_path / "out"), "--quiet", "--no-report"])
    assert code == 0
    front = pd.read_parquet(tmp_path / "out" / "front.parquet")
    assert set(front["objective"]) == {"input_tokens", "needed_hidden"}
    trials = pd.read_parquet(tmp_path / "out" / "trials.parquet")
    # Five recorded sessions: too few to race, so every trial ran on all of them.
    assert set(trials["sessions"]) == {int(front["n"].max())}
    assert "sliding_window@t000" in capsys.readouterr().out


@pytest.mark.parametrize(("flags", "words"), [
    (["--strategy", "slidng_window"], ["--strategy", "did you mean 'sliding_window'"]),
    (["--strategy", "unbounded"], ["nothing to search"]),
    (["--objectives", "success_rate,cost_per_solvd"], ["--objectives", "cost_per_solvd", "did you mean"]),
    (["--objectives", "success_rate"], ["--objectives", "two or three"]),
    (["--param", "window_size=-3:10"], ["--param window_size", ">= 0"]),
    (["--param", "window_size=30:10"], ["--param window_size", "above high"]),
    (["--param", "windowsize=1:4"], ["--param windowsize", "did you mean 'window_size'"]),
    (["--trials", "1"], ["--trials"]),
    (["--min-sessions", "-1"], ["--min-sessions"]),
    (["--traces", "missing.json"], ["missing.json"]),
    (["--traces", str(TRACES / "atif"), "--strategy", "sliding_window", "--objectives", "success_rate,input_tokens"],
     ["--objectives", "recorded sessions"]),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          flags: list[str], words: list[str]) -> None:
    write_config(tmp_path, TINY_TUNE | {"tune": {"strategy": "sliding_window", "trials": 4}})
    argv = ["tune", str(tmp_path / "tiny.toml"), "--out", str(tmp_path / "out"), "--quiet", *flags]
    if "--traces" in flags:
        argv.remove(str(tmp_path / "tiny.toml"))
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctxbench: error: "), lines
    for word in words:
        assert word in lines[0]
    assert not (tmp_path / "out").exists()


def test_a_different_tune_into_the_same_directory_is_refused(tuned: tuple[Path, str],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = tuned
    before = sorted(p.name for p in out.iterdir())
    assert main(["tune", str(out.parent / "tiny.toml"), "--out", str(out), "--quiet",
                 "--objectives", "success_rate,latency_p95"]) == 2
    line = capsys.readouterr().err.strip()
    assert "holds another tune" in line and "objectives" in line and "\n" not in line
    assert sorted(p.name for p in out.iterdir()) == before
