"""Planning a run: how many sessions each scenario gets, the batches they are cut into (the unit of
work, of resume and of sharding), the plain task a worker receives for one batch, and the `RunPlan`
that holds all of it, resolved once, for the runner and the run directory.

The plan depends on the config alone, never on ``--jobs``, the executor or the shard, which is what
makes the tables byte-identical however the work is spread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.core import tables
from harness.core.rundir import CALLS_TABLE, EVENTS_TABLE, SESSIONS_TABLE
from harness.core.shard import Shard
from harness.core.switches import Switches
from harness.run.config import RunConfig, simulated_hash
from harness.run.parts import BatchResult
from harness.run.table_writer import TableSpec

__all__ = [
    "EVENT_SCHEMA",
    "SIMULATED_CALL_COLUMNS",
    "SIMULATED_SESSION_COLUMNS",
    "Batch",
    "BatchTask",
    "PlannedSession",
    "RunPlan",
    "SeriesTask",
    "VariantTask",
    "allocate",
    "make_task",
    "plan",
    "session_columns",
    "shard_of",
]

#: A simulated run's sessions columns: the replay's own, then where the row sits in the run (its profile
#: and its sweep point).
SIMULATED_SESSION_COLUMNS = list(tables.names(tables.SESSION_COLUMNS, ("", "sweep")))
#: A simulated run's call columns (an accounting run's extra ones are not in a simulated run's table).
SIMULATED_CALL_COLUMNS = list(tables.names(tables.CALL_COLUMNS))
#: The columns of ``events.parquet`` (`harness.core.tables.EVENT_COLUMNS`, `EventRecord`'s fields).
EVENT_SCHEMA = tables.arrow_schema(tables.EVENT_COLUMNS)


def session_columns(config: RunConfig) -> list[str]:
    """The sessions table's columns for ``config``: the series and memory columns only in a run with
    ``[series]``, so a run without one keeps its tables byte for byte."""
    if config.series is None:
        return SIMULATED_SESSION_COLUMNS
    return [*SIMULATED_SESSION_COLUMNS, *tables.names(tables.SESSION_COLUMNS, ("series", "memory"))]


@dataclass(frozen=True, slots=True)
class PlannedSession:
    """One session of the plan: the scenario entry (by index into the config's scenarios) and its index."""

    scenario_index: int
    session_index: int


@dataclass(frozen=True, slots=True)
class Batch:
    """Consecutive sessions of one scenario, replayed together; ``id`` names its resume part."""

    id: str
    sessions: tuple[PlannedSession, ...]


def allocate(config: RunConfig) -> list[int]:
    """Sessions per scenario entry, in proportion to the weights (largest remainder, ties by order)."""
    weights = [s.weight for s in config.scenarios]
    total = sum(weights)
    exact = [config.sessions * w / total for w in weights]
    counts = [int(x) for x in exact]
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: config.sessions - sum(counts)]:
        counts[i] += 1
    return counts


def plan(config: RunConfig) -> list[Batch]:
    """Every batch of the run, in a fixed order (the same for every executor, job count and shard)."""
    batches: list[Batch] = []
    size = config.sessions_per_batch()
    for s, count in enumerate(allocate(config)):
        for start in range(0, count, size):
            sessions = tuple(PlannedSession(s, i) for i in range(start, min(start + size, count)))
            batches.append(Batch(f"{s:02d}-{start:07d}", sessions))
    return batches


def shard_of(batches: Sequence[Batch], shard: Shard | None) -> list[Batch]:
    """The batches ``shard`` runs (`Shard.select`); every batch for a whole run (None)."""
    if shard is None:
        return list(batches)
    return shard.select(batches)


@dataclass(frozen=True, slots=True)
class VariantTask:
    """One variant of `RunConfig.variants`, as plain data a worker process can receive."""

    name: str
    label: str
    params: dict[str, Any]
    switches: dict[str, Any]
    #: Index into `BatchTask.profiles`.
    profile: int
    #: The columns a session row gets besides the replay's own (model, sweep point).
    tags: dict[str, Any]
    #: Keep a MEMORY.md across the sessions of a series (`StrategyEntry.memory`).
    memory: bool = False


@dataclass(frozen=True, slots=True)
class BatchTask:
    """What a worker needs for one batch (plain, picklable data)."""

    batch: Batch
    root_seed: int
    scenarios: tuple[tuple[str, dict[str, Any]], ...]
    variants: tuple[VariantTask, ...]
    profiles: tuple[dict[str, Any], ...]
    #: Keep the per-turn event log (`RunConfig.events`).
    events: bool = True
    #: The run's ``[series]`` as plain data; None: sessions are independent.
    series: SeriesTask | None = None


@dataclass(frozen=True, slots=True)
class SeriesTask:
    """`harness.run.config.SeriesSpec` as plain data for a worker."""

    length: int
    p_write: float
    p_change: float

    def locate(self, session_index: int) -> tuple[int, int]:
        """(series, position in it) of a session index."""
        return divmod(session_index, self.length)


def _variant_specs(config: RunConfig) -> tuple[tuple[VariantTask, ...], list[dict[str, Any]]]:
    """Every variant with its resolved switches, and the profiles they use, deduplicated."""
    profiles: list[dict[str, Any]] = []
    specs = []
    for variant in config.variants():
        e = variant.entry
        switches = Switches(**e.switch_overrides()).model_dump(mode="json")
        dumped = variant.profile.model_dump(mode="json")
        if dumped not in profiles:
            profiles.append(dumped)
        specs.append(VariantTask(e.name, e.key, e.params, switches, profiles.index(dumped), variant.tags(),
                                 memory=bool(e.memory)))
    return tuple(specs), profiles


def make_task(config: RunConfig, batch: Batch) -> BatchTask:
    """The worker's task for ``batch`` (`RunPlan.task` of the config's plan; this resolves the config
    again, so a caller with many batches asks the plan)."""
    return RunPlan.simulated(config).task(batch)


@dataclass(frozen=True, slots=True, eq=False)
class RunPlan:
    """A run resolved once: everything the runner, the run directory and the merge need to know about
    the work, computed from the config (and, for an accounting run, the recorded sessions) before
    anything is written. Built by `RunPlan.simulated` or `harness.run.accounting.accounting_plan`."""

    config: RunConfig
    #: sha256 of what the tables depend on (`stamp`, and an accounting run's recorded sessions).
    config_hash: str
    #: Every batch of the run, in the plan's order.
    batches: tuple[Batch, ...]
    #: The slice of the batches this command runs; None for all of them.
    shard: Shard | None
    #: The scenario name of each `PlannedSession.scenario_index`.
    scenario_names: tuple[str, ...]
    #: The variant labels, in the order each session is replayed under them.
    labels: tuple[str, ...]
    #: The run directory's tables, in the order they are written.
    tables: tuple[TableSpec, ...]
    #: The resolved config ``config.toml`` holds (its ``config_hash`` is added).
    stamp: Mapping[str, Any]
    #: What the manifest says of the config: seed, strategies, variants, scenarios, model, mode.
    manifest: Mapping[str, Any]
    #: The worker function: one batch's task in, its rows out (module level, so that it pickles).
    work: Callable[[Any], BatchResult]
    #: The worker's task of a batch (plain, picklable data).
    task: Callable[[Batch], Any]

    @classmethod
    def simulated(cls, config: RunConfig, shard: Shard | None = None) -> RunPlan:
        """The plan of a simulated run of ``config`` (``shard``: the slice this command runs)."""
        from harness.run.worker import replay_batch  # the worker imports the plan's task types

        resolved = config.resolved()
        variants = config.variants()
        specs = _variant_specs(config)
        series = None if config.series is None else SeriesTask(config.series.length, config.series.p_write,
                                                                config.series.p_change)
        scenarios = tuple((s.name, s.params) for s in config.scenarios)
        profiles = tuple(specs[1])

        def task(batch: Batch) -> BatchTask:
            return BatchTask(batch=batch, root_seed=config.seed, scenarios=scenarios, variants=specs[0],
                             profiles=profiles, events=config.events, series=series)

        specs_of_tables = [
            TableSpec(SESSIONS_TABLE, "sessions", "pandas", columns=tuple(session_columns(config)),
                      keys=tables.SESSION_ROW_KEY),
            TableSpec(CALLS_TABLE, "calls", "pandas", columns=tuple(SIMULATED_CALL_COLUMNS), keys=tables.CALL_ROW_KEY),
        ]
        if config.events:
            specs_of_tables.append(TableSpec(EVENTS_TABLE, "events", "fixed", schema=EVENT_SCHEMA,
                                             keys=tables.EVENT_ROW_KEY))
        return cls(
            config=config, config_hash=simulated_hash(resolved), batches=tuple(plan(config)), shard=shard,
            scenario_names=tuple(s.name for s in config.scenarios), labels=tuple(v.label for v in variants),
            tables=tuple(specs_of_tables), stamp=resolved,
            manifest={"root_seed": config.seed, "strategies": resolved["strategies"],
                      "variants": [{"label": v.label, "name": v.entry.name} | v.tags() for v in variants],
                      "scenarios": resolved["scenarios"], "model": config.profile().model_dump(mode="json")},
            work=replay_batch, task=task)

    @property
    def mine(self) -> list[Batch]:
        """The batches this command runs: the shard's (`Shard.select`), or all of them."""
        return shard_of(self.batches, self.shard)

    @property
    def table_files(self) -> list[str]:
        """The file names of the run's tables."""
        return [spec.file for spec in self.tables]

    def replays(self, batch: Batch) -> int:
        """Session replays in ``batch`` (sessions x variants): the unit the progress line counts."""
        return len(self.labels) * len(batch.sessions)

    def expected_rows(self, batch: Batch) -> set[tuple[str, int, str]]:
        """The (scenario, session_index, strategy) keys a part of ``batch`` must hold, no more, no fewer."""
        return {(self.scenario_names[s.scenario_index], s.session_index, label)
                for s in batch.sessions for label in self.labels}

    def in_table_order(self, batch_ids: Sequence[str]) -> list[str]:
        """``batch_ids`` in the order of their rows in the tables: by scenario name (the plan goes in config
        order), then by first session (a batch holds consecutive sessions of one scenario)."""
        where = {b.id: (self.scenario_names[b.sessions[0].scenario_index], b.sessions[0].session_index)
                 for b in self.batches}
        return sorted(batch_ids, key=where.__getitem__)
