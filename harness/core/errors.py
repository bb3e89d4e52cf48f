"""The first problem of a pydantic `ValidationError` as the short text the error lines show.

A config, a manifest or a tool's arguments refused by pydantic is reported as one line naming the field,
not as pydantic's multi-line dump: the first problem is the one to fix, and its dotted path is what a user
finds in the file. The run config's richer line (bounds, the value of the wrong type, union members
dropped from the path) is `harness.run.config.first_error`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ValidationError

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

__all__ = ["error_path", "first_problem"]


def error_path(error: ErrorDetails) -> str:
    """The dotted location of one pydantic error (``stages.0.name``); empty for the model as a whole."""
    return ".".join(str(part) for part in error["loc"])


def first_problem(e: ValidationError) -> str:
    """The first problem of ``e`` as ``<dotted path>: <message>``, or the message alone when it is about
    the model as a whole."""
    first = e.errors()[0]
    where = error_path(first)
    return f"{where}: {first['msg']}" if where else first["msg"]
