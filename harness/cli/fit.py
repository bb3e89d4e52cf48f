"""``ctxbench fit``: measure agent transcripts, write a run config whose scenario makes sessions like them
(`harness.run.fitting`), and a report comparing the measured and the generated sessions (`reports.fit`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers

#: Sessions generated for the side-by-side when ``--sessions`` is not given: about ten seconds of replay,
#: and enough for the quartiles of the comparison table to settle.
DEFAULT_COMPARISON_SESSIONS = 40
#: The largest ``--seed``: a TOML integer (the seed is written into the config).
MAX_SEED = 2**63 - 1


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench fit``."""
    fit = subparsers.add_parser("fit", help="fit a workload config to agent transcripts, with a report comparing "
                                            "the measured and the generated sessions")
    fit.add_argument("traces", nargs="+", metavar="TRACE", help="trace files or directories")
    fit.add_argument("--out", required=True, help="the run config to write (e.g. workload.toml)")
    fit.add_argument("--format", default=None, help="trace format (default: detected from each file)")
    fit.add_argument("--report", default=None, help="report folder (default: <out stem>-fit/ next to --out)")
    fit.add_argument("--sessions", type=int, default=DEFAULT_COMPARISON_SESSIONS,
                     help=f"sessions generated for the comparison (default: {DEFAULT_COMPARISON_SESSIONS})")
    fit.add_argument("--seed", type=int, default=0, help="root seed of the generated sessions and the config")
    fit.add_argument("--force", action="store_true", help="replace an existing --out and report folder")
    fit.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    fit.set_defaults(func=handle)


def _say(quiet: bool) -> Callable[[str], None]:
    def say(line: str) -> None:
        if not quiet:
            print(f"ctxbench: fit: {line}", file=sys.stderr, flush=True)

    return say


def _check_outputs(out: Path, report: Path, force: bool) -> None:
    """UsageError before any work when an output cannot or may not be written."""
    if out.is_dir():
        raise UsageError(f"--out: {out} is a directory")
    if out.exists() and not force:
        raise UsageError(f"--out: {out} exists (use --force to replace it)")
    if not out.parent.is_dir():
        raise UsageError(f"--out: the folder {out.parent} does not exist")
    if report.exists() and not report.is_dir():
        raise UsageError(f"--report: {report} exists and is not a folder")
    if report.exists() and not force:
        raise UsageError(f"--report: {report} exists (use --force to replace it)")
    if not report.parent.is_dir():
        raise UsageError(f"--report: the folder {report.parent} does not exist")


def _replace_folder(report: Path, write: Callable[[Path], object]) -> None:
    """Write a folder aside with ``write(folder)``, then put it in ``report``'s place: a reader sees the
    old folder or the whole new one, never half of it."""
    staging = Path(tempfile.mkdtemp(dir=report.parent, prefix=f".{report.name}.", suffix=".tmp"))
    try:
        write(staging)
        if report.exists():
            shutil.rmtree(report)
        os.replace(staging, report)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def handle(args: argparse.Namespace) -> int:
    """Load the transcripts, fit, generate the comparison sessions, write the report and the config."""
    from harness.run.traces import FORMATS, TraceError, load_traces

    out = Path(args.out)
    report = Path(args.report) if args.report else out.with_name(f"{out.stem}-fit")
    if args.sessions < 1:
        raise UsageError(f"--sessions: expected at least 1, got {args.sessions}")
    if not 0 <= args.seed <= MAX_SEED:
        raise UsageError(f"--seed: expected 0 to 2**63-1, got {args.seed}")
    if args.format is not None and args.format not in FORMATS:
        raise UsageError(f"--format: unknown format {args.format!r} (known: {', '.join(FORMATS)})")
    _check_outputs(out, report, args.force)

    from harness.run.fitting import (
        FitError,
        fit,
        generated_measures,
        measure,
        report_inputs,
        workload_config,
        write_workload,
    )
    from reports.fit import write_fit_report

    say = _say(args.quiet)
    try:
        sessions = load_traces([Path(t) for t in args.traces], args.format)
    except TraceError as e:
        raise UsageError(str(e)) from None
    if not sessions:
        raise UsageError(f"{', '.join(args.traces)}: no sessions in these traces")
    say(f"{len(sessions)} sessions read; measuring and fitting")
    measures = measure(sessions)
    try:
        fitted = fit(measures, seed=args.seed, progress=say)
    except FitError as e:
        raise UsageError(f"{', '.join(args.traces)}: {e}") from None
    step = max(1, args.sessions // 10)

    def generated(done: int, total: int) -> None:
        if done % step == 0 or done == total:
            say(f"generating comparison sessions: {done}/{total}")

    generated_side = generated_measures(workload_config(fitted, seed=args.seed), sessions=args.sessions,
                                        seed=args.seed, progress=generated)
    data = report_inputs(fitted, generated_side, sources=args.traces)
    say("writing the report")
    _replace_folder(report, lambda folder: write_fit_report(folder, data))
    write_workload(fitted, out, seed=args.seed, sources=args.traces)
    for note in fitted.notes:
        say(f"note: {note}")
    print(out)
    print(report / "report.html")
    print(report / "report.md")
    return 0
