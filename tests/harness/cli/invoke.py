"""Running ``ctxbench`` as a real process for the CLI tests, the tiny config they run, and the check
every refused input must pass: exit 2, one ``ctxbench: error:`` line on stderr, no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import tomli_w

import scenarios
import strategies
from harness.sim.profiles import PROFILE_NAMES

ROOT = Path(__file__).resolve().parents[3]

TINY: dict[str, Any] = {
    "sessions": 4,
    "seed": 2,
    "batch_size": 2,
    "executor": "serial",
    "scenarios": [{"name": "mix", "turns": 20}],
    "strategies": [{"name": "sliding_window", "label": "sw20", "window_size": 20}, {"name": "unbounded"}],
}

#: Config files ``run`` and ``validate`` must refuse: the text and what the error line must name.
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


def command() -> list[str]:
    script = Path(sys.executable).parent / "ctxbench"
    return [str(script)] if script.exists() else [sys.executable, "-m", "harness.cli"]


def ctxbench(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command(), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=None if env is None else os.environ | env, check=False)


def start(*args: str | Path, cwd: Path | None = None, stderr: int = subprocess.PIPE) -> subprocess.Popen[str]:
    """``ctxbench ARGS`` started in the background (stdout discarded), to be interrupted by the caller. An
    ignored SIGINT is inherited across exec (pytest-xdist's workers ignore it), so the command is started with
    the default handler: a test's SIGINT must reach it."""
    previous = signal.getsignal(signal.SIGINT)
    if previous == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen([*command(), *map(str, args)], cwd=cwd, stdout=subprocess.DEVNULL, stderr=stderr,
                                text=True)
    finally:
        signal.signal(signal.SIGINT, previous)


def write_config(directory: Path, data: dict[str, Any], name: str = "tiny.toml") -> Path:
    path = directory / name
    path.write_text(tomli_w.dumps(data))
    return path


def assert_usage_error(result: subprocess.CompletedProcess[str], *expected: str) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ctxbench: error: ")
    for part in expected:
        assert part in lines[0], (part, lines[0])
    return lines[0]
