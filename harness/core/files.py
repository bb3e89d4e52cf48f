"""Files a reader can trust: atomic writes (a reader never sees half a table, manifest or report)
through temporary files beside their targets (`StagedFile`), a lock that lets one command at a time
write into a directory, and the clean-up of the temporary files a killed writer leaves behind.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

try:  # POSIX; on Windows there is no advisory lock and directories are not locked.
    import fcntl
except ImportError:  # pragma: no cover - exercised on Windows only
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "TEMP_SUFFIX",
    "DirectoryBusy",
    "StagedFile",
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


class StagedFile:
    """A temporary file beside ``target``, named ``.<target name>.<8 random characters>.tmp`` (a dot first,
    so no glob of results sees it; `remove_stale_temp_files` knows the form), that becomes ``target`` on
    `commit` or goes on `discard`.

    Its name is chosen before the file is made, so an interrupt at any moment leaves a name `discard` can
    remove: a name from ``tempfile.mkstemp`` reaches the caller only after the file exists, and an interrupt
    in between leaves a file nobody knows of."""

    __slots__ = ("mode", "path", "prefix", "target")

    def __init__(self, target: Path, *, mode: int = 0o644) -> None:
        self.target = target
        #: Whatever the umask says: a result is for every reader (0644), a key for its owner (0600).
        self.mode = mode
        self.prefix = f".{target.name}."
        #: The temporary file's path while it may exist; None before `create` and after `commit`/`discard`.
        self.path: Path | None = None

    def create(self) -> int:
        """Make the temporary file (exclusively, with `mode`) and return its descriptor."""
        for _ in range(100):
            self.path = self.target.parent / f"{self.prefix}{secrets.token_hex(4)}{TEMP_SUFFIX}"
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, self.mode)
            except FileExistsError:  # another file of that name: not ours, so never discarded
                self.path = None
                continue
            os.fchmod(fd, self.mode)
            return fd
        raise FileExistsError(f"{self.target.parent}: no free temporary file name for {self.target.name}")

    def commit(self) -> None:
        """Rename the temporary file over ``target``."""
        assert self.path is not None
        os.replace(self.path, self.target)
        self.path = None

    def discard(self) -> None:
        """Remove the temporary file, if it was made and is still there."""
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            self.path = None


def write_atomically(path: Path, data: bytes) -> None:
    """Write through a temp file in the same directory (`StagedFile`), fsync, then rename over ``path``."""
    staged = StagedFile(path)
    try:
        with os.fdopen(staged.create(), "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        staged.commit()
    except BaseException:
        staged.discard()
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
