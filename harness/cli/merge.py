"""``ctxbench merge``: join shard run directories into one run directory (`harness.run.merge.merge`),
print its summary and write its report, as ``ctxbench run`` does.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers, add_command, add_quiet
from harness.cli.run import print_summary, write_run_report


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench merge``."""
    merge = add_command(
        subparsers, "merge", handle, help="join shard run directories into one run directory",
        description="Join the run directories of `ctxbench run --shard K/N` (the same config) into one run "
                    "directory whose tables are those one unsharded run would have written, then print its summary "
                    "and write its report, as `ctxbench run` does. Exit 0; 1 when sessions of the merged run failed "
                    "with outcome 'error'; 2 when an input is not a shard of the same config, or a shard "
                    "is missing without --partial (one line on stderr).")
    merge.add_argument("out_dir", help="the merged run directory to write (not one of the inputs)")
    merge.add_argument("runs", nargs="+", metavar="RUN_DIR", help="the shard run directories to join")
    merge.add_argument("--partial", action="store_true",
                       help="merge even when batches of the plan are in none of the inputs (a shard missing)")
    merge.add_argument("--no-report", action="store_true", help="do not write report.html / report.md")
    add_quiet(merge, "no report line on stderr")
    merge.add_argument("--json", action="store_true", help="print the run's metadata and summary as JSON")


def handle(args: argparse.Namespace) -> int:
    """Merge the shards; 1 when sessions of the merged run failed with outcome 'error'."""
    from harness.run.merge import merge

    for d in args.runs:
        if not Path(d).is_dir():
            raise UsageError(f"merge: {d} is not a directory")
    summary = merge(Path(args.out_dir), [Path(d) for d in args.runs], partial=args.partial)
    print_summary(summary, args.json)
    if not args.no_report:
        write_run_report(summary, quiet=args.quiet)
    return 1 if summary.errors else 0
