"""``ctxbench compare``: compare two runs per metric and strategy (`reports.compare.compare`); exit 1
when a ``--fail-on`` threshold is crossed, so CI can gate on it.
"""

from __future__ import annotations

import argparse
import json
import sys

from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench compare``."""
    comp = subparsers.add_parser("compare", help="compare two runs per metric and strategy; gate on thresholds")
    comp.add_argument("run_a")
    comp.add_argument("run_b")
    comp.add_argument("--metric", action="append", default=[],
                      help="metric to show (repeatable or comma-separated; default: every headline metric)")
    comp.add_argument("--fail-on", action="append", default=[], metavar="METRIC:THRESHOLD",
                      help="exit 1 when B - A crosses it: +2pp (rates), +5%% (relative), +1000 (units); the sign is "
                           "the direction that fails (repeatable)")
    comp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    comp.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    """Print the comparison (text or JSON); 1 when the gate failed, naming the crossed thresholds."""
    from reports.compare import compare, parse_metrics, parse_threshold
    from reports.inputs import ReportInputError

    try:
        metrics = parse_metrics(args.metric)
        thresholds = [parse_threshold(t) for t in args.fail_on]
        # compare checks both run directories, their manifests and tables before it reads a row.
        result = compare(args.run_a, args.run_b, metrics, thresholds)
    except ReportInputError as e:
        raise UsageError(f"compare: {e}") from None
    if args.json:
        print(json.dumps(result.to_records(), indent=2))
    else:
        print(result.to_text(), end="")
    if result.failed:
        failed = dict.fromkeys(b.threshold.text for b in result.breaches)
        print(f"ctxbench: compare: gate failed: {', '.join(failed)} ({len(result.breaches)} strategy rows crossed)",
              file=sys.stderr)
        return 1
    return 0
