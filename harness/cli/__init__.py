"""The ``ctxbench`` command: parses arguments and calls one library function per subcommand.

One module per subcommand declares its parser and its handler; `flags` declares the flags several
subcommands share; `errors` turns a user's mistake into one line. This module registers the
subcommands in workflow order and is the one place that reports errors and interrupts.

Exit codes: 0 success, 1 a compare gate failed or sessions errored, 2 usage error (one line on stderr
naming what is wrong, no traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import harness
from harness.cli import compare, listing, merge, report, run, scenario, sweep, validate, validation
from harness.cli.errors import USAGE_EXIT, CommandParser, UsageError, print_error, usage_error_types

__all__ = ["UsageError", "build_parser", "main"]

#: The subcommand modules in workflow order, the order `ctxbench --help` lists them in.
COMMANDS = (run, sweep, report, compare, validate, merge, listing, scenario, validation)


def build_parser() -> argparse.ArgumentParser:
    """The ``ctxbench`` parser with every subcommand; each sets ``func``, its handler."""
    parser = CommandParser(prog="ctxbench", description="Benchmark LLM-agent context strategies.")
    parser.add_argument("--version", action="version", version=f"ctxbench {harness.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ctxbench`` with ``argv`` (the process's arguments when None); the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return USAGE_EXIT
    try:
        return int(args.func(args))
    except usage_error_types() as e:
        print_error(e)
        return USAGE_EXIT
    except KeyboardInterrupt:
        print("ctxbench: interrupted (finished batches are kept: run the same command again to resume)",
              file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as other command-line tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
