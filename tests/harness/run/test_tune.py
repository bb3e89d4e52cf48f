"""`harness.run.tune` and `harness.run.tune_space`: the space of every built-in strategy, the racing rungs and
promotions, non-dominated sorting, and the driver on a tiny tune: the same trials whatever the jobs, the same
result after an interruption, and the refusals of the storage and of the directory."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import optuna
import pandas as pd
import pytest
from pydantic import ValidationError

import strategies
from harness.core.files import lock_directory
from harness.run.config import RunConfig, StrategyEntry, TuneRange, config_from_data
from harness.run.tune import (
    STUDY_FILE,
    TRIALS_TABLE,
    Objective,
    SimulatedEvaluator,
    TuneError,
    TuneSettings,
    crowding_distance,
    non_dominated_ranks,
    promote,
    racing_rungs,
    ranked,
    tune,
)
from harness.run.tune_space import SpaceError, parse_param_flag, search_space
from reports.tune import objective_values

#: Strategies whose params hold nothing a tune can search by default, and the word the refusal must say.
NOTHING_TO_SEARCH = {"clear_tool_uses": "not a scalar", "drop_all": "no params", "unbounded": "no params",
                     "pipeline": "not a scalar", "strands_manager": "not a scalar"}
OBJECTIVES = (Objective("success_rate", True), Objective("cost_per_solved_session", False))


@pytest.mark.parametrize("name", strategies.names())
def test_every_builtin_strategy_has_a_space_or_a_reason(name: str) -> None:
    if name in NOTHING_TO_SEARCH:
        with pytest.raises(SpaceError, match=NOTHING_TO_SEARCH[name]) as refused:
            search_space(name)
        assert name in str(refused.value) and "\n" not in str(refused.value)
        return
    space = search_space(name)
    assert space.params
    # The default settings are a point of the space, and every end of every range is a valid value of its
    # field; only a rule across fields (openai_summarizing: keep_last_n_turns <= context_limit) may refuse it,
    # and the driver runs such a point as an invalid trial.
    assert space.default_inside()
    assert space.decode(space.default_point()) == dict(space.defaults)
    for p in space.params:
        values = p.choices if p.kind == "categorical" else (p.low, p.high)
        for v in values:
            point = space.default_point() | {p.name: int(v) if p.kind == "int" else v}
            try:
                strategies.create(name, **space.decode(point))
            except ValidationError as e:
                assert all(error["loc"] == () for error in e.errors()), e


def test_sliding_window_space_follows_the_stated_rules() -> None:
    space = {p.name: p for p in search_space("sliding_window").params}
    window = space["window_size"]
    assert (window.kind, window.low, window.high, window.log) == ("int", 10, 160, True)  # 40 / 4 .. 40 * 4
    assert (space["pin_first"].low, space["pin_first"].high) == (0, 8)  # default 0: 0 .. 8
    assert space["threshold"].low == pytest.approx(0.175) and space["threshold"].high == 1.0  # le 1
    per_turn = space["per_turn"]
    assert per_turn.decode(0) is False and per_turn.decode(3) == 3 and per_turn.encode(True) == 1
    assert space["proactive"].choices == (False, True)


def test_summarize_optional_trigger_is_searched_only_when_given() -> None:
    assert "trigger_turns" in search_space("summarize").skipped
    name, given = parse_param_flag("trigger_turns=0:40")
    p = {p.name: p for p in search_space("summarize", {name: given}).params}["trigger_turns"]
    assert p.decode(0) is None and p.decode(21) == 21 and (p.low, p.high) == (0, 40)


@pytest.mark.parametrize(("flag", "words"), [
    ("window_size=-1:10", ["window_size", "declared bound", ">= 0"]),
    ("window_size=10:5", ["low 10 is above high 5"]),
    ("windw_size=1:5", ["no param 'windw_size'", "did you mean 'window_size'"]),
    ("threshold=0:0.5", ["threshold", "> 0"]),
    ("threshold=0.5:2", ["threshold", "<= 1"]),
    ("window_size=1.5:4", ["integer"]),
    ("window_size=a:b", ["numbers"]),
    ("window_size", ["NAME=LOW:HIGH"]),
])
def test_bad_ranges_are_refused_in_one_line(flag: str, words: list[str]) -> None:
    with pytest.raises(SpaceError) as refused:
        name, given = parse_param_flag(flag)
        search_space("sliding_window", {name: given}, origins={name: "--param"})
    message = str(refused.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_unknown_strategy_is_refused_with_a_suggestion() -> None:
    with pytest.raises(SpaceError, match="did you mean 'sliding_window'"):
        search_space("sliding_windw")


def test_choices_and_log_ranges_are_taken() -> None:
    space = search_space("sliding_window", {"window_size": TuneRange(choices=[8, 16]),
                                            "threshold": TuneRange(low=0.2, high=0.9, log=True)})
    by_name = {p.name: p for p in space.params}
    assert by_name["window_size"].choices == (8, 16) and by_name["threshold"].log
    # The defaults (window 40) lie outside the choices: the first trial still runs them.
    assert not space.default_inside()


def test_racing_rungs() -> None:
    assert racing_rungs(20, 200, 3) == (20, 60, 200)
    assert racing_rungs(4, 8, 3) == (4, 8)
    assert racing_rungs(10, 1000, 3) == (10, 30, 90, 270, 1000)
    assert racing_rungs(None, 200, 3) == (200,)
    assert racing_rungs(200, 200, 3) == (200,)


def test_non_dominated_ranks_on_made_up_points() -> None:
    points = {0: (1.0, 5.0), 1: (2.0, 2.0), 2: (5.0, 1.0), 3: (3.0, 3.0), 4: (6.0, 6.0), 5: (2.0, 2.0)}
    assert non_dominated_ranks(points) == {0: 0, 1: 0, 2: 0, 5: 0, 3: 1, 4: 2}
    # An undefined objective (infinite when minimized) is dominated by any defined one equal elsewhere.
    assert non_dominated_ranks({0: (1.0, math.inf), 1: (1.0, 3.0)}) == {0: 1, 1: 0}


def test_crowding_distance_favours_the_ends_and_the_isolated() -> None:
    front = {0: (0.0, 10.0), 1: (1.0, 9.0), 2: (5.0, 5.0), 3: (9.0, 1.0), 4: (10.0, 0.0)}
    crowd = crowding_distance(front)
    assert crowd[0] == crowd[4] == math.inf
    assert crowd[2] > crowd[1] and crowd[2] > crowd[3]
    assert ranked(front)[:2] == [0, 4] and ranked(front)[2] == 2


def test_promote_keeps_the_best_third_by_rank_then_crowding() -> None:
    points = {n: (float(n), float(n)) for n in range(1, 10)}  # one chain: rank = n - 1
    assert promote(points, 3) == [1, 2, 3]
    assert promote({7: (1.0, 1.0)}, 3) == [7]  # at least one goes on
    tied = {1: (0.0, 4.0), 2: (1.0, 3.0), 3: (2.0, 2.0), 4: (3.0, 1.0), 5: (4.0, 0.0), 6: (5.0, 5.0)}
    assert promote(tied, 3) == [1, 5]  # the front's two ends (infinite crowding) before its middle


# The driver on a tiny tune ---------------------------------------------------------------------------------

TINY = {"sessions": 8, "seed": 3, "executor": "serial", "jobs": 1, "batch_size": 2,
        "scenarios": [{"name": "k8s_crashloop", "turns": 20}]}


def tiny_config(**changes: Any) -> RunConfig:
    return config_from_data(TINY | changes)


def settings(trials: int = 4, **changes: Any) -> TuneSettings:
    space = search_space("sliding_window", {"window_size": TuneRange(low=4, high=60, log=True)})
    base: dict[str, Any] = {"space": space, "objectives": OBJECTIVES, "trials": trials, "min_sessions": 4,
                            "eta": 3, "sampler": "tpe", "seed": 3}
    return TuneSettings(**(base | changes))


def evaluate(frame: pd.DataFrame, labels: Sequence[str]) -> dict[str, list[float]]:
    return objective_values(frame, labels, [o.name for o in OBJECTIVES])


@pytest.mark.parametrize("sampler", ["tpe", "nsga2"])
def test_tiny_tune_is_the_same_whatever_the_jobs(tmp_path: Path, sampler: str) -> None:
    serial = tune(settings(sampler=sampler), SimulatedEvaluator(tiny_config()), evaluate, tmp_path / "serial",
                  quiet=True)
    parallel = tune(settings(sampler=sampler), SimulatedEvaluator(tiny_config(executor="process", jobs=2)), evaluate,
                    tmp_path / "jobs2", quiet=True)
    assert (tmp_path / "serial" / TRIALS_TABLE).read_bytes() == (tmp_path / "jobs2" / TRIALS_TABLE).read_bytes()
    assert serial.front == parallel.front and serial.front
    trials = serial.trials
    assert list(trials["trial"]) == [0, 1, 2, 3]
    # Racing 4 -> 8: every trial at 4 sessions, the best of the three sampled and the default at 8.
    assert list(trials["sessions"]) .count(8) == 2 and trials.loc[0, "sessions"] == 8
    assert serial.replays == 4 * 4 + 2 * 8
    study = optuna.load_study(study_name="tune", storage=f"sqlite:///{tmp_path / 'serial' / STUDY_FILE}")
    assert [t.number for t in study.trials] == [0, 1, 2, 3]
    assert study.trials[0].params == search_space("sliding_window").default_point() | {"window_size": 40}


class Interrupting:
    """An evaluator that stops (as Ctrl-C would) at its ``stop_at``-th run, after the runner finished it."""

    def __init__(self, inner: SimulatedEvaluator, stop_at: int) -> None:
        self.inner = inner
        self.stop_at = stop_at
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def full_sessions(self) -> int:
        return self.inner.full_sessions

    def run(self, entries: Sequence[StrategyEntry], sessions: int, out: Path, *, quiet: bool) -> pd.DataFrame:
        self.calls += 1
        if self.calls == self.stop_at:
            raise KeyboardInterrupt
        return self.inner.run(entries, sessions, out, quiet=quiet)


def test_an_interrupted_tune_resumes_to_the_same_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    evaluator = SimulatedEvaluator(tiny_config())
    whole = tune(settings(trials=12), evaluator, evaluate, tmp_path / "whole", quiet=True)
    # Stopped during the second generation's replays: the first generation is told, the second is not.
    with pytest.raises(KeyboardInterrupt):
        tune(settings(trials=12), Interrupting(evaluator, 2), evaluate, tmp_path / "cut", quiet=True)
    stored = optuna.load_study(study_name="tune", storage=f"sqlite:///{tmp_path / 'cut' / STUDY_FILE}").trials
    assert len(stored) == 10
    # Stopped while telling the second generation: part of it is stored, the rest is drawn again identically.
    told = {"n": 0}
    original = optuna.Study.add_trial

    def add_some(self: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        told["n"] += 1
        if told["n"] == 2:
            raise KeyboardInterrupt
        original(self, trial)

    monkeypatch.setattr(optuna.Study, "add_trial", add_some)
    with pytest.raises(KeyboardInterrupt):
        tune(settings(trials=12), evaluator, evaluate, tmp_path / "cut", quiet=True)
    monkeypatch.setattr(optuna.Study, "add_trial", original)
    resumed = tune(settings(trials=12), evaluator, evaluate, tmp_path / "cut", quiet=True)
    assert (tmp_path / "cut" / TRIALS_TABLE).read_bytes() == (tmp_path / "whole" / TRIALS_TABLE).read_bytes()
    assert resumed.front == whole.front


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tune") / "out"
    tune(settings(trials=2), SimulatedEvaluator(tiny_config()), evaluate, out, quiet=True)
    return out


def copy_of(finished: Path, tmp_path: Path) -> Path:
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(finished, out)
    return out


@pytest.mark.parametrize(("damage", "words"), [
    ("truncate", ["study.db", "damaged"]),
    ("text", ["study.db", "not an SQLite database"]),
    ("schema", ["study.db", "not an optuna study database"]),
])
def test_a_damaged_study_database_is_refused_and_kept(finished: Path, tmp_path: Path, damage: str,
                                                      words: list[str]) -> None:
    out = copy_of(finished, tmp_path)
    db = out / STUDY_FILE
    if damage == "truncate":
        db.write_bytes(db.read_bytes()[:5000])
    elif damage == "text":
        db.write_text("not a database\n")
    else:
        db.unlink()
        with sqlite3.connect(db) as con:
            con.execute("CREATE TABLE other (x INTEGER)")
        con.close()
    before = db.read_bytes()
    with pytest.raises(TuneError) as refused:
        tune(settings(trials=2), SimulatedEvaluator(tiny_config()), evaluate, out, quiet=True)
    for word in words:
        assert word in str(refused.value)
    assert db.read_bytes() == before


def test_another_tune_in_the_directory_is_refused_naming_what_differs(finished: Path, tmp_path: Path) -> None:
    out = copy_of(finished, tmp_path)
    other = settings(trials=2, objectives=(Objective("success_rate", True), Objective("latency_p95", False)))
    with pytest.raises(TuneError, match="objectives"):
        tune(other, SimulatedEvaluator(tiny_config()), evaluate, out, quiet=True)
    with pytest.raises(TuneError, match="the config"):
        tune(settings(trials=2), SimulatedEvaluator(tiny_config(seed=4)), evaluate, out, quiet=True)
    narrower = settings(trials=2, space=search_space("sliding_window", {"window_size": TuneRange(low=5, high=9)}))
    with pytest.raises(TuneError, match="ranges of window_size"):
        tune(narrower, SimulatedEvaluator(tiny_config()), evaluate, out, quiet=True)


def test_a_busy_or_foreign_directory_is_refused(finished: Path, tmp_path: Path) -> None:
    out = copy_of(finished, tmp_path)
    with lock_directory(out), pytest.raises(TuneError, match="in use by another command"):
        tune(settings(trials=2), SimulatedEvaluator(tiny_config()), evaluate, out, quiet=True)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine\n")
    with pytest.raises(TuneError, match="holds no tune"):
        tune(settings(trials=2), SimulatedEvaluator(tiny_config()), evaluate, foreign, quiet=True)
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]


def test_a_finished_tune_run_again_changes_nothing(finished: Path, tmp_path: Path) -> None:
    out = copy_of(finished, tmp_path)
    before = (out / TRIALS_TABLE).read_bytes()
    again = tune(settings(trials=2), SimulatedEvaluator(tiny_config()), evaluate, out, quiet=True)
    assert (out / TRIALS_TABLE).read_bytes() == before
    assert again.front and (out / "front").is_dir()
    # Each front point is a config `ctxbench run` loads, with the trial's settings.
    from harness.run.config import load_config

    for label in again.front:
        config = load_config(out / "front" / f"{label}.toml")
        assert [e.key for e in config.strategies] == [label]
