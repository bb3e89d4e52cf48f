"""Hostile cases for ``ctxbench tune``: ranges outside the declared bounds or upside down, a param or objective
that does not exist, a strategy with nothing to search, a study database that is damaged (cut short, not SQLite,
another program's), a directory holding another tune, traces with no sessions and an objective recorded sessions
do not have; and a tiny tune that must succeed.

Rows of the same table as `tests.hostile.cases` (see its docstring for the expectations and the ops). The
damaged-database cases put the database beside the ``tune.json`` the command itself would write, so it is the
database, not the record, that is refused. A second tune into a busy directory needs a live holder of the lock,
which the table's ops cannot make: tests/harness/cli/test_tune.py and tests/harness/run/test_tune.py check it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tests.hostile.cases import OK, USAGE, Case, Op, add, toml

#: The families this module adds (each case id starts with its family and a dash).
FAMILIES: tuple[str, ...] = ("tune",)

F = "tune"
CONFIG = "tune.toml"
TUNE_TABLE = '[tune]\nstrategy = "sliding_window"\ntrials = 2\nmin_sessions = 0\n'
#: The tiny config with a [tune] table and no strategies (a tune brings its own).
TEXT = toml(strategies="", tail=TUNE_TABLE)
FLAGS = ("--out", "out", "--quiet", "--no-report")
TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


def write(path: str, data: str | bytes) -> Op:
    return Op("write", path, data.encode() if isinstance(data, str) else data)


def tune_case(case_id: str, argv: tuple[str, ...], setup: tuple[Op, ...] = (), expect: str = USAGE,
              must: tuple[str, ...] = (), damaged: str | None = None, produces: tuple[str, ...] = ()) -> None:
    add(Case(f"{F}-{case_id}", F, ("tune", *argv, *FLAGS), (write(CONFIG, TEXT), *setup), expect, must, out="out",
             damaged=damaged, produces=produces))


def record(strategy: str = "sliding_window") -> str:
    """The ``tune.json`` that ``tune tune.toml`` writes first (with ``strategy`` tuned instead, for a record of
    another tune), computed by the library as the command computes it."""
    import tempfile

    from harness.cli.tune import _base, tune_settings
    from harness.run.tune import SimulatedEvaluator, _identity, racing_rungs

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / CONFIG
        path.write_text(TEXT)
        args = argparse.Namespace(config=str(path), strategy=strategy, traces=None, trials=None, objectives=None,
                                  param=[], min_sessions=None, eta=None, sampler=None, sessions=None, seed=None,
                                  model=None, jobs=None, executor=None, scheduler=None,
                                  format=None)
        config, _ = _base(args)
        settings = tune_settings(args, config, full=config.sessions, accounting=False)
    evaluator = SimulatedEvaluator(config)
    rungs = racing_rungs(settings.min_sessions, evaluator.full_sessions, settings.eta)
    return json.dumps({"identity": _identity(settings, evaluator, rungs)})


def other_database() -> bytes:
    """An SQLite database of another program (no optuna tables), as bytes."""
    import sqlite3
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "other.db"
        con = sqlite3.connect(path)
        with con:
            con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
            con.execute("INSERT INTO notes (text) VALUES ('mine')")
        con.close()
        return path.read_bytes()


def _cases() -> None:
    tune_case("ok", (CONFIG,), expect=OK, produces=("out/trials.parquet", "out/front.parquet", "out/study.db"))
    tune_case("bounds-below", (CONFIG, "--param", "window_size=-5:10"), must=("window_size", ">= 0"))
    tune_case("bounds-above", (CONFIG, "--param", "threshold=0.5:3"), must=("threshold", "<= 1"))
    tune_case("low-above-high", (CONFIG, "--param", "window_size=50:10"), must=("window_size", "above high"))
    tune_case("config-low-above-high", (CONFIG,),
              (write(CONFIG, TEXT + "[tune.params.window_size]\nlow = 9\nhigh = 3\n"),),
              must=(CONFIG, "tune.params.window_size", "above high"))
    tune_case("config-unknown-param", (CONFIG,),
              (write(CONFIG, TEXT + "[tune.params.windowsize]\nlow = 3\nhigh = 9\n"),),
              must=("windowsize", "window_size"))
    tune_case("unknown-param", (CONFIG, "--param", "windw=1:4"), must=("windw", "did you mean 'window_size'"))
    tune_case("unknown-objective", (CONFIG, "--objectives", "success_rate,cost_per_solvd"),
              must=("--objectives", "cost_per_solvd", "did you mean"))
    tune_case("unknown-strategy", (CONFIG, "--strategy", "slidingwindow"), must=("slidingwindow", "sliding_window"))
    tune_case("nothing-to-search", (CONFIG, "--strategy", "drop_all"), must=("drop_all", "nothing to search"))
    tune_case("nan-range", (CONFIG, "--param", "threshold=nan:0.5"), must=("--param threshold",))
    good = record()
    for damage, data, words in (
        ("db-text", b"this is not a database\n", ("study.db", "not an SQLite database")),
        ("db-truncated", b"SQLite format 3\x00" + b"\x10\x00" + b"\x00" * 40, ("study.db",)),
        ("db-empty", b"", ("study.db", "not an SQLite database")),
        ("db-other-schema", other_database(), ("study.db", "not an optuna study database")),
    ):
        tune_case(damage, (CONFIG,), (Op("mkdir", "out"), write("out/tune.json", good), write("out/study.db", data)),
                  must=words, damaged="out")
    tune_case("other-tune", (CONFIG,), (Op("mkdir", "out"), write("out/tune.json", record("summarize"))),
              must=("another tune", "strategy"), damaged="out")
    tune_case("record-garbage", (CONFIG,), (Op("mkdir", "out"), write("out/tune.json", "{not json")),
              must=("tune.json",), damaged="out")
    tune_case("foreign-directory", (CONFIG,), (Op("mkdir", "out"), write("out/notes.txt", "mine\n")),
              must=("out", "holds no tune"), damaged="out")
    tune_case("traces-empty", ("--traces", "empty.json", "--strategy", "sliding_window"),
              (write("empty.json", "[]"),), must=("empty.json",))
    tune_case("traces-no-such-objective", ("--traces", str(TRACES / "atif"), "--strategy", "sliding_window",
                                           "--objectives", "success_rate,input_tokens"),
              must=("--objectives", "success_rate", "recorded sessions"))


_cases()
