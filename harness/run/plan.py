"""Planning a run: how many sessions each scenario gets, the batches they are cut into (the unit of
work, of resume and of sharding), and the plain task a worker receives for one batch.

The plan depends on the config alone, never on ``--jobs``, the executor or the shard, which is what
makes the tables byte-identical however the work is spread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.core.shard import Shard
from harness.core.switches import Switches
from harness.run.config import RunConfig

__all__ = ["Batch", "BatchTask", "PlannedSession", "SeriesPlan", "VariantSpec", "allocate", "make_task", "plan",
           "shard_of"]


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
class VariantSpec:
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
    variants: tuple[VariantSpec, ...]
    profiles: tuple[dict[str, Any], ...]
    #: Keep the per-turn event log (`RunConfig.events`).
    events: bool = True
    #: The run's ``[series]`` as plain data; None: sessions are independent.
    series: SeriesPlan | None = None


@dataclass(frozen=True, slots=True)
class SeriesPlan:
    """`harness.run.config.SeriesSpec` as plain data for a worker."""

    length: int
    p_write: float
    p_change: float

    def locate(self, session_index: int) -> tuple[int, int]:
        """(series, position in it) of a session index."""
        return divmod(session_index, self.length)


def make_task(config: RunConfig, batch: Batch) -> BatchTask:
    """The worker's task for ``batch``: every variant with its resolved switches, profiles deduplicated."""
    profiles: list[dict[str, Any]] = []
    specs = []
    for variant in config.variants():
        e = variant.entry
        switches = Switches(**e.switch_overrides()).model_dump(mode="json")
        dumped = variant.profile.model_dump(mode="json")
        if dumped not in profiles:
            profiles.append(dumped)
        specs.append(VariantSpec(e.name, e.key, e.params, switches, profiles.index(dumped), variant.tags(),
                                 memory=bool(e.memory)))
    return BatchTask(
        batch=batch,
        root_seed=config.seed,
        scenarios=tuple((s.name, s.params) for s in config.scenarios),
        variants=tuple(specs),
        profiles=tuple(profiles),
        events=config.events,
        series=None if config.series is None else SeriesPlan(config.series.length, config.series.p_write,
                                                              config.series.p_change),
    )
