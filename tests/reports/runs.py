"""The small real run the report and compare tests are made from, and how a test edits a run's table."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from harness.core.rundir import Manifest, file_sha256

SMALL_RUN: dict[str, Any] = {
    "sessions": 12,
    "seed": 3,
    "batch_size": 4,
    "executor": "serial",
    "scenarios": [{"name": "mix", "turns": 20}],
    "strategies": [{"name": "unbounded"}, {"name": "sliding_window", "label": "sw20", "window_size": 20},
                   {"name": "offload_contracts"}],
}


def replace_table(run_dir: Path, name: str, frame: pd.DataFrame) -> None:
    """Write ``frame`` as the run's table ``name`` and record its checksum and row count in the manifest,
    as the run store would have: a test's edited run, not a damaged one."""
    path = run_dir / name
    frame.to_parquet(path, index=False)
    manifest = Manifest.read(run_dir)
    manifest.model_copy(update={"sha256": manifest.sha256 | {name: file_sha256(path)},
                                "rows": manifest.rows | {name: len(frame)}}).write(run_dir)


def edited_copy(run_dir: Path, dest: Path, edit: Callable[[pd.DataFrame], pd.DataFrame]) -> Path:
    """A copy of ``run_dir`` at ``dest`` whose sessions table is ``edit`` of the original's (checksums
    kept true by :func:`replace_table`): run B of a compare test, with known changes."""
    shutil.copytree(run_dir, dest)
    replace_table(dest, "sessions.parquet", edit(pd.read_parquet(dest / "sessions.parquet")))
    return dest
