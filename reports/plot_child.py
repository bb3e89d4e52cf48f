"""The report's plots drawn in a forked child process while the parent computes the statistics:
:class:`PendingPlots` starts the child and collects its PNG bytes, falling back to drawing in this
process where forking is not worth it or the child did not answer. It takes the drawing as a callable
(:func:`reports.plots.draw_plots` with its tables bound), so this module needs no matplotlib.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

import reports.stats


class PendingPlots:
    """Plots drawn in a child process while the caller computes the statistics (drawing is Python
    work that holds the GIL, the bootstrap is numpy work on threads; a second process lets both use
    the cores). The child is forked, so it reads the tables it inherits and sends back only the PNG
    bytes, which are the same bytes as drawn here. Where fork is not the way (not Linux, one core)
    the plots are drawn by :meth:`wait`.

    The child never outlives the work: an interrupted :meth:`wait` ends it, and a parent that exits
    without waiting ends it on the way out (``multiprocessing`` terminates daemonic children)."""

    def __init__(self, draw: Callable[[], dict[str, bytes]]) -> None:
        self._draw = draw
        self._process: BaseProcess | None = None
        if sys.platform == "linux" and reports.stats.WORKERS > 1:
            # Output still buffered here would be written a second time by the child on its way out.
            sys.stdout.flush()
            sys.stderr.flush()
            context = multiprocessing.get_context("fork")
            self._answer, sender = context.Pipe(duplex=False)
            self._process = context.Process(target=_draw_and_send, args=(draw, self._answer, sender), daemon=True)
            self._process.start()
            sender.close()

    def wait(self) -> dict[str, bytes]:
        """The PNGs by plot name. When the child did not answer (it failed, or was killed) the plots
        are drawn here instead: a bug raises here, with its own traceback."""
        if self._process is None:
            return self._draw()
        drawn = None
        try:
            drawn = self._answer.recv()
        except EOFError:  # the child died without a word; drawing here says why, if anything
            pass
        finally:
            # Interrupted (Ctrl-C, SIGTERM): the child's work is no longer wanted.
            self._answer.close()
            if drawn is not None:  # answered: let it end on its own
                self._process.join(timeout=5)
            if self._process.is_alive():
                self._process.terminate()
            self._process.join()
        return drawn if drawn is not None else self._draw()


def _draw_and_send(draw: Callable[[], dict[str, bytes]], answer: Connection, sender: Connection) -> None:
    """The child's work: draw, and send the PNGs, or None when drawing failed (the parent then meets
    the failure itself). Quiet whatever happens: a parent that stopped listening, or a signal to stop,
    ends the child without a traceback."""
    # The parent's end of the pipe, inherited: held open here, a large answer would wait for a reader
    # that is the child itself.
    answer.close()
    # The parent's handlers, inherited, turn a signal into an exception for the parent's clean-up; here it
    # would surface as a traceback from the child's exit (a terminate() that arrives while it ends), so a
    # signal to stop simply ends the child.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        try:
            drawn: dict[str, bytes] | None = draw()
        except Exception:  # the parent draws again and raises it there, with its traceback
            drawn = None
        sender.send(drawn)
    except BaseException:  # told to stop (SIGINT, SIGTERM) or nobody listening (a broken pipe): just end
        pass
    finally:
        sender.close()
