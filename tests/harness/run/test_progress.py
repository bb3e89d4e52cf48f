"""Progress of a long command (harness/run/runner.py `Progress`): a bar on a terminal, plain periodic
lines off it, an ETA from this process's own rate (unknown until something ran), nothing when quiet."""

from __future__ import annotations

import io

from harness.run.runner import Progress, format_duration


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
