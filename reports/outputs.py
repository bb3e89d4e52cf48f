"""A report's files (plots, pages) written into a run directory as one set: every target checked
before anything is written, every file staged next to its target, and only then all renamed into
place. A report that fails leaves the directory as it was, never a new page over old plots or half the
plots of a run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.core.files import DirectoryBusy, StagedFile, lock_directory, remove_stale_temp_files
from harness.core.rundir import PLOTS_DIR
from reports.inputs import ReportInputError

__all__ = ["Png", "check_targets", "write_files"]


@dataclass(frozen=True)
class Png:
    """A drawn plot: the path it is to be written to and its PNG bytes. A report draws every plot
    before it writes any file (:func:`write_files`)."""

    path: Path
    data: bytes


def check_targets(run_dir: Path, targets: Iterable[Path]) -> None:
    """A ReportInputError naming the first target (a file under ``run_dir``) that exists and is not a
    file, or whose directory under ``run_dir`` exists and is not a directory."""
    for target in targets:
        for folder in _folders_below(run_dir, target):
            if folder.exists() and not folder.is_dir():
                raise ReportInputError(f"{folder}: exists and is not a directory (move it away to write the report)")
        if target.exists() and not target.is_file():
            raise ReportInputError(f"{target}: exists and is not a file (move it away to write the report)")


def write_files(run_dir: Path, files: Mapping[Path, bytes]) -> None:
    """Write ``files`` (target path under ``run_dir`` -> bytes) as one set: checked (:func:`check_targets`),
    then each written to a temporary file beside its target and synced, then all renamed over their
    targets. A target that cannot be written (a read-only directory, a full disk) is a ReportInputError
    naming it, and everything staged so far is removed again, directories this made included.

    One writer at a time holds the run directory's lock (another command writing into it is a
    ReportInputError), and under it the temporary files a killed report left beside the targets are
    removed first."""
    check_targets(run_dir, list(files))
    if not run_dir.is_dir():  # nothing to lock: writing fails below with one line naming the target
        _write_locked(run_dir, files)
        return
    try:
        with lock_directory(run_dir):
            for folder in {target.parent for target in files} & {run_dir, run_dir / PLOTS_DIR}:
                if folder.is_dir():
                    remove_stale_temp_files(folder)
            _write_locked(run_dir, files)
    except DirectoryBusy:
        raise ReportInputError(f"{run_dir}: another ctxbench command is writing into this directory; wait for it "
                               "to finish") from None


def _write_locked(run_dir: Path, files: Mapping[Path, bytes]) -> None:
    made: list[Path] = []
    staged: list[StagedFile] = []
    where, what = run_dir, "cannot be written"
    try:
        for target, data in files.items():
            for folder in _folders_below(run_dir, target):
                if not folder.exists():
                    where, what = folder, "cannot be created"
                    folder.mkdir()
                    made.append(folder)
            where, what = target, "cannot be written"
            # Named like write_atomically's temp files, so a later run's clean-up removes the ones a
            # killed report leaves behind.
            stage = StagedFile(target)
            staged.append(stage)
            with os.fdopen(stage.create(), "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
    except OSError as error:
        _discard(staged, made)
        raise ReportInputError(f"{where}: {what} ({error.strerror or error})") from None
    except BaseException:  # an interrupt: leave nothing staged behind either
        _discard(staged, made)
        raise
    for i, stage in enumerate(staged):
        try:
            stage.commit()
        except OSError as error:
            # Only a target changed since check_targets gets here; the ones renamed before it stay
            # (their old bytes are gone), the rest are not written.
            _discard(staged[i:], [])
            raise ReportInputError(f"{stage.target}: cannot be written ({error.strerror or error})") from None


def _folders_below(run_dir: Path, target: Path) -> list[Path]:
    """The directories between ``run_dir`` (left out) and ``target``, outermost first."""
    return [f for f in reversed(target.parents) if f != run_dir and f.is_relative_to(run_dir)]


def _discard(staged: list[StagedFile], made: list[Path]) -> None:
    """Remove staged temporary files, then the directories made for them (newest first)."""
    for stage in staged:
        stage.discard()
    for folder in reversed(made):
        try:
            folder.rmdir()
        except OSError:  # not empty: someone else wrote into it meanwhile; theirs to keep
            pass
