"""``ctxbench calibrate``: fit a mock-model profile to recorded agent transcripts (`harness.run.profile_fit`) and
write it as a TOML file ``ctxbench run --model FILE`` loads, with a calibration report (`reports.profile_fit`)
in a folder next to it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.errors import UsageError
from harness.cli.flags import TRACE_FORMATS_SLOT, Subparsers, add_command, add_format_flag, add_quiet
from harness.cli.report_folder import check_format, check_outputs, read_transcripts, replace_folder, say_for, text_of

#: The preset every field not fitted comes from, unless ``--preset`` names another: frontier's latency and
#: recall anchor on Claude Sonnet 4.5, the class of the models agent transcripts are mostly recorded with.
DEFAULT_PRESET = "frontier"


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


def handle(args: argparse.Namespace) -> int:
    """Load the transcripts, measure, fit, write the report and the profile."""
    from harness.sim.profiles import PROFILE_NAMES
    from reports.profile_fit import PLOT_NAMES

    if args.preset not in PROFILE_NAMES:
        from harness.core.suggest import did_you_mean

        raise UsageError(f"--preset: unknown profile {args.preset!r}{did_you_mean(args.preset, PROFILE_NAMES)} "
                         f"(known: {', '.join(PROFILE_NAMES)})")
    check_format(args.format)
    out = Path(args.out)
    report = Path(args.report) if args.report else out.with_name(f"{out.stem}-calibration")
    check_outputs("calibrate", out, report, args.force, PLOT_NAMES)

    from harness.core.files import write_atomically
    from harness.run.profile_fit import ProfileFitError, calibrate, describe, measure, profile_toml, report_inputs
    from harness.run.profile_fit import with_name as named
    from harness.run.progress import Progress
    from reports.profile_fit import write_calibration_report

    say = say_for("calibrate", args.quiet)
    sources = [text_of(t) for t in args.traces]
    sessions = read_transcripts(args.traces, args.format)
    say(f"{len(sessions)} sessions read; counting each call's input as replay does")
    progress = Progress(len(sessions), enabled=not args.quiet, what="sessions")
    try:
        observations = measure(sessions, progress=lambda done, total: progress.advance(1))
    finally:
        progress.close()
    say("fitting")
    try:
        fitted = named(calibrate(observations, args.preset, sources=sources),
                       text_of(out.stem))
    except ProfileFitError as e:
        raise UsageError(str(e)) from None
    text = profile_toml(fitted, sources=sources)
    data = report_inputs(fitted, sources=sources)
    if fitted.check is not None:
        c = fitted.check
        say(f"latency check: profile mean {c.profile_mean_s:.3g} s, recorded mean {c.recorded_mean_s:.3g} s over "
            f"{c.n} calls ({c.gap:+.1%}, {'within' if c.within else 'NOT within'} {c.tolerance:.0%})")
    say(f"fields: {describe(fitted.fields)}; writing the report")
    replace_folder(report, lambda folder: write_calibration_report(folder, data))
    write_atomically(out, text.encode("utf-8"))
    for note in fitted.notes:
        say(f"note: {note}")
    print(out)
    print(report / "report.html")
    print(report / "report.md")
    return 0
