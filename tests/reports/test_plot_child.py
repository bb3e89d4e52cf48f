"""reports.plot_child: the forked child sends back the PNG bytes drawn here, one core draws in this
process, a failure in the child surfaces here as itself, the child ends on a signal without the
parent's handlers, and an interrupted wait ends the child at once."""

from __future__ import annotations

import signal
import sys
import time
from functools import partial

import pandas as pd
import pytest

import reports.stats
from reports.plot_child import PendingPlots
from reports.plots import PLOTS_WITHOUT_STATISTICS, draw_plots
from tests.reports.test_plots import make_tables


@pytest.fixture(scope="module")
def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    return make_tables()


def test_plots_drawn_by_a_child_process_are_the_bytes_drawn_here(tables: tuple[pd.DataFrame, pd.DataFrame],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """PendingPlots forks a child (on Linux with two cores or more) that sends back the same PNG bytes
    as drawing in this process; with one core it draws in this process."""
    sessions, calls = tables
    here = draw_plots(sessions, calls, names=PLOTS_WITHOUT_STATISTICS)
    assert list(here) == list(PLOTS_WITHOUT_STATISTICS)
    monkeypatch.setattr(reports.stats, "WORKERS", 2)
    pending = PendingPlots(partial(draw_plots, sessions, calls, names=PLOTS_WITHOUT_STATISTICS))
    assert (pending._process is not None) == sys.platform.startswith("linux")
    assert pending.wait() == here
    monkeypatch.setattr(reports.stats, "WORKERS", 1)
    pending = PendingPlots(partial(draw_plots, sessions, calls, names=PLOTS_WITHOUT_STATISTICS))
    assert pending._process is None and pending.wait() == here


class _Unreadable(ValueError):
    pass


def _fails() -> dict[str, bytes]:
    raise _Unreadable("a plot could not be drawn")


def test_a_plot_that_fails_in_the_child_fails_here_with_its_own_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child that could not draw sends nothing back; the plots are drawn here, where the error
    surfaces as itself (a bug keeps its traceback)."""
    monkeypatch.setattr(reports.stats, "WORKERS", 2)
    with pytest.raises(_Unreadable, match="could not be drawn"):
        PendingPlots(_fails).wait()


def _signal_handlers() -> dict[str, bytes]:
    """Which of SIGTERM and SIGINT have their default action where this runs."""
    return {name: b"default" if signal.getsignal(sig) == signal.SIG_DFL else b"handled"
            for name, sig in (("SIGTERM", signal.SIGTERM), ("SIGINT", signal.SIGINT))}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the plots child is forked on Linux only")
def test_the_plots_child_ends_on_a_signal_without_the_parents_handlers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child inherits the CLI's handlers, which turn SIGTERM into an exception; a terminate() that
    reached it while it exited printed that exception's traceback. The child ends on a signal instead."""
    monkeypatch.setattr(reports.stats, "WORKERS", 2)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        assert PendingPlots(_signal_handlers).wait() == {"SIGTERM": b"default", "SIGINT": b"default"}
    finally:
        signal.signal(signal.SIGTERM, previous)


def _sleeps() -> dict[str, bytes]:
    time.sleep(60)
    return {}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the plots are drawn in a child on Linux only")
def test_an_interrupted_wait_ends_the_child_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or SIGTERM, which the CLI raises the same way) while the parent waits for the plots:
    the wait raises it, and the child, whose work is no longer wanted, is ended rather than waited for."""
    monkeypatch.setattr(reports.stats, "WORKERS", 2)
    pending = PendingPlots(_sleeps)

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    started = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(KeyboardInterrupt):
            pending.wait()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 15
    assert pending._process is not None and not pending._process.is_alive()
