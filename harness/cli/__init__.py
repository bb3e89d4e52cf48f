"""The ``ctxbench`` command: parses arguments and calls one library function per subcommand.

One module per subcommand declares its parser and its handler; `flags` declares the flags several
subcommands share; `errors` turns a user's mistake into one line. This module registers the
subcommands in workflow order and is the one place that reports errors and interrupts.

Exit codes: 0 success, 1 a compare gate failed or sessions errored, 2 usage error (one line on stderr
naming what is wrong, no traceback), 130 / 143 interrupted by SIGINT / SIGTERM (finished batches
kept). An exception that is none of these is a bug of ctxbench: one line says so and where its
traceback was written (`harness.cli.errors.write_crash_log`), exit 1.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn

import harness
from harness.cli import (
    bench,
    calibrate,
    compare,
    export_otel,
    fit,
    listing,
    merge,
    replay,
    report,
    run,
    scenario,
    sweep,
    tune,
    validate,
    validation,
    view,
)
from harness.cli.errors import (
    BUG_EXIT,
    USAGE_EXIT,
    CommandParser,
    UsageError,
    print_error,
    usage_error_types,
    write_crash_log,
)

__all__ = ["UsageError", "build_parser", "main"]

#: The subcommand modules in workflow order, the order `ctxbench --help` lists them in.
COMMANDS = (run, sweep, tune, report, view, export_otel, compare, validate, merge, replay, fit, calibrate, listing,
            scenario, validation, bench)


def build_parser() -> argparse.ArgumentParser:
    """The ``ctxbench`` parser with every subcommand; each sets ``func``, its handler."""
    parser = CommandParser(
        prog="ctxbench", allow_abbrev=False,
        description="Benchmark LLM-agent context strategies: replay simulated (or recorded) agent sessions under "
                    "each strategy and report what each costs and solves. `ctxbench COMMAND --help` describes a "
                    "command. Exit codes: 0 success; 1 a compare gate failed or sessions errored; 2 a usage or "
                    "config error (one line on stderr); 130 / 143 interrupted (finished batches are kept).")
    parser.add_argument("--version", action="version", version=f"ctxbench {harness.__version__}",
                        help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", help="the commands, in workflow order:")
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every clean-up on the way out runs (temporary files
    removed, workers stopped) and the finished batches stay resumable."""


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    def raise_terminated(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, raise_terminated)
    except ValueError:  # not the main thread (main() called from a thread): leave SIGTERM alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ctxbench`` with ``argv`` (the process's arguments when None); the exit code."""
    parser = build_parser()
    args, unrecognized = parser.parse_known_args(argv)
    if unrecognized:
        _refuse_unrecognized(parser, args, unrecognized)
    if args.command is None:
        parser.print_help()
        print_error("no command given (the commands are listed above)")
        return USAGE_EXIT
    try:
        with _sigterm_as_interrupt():
            return int(args.func(args))
    except usage_error_types() as e:
        print_error(e)
        return USAGE_EXIT
    except KeyboardInterrupt as e:
        return _interrupted(e)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as other command-line tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # our bug, not the user's: say so in one line, keep the traceback in a file
        interrupt = _interrupt_behind(e)
        if interrupt is not None:  # e.g. Ctrl-C inside a class body: Python re-raises it as RuntimeError
            return _interrupted(interrupt)
        log = write_crash_log(e, sys.argv if argv is None else ["ctxbench", *argv], near=_run_dir_of(args))
        print(f"ctxbench: internal error (a bug in ctxbench, not in your input): {type(e).__name__}: "
              f"{str(e).splitlines()[0] if str(e) else ''}; the traceback is in {log}; please report it",
              file=sys.stderr)
        return BUG_EXIT


def _refuse_unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace,
                         unrecognized: Sequence[str]) -> NoReturn:
    """argparse's "unrecognized arguments" error (exit 2, one line), said by the parser of the command given
    (``ctxbench run: ...``) with the closest of its flags to the first unknown one (``--session``: did you
    mean '--sessions'?). Flags are never abbreviated (``allow_abbrev=False``), so a typo is never taken as
    a flag it resembles."""
    from harness.core.suggest import did_you_mean

    target = parser
    while True:
        actions = [a for a in target._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, actions[0].dest, None) if actions else None
        if not actions or chosen not in actions[0].choices:
            break
        target = actions[0].choices[chosen]
    flags = [flag for action in target._actions for flag in action.option_strings]
    first = next((arg.partition("=")[0] for arg in unrecognized if arg.startswith("-")), None)
    hint = did_you_mean(first, flags) if first is not None else ""
    target.error(f"unrecognized arguments: {' '.join(unrecognized)}{hint}")


def _interrupted(interrupt: KeyboardInterrupt) -> int:
    print("ctxbench: interrupted (finished batches are kept: run the same command again to resume)", file=sys.stderr)
    return 128 + (signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT)


def _interrupt_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM an exception was raised from, if any (its causes and contexts, followed)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _run_dir_of(args: argparse.Namespace) -> str | None:
    """The run directory the command works on, where its crash log belongs (None: no such directory)."""
    for name in ("out", "out_dir", "run_dir"):
        value = getattr(args, name, None)
        if isinstance(value, str):
            return value
    return None
