"""How a user's mistake becomes one line on stderr and exit code 2: `UsageError`, the parser that
reports argparse errors the same way, and which library errors count as the user's.

Errors that are our bugs are none of these: `harness.cli.main` reports them in one line and writes
their traceback to a file (`write_crash_log`), exit code 1.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

import harness

#: Exit code of every usage or config error (docs/design.md, "CLI").
USAGE_EXIT = 2
#: Exit code of an internal error (a bug), shared with "sessions errored": both mean "look at the output".
BUG_EXIT = 1

#: Library errors whose message is already one line for the user (module, class). Looked up only once
#: their module is loaded: none can be raised before, and `ctxbench --help` stays free of the imports.
LIBRARY_USAGE_ERRORS = (("harness.run.config", "ConfigError"), ("harness.run.directory", "RunError"),
                        ("reports.inputs", "ReportInputError"), ("harness.run.traces", "TraceError"),
                        ("harness.run.fitting", "FitError"), ("harness.core.registry", "PluginError"))


class UsageError(Exception):
    """A mistake in the command line; reported as one line, exit code 2."""


def print_error(message: object) -> None:
    """Write the one line of a usage error to stderr: ``ctxbench: error: <message>``."""
    print(f"ctxbench: error: {message}", file=sys.stderr)


def usage_error_types() -> tuple[type[Exception], ...]:
    """`UsageError` and the loaded library errors of `LIBRARY_USAGE_ERRORS`, for an ``except`` clause."""
    types: list[type[Exception]] = [UsageError]
    for module_name, class_name in LIBRARY_USAGE_ERRORS:
        module = sys.modules.get(module_name)
        if module is not None:
            types.append(getattr(module, class_name))
    return tuple(types)


def write_crash_log(error: BaseException, argv: Sequence[str], *, near: str | None) -> Path:
    """Write the traceback of an internal error with what is needed to reproduce it (command line,
    versions) to ``ctxbench-crash-<time>.log`` in the directory ``near`` when it is one, else in the
    system's temporary directory; the file's path."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    text = (f"ctxbench {harness.__version__}, Python {sys.version.split()[0]}, {platform.platform()}\n"
            f"command: {' '.join(argv)}\n\n" + "".join(traceback.format_exception(error)))
    candidates = [Path(near)] if near is not None else []
    for directory in [*candidates, Path(tempfile.gettempdir())]:
        path = directory / f"ctxbench-crash-{stamp}.log"
        try:
            if directory.is_dir():
                path.write_text(text)
                return path
        except OSError:  # a read-only or vanished run directory: the temporary directory is next
            continue
    return Path("(no writable directory for the log)")


class CommandParser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), like every other usage error of ctxbench."""

    def error(self, message: str) -> NoReturn:
        print_error(f"{self.prog}: {message}")
        sys.exit(USAGE_EXIT)
