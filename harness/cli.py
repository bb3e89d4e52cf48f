"""The ``ctxbench`` command: parses arguments and calls one library function per subcommand.

Exit codes: 0 success, 2 usage error (one line on stderr naming what is wrong, no traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

import harness


class UsageError(Exception):
    """A mistake in the command line; reported as one line, exit code 2."""


def _print_listing(rows: list[tuple[str, str]]) -> None:
    width = max(len(name) for name, _ in rows)
    for name, line in rows:
        print(f"{name:<{width}}  {line}")


def _first_line(obj: object) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    return doc[0] if doc else ""


def _list(args: argparse.Namespace) -> int:
    if args.what == "strategies":
        import strategies

        _print_listing([(n, _first_line(strategies.get(n))) for n in strategies.names()])
        return 0
    if args.what == "scenarios":
        import scenarios

        _print_listing([(n, _first_line(scenarios.get(n))) for n in scenarios.names()])
        return 0
    from harness.profiles import PROFILE_NAMES, profile

    rows = []
    for name in PROFILE_NAMES:
        p = profile(name)
        rows.append((name, f"window {p.window_tokens:,} tokens, recall half-length {p.L_half:,.0f}, "
                           f"malformed base {p.p_malformed_base:g}, ${p.price_in:g}/${p.price_out:g} per M in/out"))
    _print_listing(rows)
    return 0


def _parse_params(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs; values are read as JSON when they parse (numbers, booleans, objects)."""
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param: expected KEY=VALUE, got {pair!r}")
        try:
            params[key] = json.loads(raw)
        except ValueError:
            params[key] = raw
    return params


def _validation_line(e: ValidationError) -> str:
    first = e.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "params"
    return f"{field}: {first['msg']}"


def _scenario_show(args: argparse.Namespace) -> int:
    import scenarios
    from scenarios.base import script_summary

    params = _parse_params(args.param)
    try:
        script = scenarios.generate(args.name, args.seed, **params)
    except KeyError as e:
        raise UsageError(str(e.args[0])) from None
    except ValidationError as e:
        raise UsageError(f"scenario {args.name}: {_validation_line(e)}") from None
    if args.summary:
        _print_listing([(k, str(v)) for k, v in script_summary(script).items()])
    else:
        print(script.model_dump_json(indent=2))
    return 0


def _bench(args: argparse.Namespace) -> int:
    import scenarios
    import strategies
    from harness.comparison import run_comparison, summary_table, write_comparison
    from harness.profiles import PROFILE_NAMES

    names = [n.strip() for n in args.strategies.split(",") if n.strip()] if args.strategies else None
    known = strategies.names()
    for name in names or []:
        if name not in known:
            raise UsageError(f"--strategies: unknown strategy {name!r} (known: {', '.join(known)})")
    if args.scenario not in scenarios.names():
        raise UsageError(f"--scenario: unknown scenario {args.scenario!r} (known: {', '.join(scenarios.names())})")
    if args.model not in PROFILE_NAMES:
        raise UsageError(f"--model: unknown profile {args.model!r} (known: {', '.join(PROFILE_NAMES)})")
    if args.sessions < 1:
        raise UsageError(f"--sessions: must be >= 1, got {args.sessions}")
    rows = run_comparison(sessions=args.sessions, seed=args.seed, scenario=args.scenario, profile=args.model,
                          names=names)
    print(f"ctxbench bench: {args.sessions} {args.scenario} sessions, profile {args.model}, seed {args.seed}")
    print(summary_table(rows).to_string())
    if args.out:
        try:
            written = write_comparison(rows, Path(args.out))
        except OSError as e:
            raise UsageError(f"--out: cannot write to {args.out}: {e.strerror or e}") from e
        for path in written:
            print(f"wrote {path}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ctxbench", description="Benchmark LLM-agent context strategies.")
    parser.add_argument("--version", action="version", version=f"ctxbench {harness.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    bench = sub.add_parser("bench", help="replay generated sessions under every strategy, serially, and "
                                         "print the summary table")
    bench.add_argument("--sessions", type=int, default=100)
    bench.add_argument("--scenario", default="mix")
    bench.add_argument("--model", default="frontier", help="model profile (default: frontier)")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--strategies", help="comma-separated names (default: all)")
    bench.add_argument("--out", help="directory for sessions.csv and the summary table (default: print only)")
    bench.set_defaults(func=_bench)

    scenario = sub.add_parser("scenario", help="inspect generated session scripts")
    scenario_sub = scenario.add_subparsers(dest="scenario_command", metavar="SUBCOMMAND", required=True)
    show = scenario_sub.add_parser("show", help="print a generated script as JSON")
    show.add_argument("name")
    show.add_argument("--seed", type=int, default=0)
    show.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                      help="a generator parameter, e.g. --param turns=40 (repeatable)")
    show.add_argument("--summary", action="store_true", help="print a short table instead of the JSON")
    show.set_defaults(func=_scenario_show)

    lister = sub.add_parser("list", help="list registered strategies or scenarios")
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
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as other command-line tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
