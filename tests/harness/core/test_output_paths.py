"""harness.core.output_paths: what a command may write, refused in one line before any work."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.core.output_paths import OutputPathError, check_output_path, run_file_of


def _run_dir(path: Path) -> Path:
    path.mkdir()
    (path / "manifest.json").write_text("{}\n")
    (path / "sessions.parquet").write_bytes(b"PAR1")
    return path


def test_a_run_directorys_own_files_are_refused_even_when_replacing_is_allowed(tmp_path: Path) -> None:
    run = _run_dir(tmp_path / "run")
    for name in ("sessions.parquet", "manifest.json", "calls.parquet"):
        with pytest.raises(OutputPathError, match="file of the run directory"):
            check_output_path(run / name, flag="--out", directory=False, replace=True)
    assert run_file_of(run / "sessions.parquet") == run
    check_output_path(run / "explorer.html", flag="--out", directory=False)  # a page beside the tables is fine


@pytest.mark.parametrize("make, expected", [
    (lambda p: (p / "f").write_text("x") and p / "f" / "out", "is not a directory"),
    (lambda p: (p / "d").mkdir() or p / "d", "exists and is a directory"),
    (lambda p: (p / "l").symlink_to(p / "nowhere") or p / "l", "symbolic link to nothing"),
    (lambda p: p / ("n" * 300), "longer than 255 bytes"),
])
def test_paths_that_cannot_be_written_are_named(tmp_path: Path, make: Callable[[Path], Path], expected: str) -> None:
    with pytest.raises(OutputPathError, match=expected) as info:
        check_output_path(make(tmp_path), flag="--out", directory=False)
    assert str(info.value).startswith("--out: ") and "\n" not in str(info.value)


def test_an_existing_file_is_refused_only_without_replace(tmp_path: Path) -> None:
    target = tmp_path / "t.jsonl"
    target.write_text("old\n")
    check_output_path(target, flag="--out", directory=False, replace=True)
    with pytest.raises(OutputPathError, match="exists"):
        check_output_path(target, flag="--out", directory=False, replace=False)


def test_a_directory_to_be_made_under_missing_folders_is_fine(tmp_path: Path) -> None:
    check_output_path(tmp_path / "a" / "b" / "c", flag="--out", directory=True)


def test_a_runs_parts_and_links_to_its_files_are_refused(tmp_path: Path) -> None:
    run = _run_dir(tmp_path / "run")
    (run / "config.toml").write_text("sessions = 1\n")
    (run / "parts").mkdir()
    (run / "parts" / "00-0000000.jsonl").write_text("{}\n")
    (tmp_path / "link.jsonl").symlink_to(run / "sessions.parquet")
    (tmp_path / "runlink").symlink_to(run)
    for target in (run / "parts" / "00-0000000.jsonl", run / "parts" / "new.jsonl", tmp_path / "link.jsonl",
                   tmp_path / "runlink" / "manifest.json"):
        with pytest.raises(OutputPathError, match="the run directory"):
            check_output_path(target, flag="--out", directory=False)
    for folder in (run / "parts", run / "parts" / "nested", tmp_path / "runlink" / "parts" / "x"):
        with pytest.raises(OutputPathError, match="inside the run directory"):
            check_output_path(folder, flag="--out", directory=True)
    check_output_path(run / "plots", flag="--out", directory=True)  # beside the parts is not in them


def test_a_folder_no_one_can_write_in_is_found_before_the_work(tmp_path: Path) -> None:
    """/proc refuses a new file even to root, whom the permission bits let write anywhere."""
    with pytest.raises(OutputPathError, match=r"^--doc: cannot write in /proc") as info:
        check_output_path("/proc/ctxbench-out.md", flag="--doc", directory=False)
    assert "\n" not in str(info.value)
    check_output_path(tmp_path / "out.md", flag="--doc", directory=False)
    assert list(tmp_path.iterdir()) == []  # the probe leaves nothing behind
