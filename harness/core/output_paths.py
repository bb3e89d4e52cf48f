"""Where a command may write, checked before it does any work.

Every command that takes an output path (``run --out``, ``replay --out``, ``fit --out`` / ``--report``,
``export-otel --out``, ``view --out``, ``validation --out`` / ``--doc``) asks `check_output_path` first, so
that a path that cannot be written fails in one line before a long computation, and a path that must not
be written (a run directory's own tables, manifest or config, or anything in its ``parts/`` folder) is
never overwritten, whatever ``--force`` says: those files are what every later command trusts. A symbolic
link is judged by what it names as well as by its own name.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from harness.core.files import StagedFile
from harness.core.rundir import CONFIG_FILE, MANIFEST_FILE, PARTS_DIR, RUN_FILES

__all__ = ["OutputPathError", "check_output_path", "is_run_directory", "run_file_of"]


class OutputPathError(ValueError):
    """An output path that cannot or may not be written: the message is one line naming the flag and path."""


def is_run_directory(path: Path) -> bool:
    """Whether ``path`` is (or holds the beginning of) a run directory: a manifest, or a config beside parts."""
    try:
        return (path / MANIFEST_FILE).exists() or ((path / CONFIG_FILE).is_file() and (path / PARTS_DIR).is_dir())
    except OSError:
        return False


def run_file_of(path: Path) -> Path | None:
    """The run directory whose own file ``path`` is (a table, the manifest, the config, anything under its
    ``parts/`` folder), else None; a symbolic link is followed to what it names."""
    for candidate in _names_of(path):
        if candidate.name in RUN_FILES and is_run_directory(candidate.parent):
            return candidate.parent
        owner = _parts_owner(candidate)
        if owner is not None:
            return owner
    return None


def _names_of(path: Path) -> list[Path]:
    """``path`` and, when a link on its way makes it name another file, the path it resolves to."""
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a loop of links: the write fails on it anyway, checked below
        return [path]
    return [path] if resolved == path.absolute() else [path, resolved]


def _parts_folder_owner(path: Path) -> Path | None:
    """The run directory whose ``parts/`` folder is or holds ``path`` or what a link makes it name."""
    for candidate in _names_of(path):
        owner = _parts_owner(candidate)
        if owner is not None:
            return owner
    return None


def _parts_owner(path: Path) -> Path | None:
    """The run directory whose ``parts/`` folder is or holds ``path`` (at any depth), else None."""
    for folder in (path, *path.parents):
        if folder.name == PARTS_DIR and is_run_directory(folder.parent):
            return folder.parent
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
        exists = path.exists()
        if exists and path.is_dir() != directory:
            raise OutputPathError(f"{flag}: {path} exists and is {'not ' if directory else ''}a directory")
        owner = _parts_folder_owner(path) if directory else run_file_of(path)
        if owner is not None:
            raise OutputPathError(f"{flag}: {path} {'is' if exists else 'would be'} "
                                  f"{'inside' if directory else 'a file of'} the run directory {owner}; "
                                  "write somewhere else")
        if exists and not directory and not replace:
            raise OutputPathError(f"{flag}: {path} exists")
        parent = next((p for p in (path, *path.parents) if p.exists()), Path("."))
        if parent == path:
            parent = path if directory else path.parent
        if not parent.is_dir():
            raise OutputPathError(f"{flag}: {parent} is not a directory")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputPathError(f"{flag}: cannot write in {parent} (permission denied)")
        _probe(parent, flag)
    except OSError as e:  # a name too long for the system, a loop of links: what the write would have hit
        raise OutputPathError(f"{flag}: {str(path)[:120]} cannot be used ({_reason(e)})") from None


def _probe(folder: Path, flag: str) -> None:
    """Make and remove a file in ``folder``: what the permission bits do not tell (a read-only file system,
    /proc, a root user's access to anything) shows before the work rather than at the end of it."""
    probe = StagedFile(folder / "ctxbench-probe")
    try:
        os.close(probe.create())
    except OSError as e:
        raise OutputPathError(f"{flag}: cannot write in {folder} ({_reason(e)})") from None
    probe.discard()  # gone already if a writer's clean-up of stale temporary files took it


def _reason(error: OSError) -> str:
    return error.strerror or errno.errorcode.get(error.errno or 0, str(error))
