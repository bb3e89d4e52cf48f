"""Progress of a long command (harness/run/progress.py `Progress`): a bar on a terminal, plain periodic
lines off it, an ETA from this process's own rate (unknown until something ran), nothing when quiet."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from harness.run.config import RunConfig
from harness.run.progress import Progress, format_duration
from harness.run.runner import run


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_progress_is_plain_lines_at_a_fixed_interval_and_one_at_the_end() -> None:
    clock, log = FakeClock(), io.StringIO()
    progress = Progress(100, stream=log, clock=clock)
    for _ in range(10):
        clock.now += 5.0
        progress.advance(8)
    progress.close()
    lines = log.getvalue().splitlines()
    # the first line at the start, then one every LOG_EVERY_S = 15 s of 50 s, then the last
    assert len(lines) == 1 + 3 + 1
    assert all(line.startswith("ctxbench: ") and "\r" not in line for line in lines)
    assert lines[0] == "ctxbench: 0/100 sessions  --/s  ETA -- (0%)"
    assert lines[-1].startswith("ctxbench: 80/100 sessions  1.6/s  ETA 12s")


def test_the_eta_counts_only_sessions_replayed_here_not_resumed_ones() -> None:
    clock = FakeClock()
    progress = Progress(100, resumed=50, stream=io.StringIO(), clock=clock)
    assert progress.eta_s() is None
    clock.now += 10.0
    progress.advance(10)
    assert progress.eta_s() == 40 * 10.0 / 10  # 1 session/s here, 40 left


def test_on_a_terminal_the_bar_is_redrawn_in_place_and_ends_its_line() -> None:
    clock, tty = FakeClock(), Terminal()
    progress = Progress(10, stream=tty, clock=clock)
    clock.now += 1.0
    progress.advance(5)
    progress.close()
    text = tty.getvalue()
    assert text.count("\r[") == 3 and text.endswith("\n") and text.count("\n") == 1
    assert "5/10 sessions" in text and "[" + "#" * 12 + "." * 12 + "]" in text


def test_quiet_or_nothing_to_do_shows_nothing() -> None:
    for progress in (Progress(10, enabled=False, stream=Terminal()), Progress(0, stream=io.StringIO())):
        progress.advance(3)
        progress.close()
        assert progress.stream.getvalue() == ""  # type: ignore[attr-defined]


def test_durations_read_as_a_person_would_write_them() -> None:
    assert [format_duration(s) for s in (None, 0.4, 59, 61, 3599, 3600, 7322)] == \
        ["--", "0s", "59s", "1m01s", "59m59s", "1h00m", "2h02m"]


def test_a_run_counts_its_progress_in_replays_so_a_sweep_moves_per_session(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # Every batch finishing is a progress step; log lines are forced on every step here.
    monkeypatch.setattr(Progress, "LOG_EVERY_S", 0.0)
    config = RunConfig(sessions=3, seed=2, executor="serial", scenarios=[{"name": "mix", "turns": 20}],
                       strategies=[{"name": "sliding_window", "label": "sw"}, {"name": "unbounded"}],
                       sweep={"params": {"sw.window_size": list(range(10, 30))}, "models": ["frontier", "small"]})
    assert len(config.variants()) == 42
    run(config, tmp_path / "out")
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("ctxbench: ")]
    assert lines[0].startswith("ctxbench: 0/126 replays")
    # 42 variants x 3 sessions; a batch of about 80 replays is one session: three steps, then the end.
    assert [line.split()[1] for line in lines[1:]] == ["42/126", "84/126", "126/126", "126/126"]
