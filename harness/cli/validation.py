"""``ctxbench validation``: run the validation experiments (`harness.run.validation.run_validation`) and
write docs/validation.md (`reports.validation.write_validation`): every published target with our
figure, its CI and a verdict. Exit 1 when a check fails hard.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers, add_command, add_quiet, output_path


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench validation``."""
    val = add_command(
        subparsers, "validation", handle,
        help="run the validation experiments and write docs/validation.md: every published target "
             "with our figure, its CI and a verdict",
        description="Run the validation experiments into --out (resumable) and write the validation document "
                    "(--doc) with its plots and reports: every published target with our figure, its 95% CI and a "
                    "verdict; print the verdict counts and each disagreement. The full run takes tens of minutes "
                    "(see README, Validation); --quick is only a try. Exit 0; 1 when a check fails hard; 2 on a "
                    "usage error (one line on stderr).")
    val.add_argument("--out", help="directory for the runs and probes (resumable; default: runs/validation, "
                                   "runs/validation-quick with --quick)")
    val.add_argument("--doc", help="the document to write (default: docs/validation.md, <out>/validation.md with "
                                   "--quick, so a quick try never replaces the shipped document; its PNGs and reports "
                                   "go to <doc dir>/validation/)")
    val.add_argument("--sessions", type=int, help="paired sessions of the section-11 runs (default 2,000)")
    val.add_argument("--quick", action="store_true", help="a few sessions of everything: to try the command, not to "
                                                          "judge the verdicts")
    val.add_argument("--jobs", type=int, default=0, help="worker processes (0 = one per CPU)")
    val.add_argument("--examples", help="the examples/ directory with the reference configs (default: the checkout's)")
    val.add_argument("--report-only", action="store_true", help="only write the document from an existing --out")
    add_quiet(val, "no progress lines")


def handle(args: argparse.Namespace) -> int:
    """Run (unless ``--report-only``) and write the document; print the verdict counts and every
    disagreement or failure."""
    from harness.run.validation import EXAMPLES, ValidationError, ValidationSizes, run_validation
    from reports.validation import ValidationInputError, write_validation

    # A quick run's verdicts mean nothing: by default it writes under runs/, never over the tracked docs/.
    if args.out is None:
        args.out = "runs/validation-quick" if args.quick else "runs/validation"
    if args.doc is None:
        args.doc = str(Path(args.out) / "validation.md") if args.quick else "docs/validation.md"
    check_flags(args)
    sizes = ValidationSizes.quick(args.jobs) if args.quick else ValidationSizes(jobs=args.jobs)
    if args.sessions is not None:
        sizes = dataclasses.replace(sizes, sessions=args.sessions)
    out = Path(args.out)

    def log(line: str) -> None:
        if not args.quiet:
            print(f"ctxbench validation: {line}", file=sys.stderr)

    try:
        if not args.report_only:
            run_validation(out, sizes, examples=Path(args.examples) if args.examples else EXAMPLES, log=log)
        result = write_validation(out, args.doc)
    except (ValidationError, ValidationInputError) as e:
        raise UsageError(f"validation: {e}") from None
    verdicts: dict[str, int] = {}
    for check in result.checks:
        verdicts[check.verdict] = verdicts.get(check.verdict, 0) + 1
    print(f"ctxbench validation: {args.doc}: {len(result.checks)} checks: "
          + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
    for check in result.checks:
        if check.verdict in ("disagree", "FAIL"):
            print(f"  {check.verdict:<8} {check.id:<4} {check.title} ({check.setup}): published {check.published}; "
                  f"ours {check.ours}")
    return 1 if result.hard_failures else 0


def check_flags(args: argparse.Namespace) -> None:
    """UsageError (or ConfigError) for a flag that would fail only after the experiments ran, which takes
    half an hour: counts the run config refuses, an --out or --doc that cannot or may not be written (the
    other kind, a dangling link, a run directory's own file, a folder that cannot be written in, a name too
    long: `harness.core.output_paths`), an --examples that is no directory."""
    from harness.run.config import check_override

    for flag in ("sessions", "jobs"):
        if getattr(args, flag) is not None:
            check_override(flag, getattr(args, flag))
    from harness.core.output_paths import is_run_directory

    if is_run_directory(output_path(args.out, flag="--out", directory=True)):
        # The experiments would write their runs inside another run's directory.
        raise UsageError(f"--out: {args.out} is the run directory of a ctxbench run, not a folder of validation "
                         "runs; give validation a folder of its own")
    output_path(args.doc, flag="--doc", directory=False)
    output_path(Path(args.doc).parent / "validation", flag="--doc (its assets' folder)", directory=True)
    if args.examples is not None:
        try:
            is_dir = Path(args.examples).is_dir()
        except OSError as e:  # a name too long
            raise UsageError(f"--examples: cannot be used ({e.strerror})") from None
        if not is_dir:
            raise UsageError(f"--examples: {args.examples} is not a directory")
