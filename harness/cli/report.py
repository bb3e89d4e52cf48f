"""``ctxbench report``: write report.html and report.md (and plots) for a run directory
(`reports.render.write_report`) and print the paths written.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers, add_command, add_quiet


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench report``."""
    report = add_command(
        subparsers, "report", handle, help="write report.html and report.md (and plots/*.png) for a run directory",
        description="Write the report of a finished run directory into it: report.html (self-contained), "
                    "report.md and plots/*.png, with sweep.html / sweep.md for a sweep; print the paths written. "
                    "The directory is checked before anything is written. Exit 0; 2 when it is not a finished run "
                    "or a flag is wrong (one line on stderr).")
    report.add_argument("run_dir", help="a finished run directory (of `ctxbench run`, `sweep`, `merge` or `replay`)")
    report.add_argument("--format", default="html,md", help="comma-separated: html, md (default: html,md)")
    # No default here: write_report tells "not given" (unbounded, else the run's first strategy, said in
    # the report) from an explicit name, which must be one of the run's strategies.
    report.add_argument("--baseline", default=None,
                        help="strategy the paired differences are against (default: unbounded, or the run's first "
                             "strategy when it has no unbounded; an unknown name is an error)")
    add_quiet(report, "no progress lines on stderr")


#: Set to 1 to silence the stage lines (the test suite does: whether a stage starts after a second
#: depends on the machine's speed, and its checks of "exactly one error line" must not).
NO_PROGRESS_ENV = "CTXBENCH_NO_PROGRESS"


def stage_printer(command: str, *, after_s: float = 1.0) -> Callable[[str], None]:
    """A progress line per stage on stderr, with the seconds since the start: ``ctxbench: report: ...``.
    Stages that start within ``after_s`` of the start are not shown: a small report stays silent, a
    large one (its bootstrap takes minutes) shows where it is, on a terminal or in a log."""
    started = time.monotonic()
    silenced = os.environ.get(NO_PROGRESS_ENV) == "1"

    def say(stage: str) -> None:
        elapsed = time.monotonic() - started
        if elapsed >= after_s and not silenced:
            print(f"ctxbench: {command}: {stage} ({elapsed:.0f} s)", file=sys.stderr, flush=True)

    return say


def handle(args: argparse.Namespace) -> int:
    """Write the report in the asked formats; one path per line on stdout."""
    from reports.render import ReportInputError, check_formats, write_report
    from reports.tune import is_tune_dir, write_tune_report

    try:
        if is_tune_dir(args.run_dir):  # a `ctxbench tune` directory: its tune page, from its tables
            written = write_tune_report(args.run_dir, check_formats(args.format.split(",")))
        else:
            # write_report checks the run directory, its manifest and tables, and every output path before
            # it writes anything: a failure leaves the directory as it was.
            written = write_report(args.run_dir, check_formats(args.format.split(",")), baseline=args.baseline,
                                   log=None if args.quiet else stage_printer("report"))
    except ReportInputError as e:
        raise UsageError(f"report: {e}") from None
    for path in written:
        print(path)
    return 0
