"""Run directories the hostile cases start from, built once per session in-process.

``sources`` holds the pristine directories cases copy (never handed to a command): ``good`` (a finished
run of `cases.TINY` plus its report), ``shard1`` / ``shard2`` (its two shards), ``other`` (a run of
`cases.OTHER`) and ``examples`` (the checkout's). These keep their parts (``run(keep_parts=True)``: the
state of a run stopped between writing its tables and removing its parts), so that damage to a part
can be tried; ``compact``, ``compact1`` and ``compact2`` are the same runs as ``ctxbench run`` leaves them,
parts removed. ``replay`` is an accounting run (``ctxbench replay`` of `cases.REPLAY_TRACES` under
`cases.REPLAY_CONFIG`) with its parts kept, ``replay-compact`` the same replay as the CLI leaves it and
``replay-other`` an accounting run of the same traces under another config (`cases.REPLAY_OTHER`),
parts kept. ``good_dir`` is a separate copy of ``good``, the one ``{good}`` names in a case's argv:
every case must leave it byte-identical.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.cli import main
from harness.run.accounting import accounting_plan
from harness.run.config import load_config
from harness.run.runner import execute, run
from harness.run.traces import load_traces
from tests.hostile.cases import OTHER, REPLAY_CONFIG, REPLAY_OTHER, REPLAY_TRACES, TINY

ROOT = Path(__file__).resolve().parents[2]
TABLES = ("sessions.parquet", "calls.parquet")
#: The tables of each source a case's ``identical`` is compared with (`cases.Case.reference`).
REFERENCE_TABLES = {"good": TABLES, "replay": ("sessions.parquet", "calls.parquet", "hidden.parquet")}


@dataclass(frozen=True)
class Sources:
    dirs: dict[str, Path]
    #: The undamaged runs' table bytes: source name (a key of `REFERENCE_TABLES`) -> file name -> bytes.
    reference: dict[str, dict[str, bytes]]


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
        build_replays(root)
    built = ("good", "shard1", "shard2", "other", "compact", "compact1", "compact2", "replay", "replay-compact",
             "replay-other")
    dirs = {name: root / name for name in built} | {"examples": ROOT / "examples"}
    for name in built:
        assert (dirs[name] / "manifest.json").is_file(), name
        assert (dirs[name] / "parts").is_dir() == ("compact" not in name), name
    assert (dirs["good"] / "report.html").is_file() and (dirs["good"] / "plots").is_dir()
    return Sources(dirs, {source: {t: (dirs[source] / t).read_bytes() for t in tables}
                          for source, tables in REFERENCE_TABLES.items()})


def build_replays(root: Path) -> None:
    """The accounting sources, in ``root`` (the current directory): the traces are read by the names the
    cases give them (a trace's path is part of what a replay's config hash covers)."""
    for trace in REPLAY_TRACES:
        (root / trace.name).write_bytes(trace.read_bytes())
    (root / "replay.toml").write_text(REPLAY_CONFIG)
    (root / "replay-other.toml").write_text(REPLAY_OTHER)
    sessions = load_traces([Path(t.name) for t in REPLAY_TRACES])
    for name, config in (("replay", "replay.toml"), ("replay-other", "replay-other.toml")):
        execute(accounting_plan(sessions, load_config(Path(config))), Path(name), quiet=True, keep_parts=True)
    ctxbench(["replay", *(t.name for t in REPLAY_TRACES), "--config", "replay.toml", "--out", "replay-compact",
              "--quiet", "--no-report"])
    hashes = {name: json.loads((root / name / "manifest.json").read_text())["config_hash"]
              for name in ("replay", "replay-compact", "replay-other")}
    # The kept-parts source is the replay the CLI resumes: the same config hash, the same tables.
    assert hashes["replay"] == hashes["replay-compact"] != hashes["replay-other"], hashes
    for table in REFERENCE_TABLES["replay"]:
        assert (root / "replay" / table).read_bytes() == (root / "replay-compact" / table).read_bytes(), table
    assert pq.read_table(root / "replay" / "hidden.parquet").num_rows > 0  # damage to it is tried on real rows


@pytest.fixture(scope="session")
def good_dir(sources: Sources, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile-good") / "good"
    shutil.copytree(sources.dirs["good"], path, symlinks=True)
    return path
