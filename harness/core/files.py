"""Files a reader can trust: atomic writes (a reader never sees half a table, manifest or report),
a lock that lets one command at a time write into a directory, and the clean-up of the temporary
files a killed writer leaves behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

try:  # POSIX; on Windows there is no advisory lock and directories are not locked.
    import fcntl
except ImportError:  # pragma: no cover - exercised on Windows only
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "TEMP_SUFFIX",
    "DirectoryBusy",
    "lock_directory",
    "release_inherited_locks",
    "remove_stale_temp_files",
    "write_atomically",
]

#: What `write_atomically`'s temporary files end in (they start with a dot, so no glob of results sees them).
TEMP_SUFFIX = ".tmp"

#: The descriptors of the directory locks this process holds: a forked worker closes its copies
#: (`release_inherited_locks`) so that a lock never outlives the command that took it.
_HELD_LOCKS: set[int] = set()


def write_atomically(path: Path, data: bytes) -> None:
    """Write through a temp file in the same directory, fsync, then rename over ``path``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o644)  # mkstemp's 0600 would hide results from other readers
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class DirectoryBusy(Exception):
    """Another command holds the directory's lock."""


@contextlib.contextmanager
def lock_directory(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the directory ``path`` (which must exist) while the block runs;
    DirectoryBusy at once when another process holds it.

    The lock is taken on the directory itself (``flock`` on its descriptor), so it adds no file to
    the directory, and the kernel drops it when the process dies, even by kill -9: a lock can never
    be left stale.
    """
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DirectoryBusy(str(path)) from None
        _HELD_LOCKS.add(fd)
        try:
            yield
        finally:
            _HELD_LOCKS.discard(fd)
    finally:
        os.close(fd)


def release_inherited_locks() -> None:
    """Close, in a forked worker, the copies of its parent's lock descriptors (a process pool's
    initializer): otherwise a worker orphaned by a killed parent would keep the directory locked."""
    for fd in list(_HELD_LOCKS):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD_LOCKS.clear()


def remove_stale_temp_files(directory: Path) -> list[Path]:
    """Delete the temporary files a killed `write_atomically` left in ``directory``; the paths removed.
    Call it only while holding the directory's lock (another writer's temp files are not stale)."""
    removed = []
    for path in sorted(directory.glob(f".*{TEMP_SUFFIX}")):
        if path.is_file() and not path.is_symlink():
            path.unlink()
            removed.append(path)
    return removed
