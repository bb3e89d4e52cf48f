"""Progress of a long command on stderr: a bar redrawn in place on a terminal, plain periodic lines in a
log. `harness.run.runner.run`, the accounting replay and ``ctxbench export-otel`` show their sessions with it.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["Progress", "format_duration"]


class Progress:
    """Sessions done out of the total, the rate and a real ETA, on stderr, for a terminal and for a log.

    On a terminal: one bar redrawn in place (at most 5 times a second). Off a terminal (``make bench >
    log``, CI): a plain line every `LOG_EVERY_S` seconds and one at the end, so a log shows that work
    moves. The rate counts only the sessions replayed by this process, so resumed batches do not make
    the ETA look shorter than it is; until the first batch finishes the ETA is unknown, shown as "--".
    """

    #: Seconds between two progress lines when stderr is not a terminal.
    LOG_EVERY_S = 15.0
    #: Seconds between two redraws of the bar on a terminal.
    DRAW_EVERY_S = 0.2
    BAR_WIDTH = 24

    def __init__(self, total: int, *, resumed: int = 0, enabled: bool = True, what: str = "sessions",
                 stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.done = resumed
        self.resumed = resumed
        self.what = what
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and total > 0
        self.terminal = self.stream.isatty()
        self.clock = clock
        self.started = clock()
        self.last_shown = -math.inf
        if self.enabled and not self.terminal:
            self._line()
        elif self.enabled:
            self._bar()

    def eta_s(self) -> float | None:
        """Seconds left at this process's rate so far; None before anything was replayed here."""
        fresh = self.done - self.resumed
        elapsed = self.clock() - self.started
        if fresh <= 0 or elapsed <= 0:
            return None
        return (self.total - self.done) * elapsed / fresh

    def advance(self, n: int) -> None:
        """Count ``n`` more sessions done and show progress if it is time to."""
        self.done += n
        if not self.enabled:
            return
        now = self.clock()
        if self.terminal and now - self.last_shown >= self.DRAW_EVERY_S:
            self._bar()
        elif not self.terminal and now - self.last_shown >= self.LOG_EVERY_S:
            self._line()

    def close(self) -> None:
        """The final state: the bar ends its line, a log gets a last line."""
        if not self.enabled:
            return
        if self.terminal:
            self._bar()
            self.stream.write("\n")
        else:
            self._line()
        self.stream.flush()

    def _status(self) -> str:
        elapsed = self.clock() - self.started
        fresh = self.done - self.resumed
        rate = f"{fresh / elapsed:.1f}/s" if fresh > 0 and elapsed > 0 else "--/s"
        eta = self.eta_s()
        resumed = f", {self.resumed} resumed" if self.resumed else ""
        return f"{self.done}/{self.total} {self.what}{resumed}  {rate}  ETA {format_duration(eta)}"

    def _bar(self) -> None:
        filled = self.BAR_WIDTH * self.done // self.total
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.BAR_WIDTH - filled)}] {self._status()} ")
        self.stream.flush()
        self.last_shown = self.clock()

    def _line(self) -> None:
        self.stream.write(f"ctxbench: {self._status()} ({100 * self.done // self.total}%)\n")
        self.stream.flush()
        self.last_shown = self.clock()


def format_duration(seconds: float | None) -> str:
    """``--`` when unknown, else ``42s``, ``3m05s`` or ``1h02m``."""
    if seconds is None:
        return "--"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
