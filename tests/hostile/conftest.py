"""Run directories the hostile cases start from, built once per session in-process.

``sources`` holds the pristine directories cases copy (never handed to a command): ``good`` (a finished
run of `cases.TINY` plus its report), ``shard1`` / ``shard2`` (its two shards), ``other`` (a run of
`cases.OTHER`) and ``examples`` (the checkout's). These keep their parts (``run(keep_parts=True)``: the
state of a run stopped between writing its tables and removing its parts), so that damage to a part
can be tried; ``compact``, ``compact1`` and ``compact2`` are the same runs as ``ctxbench run`` leaves them,
parts removed. ``good_dir`` is a separate copy of ``good``, the one
``{good}`` names in a case's argv: every case must leave it byte-identical.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cli import main
from harness.run.config import load_config
from harness.run.runner import run
from tests.hostile.cases import OTHER, TINY

ROOT = Path(__file__).resolve().parents[2]
TABLES = ("sessions.parquet", "calls.parquet")


@dataclass(frozen=True)
class Sources:
    dirs: dict[str, Path]
    #: The undamaged run's table bytes, by file name.
    reference: dict[str, bytes]


def ctxbench(argv: list[str]) -> None:
    """Run ``ctxbench argv`` in-process; fail the session setup unless it exits 0."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    if code != 0:
        pytest.fail(f"building the hostile suite's run directories: ctxbench {' '.join(argv)} exited {code}: "
                    f"{err.getvalue()[-2000:]}")


@pytest.fixture(scope="session")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Sources:
    root = tmp_path_factory.mktemp("hostile-sources")
    (root / "tiny.toml").write_text(TINY)
    (root / "other.toml").write_text(OTHER)
    quiet = ["--quiet", "--no-report"]
    tiny, other = load_config(root / "tiny.toml"), load_config(root / "other.toml")
    with contextlib.chdir(root):
        run(tiny, Path("good"), quiet=True, keep_parts=True)
        ctxbench(["report", "good"])
        run(tiny, Path("shard1"), shard=(1, 2), quiet=True, keep_parts=True)
        run(tiny, Path("shard2"), shard=(2, 2), quiet=True, keep_parts=True)
        run(other, Path("other"), quiet=True, keep_parts=True)
        ctxbench(["run", "tiny.toml", "--out", "compact", *quiet])
        ctxbench(["run", "tiny.toml", "--out", "compact1", "--shard", "1/2", *quiet])
        ctxbench(["run", "tiny.toml", "--out", "compact2", "--shard", "2/2", *quiet])
    built = ("good", "shard1", "shard2", "other", "compact", "compact1", "compact2")
    dirs = {name: root / name for name in built} | {"examples": ROOT / "examples"}
    for name in built:
        assert (dirs[name] / "manifest.json").is_file(), name
        assert (dirs[name] / "parts").is_dir() == (not name.startswith("compact")), name
    assert (dirs["good"] / "report.html").is_file() and (dirs["good"] / "plots").is_dir()
    return Sources(dirs, {t: (dirs["good"] / t).read_bytes() for t in TABLES})


@pytest.fixture(scope="session")
def good_dir(sources: Sources, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile-good") / "good"
    shutil.copytree(sources.dirs["good"], path, symlinks=True)
    return path
