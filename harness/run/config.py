"""Run configuration: `RunConfig` (pydantic), loaded from TOML and overridden by flags, checked
against the registries, with a stable hash that identifies a run directory's contents.

Every user mistake becomes a `ConfigError` whose message is one line naming the file and line
(bad TOML) or the field (an unknown strategy, a parameter out of range).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

import scenarios
import strategies
from harness.core.suggest import did_you_mean, unknown_param
from harness.core.switches import Switches
from harness.sim.model import MOCK_MODEL_VERSION
from harness.sim.profiles import PROFILE_NAMES, Profile, TomlFileError, profile, profile_from_table, read_toml

#: The embedded default config: ``harness/default.toml`` is a link to ``examples/default.toml`` in the
#: source tree and a copy of it in an installed wheel.
DEFAULT_CONFIG = Path(__file__).resolve().parent / "default.toml"
#: The embedded default of ``ctxbench sweep`` (a link to ``examples/sweep.toml``, like the above).
DEFAULT_SWEEP = Path(__file__).resolve().parent / "sweep.toml"
SWITCH_KEYS = ("contracts", "errors", "breaker", "token_budget", "output_cap_chars", "normalize_tool_names")
#: `pipeline` has no defaults; runs with every strategy use the composition docs/strategies.md 3.7 recommends.
DEFAULT_PIPELINE: dict[str, Any] = {"stages": [{"name": "offload_contracts"}, {"name": "sliding_window"}]}


class ConfigError(Exception):
    """A mistake in a run config or its overrides: one line, exit code 2."""


#: Every model of a config is strict and finite: a TOML string or boolean is never read as a number
#: (``sessions = "2"``, ``jobs = true``), nor a float as an integer (``sessions = 2.0``), and inf and nan
#: are refused, so a typo fails here instead of running with a value nobody wrote.
STRICT = ConfigDict(strict=True, allow_inf_nan=False)
#: The largest seed (and integer grid value): TOML integers are 64-bit signed, and a run's config.toml
#: and tables must hold it.
MAX_SEED = 2**63 - 1
#: Scenario weights are relative; a million to one already gives the lighter entry no sessions, and
#: the bound keeps ``sessions * weight`` and the sum of the weights finite.
MAX_WEIGHT = 1e6
#: Replays (sessions x variants) a batch aims at when ``batch_size`` is not set: 8 sessions of ten
#: strategies, as every default run has had.
REPLAYS_PER_BATCH = 80


class ScenarioEntry(BaseModel):
    """One ``[[scenarios]]`` table: a family name, its weight among the run's scenarios, and any other
    keys as that family's params."""

    model_config = STRICT | ConfigDict(extra="allow", frozen=True)

    name: str
    weight: float = Field(1.0, gt=0, le=MAX_WEIGHT)

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class StrategyEntry(BaseModel):
    """One ``[[strategies]]`` table: a strategy name, an optional label (the same strategy may run
    twice with different params), runtime switch overrides, and any other keys as its params."""

    model_config = STRICT | ConfigDict(extra="allow", frozen=True)

    name: str
    label: str | None = None
    contracts: bool | None = None
    errors: Literal["plain", "three_class"] | None = None
    breaker: bool | None = None
    #: Tokens after which the session ends (0: no budget); none = the runtime's. Bounded at 500,000 times
    #: the contract runtime's budget (2M tokens): a larger one is no budget.
    token_budget: int | None = Field(None, ge=0, le=10**12)
    #: Tool-output cap in characters (0: uncapped); none = the default of `Switches`. Payloads are at
    #: most 10**7 bytes (`ScenarioParams`), so 10**9 is already "uncapped"; the bound keeps the
    #: session table's integer column in range.
    output_cap_chars: int | None = Field(None, ge=0, le=10**9)
    #: Run a tool name written with ``_`` as the registered ``-`` one (strands-agents' rule); none = off.
    normalize_tool_names: bool | None = None
    #: This entry's model profile (a name or a table like the run's ``model``); none = the run's.
    model: str | dict[str, Any] | None = None
    #: Keep a MEMORY.md across the sessions of a series (needs ``[series]``); none = off.
    memory: bool | None = None
    #: The one runtime (a ``[[runtimes]]`` name) this entry runs under; none = every runtime of the run.
    runtime: str | None = None

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    @property
    def key(self) -> str:
        return self.label or self.name

    def switch_overrides(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in SWITCH_KEYS if getattr(self, k) is not None}


#: The runtime every strategy runs under when a config has no ``[[runtimes]]``: the plain scaffold.
DEFAULT_RUNTIME = "default"
#: What a runtime's name may hold: it ends the labels of a run with several runtimes (``condense+contracts``).
RUNTIME_NAME = r"[A-Za-z0-9_-]+"


class RuntimeEntry(Switches):
    """One ``[[runtimes]]`` table: a name and any runtime switches (the ones not given keep the plain
    runtime's value). Every strategy entry runs under every runtime of the run, so a strategy's effect can
    be read within a runtime and a runtime's effect within a strategy."""

    model_config = STRICT | ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=f"^{RUNTIME_NAME}$", max_length=40)

    def switches(self) -> dict[str, Any]:
        """The runtime's switch values, keyed as a strategy entry's overrides."""
        return {k: getattr(self, k) for k in SWITCH_KEYS}


SweepValue = int | float | bool | str


class SeriesSpec(BaseModel):
    """The ``[series]`` table: sessions form series on one project, each of ``length`` consecutive
    session indexes (series = index // length, position = index % length). A strategy entry with
    ``memory = true`` keeps a MEMORY.md across the sessions of a series (`harness.sim.memory`)."""

    model_config = STRICT | ConfigDict(extra="forbid", frozen=True)

    length: int = Field(ge=1, le=10_000)
    #: (J) Chance that the agent writes a durable fact it saw into MEMORY.md at the end of a session.
    p_write: float = Field(0.8, ge=0, le=1)
    #: (J) Chance that a durable fact's true value changes between two sessions of a series.
    p_change: float = Field(0.1, ge=0, le=1)


class SweepSpec(BaseModel):
    """The ``[sweep]`` table: a one-factor-at-a-time grid over strategy params, crossed with profiles.

    ``params`` maps ``"<strategy label or name>.<param>"`` to the values to try; every other param of
    that strategy keeps its configured value. A swept strategy runs at each of its grid values instead
    of once; the others run once. ``models`` crosses all of it with model profiles (empty: the run's
    model). Every variant replays the same sessions, so the grid is paired throughout.
    """

    # Strict but not finite-only: an inf in the grid is refused by `_axes`, which names the grid value
    # (pydantic's message would name the first member of `SweepValue` instead).
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    models: list[str] = Field(default_factory=list)
    params: dict[str, list[SweepValue]] = Field(default_factory=dict)

    @field_validator("models")
    @classmethod
    def _known_models(cls, value: list[str]) -> list[str]:
        for i, name in enumerate(value):
            if name not in PROFILE_NAMES:
                raise ValueError(f"models[{i}]: unknown profile {name!r}{did_you_mean(name, PROFILE_NAMES)} "
                                 f"(known: {', '.join(PROFILE_NAMES)})")
        if len(set(value)) != len(value):
            raise ValueError("models: a profile appears twice")
        return value

    @field_validator("params")
    @classmethod
    def _axes(cls, value: dict[str, list[SweepValue]]) -> dict[str, list[SweepValue]]:
        for key, values in value.items():
            target, dot, param = key.rpartition(".")
            if not dot or not target or not param:
                raise ValueError(f"params.{key}: expected \"<strategy>.<param>\", e.g. sliding_window.window_size")
            if not values:
                raise ValueError(f"params.{key}: give at least one value")
            for j, v in enumerate(values):
                # Said here rather than by the strategy's Params, whose message would not name the grid
                # value; a grid value is also a float column (`sweep_value`), so it must be one.
                if isinstance(v, float) and not math.isfinite(v):
                    raise ValueError(f"params.{key}[{j}]: {v} is not a finite number")
                if isinstance(v, int) and abs(v) > MAX_SEED:
                    raise ValueError(f"params.{key}[{j}]: {v} is not a 64-bit integer")
            if len({_same_value_key(v) for v in values}) != len(values):
                raise ValueError(f"params.{key}: a value appears twice")
        return value


class TuneRange(BaseModel):
    """One ``[tune.params.NAME]`` table: the range ``low``..``high`` (``log`` for a log scale) or the
    ``choices`` a tune searches for one strategy param (`harness.run.tune`); either, not both."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

    low: int | float | None = None
    high: int | float | None = None
    log: bool = False
    choices: list[Any] | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _one_kind(self) -> TuneRange:
        if self.choices is not None and (self.low is not None or self.high is not None or self.log):
            raise ValueError("give low/high/log or choices, not both")
        if self.choices is None and (self.low is None or self.high is None):
            raise ValueError("give both low and high (or choices)")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"low {self.low} is above high {self.high}")
        return self


class TuneSpec(BaseModel):
    """The ``[tune]`` table of ``ctxbench tune`` (`harness.run.tune`): which strategy, how many trials,
    which objectives (names of the report's metrics, checked by the command), the racing rungs' first
    session count (``min_sessions``; 0: every trial at the full count; none: the command's default) and ratio
    (``eta``), and the
    ranges that narrow the strategy's search space. It never changes a run's tables, so the config hash
    leaves it out."""

    model_config = STRICT | ConfigDict(extra="forbid", frozen=True)

    strategy: str | None = None
    trials: int = Field(30, ge=2, le=10_000)
    objectives: list[str] | None = Field(None, min_length=2, max_length=3)
    min_sessions: int | None = Field(None, ge=0, le=10_000_000)
    eta: int = Field(3, ge=2, le=100)
    sampler: Literal["nsga2", "tpe"] | None = None
    params: dict[str, TuneRange] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Variant:
    """One strategy as the runner replays it: the entry (label and params final), its profile, and
    where it sits in a sweep (``sweep_param`` is "" outside a sweep)."""

    entry: StrategyEntry
    model: str
    profile: Profile
    sweep_param: str = ""
    sweep_value: float | None = None

    @property
    def label(self) -> str:
        return self.entry.key

    def tags(self) -> dict[str, Any]:
        """The columns a session row gets besides the replay's own."""
        return {"model": self.model, "sweep_param": self.sweep_param, "sweep_value": self.sweep_value}


class RunConfig(BaseModel):
    model_config = STRICT | ConfigDict(extra="forbid", frozen=True)

    sessions: int = Field(1000, ge=1, le=10_000_000)
    seed: int = Field(0, ge=0, le=MAX_SEED)
    #: A profile name, or a table of a profile's fields (``base = "<name>"`` plus changes allowed).
    model: str | dict[str, Any] = "frontier"
    executor: Literal["serial", "process", "dask"] = "process"
    #: Worker processes; 0 = one per CPU.
    jobs: int = Field(0, ge=0, le=1024)
    #: Dask scheduler address (``tcp://HOST:PORT``); none starts a LocalCluster.
    scheduler: str | None = None
    #: Sessions per task: a worker builds a script once and replays it under every variant. None (the
    #: default) picks `sessions_per_batch`: 8 sessions (J), fewer when there are more than ten variants,
    #: so a task stays about `REPLAYS_PER_BATCH` replays: seconds of work, so a task's pickling and
    #: scheduling cost is negligible, an interrupt loses little, and the progress bar moves every few
    #: seconds even in a sweep of 72 variants. It is part of the plan, so it never changes the tables.
    batch_size: int | None = Field(None, ge=1, le=10_000)
    scenarios: list[ScenarioEntry] = Field(default_factory=lambda: [ScenarioEntry(name="mix")], min_length=1)
    #: Empty means every registered strategy with its defaults.
    strategies: list[StrategyEntry] = Field(default_factory=list)
    #: The runtimes every strategy runs under (crossed with the strategies); empty: the plain runtime.
    runtimes: list[RuntimeEntry] = Field(default_factory=list)
    #: A grid over strategy params and profiles (see `SweepSpec`); none = one run as configured.
    sweep: SweepSpec | None = None
    #: Sessions form series with persistent memory (see `SeriesSpec`); none = independent sessions.
    series: SeriesSpec | None = None
    #: Keep the per-turn event log (``events.parquet``, what ``ctxbench view`` shows); false for huge runs
    #: that need only the two tables. Its cost, measured on examples/default.toml: about 10% more run time,
    #: an events.parquet half the size of calls.parquet, and a resume log half as large again.
    events: bool = True
    #: What ``ctxbench tune`` searches (see `TuneSpec`); ignored by every other command.
    tune: TuneSpec | None = None

    @field_validator("scheduler")
    @classmethod
    def _scheduler_address(cls, value: str | None) -> str | None:
        match = None if value is None else re.fullmatch(r"(tcp|tls|ucx|inproc)://[^\s:/]+(:([0-9]{1,5}))?", value)
        if value is not None and (match is None or (match[3] is not None and not 1 <= int(match[3]) <= 65535)):
            raise ValueError(f"expected an address like tcp://HOST:8786 (a port from 1 to 65535), got {value!r}")
        return value

    @model_validator(mode="after")
    def _wiring(self) -> RunConfig:
        seen: set[str] = set()
        for i, entry in enumerate(self.scenarios):
            if entry.name in seen:
                raise ValueError(f"scenarios[{i}].name: {entry.name!r} appears twice (one entry per scenario; "
                                 "its sessions are keyed by name and index)")
            seen.add(entry.name)
            if entry.name not in scenarios.names():
                raise ValueError(f"scenarios[{i}].name: unknown scenario {entry.name!r}"
                                 f"{did_you_mean(entry.name, scenarios.names())} "
                                 f"(known: {', '.join(scenarios.names())})")
            cls = scenarios.get(entry.name)
            try:
                cls.Params(**entry.params)
            except ValidationError as e:
                raise ValueError(params_error(e, f"scenarios[{i}]", f"scenario {entry.name}", cls.Params,
                                              also=ScenarioEntry.model_fields)) from None
        labels: set[str] = set()
        for i, strategy in enumerate(self.strategies):
            if strategy.name not in strategies.names():
                raise ValueError(f"strategies[{i}].name: unknown strategy {strategy.name!r}"
                                 f"{did_you_mean(strategy.name, strategies.names())} "
                                 f"(known: {', '.join(strategies.names())})")
            try:
                strategies.create(strategy.name, **strategy.params)
            except ValidationError as e:
                raise ValueError(params_error(e, f"strategies[{i}]", f"strategy {strategy.name}",
                                              strategies.get(strategy.name).Params,
                                              also=StrategyEntry.model_fields)) from None
            if strategy.key in labels:
                raise ValueError(f"strategies[{i}].label: {strategy.key!r} is used twice (give each entry a label)")
            labels.add(strategy.key)
            if strategy.model is not None:
                _resolve_profile(strategy.model, f"strategies[{i}].model")
            if strategy.memory and self.series is None:
                raise ValueError(f"strategies[{i}].memory: memory lasts across a series; add a [series] table")
        runtime_names = [r.name for r in self.runtime_entries()]
        for i, name in enumerate(runtime_names):
            if name in runtime_names[:i]:
                raise ValueError(f"runtimes[{i}].name: {name!r} appears twice")
        for i, strategy in enumerate(self.strategies):
            if strategy.runtime is not None and strategy.runtime not in runtime_names:
                raise ValueError(f"strategies[{i}].runtime: no runtime {strategy.runtime!r} in this config"
                                 f"{did_you_mean(strategy.runtime, runtime_names)} (known: {', '.join(runtime_names)})")
        crossed = [e.key for e in self.strategy_entries()]
        for label in crossed:
            if crossed.count(label) > 1:
                raise ValueError(f"runtimes: two entries get the label {label!r} under the runtimes; give each "
                                 "entry a label")
        self.profile()  # raises ValueError naming the problem
        if self.sweep is not None:
            self._check_sweep(self.sweep)
        return self

    def _check_sweep(self, sweep: SweepSpec) -> None:
        if sweep.models:
            for i, e in enumerate(self.strategy_entries()):
                if e.model is not None:
                    raise ValueError(f"strategies[{i}].model: an entry cannot name its own profile in a sweep over "
                                     "sweep.models (every entry runs under each of those)")
        for key, values in sweep.params.items():
            target, _, param = key.rpartition(".")
            entry = self.swept_entry(target, where=f"sweep.params.{key}")
            fields = strategies.get(entry.name).Params.model_fields
            if param not in fields:
                raise ValueError(f"sweep.params.{key}: {unknown_param(f'strategy {entry.name}', param, fields)}")
            for j, value in enumerate(values):
                try:
                    strategies.create(entry.name, **(entry.params | {param: value}))
                except ValidationError as e:
                    raise ValueError(f"sweep.params.{key}[{j}]: {first_error(e)}") from None

    def entries_named(self, target: str, *, configured: bool = False) -> list[StrategyEntry]:
        """The strategy entries ``target`` names (among the configured entries when ``configured``, else
        among those the run replays). The label rule, the only place it is decided: an entry whose label
        (or unlabelled name) is ``target`` wins; otherwise every entry of that strategy name."""
        entries = self.configured_entries() if configured else self.strategy_entries()
        by_key = [e for e in entries if e.key == target]
        return by_key or [e for e in entries if e.name == target]

    def swept_entry(self, target: str, *, where: str) -> StrategyEntry:
        """The one entry a sweep key's ``target`` names; ValueError naming ``where`` when it names none or
        several (a name shared by two entries: use a label)."""
        named = self.entries_named(target)
        if not named:
            known = list(dict.fromkeys(e.key for e in self.strategy_entries()))
            raise ValueError(f"{where}: no strategy {target!r} in this run{did_you_mean(target, known)} "
                             f"(known: {', '.join(known)})")
        if len(named) > 1:
            raise ValueError(f"{where}: {len(named)} entries are named {target!r}; use a label "
                             f"({', '.join(e.key for e in named)})")
        return named[0]

    def select(self, strategy_keys: Sequence[str] | None = None, scenario_names: Sequence[str] | None = None,
               *, source: str | Path | None = None) -> RunConfig:
        """This config restricted to some strategy entries (each given by label or name, as
        `entries_named` resolves them among the configured entries; a registered strategy the config
        does not name runs with its defaults) and/or replaced scenarios (each family with its defaults).
        A sweep grid over a strategy left out goes with it. ConfigError names the unknown entry."""
        if not strategy_keys and not scenario_names:
            return self
        data = self.model_dump(mode="python")
        if strategy_keys:
            configured = self.configured_entries()
            chosen: list[StrategyEntry] = []
            added: list[StrategyEntry] = []
            for wanted in strategy_keys:
                named = self.entries_named(wanted, configured=True)
                if not named and wanted in strategies.names():
                    named = [StrategyEntry(name=wanted, **_default_params(wanted))]
                    added += [e for e in named if e not in added]
                if not named:
                    entries = sorted({e.key for e in configured} | {e.name for e in configured})
                    others = [n for n in strategies.names() if n not in entries]
                    raise ConfigError(f"--strategies: unknown {wanted!r}{did_you_mean(wanted, entries + others)} "
                                      f"(known: {', '.join(entries)}; or any registered strategy: "
                                      f"{', '.join(others)})")
                chosen += [e for e in named if e not in chosen]
            kept = [e for e in configured if e in chosen] + added
            data["strategies"] = [e.model_dump(exclude_none=True) | e.params for e in kept]
            if data.get("sweep"):
                data["sweep"]["params"] = {
                    k: v for k, v in data["sweep"]["params"].items()
                    if any(e in kept for e in self.entries_named(k.rpartition(".")[0], configured=True))}
        if scenario_names:
            for i, name in enumerate(scenario_names):
                if name not in scenarios.names():
                    raise ConfigError(f"--scenarios: unknown {name!r}{did_you_mean(name, scenarios.names())} "
                                      f"(known: {', '.join(scenarios.names())})")
                if name in scenario_names[:i]:
                    raise ConfigError(f"--scenarios: {name!r} appears twice")
            data["scenarios"] = [{"name": n} for n in scenario_names]
        return config_from_data(data, source)

    def with_sweep(self, params: Mapping[str, list[SweepValue]] | None = None, models: Sequence[str] | None = None,
                   *, source: str | Path | None = None) -> RunConfig:
        """This config with its ``[sweep]`` table extended: ``params`` axes added (or replaced by key),
        ``models`` replacing the profiles. ConfigError when the result sweeps nothing or is invalid."""
        data = self.model_dump(mode="python", exclude_none=True)
        sweep = dict(data.get("sweep") or {})
        if models:
            sweep["models"] = list(models)
        if params:
            sweep["params"] = dict(sweep.get("params") or {}) | dict(params)
        if not sweep.get("params") and not sweep.get("models"):
            raise ConfigError(f"sweep: {source or 'the config'} has no [sweep] table; give --param "
                              "STRATEGY.PARAM=V1,V2 or --models a,b")
        data["sweep"] = sweep
        return config_from_data(data, source)

    def profile(self) -> Profile:
        return _resolve_profile(self.model, "model")

    def sessions_per_batch(self) -> int:
        """``batch_size`` if set, else 8 sessions, or fewer so a batch stays about `REPLAYS_PER_BATCH`
        replays (sessions x variants)."""
        size = self.batch_size if self.batch_size is not None else \
            min(8, max(1, REPLAYS_PER_BATCH // len(self.variants())))
        if self.series is not None:  # whole series per batch, so memory never crosses a batch boundary
            size = -(-size // self.series.length) * self.series.length
        return size

    def configured_entries(self) -> list[StrategyEntry]:
        """The strategy entries as configured: the ``[[strategies]]`` tables, or every registered strategy
        but the SDK managers (`strategies.default_names`) with its defaults."""
        if self.strategies:
            return list(self.strategies)
        return [StrategyEntry(name=n, **_default_params(n)) for n in strategies.default_names()]

    def runtime_entries(self) -> list[RuntimeEntry]:
        """The runtimes of the run: the ``[[runtimes]]`` tables, or the plain runtime alone."""
        return list(self.runtimes) or [RuntimeEntry(name=DEFAULT_RUNTIME)]

    def strategy_entries(self) -> list[StrategyEntry]:
        """The strategies to run: each configured entry under its runtime, or under every runtime of the
        run when it names none, with all its switches set (the entry's own overrides win over the
        runtime's) and its runtime named. An entry crossed with several runtimes gets one label per
        runtime, ending in ``+<runtime>``; every other label stays as configured."""
        runtimes = self.runtime_entries()
        out = []
        for runtime in runtimes:
            for entry in self.configured_entries():
                if entry.runtime is not None and entry.runtime != runtime.name:
                    continue
                update: dict[str, Any] = {"runtime": runtime.name,
                                          **(runtime.switches() | entry.switch_overrides())}
                if entry.runtime is None and len(runtimes) > 1:
                    update["label"] = f"{entry.key}+{runtime.name}"
                out.append(entry.model_copy(update=update))
        return out

    def variants(self) -> list[Variant]:
        """What the runner replays every session under: the strategy entries, expanded by the sweep.

        Labels stay the configured ones outside a sweep. In a sweep, a swept variant is labelled
        ``<label>[<param>=<value>]`` and, when the sweep crosses profiles, every label ends in
        ``@<profile>``; labels are therefore unique, and ``strategy`` stays the key of every table.
        """
        entries = self.strategy_entries()
        if self.sweep is None:
            return [_variant(e, self.model) for e in entries]
        models: list[str | dict[str, Any]] = list(self.sweep.models) or [self.model]
        axes: dict[str, list[tuple[str, list[SweepValue]]]] = {}
        for key, values in self.sweep.params.items():
            target, _, param = key.rpartition(".")
            entry = self.swept_entry(target, where=f"sweep.params.{key}")
            axes.setdefault(entry.key, []).append((param, values))
        out: list[Variant] = []
        for model in models:
            suffix = f"@{model}" if self.sweep.models else ""
            for entry in entries:
                if entry.key not in axes:
                    base = entry.model_copy(update={"label": entry.key + suffix})
                    out.append(_variant(base, model))
                    continue
                for param, values in axes[entry.key]:
                    for value in values:
                        label = f"{entry.key}[{param}={_show(value)}]{suffix}"
                        data = entry.model_dump(exclude_none=True) | entry.params | {param: value, "label": label}
                        variant = _variant(StrategyEntry(**data), model)
                        out.append(Variant(variant.entry, variant.model, variant.profile,
                                           f"{entry.key}.{param}", _number(value)))
        return out

    def resolved(self) -> dict[str, Any]:
        """Every default filled in: what ``config.toml`` of a run directory holds and the hash covers."""
        data = self.model_dump(mode="json", exclude={"strategies", "scenarios", "jobs", "executor", "scheduler"})
        data["scenarios"] = [{"name": s.name, "weight": s.weight,
                              **scenarios.get(s.name).Params(**s.params).model_dump(mode="json")}
                             for s in self.scenarios]
        data["strategies"] = [
            {"name": e.name, "label": e.key,
             **strategies.create(e.name, **e.params).params.model_dump(mode="json"),
             **_switches_of(e), "runtime": e.runtime, **({"memory": True} if e.memory else {})}
            for e in self.strategy_entries()
        ]
        for row, e in zip(data["strategies"], self.strategy_entries(), strict=True):
            if e.model is not None:
                row["model"] = _resolve_profile(e.model, "model").model_dump(mode="json")
        if isinstance(self.model, dict):
            data["model"] = self.profile().model_dump(mode="json")
        data["batch_size"] = self.sessions_per_batch()  # the plan's, chosen or not
        if self.sweep is None:
            data.pop("sweep", None)
        if self.series is None:
            data.pop("series", None)
        if not self.runtimes:
            data.pop("runtimes", None)
        data.pop("tune", None)  # what a tune searches, never what a run's tables hold
        return data

    def config_hash(self) -> str:
        """sha256 of the resolved config (`content_hash`) and the mock model's version (a run directory
        made by another model is another run's, never resumed); executor, jobs and scheduler are excluded
        because they never change the results."""
        return simulated_hash(self.resolved())


def simulated_hash(resolved: dict[str, Any]) -> str:
    """The config hash of a simulated run with this resolved config: `content_hash` of it, of the mock
    model's version and of the values of every built-in profile it names (a config names one by its name
    only), so that a directory another model version or other profile values wrote is refused rather than
    resumed."""
    named = {str(resolved.get("model"))} | {str(e["model"]) for e in resolved.get("strategies", ())
                                             if isinstance(e, dict) and isinstance(e.get("model"), str)}
    values = {name: profile(name).model_dump(mode="json") for name in sorted(named) if name in PROFILE_NAMES}
    return content_hash({**resolved, "mock_model_version": MOCK_MODEL_VERSION, "profile_values": values})


def content_hash(data: Any) -> str:
    """The config hash of a run: sha256 of ``data`` (what its tables depend on) as canonical JSON."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _resolve_profile(model: str | dict[str, Any], field: str) -> Profile:
    """A profile from a name or a table (``base = "<name>"`` plus changes); ValueError names ``field``."""
    if isinstance(model, str):
        if model in PROFILE_NAMES:
            return profile(model)
        raise ValueError(f"{field}: unknown profile {model!r}{did_you_mean(model, PROFILE_NAMES)} "
                         f"(known: {', '.join(PROFILE_NAMES)}, or a table)")
    try:
        return profile_from_table(model)
    except KeyError as e:
        raise ValueError(f"{field}.base: {e.args[0]}") from None
    except ValidationError as e:
        first = e.errors()[0]
        if first["type"] == "missing" and "base" not in model:
            raise ValueError(f"{field}: a table needs base = \"<profile>\" or every field of a profile "
                             f"(missing {first['loc'][0]})") from None
        line = first_error(e)  # "<field of the profile>: <problem>", or the problem alone
        raise ValueError(f"{field}.{line}" if first["loc"] else f"{field}: {line}") from None


def _variant(entry: StrategyEntry, model: str | dict[str, Any]) -> Variant:
    """The entry under its own profile when it names one, else under ``model``."""
    prof = _resolve_profile(entry.model if entry.model is not None else model, "model")
    return Variant(entry, prof.name, prof)


def _number(value: SweepValue) -> float | None:
    """A grid value as the float of the ``sweep_value`` column (None for text and booleans)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _show(value: SweepValue) -> str:
    """A grid value in a label: exact (``repr`` of numbers), so two values never share a label."""
    return json.dumps(value) if isinstance(value, bool | str) else repr(value)


def _same_value_key(value: SweepValue) -> tuple[str, object]:
    """Grid values that would configure the same thing (1 and 1.0) share a key; True is not 1."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", float(value))
    return ("text", value)


def _switches_of(entry: StrategyEntry) -> dict[str, Any]:
    return Switches(**entry.switch_overrides()).model_dump(mode="json")


def _default_params(name: str) -> dict[str, Any]:
    return dict(DEFAULT_PIPELINE) if name == "pipeline" else {}


def extra_key(e: ValidationError) -> str | None:
    """The key a params model does not take when that is the first problem of ``e`` (pydantic's "Extra
    inputs are not permitted" at the top level), else None."""
    first = e.errors()[0]
    loc = first["loc"]
    return str(loc[0]) if first["type"] == "extra_forbidden" and len(loc) == 1 else None


def params_error(e: ValidationError, where: str, owner: str, params: type[BaseModel], *,
                 also: Iterable[str] = ()) -> str:
    """The params of a strategy or scenario entry (``where``, e.g. ``strategies[0]``) refused by ``params``
    as one line: a key it does not take names the valid params and the closest one (`unknown_param`;
    ``also`` are the entry's own keys, suggested too); any other problem is `first_error`'s."""
    key = extra_key(e)
    if key is not None:
        return f"{where}.{key}: {unknown_param(owner, key, params.model_fields, also=also)}"
    return f"{where} ({owner.rpartition(' ')[2]}): {first_error(e)}"


def first_error(e: ValidationError) -> str:
    """The first problem of a pydantic error as one line: ``<field path>: <message> (allowed: ...)``, or
    ``(got ...)`` when the value has the wrong type (``"2"`` where a number belongs)."""
    errors = e.errors()
    first = errors[0]
    path = _field_path(first["loc"])
    msg = first["msg"].removeprefix("Value error, ")
    if len(path) < len(first["loc"]):  # a union (``str | dict``): pydantic reports each member's miss
        misses = [m["msg"].removeprefix("Input should be ") for m in errors if _field_path(m["loc"]) == path]
        msg = "Input should be " + " or ".join(dict.fromkeys(misses))
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).removeprefix(".")
    ctx = first.get("ctx") or {}
    bounds = ", ".join(f"{k} {v}" for k, v in ctx.items() if k in ("ge", "gt", "le", "lt"))
    if bounds and bounds not in msg:
        msg += f" (allowed: {bounds})"
    elif first["type"].endswith("_type") or first["type"] in ("finite_number", "int_from_float"):
        msg += f" (got {_as_toml(first['input'])})"
    if not loc:
        return msg
    last = str(path[-1])
    if msg.startswith(last) and msg[len(last):len(last) + 1] in (".", "[", ":"):
        return loc + msg[len(last):]  # a validator's message that starts at its own field: one path
    return f"{loc}: {msg}"


#: The names pydantic gives the members of a union in an error's location (``model.str``,
#: ``per_turn.constrained-int``): not fields, so not part of the path a user reads.
_UNION_MEMBER = re.compile(r"(str|int|float|bool|constrained-\w+|\w+\[.*\])")


def _field_path(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    return tuple(p for p in loc if not (isinstance(p, str) and _UNION_MEMBER.fullmatch(p)))


def _as_toml(value: object) -> str:
    """A scalar as a config spells it (``true``, ``"2"``, ``inf``), so the user finds it in the file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str | int | float):
        text = json.dumps(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return f"a {'table' if isinstance(value, dict) else 'list' if isinstance(value, list) else type(value).__name__}"


def load_config(path: str | Path | None = None, **overrides: Any) -> RunConfig:
    """Read a TOML config (the embedded default when None) and apply flag overrides (None = unset).
    ConfigError names the file and field, or the flag (``--sessions: ...``) when an override is wrong."""
    if path is not None and not str(path):  # Path("") is the current directory: say what was given
        raise ConfigError("the config path is empty")
    source = Path(path) if path is not None else DEFAULT_CONFIG
    try:
        data = read_toml(source)
    except TomlFileError as e:
        raise ConfigError(str(e)) from None
    given = {key: value for key, value in overrides.items() if value is not None}
    for key, value in given.items():
        check_override(key, value)
    return config_from_data(data | given, source)


def check_override(key: str, value: Any) -> None:
    """ConfigError naming the flag ``--<key>`` unless ``value`` is valid for the config field ``key``.

    Checked as a config of RunConfig's defaults and this one value, so the error is the flag's and is not
    blamed on the config file the flag overrides."""
    try:
        RunConfig.model_validate({key: value})
    except ValidationError as e:
        line = first_error(e)
        raise ConfigError(f"--{key}: {line.removeprefix(f'{key}: ')}") from None


def config_from_data(data: Mapping[str, Any], source: str | Path | None = None) -> RunConfig:
    """A RunConfig from a config's tables; ConfigError naming ``source`` and the field otherwise."""
    try:
        return RunConfig(**data)
    except ValidationError as e:
        key = extra_key(e)
        if key is not None:  # a misspelt top-level key (``sesions = 2``): the keys a config takes
            fields = list(RunConfig.model_fields)
            raise ConfigError(f"{source or 'default config'}: {key}: not a config key{did_you_mean(key, fields)} "
                              f"(known: {', '.join(fields)})") from None
        raise ConfigError(f"{source or 'default config'}: {first_error(e)}") from None
