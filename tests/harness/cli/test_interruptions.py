"""Crash safety of ``run``, ``merge`` and ``report`` as real processes: SIGINT, SIGTERM or kill -9 at a
moment drawn at random (from a fixed seed, so every machine tries the same moments), then the same
command again: the tables come out byte-identical to an uninterrupted run's, with no duplicate row
and no temporary file left; and two runs started into one directory at once never interleave (the
second is refused)."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.harness.cli.invoke import TINY, assert_usage_error, command, ctxbench, start, write_config

KEY = ["scenario", "session_index", "strategy"]
TABLES = ("sessions.parquet", "calls.parquet", "events.parquet")
#: Serial work long enough that every signal moment below (up to 3 s) lands mid-run: about 5 s on the
#: 2-core machine.
LONG = TINY | {"sessions": 120, "seed": 9}
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]
#: Exit status of each signal: the handled ones exit 128 + signal number, kill -9 cannot be handled.
EXPECTED_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -signal.SIGKILL}


def table_bytes(run_dir: Path) -> dict[str, bytes]:
    return {name: (run_dir / name).read_bytes() for name in TABLES}


def temp_files(directory: Path) -> list[Path]:
    return sorted(directory.rglob(".*.tmp"))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The long config, its uninterrupted run (``reference``) and its two shards."""
    directory = tmp_path_factory.mktemp("interruptions")
    write_config(directory, LONG, "long.toml")
    for out, shard in (("reference", None), ("shard1", "1/2"), ("shard2", "2/2")):
        extra = [] if shard is None else ["--shard", shard]
        result = ctxbench("run", "long.toml", "--out", out, "--quiet", "--no-report", *extra, cwd=directory)
        assert result.returncode == 0, result.stderr
    return directory


def interrupt(args: list[str], cwd: Path, sig: signal.Signals, delay: float) -> int | None:
    """Start ``ctxbench ARGS``, send ``sig`` after ``delay`` seconds; its exit status (None when it had
    already finished, which the caller treats as an uninterrupted command)."""
    proc = start(*args, cwd=cwd)
    try:
        time.sleep(delay)
        if proc.poll() is not None:
            return None
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, err
        return proc.returncode
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def moment(name: str, sig: signal.Signals, longest: float) -> float:
    """A moment in [0.3 s, longest): 0.3 s is about when the process has imported and starts work."""
    return random.Random(f"{name}-{sig.name}").uniform(0.3, longest)


@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_interrupted_run_reruns_to_identical_tables(workdir: Path, tmp_path: Path, sig: signal.Signals) -> None:
    (tmp_path / "long.toml").write_bytes((workdir / "long.toml").read_bytes())
    args = ["run", "long.toml", "--out", "out", "--quiet", "--no-report"]
    status = interrupt(args, tmp_path, sig, moment("run", sig, 3.0))
    assert status == EXPECTED_STATUS[sig]  # the run takes longer than 3 s: the signal lands mid-run
    again = ctxbench(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert table_bytes(tmp_path / "out") == table_bytes(workdir / "reference")
    assert not pd.read_parquet(tmp_path / "out" / "sessions.parquet").duplicated(KEY).any()
    assert temp_files(tmp_path / "out") == []


@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_interrupted_merge_reruns_to_identical_tables(workdir: Path, tmp_path: Path, sig: signal.Signals) -> None:
    args = ["merge", str(tmp_path / "merged"), str(workdir / "shard1"), str(workdir / "shard2")]
    status = interrupt(args, tmp_path, sig, moment("merge", sig, 1.2))
    # 0, or killed by the signal itself: it had finished its work and was exiting as the signal arrived
    assert status in (None, 0, -sig, EXPECTED_STATUS[sig])
    again = ctxbench(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert table_bytes(tmp_path / "merged") == table_bytes(workdir / "reference")
    assert temp_files(tmp_path / "merged") == []


@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_interrupted_report_leaves_the_tables_alone_and_reruns(workdir: Path, tmp_path: Path,
                                                               sig: signal.Signals) -> None:
    run_dir = tmp_path / "run"
    for name in ("config.toml", "manifest.json", *TABLES):
        run_dir.mkdir(exist_ok=True)
        (run_dir / name).write_bytes((workdir / "reference" / name).read_bytes())
    status = interrupt(["report", str(run_dir)], tmp_path, sig, moment("report", sig, 2.5))
    assert status in (None, 0, -sig, EXPECTED_STATUS[sig])  # -sig: as in the merge test
    assert table_bytes(run_dir) == table_bytes(workdir / "reference")
    again = ctxbench("report", run_dir, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (run_dir / "report.html").read_text().rstrip().endswith("</html>")
    assert temp_files(run_dir) == []


def test_two_runs_into_one_directory_at_once_never_interleave(workdir: Path, tmp_path: Path) -> None:
    (tmp_path / "long.toml").write_bytes((workdir / "long.toml").read_bytes())
    args = ["run", "long.toml", "--out", "out", "--quiet", "--no-report"]
    first = subprocess.Popen([*command(), *args], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "out" / "config.toml").exists():
            assert first.poll() is None and time.monotonic() < deadline, "the first run never started"
            time.sleep(0.02)
        second = ctxbench(*args, cwd=tmp_path)
        assert_usage_error(second, "another ctxbench command is writing")
        assert first.wait(timeout=120) == 0, first.stderr.read() if first.stderr else ""
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert table_bytes(tmp_path / "out") == table_bytes(workdir / "reference")
