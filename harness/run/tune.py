"""``ctxbench tune``'s library: a multi-objective search over one strategy's params (optuna), each trial replayed on
the same sessions by the runner, raced by successive halving, stored in the run directory and resumable.

**Paired trials.** A trial is a variant of the strategy (labels ``<strategy>@t007``) in a `RunConfig` whose
strategies are the trials' variants; `harness.run.runner.execute` replays it like any run, into a working
directory in the tune directory's ``work`` folder. Session k of a scenario is the same script under every strategy
(`harness.core.crn`, `harness.run.plan`), and the first n sessions of a run of N > n sessions are the n
sessions of a run of n, so every trial is evaluated on the same sessions and the comparisons are paired. On
recorded transcripts (`AccountingEvaluator`) the sessions are the first n recorded ones.

**Racing** (successive halving over the session count). The rungs are ``min_sessions``, then eta times the
last while that leaves eta times room below the full count, then the full count (20, 60, 200 for 20 -> 200,
eta 3). Every trial runs at the first rung; the best ``max(1, n // eta)`` of the n trials at a rung, by
non-dominated rank and then crowding distance (NSGA-II's order; ties by trial number), run at the next. The
strategy's default settings are trial 0, run at the first rung like every trial (so the sampler learns from
them) and always at the full count: the baseline of the paired differences. The Pareto front is made of the
trials run at the full count only. The sampler sees every trial's first-rung values, one fidelity for all.

**Generations and determinism.** Trials are asked in generations of `GENERATION_SIZE` (never the job count):
a generation's points are drawn from an in-memory copy of the study's finished trials by a sampler seeded
from the config seed and the generation's number, all replayed in one run (its batches on ``--jobs`` workers;
the runner's tables do not depend on them), and told to the stored study in trial order. The promotions run
once every generation is told. So the trials, their values and the front are the same whatever the jobs or
executor, and a tune killed anywhere resumes to the same result: finished generations are read back from the
study, finished batches from the working directories, and a generation cut short is drawn again identically
(the sampler depends only on the told trials and the seed).

**Sampler.** optuna's multi-objective TPE (`optuna.samplers.TPESampler`, the first generation random) by default,
chosen by measurement against NSGA-II (`optuna.samplers.NSGAIISampler`, population = one generation): on
examples/default.toml, sliding_window, success_rate up and cost_per_solved_session down, 30 trials on 40 sessions
without racing, config seeds 0, 1 and 2, the hypervolume of the 30 trials (reference: success 0, 1.1 times the
worst cost seen) was 13.28 / 9.93 / 9.16 for TPE and 12.69 / 10.05 / 9.13 for NSGA-II (means 10.79 and 10.62): on
par, TPE ahead on one seed and not behind by more than 1.3% on the others; with 30 trials NSGA-II has had only two
generations to breed. ``sampler = "nsga2"`` (``--sampler nsga2``) picks NSGA-II.

**Storage.** The study is optuna's SQLite storage ``<out>/study.db``; ``tune.json`` records what the tune is
(config hash, strategy, objectives, space, budget), written first, and a directory holding another tune is
refused naming what differs. A ``study.db`` that is not SQLite, is damaged or has another schema is refused,
never touched. One command at a time holds the directory (`harness.core.files.lock_directory`).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import sqlite3
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import optuna
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import tomli_w
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import FrozenTrial, TrialState
from pydantic import ValidationError

import strategies
from harness.core.files import DirectoryBusy, lock_directory, write_atomically
from harness.core.rundir import SESSIONS_TABLE
from harness.run.config import RunConfig, StrategyEntry, config_from_data, first_error
from harness.run.tune_space import SearchSpace

__all__ = [
    "DEFAULT_SAMPLER",
    "GENERATION_SIZE",
    "AccountingEvaluator",
    "Evaluate",
    "Objective",
    "SimulatedEvaluator",
    "TuneError",
    "TuneResult",
    "TuneSettings",
    "crowding_distance",
    "non_dominated_ranks",
    "promote",
    "racing_rungs",
    "tune",
]

#: Trials asked and replayed together; a constant, so the search never depends on the job count.
GENERATION_SIZE = 10
TUNE_FILE = "tune.json"
STUDY_FILE = "study.db"
TRIALS_TABLE = "trials.parquet"
FRONT_DIR = "front"
WORK_DIR = "work"
STUDY_NAME = "tune"
SQLITE_HEADER = b"SQLite format 3\x00"
#: The tables optuna's RDB storage keeps; a database without them is another program's.
OPTUNA_TABLES = frozenset({"studies", "trials", "trial_values", "trial_params", "version_info"})
Sampler = Literal["nsga2", "tpe"]
#: The sampler without ``sampler`` / ``--sampler``: TPE, by the measurement in the module docstring.
DEFAULT_SAMPLER: Sampler = "tpe"


class TuneError(Exception):
    """A tune that cannot run as asked (its directory, its study, its objectives): one line, exit code 2."""


@dataclass(frozen=True, slots=True)
class Objective:
    """One objective: a metric name (the report's) and whether it is maximized."""

    name: str
    maximize: bool

    @property
    def direction(self) -> Literal["maximize", "minimize"]:
        return "maximize" if self.maximize else "minimize"


#: The objective values of each label's sessions, in the objectives' order (NaN where undefined): the
#: command passes the report's metrics in (harness.run may not import reports).
Evaluate = Callable[[pd.DataFrame, Sequence[str]], Mapping[str, Sequence[float]]]


class Evaluator(Protocol):
    """What replays a set of strategy entries on the first n sessions into a working directory."""

    @property
    def full_sessions(self) -> int: ...

    def identity(self) -> dict[str, Any]: ...

    def run(self, entries: Sequence[StrategyEntry], sessions: int, out: Path, *, quiet: bool) -> pd.DataFrame: ...

    def config_replays(self) -> int: ...

    def front_config(self, entry: StrategyEntry) -> dict[str, Any] | None: ...


def _trial_config(config: RunConfig, entries: Sequence[StrategyEntry], sessions: int) -> RunConfig:
    data = config.model_dump(mode="python", exclude_none=True, exclude={"tune", "sweep", "strategies", "runtimes"})
    data |= {"sessions": sessions, "events": False,
             "strategies": [e.model_dump(exclude_none=True) | e.params for e in entries]}
    return config_from_data(data, "tune")


@dataclass(frozen=True, slots=True)
class SimulatedEvaluator:
    """Trials replayed on the config's simulated sessions by the runner (`harness.run.runner.execute`)."""

    config: RunConfig

    @property
    def full_sessions(self) -> int:
        return self.config.sessions

    def identity(self) -> dict[str, Any]:
        data = self.config.model_dump(mode="json", exclude={"tune", "sweep", "strategies", "runtimes", "jobs",
                                                            "executor", "scheduler", "batch_size", "events"})
        return {"mode": "simulated", "config": data}

    def run(self, entries: Sequence[StrategyEntry], sessions: int, out: Path, *, quiet: bool) -> pd.DataFrame:
        from harness.run.plan import RunPlan
        from harness.run.runner import execute

        summary = execute(RunPlan.simulated(_trial_config(self.config, entries, sessions)), out, quiet=quiet)
        return summary.sessions

    def config_replays(self) -> int:
        """Replays of one run of the config as it stands, at the full count: the cost unit of a tune."""
        return self.config.sessions * len(self.config.variants())

    def front_config(self, entry: StrategyEntry) -> dict[str, Any] | None:
        data = self.config.model_dump(mode="json", exclude_none=True, exclude={"tune", "sweep", "strategies"})
        data["strategies"] = [{k: v for k, v in (entry.model_dump(mode="json", exclude_none=True)
                                                 | entry.params).items() if v is not None}]
        return data


@dataclass(frozen=True, slots=True)
class AccountingEvaluator:
    """Trials accounted on recorded sessions (`harness.run.accounting.accounting_plan`): the first n of them."""

    sessions: Sequence[Any]
    config: RunConfig

    @property
    def full_sessions(self) -> int:
        return len(self.sessions)

    def identity(self) -> dict[str, Any]:
        from harness.run.accounting import accounting_plan

        digest = accounting_plan(self.sessions, self.config).config_hash
        return {"mode": "accounting", "traces": digest, "sessions": len(self.sessions)}

    def run(self, entries: Sequence[StrategyEntry], sessions: int, out: Path, *, quiet: bool) -> pd.DataFrame:
        from harness.run.accounting import accounting_plan
        from harness.run.runner import execute

        config = _trial_config(self.config, entries, 1)
        summary = execute(accounting_plan(self.sessions[:sessions], config), out, quiet=quiet)
        return summary.sessions

    def config_replays(self) -> int:
        return len(self.sessions) * len(self.config.variants())

    def front_config(self, entry: StrategyEntry) -> dict[str, Any] | None:
        return None


def racing_rungs(min_sessions: int | None, full: int, eta: int) -> tuple[int, ...]:
    """The session counts of the rungs: ``min_sessions``, then eta times the last while that leaves eta
    times room below ``full``, then ``full``; just ``(full,)`` without racing (None, or min >= full)."""
    if min_sessions is None or min_sessions >= full:
        return (full,)
    rungs = [min_sessions]
    while rungs[-1] * eta * eta <= full:
        rungs.append(rungs[-1] * eta)
    return (*rungs, full)


def _oriented(values: Sequence[float], objectives: Sequence[Objective]) -> tuple[float, ...]:
    """Values as minimization: maximized ones negated, undefined (NaN) ones the worst possible."""
    out = []
    for v, o in zip(values, objectives, strict=True):
        if v is None or math.isnan(v):
            out.append(math.inf)
        else:
            out.append(-v if o.maximize else v)
    return tuple(out)


def _dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True)) and any(x < y for x, y in zip(a, b, strict=True))


def non_dominated_ranks(points: Mapping[int, Sequence[float]]) -> dict[int, int]:
    """The non-dominated rank (0: the front) of each point, all objectives minimized."""
    remaining = dict(points)
    ranks: dict[int, int] = {}
    rank = 0
    while remaining:
        front = [k for k, p in remaining.items() if not any(_dominates(q, p) for j, q in remaining.items() if j != k)]
        for k in front:
            ranks[k] = rank
            del remaining[k]
        rank += 1
    return ranks


def crowding_distance(points: Mapping[int, Sequence[float]]) -> dict[int, float]:
    """NSGA-II's crowding distance of each point within ``points`` (one front): infinite at the ends of
    each objective, else the sum of the neighbours' gaps over each objective's range. Infinite values
    (undefined objectives) count as just beyond the finite ones."""
    keys = sorted(points)
    distance = dict.fromkeys(keys, 0.0)
    if len(keys) <= 2:
        return dict.fromkeys(keys, math.inf)
    for m in range(len(points[keys[0]])):
        finite = [points[k][m] for k in keys if math.isfinite(points[k][m])]
        top = max(finite) if finite else 0.0
        bottom = min(finite) if finite else 0.0
        spread = top - bottom

        def value(k: int, m: int = m, top: float = top, spread: float = spread) -> float:
            v = points[k][m]
            return v if math.isfinite(v) else top + spread + 1.0

        order = sorted(keys, key=lambda k: (value(k), k))
        span = value(order[-1]) - value(order[0])
        distance[order[0]] = distance[order[-1]] = math.inf
        if span <= 0:
            continue
        for i in range(1, len(order) - 1):
            distance[order[i]] += (value(order[i + 1]) - value(order[i - 1])) / span
    return distance


def ranked(points: Mapping[int, Sequence[float]]) -> list[int]:
    """The points best first: by non-dominated rank, then crowding distance (larger first) within the
    rank, then trial number."""
    ranks = non_dominated_ranks(points)
    crowd: dict[int, float] = {}
    for r in set(ranks.values()):
        crowd |= crowding_distance({k: points[k] for k in points if ranks[k] == r})
    return sorted(points, key=lambda k: (ranks[k], -crowd[k], k))


def promote(points: Mapping[int, Sequence[float]], eta: int) -> list[int]:
    """The trials that go on to the next rung: the best ``max(1, n // eta)`` of the n (`ranked`), by number."""
    if not points:
        return []
    keep = max(1, len(points) // eta)
    return sorted(ranked(points)[:keep])


@dataclass(frozen=True, slots=True)
class TuneSettings:
    """What one tune searches and how: the space, the objectives, the budget and the racing."""

    space: SearchSpace
    objectives: tuple[Objective, ...]
    trials: int
    min_sessions: int | None
    eta: int = 3
    sampler: Sampler = DEFAULT_SAMPLER
    seed: int = 0
    #: The config's own entry for the strategy (switches, label) the trials copy; None: the name alone.
    base_entry: StrategyEntry | None = None

    @property
    def strategy(self) -> str:
        return self.space.strategy


@dataclass(frozen=True, slots=True)
class TuneResult:
    """A finished tune: its directory, the trials table, the front's labels, and its cost."""

    out: Path
    trials: pd.DataFrame
    front: tuple[str, ...]
    default_label: str
    replays: int
    config_replays: int
    wall_s: float
    rungs: tuple[int, ...]
    runs: tuple[str, ...] = field(default=())

    @property
    def cost_ratio(self) -> float:
        return self.replays / self.config_replays if self.config_replays else math.nan


def label_of(strategy: str, number: int, trials: int) -> str:
    """A trial's label: ``sliding_window@t007`` (three digits, more for a larger study)."""
    return f"{strategy}@t{number:0{max(3, len(str(trials - 1)))}d}"


def _seed_of(seed: int, generation: int) -> int:
    digest = hashlib.sha256(f"ctxbench-tune:{seed}:{generation}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _make_sampler(kind: Sampler, seed: int) -> optuna.samplers.BaseSampler:
    if kind == "nsga2":
        return optuna.samplers.NSGAIISampler(population_size=GENERATION_SIZE, seed=seed)
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=GENERATION_SIZE)


def check_study_db(path: Path) -> None:
    """TuneError unless ``path`` is an SQLite database in good order with optuna's tables; it is only read."""
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError as e:
        raise TuneError(f"{path}: cannot read the study database ({e.strerror})") from None
    if head != SQLITE_HEADER:
        raise TuneError(f"{path}: not an SQLite database (a study database is one); it is left as it is")
    try:
        # Read-write but never created: reading writes nothing, except SQLite's own roll-back of a journal a
        # killed tune left (read-only, that would be refused as damage).
        con = sqlite3.connect(f"file:{path}?mode=rw", uri=True)
        try:
            check = con.execute("PRAGMA quick_check").fetchall()
            tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    except sqlite3.DatabaseError as e:
        raise TuneError(f"{path}: the study database is damaged ({e}); it is left as it is") from None
    if check != [("ok",)]:
        raise TuneError(f"{path}: the study database is damaged ({check[0][0]}); it is left as it is")
    missing = sorted(OPTUNA_TABLES - tables)
    if missing:
        raise TuneError(f"{path}: not an optuna study database (no table {missing[0]}); it is left as it is")


@contextmanager
def _quiet_optuna() -> Iterator[None]:
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            yield
    finally:
        optuna.logging.set_verbosity(level)


def _identity(settings: TuneSettings, evaluator: Evaluator, rungs: tuple[int, ...]) -> dict[str, Any]:
    return {
        "run": evaluator.identity(),
        "strategy": settings.strategy,
        "base": json.loads(json.dumps(settings.space.defaults, default=str)),
        "objectives": [[o.name, o.direction] for o in settings.objectives],
        "space": settings.space.identity(),
        "trials": settings.trials,
        "rungs": list(rungs),
        "eta": settings.eta,
        "sampler": settings.sampler,
        "generation_size": GENERATION_SIZE,
    }


def _differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out = []
    first = ("strategy", "run", "objectives", "space", "trials", "rungs", "eta", "sampler", "base")
    for key in sorted(set(old) | set(new), key=lambda k: (first.index(k) if k in first else len(first), k)):
        if old.get(key) != new.get(key):
            if key in ("strategy", "trials", "eta", "sampler", "rungs"):
                out.append(f"{key} ({json.dumps(old.get(key))} there, {json.dumps(new.get(key))} asked)")
            elif key == "space":
                names = sorted(n for n in set(old.get(key) or {}) | set(new.get(key) or {})
                               if (old.get(key) or {}).get(n) != (new.get(key) or {}).get(n))
                out.append(f"the ranges of {', '.join(names)}")
            elif key == "run":
                out.append("the config (sessions, scenarios, seed, model or traces)")
            elif key == "base":
                out.append("the strategy's settings the first trial runs")
            else:
                out.append(key)
    return out


def _open_directory(out: Path, identity: dict[str, Any]) -> None:
    """Make ``out`` a tune directory of ``identity`` or check that it is one; TuneError otherwise."""
    tune_file = out / TUNE_FILE
    if out.exists() and not out.is_dir():
        raise TuneError(f"--out: {out} is a file, not a directory")
    if tune_file.exists():
        try:
            recorded = json.loads(tune_file.read_text())["identity"]
        except (ValueError, KeyError, TypeError, OSError):
            raise TuneError(f"{tune_file}: not a tune record (damaged?); it is left as it is") from None
        differ = _differences(recorded, identity)
        if differ:
            raise TuneError(f"--out: {out} holds another tune; it differs in {'; '.join(differ)} "
                            "(give another --out)")
        return
    if out.exists() and any(out.iterdir()):
        raise TuneError(f"--out: {out} is not empty and holds no tune ({TUNE_FILE} missing); give another --out")
    out.mkdir(parents=True, exist_ok=True)
    _write_json(tune_file, {"identity": identity})


def _write_json(path: Path, data: Any) -> None:
    write_atomically(path, (json.dumps(data, indent=2, sort_keys=True, allow_nan=True) + "\n").encode())


def _told(values: Sequence[float], objectives: Sequence[Objective]) -> list[float]:
    """Values as the sampler is told them: undefined ones are the worst (optuna refuses NaN)."""
    return [(-math.inf if o.maximize else math.inf) if math.isnan(v) else float(v)
            for v, o in zip(values, objectives, strict=True)]


def _widened(space: SearchSpace, point: Mapping[str, Any]) -> dict[str, BaseDistribution]:
    """The distributions, widened to hold ``point`` (the defaults, when the user's ranges leave them out)."""
    out: dict[str, BaseDistribution] = {}
    for p in space.params:
        d = p.distribution()
        v = point[p.name]
        if isinstance(d, IntDistribution):
            d = IntDistribution(min(d.low, int(v)), max(d.high, int(v)), log=d.log and v >= 1)
        elif isinstance(d, FloatDistribution):
            d = FloatDistribution(min(d.low, float(v)), max(d.high, float(v)), log=d.log and v > 0)
        elif isinstance(d, CategoricalDistribution) and v not in d.choices:
            d = CategoricalDistribution((*d.choices, v))
        out[p.name] = d
    return out


class _Progress:
    """The tune's own lines on stderr: trials done of the total, the rung, the current front and its best."""

    def __init__(self, enabled: bool, total: int, objectives: Sequence[Objective]) -> None:
        self.enabled = enabled
        self.total = total
        self.objectives = objectives

    def say(self, text: str) -> None:
        if self.enabled:
            print(f"ctxbench tune: {text}", file=sys.stderr, flush=True)

    def state(self, done: int, rung: str, values: Mapping[int, Sequence[float]]) -> None:
        if not self.enabled:
            return
        front = [k for k, r in non_dominated_ranks({k: _oriented(v, self.objectives)
                                                    for k, v in values.items()}).items() if r == 0]
        best = []
        for i, o in enumerate(self.objectives):
            seen = [values[k][i] for k in front if not math.isnan(values[k][i])]
            if seen:
                best.append(f"{o.name} {max(seen) if o.maximize else min(seen):.4g}")
        self.say(f"{done}/{self.total} trials, {rung}, front {len(front)}" + (f" (best {', '.join(best)})"
                                                                             if best else ""))


class _Study:
    """The stored study: optuna's RDB storage on ``study.db``, opened after `check_study_db`."""

    def __init__(self, path: Path, objectives: Sequence[Objective]) -> None:
        if path.exists():
            check_study_db(path)
        url = f"sqlite:///{path}"
        try:
            storage = optuna.storages.RDBStorage(url)
            self.study = optuna.create_study(storage=storage, study_name=STUDY_NAME, load_if_exists=True,
                                             directions=[o.direction for o in objectives])
        except (optuna.exceptions.StorageInternalError, RuntimeError, ValueError) as e:
            raise TuneError(f"{path}: the study database cannot be used ({str(e).splitlines()[0]}); it is left "
                            "as it is") from None
        if [d.name.lower() for d in self.study.directions] != [o.direction for o in objectives]:
            raise TuneError(f"{path}: its study has other objectives' directions; give another --out")

    def trials(self) -> list[FrozenTrial]:
        return self.study.get_trials(deepcopy=False)


def tune(settings: TuneSettings, evaluator: Evaluator, evaluate: Evaluate, out: Path, *, quiet: bool = False,
         progress: Callable[[str], None] | None = None) -> TuneResult:
    """Run (or resume) the tune ``settings`` describes into ``out``: trials in generations, raced over the
    rungs, stored in ``out/study.db``, each replayed by ``evaluator`` and scored by ``evaluate``; then
    ``trials.parquet`` and ``front/<label>.toml``. TuneError (one line) for a directory or study it refuses."""
    started = time.perf_counter()
    rungs = racing_rungs(settings.min_sessions, evaluator.full_sessions, settings.eta)
    identity = _identity(settings, evaluator, rungs)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise TuneError(f"--out: {out} is a file, not a directory")
    out.mkdir(parents=True, exist_ok=True)
    try:
        with lock_directory(out):
            _open_directory(out, identity)
            with _quiet_optuna():
                return _Driver(settings, evaluator, evaluate, out, rungs, quiet, started).run()
    except DirectoryBusy:
        raise TuneError(f"--out: {out} is in use by another command (a tune or run writing into it)") from None


class _Driver:
    def __init__(self, settings: TuneSettings, evaluator: Evaluator, evaluate: Evaluate, out: Path,
                 rungs: tuple[int, ...], quiet: bool, started: float) -> None:
        self.settings = settings
        self.evaluator = evaluator
        self.evaluate = evaluate
        self.out = out
        self.rungs = rungs
        self.quiet = quiet
        self.started = started
        self.space = settings.space
        self.objectives = settings.objectives
        self.distributions = self.space.distributions()
        self.progress = _Progress(not quiet, settings.trials, self.objectives)
        self.study = _Study(out / STUDY_FILE, self.objectives)
        self.replays = 0
        #: trial number -> encoded point; trial number -> {rung index: values}.
        self.points: dict[int, dict[str, Any]] = {}
        self.values: dict[int, dict[int, tuple[float, ...]]] = {}
        self.runs: list[str] = []

    def label(self, number: int) -> str:
        return label_of(self.settings.strategy, number, self.settings.trials)

    def entry(self, number: int) -> StrategyEntry:
        base = self.settings.base_entry or StrategyEntry(name=self.settings.strategy)
        data = base.model_dump(exclude_none=True) | self.space.decode(self.points[number])
        data["label"] = self.label(number)
        data["name"] = self.settings.strategy
        return StrategyEntry(**data)

    def problem(self, number: int) -> str:
        """Why trial ``number``'s settings are not valid params of the strategy ("" when they are): a rule
        across params (``keep_last_n_turns <= context_limit``) that a range per param cannot keep."""
        try:
            strategies.create(self.settings.strategy, **self.space.decode(self.points[number]))
        except ValidationError as e:
            return first_error(e)
        return ""

    def replay(self, numbers: Sequence[int], rung: int, name: str) -> dict[int, tuple[float, ...]]:
        """Replay the valid ones of ``numbers`` at ``rung`` into ``work/<name>``; an invalid trial gets
        undefined values (the worst, for the sampler) without a replay."""
        sessions = self.rungs[rung]
        work = self.out / WORK_DIR / name
        work.parent.mkdir(parents=True, exist_ok=True)
        valid = [n for n in numbers if not self.problem(n)]
        found: Mapping[str, Sequence[float]] = {}
        if valid:
            frame = self.evaluator.run([self.entry(n) for n in valid], sessions, work, quiet=self.quiet)
            self.replays += sessions * len(valid)
            found = self.evaluate(frame, [self.label(n) for n in valid])
        out = {}
        for n in numbers:
            values = tuple(float(v) for v in found[self.label(n)]) if n in valid else \
                tuple(math.nan for _ in self.objectives)
            self.values.setdefault(n, {})[rung] = values
            out[n] = values
        return out

    def planned_replays(self) -> int:
        """The most replays this tune makes: every trial at the first rung, the promoted ones at each next rung,
        the default settings at the full count (fewer when trials are invalid or the study is resumed)."""
        promoted, replays = self.settings.trials - 1, self.rungs[0] * self.settings.trials
        for sessions in self.rungs[1:]:
            promoted = max(1, promoted // self.settings.eta)
            replays += promoted * sessions
        return replays + (self.rungs[-1] if len(self.rungs) > 1 else 0)

    def header(self) -> None:
        s = self.settings
        full = self.evaluator.full_sessions
        unit = self.evaluator.config_replays()
        planned = self.planned_replays()
        self.progress.say(f"budget at most {planned} replays = {planned / unit:.2f} x one run of the config at "
                          f"{full} sessions ({unit} replays)")
        self.progress.say(f"{s.strategy}, {s.trials} trials in generations of {GENERATION_SIZE}, sampler {s.sampler}, "
                          f"objectives {', '.join(f'{o.name} ({o.direction})' for o in self.objectives)}")
        self.progress.say(f"rungs {' -> '.join(map(str, self.rungs))} sessions (eta {s.eta})"
                          if len(self.rungs) > 1 else f"every trial on {full} sessions (no racing)")
        for p in self.space.params:
            self.progress.say(f"  {p.describe()}")
        for name, why in self.space.skipped.items():
            self.progress.say(f"  {name}: not searched ({why})")

    def run(self) -> TuneResult:
        self.header()
        trials = self.settings.trials
        generations = -(-trials // GENERATION_SIZE)
        for g in range(generations):
            numbers = list(range(g * GENERATION_SIZE, min(trials, (g + 1) * GENERATION_SIZE)))
            self.generation(g, numbers)
            self.progress.state(numbers[-1] + 1, f"rung 1/{len(self.rungs)} ({self.rungs[0]} sessions)",
                                {n: v[0] for n, v in self.values.items()})
        pool = [n for n in range(trials) if n != 0 and not self.problem(n)]
        for rung in range(1, len(self.rungs)):
            pool = promote({n: _oriented(self.values[n][rung - 1], self.objectives) for n in pool}, self.settings.eta)
            numbers = ([0] if rung == len(self.rungs) - 1 else []) + pool
            if not numbers:
                continue
            with_default = " with the default settings" if numbers[0] == 0 else ""
            self.progress.say(f"rung {rung + 1}/{len(self.rungs)}: {len(pool)} trials promoted to "
                              f"{self.rungs[rung]} sessions{with_default}")
            name = f"rung{rung}-s{self.rungs[rung]}"
            self.replay(numbers, rung, name)
            self.runs = [name]  # the sessions of the full count: the last rung's run alone
            self.study.study.set_user_attr(f"rung{rung}", {"sessions": self.rungs[rung], "trials": {
                str(n): self.values[n][rung] for n in numbers}})
            self.progress.state(trials, f"rung {rung + 1}/{len(self.rungs)} ({self.rungs[rung]} sessions)",
                                {n: self.values[n][rung] for n in numbers})
        if len(self.rungs) == 1:
            self.runs = [f"gen{g:03d}" for g in range(generations)]
        return self.finish()

    def generation(self, g: int, numbers: list[int]) -> None:
        stored = {t.number: t for t in self.study.trials() if t.user_attrs.get("generation") == g
                  and t.state == TrialState.COMPLETE}
        have = [n for n in numbers if n in stored]
        if len(have) == len(numbers):
            for n in numbers:
                self.points[n] = dict(stored[n].params)
            points = None
        else:
            points = self.draw(g, numbers)
            for n in have:
                if dict(stored[n].params) != points[n][0]:
                    raise TuneError(f"{self.out / STUDY_FILE}: trial {n} holds other settings than this tune draws "
                                    "(a study of another tune?); give another --out")
            for n in numbers:
                self.points[n] = points[n][0]
        name = f"gen{g:03d}"
        self.replay(numbers, 0, name)
        if points is None:
            return
        for n in numbers:
            if n in stored:
                continue
            number_now = len(self.study.trials())
            if number_now != n:
                raise TuneError(f"{self.out / STUDY_FILE}: the study holds {number_now} trials where this tune "
                                f"expects {n} (a study of another tune?); give another --out")
            params, system = points[n]
            inside = all(p.contains(params[p.name]) for p in self.space.params)
            self.study.study.add_trial(optuna.trial.create_trial(
                values=_told(self.values[n][0], self.objectives), params=params,
                distributions=self.distributions if inside else _widened(self.space, params),
                user_attrs={"label": self.label(n), "generation": g, "sessions": self.rungs[0],
                            "values": list(self.values[n][0])},
                system_attrs=system))

    def draw(self, g: int, numbers: list[int]) -> dict[int, tuple[dict[str, Any], dict[str, Any]]]:
        """The points of generation ``g``, drawn from the told trials of the earlier generations."""
        earlier = [t for t in self.study.trials() if t.state == TrialState.COMPLETE
                   and int(t.user_attrs.get("generation", -1)) < g]
        memory = optuna.create_study(directions=[o.direction for o in self.objectives],
                                     sampler=_make_sampler(self.settings.sampler, _seed_of(self.settings.seed, g)))
        for t in sorted(earlier, key=lambda t: t.number):
            if all(p.contains(t.params.get(p.name)) for p in self.space.params):
                memory.add_trial(t)
        out: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
        todo = list(numbers)
        if todo and todo[0] == 0:
            default = self.space.default_point()
            if self.space.default_inside():
                memory.enqueue_trial(default)
            else:  # outside the user's ranges: not the sampler's to learn from
                out[0] = (default, {})
                todo = todo[1:]
        for n in todo:
            trial = memory.ask(self.distributions)
            frozen = memory._storage.get_trial(trial._trial_id)
            out[n] = (dict(trial.params), {k: v for k, v in frozen.system_attrs.items()})
        return out

    def finish(self) -> TuneResult:
        last = len(self.rungs) - 1
        full = {n: v[last] for n, v in self.values.items() if last in v}
        ranks = non_dominated_ranks({n: _oriented(v, self.objectives) for n, v in full.items()})
        front = sorted(n for n, r in ranks.items() if r == 0)
        table = self.trials_table(set(front))
        _write_parquet(self.out / TRIALS_TABLE, table)
        front_dir = self.out / FRONT_DIR
        for n in front:
            data = self.evaluator.front_config(self.entry(n))
            if data is not None:
                front_dir.mkdir(exist_ok=True)
                write_atomically(front_dir / f"{self.label(n)}.toml",
                                 (f"# ctxbench tune: front point {self.label(n)}\n" + tomli_w.dumps(data)).encode())
        result = TuneResult(self.out, table, tuple(self.label(n) for n in front), self.label(0), self.replays,
                            self.evaluator.config_replays(), time.perf_counter() - self.started, self.rungs,
                            tuple(self.runs))
        record = json.loads((self.out / TUNE_FILE).read_text())
        record["result"] = {"front": list(result.front), "default": result.default_label,
                            "objectives": [[o.name, o.direction] for o in self.objectives],
                            "runs": [f"{WORK_DIR}/{r}" for r in self.runs], "rungs": list(self.rungs),
                            "replays_per_config_run": result.config_replays, "strategy": self.settings.strategy,
                            "full_sessions": self.rungs[-1]}
        _write_json(self.out / TUNE_FILE, record)
        return result

    def trials_table(self, front: set[int]) -> pd.DataFrame:
        rows = []
        for n in sorted(self.values):
            reached = max(self.values[n])
            decoded = self.space.decode(self.points[n])
            row: dict[str, Any] = {"trial": n, "label": self.label(n), "generation": n // GENERATION_SIZE,
                                   "rung": reached + 1, "sessions": self.rungs[reached], "on_front": n in front,
                                   "is_default": n == 0, "invalid": self.problem(n),
                                   "params": json.dumps({p.name: decoded[p.name] for p in self.space.params},
                                                        sort_keys=True)}
            for p in self.space.params:
                row[f"param_{p.name}"] = json.dumps(decoded[p.name])
            for i, o in enumerate(self.objectives):
                row[o.name] = self.values[n][reached][i]
            for r in sorted(self.values[n]):
                for i, o in enumerate(self.objectives):
                    row[f"{o.name}@{self.rungs[r]}"] = self.values[n][r][i]
            rows.append(row)
        frame = pd.DataFrame(rows)
        # Columns of every rung, present or not (NaN where a trial did not reach it), in rung order.
        extra = [f"{o.name}@{s}" for s in self.rungs for o in self.objectives]
        for c in extra:
            if c not in frame:
                frame[c] = math.nan
        base = [c for c in frame.columns if "@" not in c]
        return frame[base + extra]


def _write_parquet(path: Path, frame: pd.DataFrame) -> None:
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), buffer)
    write_atomically(path, buffer.getvalue())


def read_record(out: Path) -> dict[str, Any]:
    """The tune record (``tune.json``) of a tune directory."""
    return dict(json.loads((Path(out) / TUNE_FILE).read_text()))


def sessions_of(out: Path, runs: Sequence[str]) -> pd.DataFrame:
    """The sessions tables of a tune's working runs, one frame."""
    return pd.concat([pd.read_parquet(Path(out) / r / SESSIONS_TABLE) for r in runs], ignore_index=True)
