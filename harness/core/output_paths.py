"""Where a command may write, checked before it does any work.

Every command that takes an output path (``run --out``, ``replay --out``, ``fit --out`` / ``--report``,
``export-otel --out``, ``view --out``, ``validation --out`` / ``--doc``) asks `check_output_path` first, so
that a path that cannot be written fails in one line before a long computation, and a path that must not
be written (a run directory's own tables, manifest or config) is never overwritten, whatever ``--force``
says: those files are what every later command trusts.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from harness.core.rundir import (
    CALLS_TABLE,
    CONFIG_FILE,
    EVENTS_TABLE,
    HIDDEN_TABLE,
    MANIFEST_FILE,
    PARTS_DIR,
    SESSIONS_TABLE,
)

__all__ = ["OutputPathError", "check_output_path", "is_run_directory", "run_file_of"]

#: The files a run directory's readers trust: never an output of another command.
RUN_FILES = frozenset({CONFIG_FILE, MANIFEST_FILE, SESSIONS_TABLE, CALLS_TABLE, EVENTS_TABLE, HIDDEN_TABLE})


class OutputPathError(ValueError):
    """An output path that cannot or may not be written: the message is one line naming the flag and path."""


def is_run_directory(path: Path) -> bool:
    """Whether ``path`` is (or holds the beginning of) a run directory: a manifest, or a config beside parts."""
    try:
        return (path / MANIFEST_FILE).exists() or ((path / CONFIG_FILE).is_file() and (path / PARTS_DIR).is_dir())
    except OSError:
        return False


def run_file_of(path: Path) -> Path | None:
    """The run directory whose own file ``path`` is (a table, the manifest, the config), else None."""
    if path.name in RUN_FILES and is_run_directory(path.parent):
        return path.parent
    return None


def check_output_path(path: str | Path, *, flag: str, directory: bool, replace: bool = True) -> None:
    """Raise `OutputPathError` unless ``path`` can be written as a file (or made as a directory when
    ``directory``): it is not the other kind, not a dangling symbolic link, not a run directory's own
    file, its nearest existing parent is a directory this process may write in, and no part of its name
    is longer than the file system allows. ``replace=False`` also refuses an existing file.
    """
    path = Path(path)
    try:
        if "\0" in str(path):
            raise OutputPathError(f"{flag}: the path holds a NUL character")
        for part in path.parts:
            if len(os.fsencode(part)) > 255:
                raise OutputPathError(f"{flag}: a name in {str(path)[:80]}... is longer than 255 bytes")
        if path.is_symlink() and not path.exists():
            raise OutputPathError(f"{flag}: {path} is a symbolic link to nothing ({os.readlink(path)})")
        if path.exists():
            if path.is_dir() != directory:
                raise OutputPathError(f"{flag}: {path} exists and is {'not ' if directory else ''}a directory")
            if not directory:
                owner = run_file_of(path)
                if owner is not None:
                    raise OutputPathError(f"{flag}: {path} is a file of the run directory {owner}; "
                                          "write somewhere else")
                if not replace:
                    raise OutputPathError(f"{flag}: {path} exists")
        elif not directory and is_run_directory(path.parent) and path.name in RUN_FILES:
            raise OutputPathError(f"{flag}: {path} would be a file of the run directory {path.parent}; "
                                  "write somewhere else")
        parent = next((p for p in (path, *path.parents) if p.exists()), Path("."))
        if parent == path:
            parent = path if directory else path.parent
        if not parent.is_dir():
            raise OutputPathError(f"{flag}: {parent} is not a directory")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputPathError(f"{flag}: cannot write in {parent} (permission denied)")
    except OSError as e:  # a name too long for the system, a loop of links: what the write would have hit
        reason = e.strerror or errno.errorcode.get(e.errno or 0, str(e))
        raise OutputPathError(f"{flag}: {str(path)[:120]} cannot be used ({reason})") from None
