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
from harness.cli.flags import Subparsers


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench validation``."""
    val = subparsers.add_parser("validation", help="run the validation experiments and write docs/validation.md: "
                                                   "every published target with our figure, its CI and a verdict")
    val.add_argument("--out", default="runs/validation", help="directory for the runs and probes (resumable; "
                                                              "default: runs/validation)")
    val.add_argument("--doc", default="docs/validation.md", help="the document to write (default: docs/validation.md; "
                                                                 "its PNGs and reports go to <doc dir>/validation/)")
    val.add_argument("--sessions", type=int, help="paired sessions of the section-11 runs (default 2,000)")
    val.add_argument("--quick", action="store_true", help="a few sessions of everything: to try the command, not to "
                                                          "judge the verdicts")
    val.add_argument("--jobs", type=int, default=0, help="worker processes (0 = one per CPU)")
    val.add_argument("--examples", help="the examples/ directory with the reference configs (default: the checkout's)")
    val.add_argument("--report-only", action="store_true", help="only write the document from an existing --out")
    val.add_argument("--quiet", action="store_true", help="no progress lines")
    val.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    """Run (unless ``--report-only``) and write the document; print the verdict counts and every
    disagreement or failure."""
    from harness.run.validation import EXAMPLES, ValidationError, ValidationSizes, run_validation
    from reports.validation import ValidationInputError, write_validation

    if args.sessions is not None and args.sessions < 1:
        raise UsageError("--sessions: must be at least 1")
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
