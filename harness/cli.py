"""The ``ctxbench`` command: parses arguments and calls one library function per subcommand.

Exit codes: 0 success, 2 usage error (one line on stderr naming what is wrong, no traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import harness


class UsageError(Exception):
    """A mistake in the command line; reported as one line, exit code 2."""


def _list(args: argparse.Namespace) -> int:
    if args.what == "strategies":
        import strategies

        width = max(len(n) for n in strategies.names())
        for name in strategies.names():
            cls = strategies.get(name)
            doc = (cls.__doc__ or "").strip().splitlines()
            print(f"{name:<{width}}  {doc[0] if doc else ''}")
        return 0
    raise UsageError(f"ctxbench list: '{args.what}' is not available yet (available: strategies)")


def _demo(args: argparse.Namespace) -> int:
    import strategies
    from harness.demo import run_demo, summary_table, write_demo

    names = [n.strip() for n in args.strategies.split(",") if n.strip()] if args.strategies else None
    known = strategies.names()
    for name in names or []:
        if name not in known:
            raise UsageError(f"--strategies: unknown strategy {name!r} (known: {', '.join(known)})")
    for flag, value, low in (("--sessions", args.sessions, 1), ("--turns", args.turns, 1),
                             ("--window-tokens", args.window_tokens, 1024)):
        if value < low:
            raise UsageError(f"{flag}: must be >= {low}, got {value}")
    rows = run_demo(sessions=args.sessions, turns=args.turns, seed=args.seed,
                    window_tokens=args.window_tokens, names=names)
    print(f"ctxbench demo: {args.sessions} generated sessions x {args.turns} turns, "
          f"window {args.window_tokens} tokens, seed {args.seed}")
    print(summary_table(rows).to_string())
    if args.out:
        try:
            written = write_demo(rows, Path(args.out))
        except OSError as e:
            raise UsageError(f"--out: cannot write to {args.out}: {e.strerror or e}") from e
        for path in written:
            print(f"wrote {path}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ctxbench", description="Benchmark LLM-agent context strategies.")
    parser.add_argument("--version", action="version", version=f"ctxbench {harness.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="replay generated histories under every strategy (token use only)")
    demo.add_argument("--sessions", type=int, default=20)
    demo.add_argument("--turns", type=int, default=60)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--window-tokens", type=int, default=128_000)
    demo.add_argument("--strategies", help="comma-separated names (default: all)")
    demo.add_argument("--out", help="directory for sessions.csv and the summary table (default: print only)")
    demo.set_defaults(func=_demo)

    lister = sub.add_parser("list", help="list registered strategies")
    lister.add_argument("what", choices=["strategies", "scenarios", "models"])
    lister.set_defaults(func=_list)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except UsageError as e:
        print(f"ctxbench: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
