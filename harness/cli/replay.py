"""``ctxbench replay TRACE...``: recorded agent sessions (`harness.run.traces`) replayed under every
strategy with exact token accounting (`harness.run.accounting.replay_traces`), into a run directory with
its report.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers, names

if TYPE_CHECKING:
    from harness.run.config import RunConfig


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench replay``."""
    replay = subparsers.add_parser(
        "replay", help="replay recorded agent sessions under every strategy: exact tokens, cost, cache hits and "
                       "hidden tool outputs per strategy")
    replay.add_argument("traces", nargs="+", metavar="TRACE",
                        help="trace files or session directories (a directory of traces is read whole)")
    replay.add_argument("--format", default=None,
                        help="the traces' format: atif, openai-chat, openai-responses, anthropic, strands, openhands "
                             "(default: detected per file)")
    replay.add_argument("--config", default=None,
                        help="TOML config whose strategies (labels, params) and model profile to use (default: every "
                             "registered strategy with its defaults)")
    replay.add_argument("--strategies", help="comma-separated strategy names (or labels of --config)")
    replay.add_argument("--model", help="model profile: window, prices and cache rules (default: the config's)")
    replay.add_argument("--out", help="run directory to create (default: runs/replay-<first trace's name>)")
    replay.add_argument("--quiet", action="store_true", help="no progress on stderr")
    replay.add_argument("--no-report", action="store_true", help="do not write report.html / report.md")
    replay.set_defaults(func=handle)


def replay_config(args: argparse.Namespace) -> RunConfig:
    """The strategies and profile to replay under: ``--config``'s (selected by ``--strategies``), else
    `harness.run.accounting.replay_entries` (every registered strategy; ``--strategies`` picks among them)."""
    from harness.run.accounting import replay_entries
    from harness.run.config import config_from_data, load_config

    wanted = names(args.strategies, "--strategies")
    if args.config is not None:
        config = load_config(args.config, model=args.model)
        return config.select(wanted, None, source=args.config)
    entries = replay_entries()
    if wanted is not None:
        known = {e["name"]: e for e in entries}
        unknown = [n for n in wanted if n not in known]
        if unknown:
            raise UsageError(f"--strategies: unknown strategy {unknown[0]!r} (known: {', '.join(known)})")
        entries = [known[n] for n in wanted]
    data: dict[str, object] = {"strategies": entries}
    if args.model is not None:
        data["model"] = args.model
    return config_from_data(data, "--model" if args.model else None)


def handle(args: argparse.Namespace) -> int:
    """Read the traces, replay them, write the run directory and its report; the paths on stdout."""
    from harness.run.accounting import AccountingError, replay_traces
    from harness.run.traces import FORMATS, load_traces

    if args.format is not None and args.format not in FORMATS:
        raise UsageError(f"--format: unknown trace format {args.format!r} (known: {', '.join(FORMATS)})")
    config = replay_config(args)
    paths = [Path(t) for t in args.traces]
    sessions = load_traces(paths, args.format)
    if not sessions:
        raise UsageError(f"{args.traces[0]}: no sessions found in the traces given")
    out = Path(args.out) if args.out else Path("runs") / f"replay-{paths[0].stem or 'traces'}"
    try:
        summary = replay_traces(sessions, config, out, quiet=args.quiet)
    except AccountingError as e:
        raise UsageError(f"--out: {e}") from None
    print(f"ctxbench replay: {out} ({summary.sessions} recorded sessions x {len(summary.strategies)} strategies, "
          f"{summary.rows['calls.parquet']} calls; {summary.wall_s:.1f} s)")
    if not args.no_report:
        from reports.render import write_report

        for page in write_report(out):
            print(page)
    return 0
