"""What the commands that read transcripts and write a file plus a report folder share (``ctxbench fit``,
``ctxbench calibrate``): reading the traces given, their progress lines, the checks of both outputs before any
work, and the report folder replaced whole.

A report folder is replaced whole, so it must be new, empty or an earlier report of the same command: a folder
holding anything else (a run directory, a user's files) is refused even with ``--force``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli.errors import UsageError

if TYPE_CHECKING:
    from harness.run.traces import ImportedSession

#: The pages of a report folder (its plots go in ``plots/``).
REPORT_PAGES = ("report.html", "report.md")


def say_for(command: str, quiet: bool) -> Callable[[str], None]:
    """A progress line on stderr, ``ctxbench: COMMAND: ...``; nothing when ``quiet``."""
    def say(line: str) -> None:
        if not quiet:
            print(f"ctxbench: {command}: {line}", file=sys.stderr, flush=True)

    return say


def check_format(trace_format: str | None) -> None:
    """UsageError unless ``--format`` is unset or names a trace format."""
    from harness.run.traces import format_names

    if trace_format is not None and trace_format not in format_names():
        raise UsageError(f"--format: unknown format {trace_format!r} (known: {', '.join(format_names())})")


def read_transcripts(traces: Sequence[str], trace_format: str | None) -> list[ImportedSession]:
    """The sessions of ``traces`` (files or folders) read as ``ctxbench replay`` reads them, their reading notes
    on stderr; UsageError for an unknown format, a trace that cannot be read, or traces holding no session."""
    from harness.run.traces import TraceError, load_traces

    check_format(trace_format)
    notes: list[str] = []
    try:
        sessions = load_traces([Path(t) for t in traces], trace_format, notes=notes)
    except TraceError as e:
        raise UsageError(str(e)) from None
    if not sessions:
        raise UsageError(f"{', '.join(traces)}: no sessions in these traces")
    for note in notes:
        print(f"ctxbench: note: {note}", file=sys.stderr)
    return sessions


def text_of(name: str) -> str:
    """A path given on the command line as text (what is written into a file or a report), whatever bytes it
    holds."""
    return os.fsencode(name).decode("utf-8", "replace")


def check_outputs(command: str, out: Path, report: Path, force: bool, plot_names: Iterable[str]) -> None:
    """UsageError before any work when an output cannot or may not be written: either path fails
    `harness.core.output_paths.check_output_path` (which also refuses a run directory's own files), a folder
    to write into is missing, ``out`` lies inside the report folder, or the report folder is one ``command``
    may not replace (`stranger_in_report`) even with ``force``; an existing output without ``force``."""
    from harness.core.output_paths import OutputPathError, check_output_path

    try:
        check_output_path(out, flag="--out", directory=False)
        check_output_path(report, flag="--report", directory=True)
        if not os.path.isdir(out.parent):  # the files are made, not the folders they go in
            raise UsageError(f"--out: the folder {out.parent} does not exist")
        if not os.path.isdir(report.parent):
            raise UsageError(f"--report: the folder {report.parent} does not exist")
        real_out, real_report = Path(os.path.realpath(out)), Path(os.path.realpath(report))
        if real_out == real_report or real_report in real_out.parents:
            raise UsageError(f"--out: {out} is inside the --report folder {report}, which {command} replaces whole "
                             "(write it elsewhere)")
        if os.path.lexists(report):
            refusal = stranger_in_report(command, report, plot_names)
            if refusal is not None:
                raise UsageError(f"--report: {report} {refusal}; {command} replaces the report folder whole, so it "
                                 f"must be new, empty or an earlier {command} report (even with --force)")
            if not force and any(report.iterdir()):
                raise UsageError(f"--report: {report} exists (use --force to replace it)")
        if os.path.lexists(out) and not force:
            raise UsageError(f"--out: {out} exists (use --force to replace it)")
    except OutputPathError as e:
        raise UsageError(str(e)) from None
    except OSError as e:  # a folder that cannot be listed
        raise UsageError(f"--report: {report} cannot be used ({e.strerror or e})") from None


def stranger_in_report(command: str, report: Path, plot_names: Iterable[str]) -> str | None:
    """Why the existing ``report`` is not a report folder of ``command`` (its pages, ``plots/<name>.png``, the
    temporary files of an interrupted write), as "is a symbolic link ..." or "holds plots/x, which ... did
    not write", else None."""
    from harness.core.files import TEMP_SUFFIX
    from harness.core.output_paths import is_run_directory

    if report.is_symlink():
        return "is a symbolic link (name the folder itself)"
    if is_run_directory(report):
        return "is a run directory"
    plots = {f"{name}.png" for name in plot_names}

    def ours(entry: Path, names: Iterable[str]) -> bool:
        temporary = entry.name.startswith(".") and entry.name.endswith(TEMP_SUFFIX)
        return not entry.is_dir() and (entry.name in names or temporary)

    for entry in sorted(report.iterdir()):
        if entry.name == "plots" and entry.is_dir() and not entry.is_symlink():
            inner = next((p for p in sorted(entry.iterdir()) if not ours(p, plots)), None)
            if inner is not None:
                return f"holds {inner.relative_to(report)}, which {command} did not write"
        elif not ours(entry, REPORT_PAGES):
            return f"holds {entry.relative_to(report)}, which {command} did not write"
    return None


def replace_folder(report: Path, write: Callable[[Path], object]) -> None:
    """Write a folder aside with ``write(folder)``, then put it in ``report``'s place: a reader sees the old
    folder or the whole new one, never half of it."""
    staging = Path(tempfile.mkdtemp(dir=report.parent, prefix=f".{report.name}.", suffix=".tmp"))
    try:
        write(staging)
        if report.exists():
            shutil.rmtree(report)
        os.replace(staging, report)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
