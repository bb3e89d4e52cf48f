"""``ctxbench calibrate``: fit a mock-model profile to recorded agent transcripts (`harness.run.profile_fit`) and
write it as a TOML file ``ctxbench run --model FILE`` loads, with a calibration report (`reports.profile_fit`)
in a folder next to it.
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
from harness.cli.flags import TRACE_FORMATS_SLOT, Subparsers, add_command, add_format_flag, add_quiet

#: The preset every field not fitted comes from, unless ``--preset`` names another: frontier's latency and
#: recall anchor on Claude Sonnet 4.5, the class of the models agent transcripts are mostly recorded with.
DEFAULT_PRESET = "frontier"
#: The report folder's files (besides the temporary files of an interrupted write).
REPORT_FILES = ("report.html", "report.md")


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench calibrate``."""
    calibrate = add_command(
        subparsers, "calibrate", handle,
        help="fit a model profile (latency, output tokens, tool-error growth, caching) to agent transcripts",
        description="Read recorded agent sessions (trace files or folders, any format replay reads) and fit what "
                    "they can tell about a mock-model profile: the latency fields (base_s, b_uncached, b_cached, "
                    "decode_tps, sigma) from recorded latencies and token counts, thought_tokens from recorded "
                    "output tokens, p_malformed_base and g_L from tool-error statuses against the context length, "
                    "caching from recorded cache hits, prices from the price table when it knows the model. Every "
                    "other field stays at --preset. Write the profile (--out, every field, each commented fitted "
                    "with its interval and n, or kept and why) and a report folder (report.html, report.md, "
                    "plots/*.png) with the fitted values against the preset's, the token-count ratio and "
                    "cache-hit share per model, the error rate per context-length bin and the latency check. "
                    "Print the paths written. Exit 0; 2 when a trace or a flag is wrong, nothing can be fitted, "
                    "or an output exists without --force (one line on stderr).")
    calibrate.add_argument("traces", nargs="+", metavar="TRACE", help="trace files or directories")
    calibrate.add_argument("--out", required=True, help="the profile TOML to write (e.g. profile.toml)")
    add_format_flag(calibrate, f"trace format, one of: {TRACE_FORMATS_SLOT}; default: detected from each file")
    calibrate.add_argument("--preset", default=DEFAULT_PRESET,
                           help=f"the built-in profile of every field not fitted (`ctxbench list models`; default "
                                f"{DEFAULT_PRESET})")
    calibrate.add_argument("--report", default=None,
                           help="report folder (default: <out stem>-calibration/ next to --out)")
    calibrate.add_argument("--force", action="store_true",
                           help="replace an existing --out and report folder (never a folder holding files "
                                "calibrate did not write)")
    add_quiet(calibrate, "no progress lines on stderr")


def _say(quiet: bool) -> Callable[[str], None]:
    def say(line: str) -> None:
        if not quiet:
            print(f"ctxbench: calibrate: {line}", file=sys.stderr, flush=True)

    return say


def _stranger(report: Path) -> Path | None:
    """The first entry of the existing folder ``report`` calibrate did not write, else None."""
    from harness.core.files import TEMP_SUFFIX
    from reports.profile_fit import PLOT_NAMES

    def is_temp(name: str) -> bool:
        return name.startswith(".") and name.endswith(TEMP_SUFFIX)

    for entry in sorted(report.iterdir()):
        if entry.name == "plots" and entry.is_dir() and not entry.is_symlink():
            for inner in sorted(entry.iterdir()):
                if inner.is_dir() or not (inner.name in {f"{n}.png" for n in PLOT_NAMES} or is_temp(inner.name)):
                    return inner
        elif entry.is_dir() or not (entry.name in REPORT_FILES or is_temp(entry.name)):
            return entry
    return None


def _check_outputs(out: Path, report: Path, force: bool) -> None:
    """UsageError before any work when an output cannot or may not be written."""
    from harness.core.output_paths import OutputPathError, check_output_path, is_run_directory

    try:
        check_output_path(out, flag="--out", directory=False)
        check_output_path(report, flag="--report", directory=True)
        if not os.path.isdir(out.parent):  # the files are made, not the folders they go in
            raise UsageError(f"--out: the folder {out.parent} does not exist")
        if not os.path.isdir(report.parent):
            raise UsageError(f"--report: the folder {report.parent} does not exist")
        real_out, real_report = Path(os.path.realpath(out)), Path(os.path.realpath(report))
        if real_out == real_report or real_report in real_out.parents:
            raise UsageError(f"--out: {out} is inside the --report folder {report}, which calibrate replaces whole")
        if os.path.lexists(report):
            if report.is_symlink():
                raise UsageError(f"--report: {report} is a symbolic link (name the folder itself)")
            if is_run_directory(report):
                raise UsageError(f"--report: {report} is a run directory")
            stranger = _stranger(report)
            if stranger is not None:
                raise UsageError(f"--report: {report} holds {stranger.relative_to(report)}, which calibrate did not "
                                 "write; calibrate replaces the report folder whole, so it must be new, empty or an "
                                 "earlier calibration report (even with --force)")
            if not force and any(report.iterdir()):
                raise UsageError(f"--report: {report} exists (use --force to replace it)")
        if os.path.lexists(out) and not force:
            raise UsageError(f"--out: {out} exists (use --force to replace it)")
    except OutputPathError as e:
        raise UsageError(str(e)) from None
    except OSError as e:  # a folder that cannot be listed
        raise UsageError(f"--report: {report} cannot be used ({e.strerror or e})") from None


def _replace_folder(report: Path, write: Callable[[Path], object]) -> None:
    """Write a folder aside, then put it in ``report``'s place: a reader sees the old or the whole new one."""
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
    """Load the transcripts, measure, fit, write the report and the profile."""
    from harness.run.traces import TraceError, format_names, load_traces
    from harness.sim.profiles import PROFILE_NAMES

    if args.preset not in PROFILE_NAMES:
        from harness.core.suggest import did_you_mean

        raise UsageError(f"--preset: unknown profile {args.preset!r}{did_you_mean(args.preset, PROFILE_NAMES)} "
                         f"(known: {', '.join(PROFILE_NAMES)})")
    if args.format is not None and args.format not in format_names():
        raise UsageError(f"--format: unknown format {args.format!r} (known: {', '.join(format_names())})")
    out = Path(args.out)
    report = Path(args.report) if args.report else out.with_name(f"{out.stem}-calibration")
    _check_outputs(out, report, args.force)

    from harness.core.files import write_atomically
    from harness.run.profile_fit import ProfileFitError, calibrate, describe, measure, profile_toml, report_inputs
    from harness.run.profile_fit import with_name as named
    from harness.run.progress import Progress
    from reports.profile_fit import write_calibration_report

    say = _say(args.quiet)
    sources = [os.fsencode(t).decode("utf-8", "replace") for t in args.traces]
    read_notes: list[str] = []
    try:
        sessions = load_traces([Path(t) for t in args.traces], args.format, notes=read_notes)
    except TraceError as e:
        raise UsageError(str(e)) from None
    if not sessions:
        raise UsageError(f"{', '.join(sources)}: no sessions in these traces")
    for note in read_notes:
        print(f"ctxbench: note: {note}", file=sys.stderr)
    say(f"{len(sessions)} sessions read; counting each call's input as replay does")
    progress = Progress(len(sessions), enabled=not args.quiet, what="sessions")
    try:
        observations = measure(sessions, progress=lambda done, total: progress.advance(1))
    finally:
        progress.close()
    say("fitting")
    try:
        fitted = named(calibrate(observations, args.preset, sources=sources),
                       os.fsencode(out.stem).decode("utf-8", "replace"))
    except ProfileFitError as e:
        raise UsageError(str(e)) from None
    text = profile_toml(fitted, sources=sources)
    data = report_inputs(fitted, sources=sources)
    if fitted.check is not None:
        c = fitted.check
        say(f"latency check: profile mean {c.profile_mean_s:.3g} s, recorded mean {c.recorded_mean_s:.3g} s over "
            f"{c.n} calls ({c.gap:+.1%}, {'within' if c.within else 'NOT within'} {c.tolerance:.0%})")
    say(f"fields: {describe(fitted.fields)}; writing the report")
    _replace_folder(report, lambda folder: write_calibration_report(folder, data))
    write_atomically(out, text.encode("utf-8"))
    for note in fitted.notes:
        say(f"note: {note}")
    print(out)
    print(report / "report.html")
    print(report / "report.md")
    return 0
