"""The commands a user runs from the README, in small versions, print no warning: each runs as a real
process (``python -m harness.cli``, the console script's entry point) with every warning an error
(``-W error`` and ``PYTHONWARNINGS=error``, which the process pool's workers inherit), exits as it
should and says nothing about a warning on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TRACES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "data" / "traces").iterdir())


def ctxbench(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``ctxbench ARGS`` in the repository (the README's commands name its files), warnings as errors."""
    return subprocess.run([sys.executable, "-W", "error", "-m", "harness.cli", *map(str, args)], cwd=ROOT,
                          env=os.environ | {"PYTHONWARNINGS": "error"}, capture_output=True, text=True,
                          timeout=600, check=False)


def assert_quiet(result: subprocess.CompletedProcess[str], *, codes: tuple[int, ...] = (0,)) -> None:
    assert result.returncode in codes, result.stderr
    for word in ("Warning", "Traceback", "internal error"):
        assert word not in result.stderr, result.stderr


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ctxbench run examples/default.toml --sessions 4`` with its report and plots."""
    out = tmp_path_factory.mktemp("no-warnings") / "run"
    assert_quiet(ctxbench("run", "examples/default.toml", "--sessions", "4", "--out", out))
    assert (out / "report.html").is_file() and any((out / "plots").glob("*.png"))
    return out


@pytest.mark.slow
def test_run_with_its_report(run_dir: Path) -> None:
    assert (run_dir / "report.md").is_file()


def test_report(run_dir: Path) -> None:
    assert_quiet(ctxbench("report", run_dir))


def test_view(run_dir: Path) -> None:
    assert_quiet(ctxbench("view", run_dir))
    assert (run_dir / "explorer.html").is_file()


def test_replay_of_the_sample_traces(tmp_path: Path) -> None:
    assert_quiet(ctxbench("replay", *TRACES, "--out", tmp_path / "replay"))
    assert (tmp_path / "replay" / "report.html").is_file()


def test_list_strategies() -> None:
    result = ctxbench("list", "strategies")
    assert_quiet(result)
    assert "sliding_window" in result.stdout


@pytest.mark.slow
def test_quick_validation(tmp_path: Path) -> None:
    """Every experiment and plot of the validation document, a couple of sessions each. With so few
    sessions some hard checks fail, which is exit 1; the document is written either way."""
    out = tmp_path / "v"
    assert_quiet(ctxbench("validation", "--quick", "--sessions", "2", "--out", out, "--doc", out / "doc.md"),
                 codes=(0, 1))
    assert (out / "doc.md").is_file()
