"""What every report reads before it draws anything: a run directory checked to hold a finished run,
the output formats checked to be known, and the run's manifest. A problem the user can fix is a
``ReportInputError``: one line naming the directory, file or format.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from harness.core.rundir import MANIFEST_FILE, SESSIONS_TABLE, Manifest

__all__ = ["FORMATS", "ReportInputError", "check_formats", "check_run_dir", "read_manifest"]

#: The formats a report (and a sweep page) is written in.
FORMATS = ("html", "md")


class ReportInputError(ValueError):
    """The report or compare cannot start from what it was given (not a run directory, an unknown
    format): one line naming the problem."""


def check_run_dir(run_dir: str | Path) -> Path:
    """``run_dir`` as a Path when it holds a finished run's tables; else a ReportInputError."""
    path = Path(run_dir)
    if not path.exists():
        raise ReportInputError(f"{path}: no such directory")
    if not path.is_dir():
        raise ReportInputError(f"{path}: not a directory")
    if not (path / SESSIONS_TABLE).is_file():
        raise ReportInputError(f"{path}: not a finished run directory (no {SESSIONS_TABLE}; run `ctxbench run` "
                               "into it to finish it)")
    return path


def check_formats(formats: Iterable[str]) -> tuple[str, ...]:
    """The asked formats, lower-cased, blanks and repeats dropped, in the order given; a
    ReportInputError for an unknown one or for none at all."""
    chosen = tuple(dict.fromkeys(f.strip().lower() for f in formats if f.strip()))
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown:
        raise ReportInputError(f"unknown report format {unknown[0]!r} (known: {', '.join(FORMATS)})")
    if not chosen:
        raise ReportInputError(f"no report format given (known: {', '.join(FORMATS)})")
    return chosen


def read_manifest(run_dir: Path) -> Manifest:
    """The manifest of ``run_dir``. A directory without one (its tables copied without it, or a run
    from before manifests) reads as an empty manifest named after the directory, so it still renders;
    a manifest that cannot be read or parsed is a ReportInputError naming the file."""
    path = run_dir / MANIFEST_FILE
    if not path.is_file():
        return Manifest(run_id=run_dir.name)
    try:
        return Manifest.read(run_dir)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ReportInputError(f"{path}: not a valid manifest ({f'{where}: ' if where else ''}{first['msg']})") \
            from None
    except OSError as error:
        raise ReportInputError(f"{path}: cannot be read ({error.strerror or error})") from None
