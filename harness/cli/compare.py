"""``ctxbench compare``: compare two runs per metric and strategy (`reports.compare.compare`), paired
over the sessions both ran; exit 1 when a ``--fail-on`` regression is established (the CI bound in the
failing direction is beyond the threshold), so CI can gate on it.
"""

from __future__ import annotations

import argparse
import json
import sys

from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers, add_command


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench compare``."""
    comp = add_command(
        subparsers, "compare", handle, help="compare two runs per metric and strategy; gate on thresholds",
        description="Compare run B with run A per metric and strategy: A, B and B - A with a 95% bootstrap CI. "
                    "Sessions both runs ran (same scenario, session_index and seed) are paired: B - A is over those "
                    "sessions and one resample serves both runs, so a run compared with itself shows 0 [0, 0]. Runs "
                    "that share no session (other seeds) are compared unpaired; the output says which. Writes "
                    "nothing. Exit 0; 1 when a --fail-on gate failed (said on stderr); 2 when a run directory or "
                    "a flag is wrong (one line on stderr).")
    comp.add_argument("run_a", help="the run compared against (A: the baseline, e.g. the main branch's run)")
    comp.add_argument("run_b", help="the run compared (B: e.g. the change's run)")
    comp.add_argument("--metric", action="append", default=[],
                      help="metric to show, a name from `ctxbench run`'s summary or the report (repeatable or "
                           "comma-separated; default: every headline metric)")
    comp.add_argument("--fail-on", action="append", default=[], metavar="METRIC:THRESHOLD",
                      help="exit 1 when a regression is established beyond the threshold. The sign is the "
                           "direction that fails, and the gate reads the 95%% CI bound of B - A in that direction, "
                           "not the point estimate: +T fails only when the LOWER bound is above +T, -T only when the "
                           "UPPER bound is below -T. T in pp (rates, percentage points: loop_rate:+2pp), %% (relative, "
                           "the bound of (B - A) / A: context_tokens_mean:+5%%) or the metric's unit "
                           "(input_tokens:+1000); repeatable")
    comp.add_argument("--json", action="store_true", help="print the comparison as JSON")


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
        print(f"ctxbench: compare: gate failed: {', '.join(failed)} (the 95% CI bound in the failing direction is "
              f"beyond the threshold for {len(result.breaches)} strategy row{'s' if len(result.breaches) > 1 else ''})",
              file=sys.stderr)
        return 1
    return 0
