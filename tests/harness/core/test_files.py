"""Temporary files beside their targets (harness/core/files.py, `StagedFile`): whatever moment an interrupt
lands, what was staged can be removed, and a committed file has its mode whatever the umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from harness.core import files
from harness.core.files import TEMP_SUFFIX, StagedFile, remove_stale_temp_files, write_atomically


def test_an_interrupt_right_after_the_file_is_made_leaves_a_name_discard_removes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The moment mkstemp cannot cover: the file exists, its descriptor has not reached the caller yet."""
    real_open = os.open

    def open_then_interrupted(*args: Any, **kwargs: Any) -> int:
        os.close(real_open(*args, **kwargs))
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "open", open_then_interrupted)
    staged = StagedFile(tmp_path / "traces.jsonl")
    with pytest.raises(KeyboardInterrupt):
        staged.create()
    assert staged.path is not None and staged.path.exists()
    staged.discard()
    assert list(tmp_path.iterdir()) == []


def test_a_staged_file_is_named_for_the_stale_file_clean_up_and_committed_with_its_mode(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        staged = StagedFile(tmp_path / "report.md")
        with os.fdopen(staged.create(), "w") as f:
            f.write("x")
        assert staged.path is not None
        assert staged.path.name.startswith(".report.md.") and staged.path.name.endswith(TEMP_SUFFIX)
        staged.commit()
        key = StagedFile(tmp_path / "key", mode=0o600)
        os.close(key.create())
        assert key.path is not None and stat.S_IMODE(key.path.stat().st_mode) == 0o600
        assert remove_stale_temp_files(tmp_path) == [key.path]
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "report.md").stat().st_mode) == 0o644
    assert (tmp_path / "report.md").read_text() == "x"


def test_a_failed_atomic_write_leaves_the_old_file_and_no_temporary_one(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "manifest.json"
    target.write_bytes(b"old")

    def interrupted(*args: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]
