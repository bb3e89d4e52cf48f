"""How a user's mistake becomes one line on stderr and exit code 2: `UsageError`, the parser that
reports argparse errors the same way, and which library errors count as the user's.

Errors that are our bugs are none of these: they propagate with a traceback.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

#: Exit code of every usage or config error (DESIGN.md, "CLI").
USAGE_EXIT = 2

#: Library errors whose message is already one line for the user (module, class). Looked up only once
#: their module is loaded: none can be raised before, and `ctxbench --help` stays free of the imports.
LIBRARY_USAGE_ERRORS = (("harness.run.config", "ConfigError"), ("harness.run.store", "RunError"))


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


class CommandParser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), like every other usage error of ctxbench."""

    def error(self, message: str) -> NoReturn:
        print_error(f"{self.prog}: {message}")
        sys.exit(USAGE_EXIT)
