"""The worker of a simulated run: one batch's sessions, each built and tokenized once and replayed under
every variant, returned as plain rows (`BatchResult`). It never writes to the run directory; the
executors (`harness.run.executors`) decide where it runs.
"""

from __future__ import annotations

import traceback
from typing import Any

import scenarios
import strategies
from harness.core import tables
from harness.core.crn import session_seed
from harness.core.switches import Switches
from harness.run.parts import BatchResult, EventLines
from harness.run.plan import SIMULATED_SESSION_COLUMNS, BatchTask, VariantTask
from harness.sim.kernel import replay
from harness.sim.memory import MemoryStore
from harness.sim.metrics import MEMORY_OFF_ROW
from harness.sim.profiles import Profile
from scenarios.base import Series
from scenarios.draws import derive_seed
from strategies.base import ContextStrategy

__all__ = ["replay_batch"]


def replay_batch(task: BatchTask, *, events: bool | None = None) -> BatchResult:
    """Replay every session of a batch under every variant; the event log as the task says unless
    ``events`` says otherwise."""
    keep_events = task.events if events is None else events
    profiles = [Profile(**p) for p in task.profiles]
    session_rows: list[dict[str, Any]] = []
    call_rows: list[dict[str, Any]] = []
    event_rows: list[list[Any]] = []
    series_plan = task.series
    #: Each variant's memory as the previous session of the current series left it (a batch holds whole
    #: series, in order, so this never needs another batch's sessions).
    memories: dict[str, MemoryStore] = {}
    # Each variant's strategy and switches validated once per batch, not once per session: a replay clones
    # its strategy for every agent and never changes the one it is given. Params that fail are that
    # variant's error on each of its sessions, as they were when made per session.
    made = [_variant_parts(spec) for spec in task.variants]
    for planned in task.batch.sessions:
        scenario, params = task.scenarios[planned.scenario_index]
        seed = session_seed(task.root_seed, scenario, planned.session_index)
        series: Series | None = None
        extra: dict[str, Any] = {}
        if series_plan is not None:
            number, position = series_plan.locate(planned.session_index)
            series = Series(series_seed=derive_seed(task.root_seed, scenario, "series", number), position=position,
                            p_change=series_plan.p_change)
            extra = {"series": number, "series_position": position}
            if position == 0:
                memories.clear()
        try:
            script = scenarios.generate(scenario, seed, series=series, **params)
        except Exception as e:  # a generator bug: record it against every variant and go on
            for spec in task.variants:
                session_rows.append(_error_row(scenario, planned.session_index, seed, spec, e) | extra)
            continue
        for spec, parts in zip(task.variants, made, strict=True):
            memory = memories.get(spec.label, MemoryStore()) if series_plan is not None and spec.memory else None
            try:
                if isinstance(parts, Exception):
                    raise parts
                strategy, switches = parts
                result = replay(script, strategy, profiles[spec.profile], switches=switches, scenario=scenario,
                                session_index=planned.session_index, strategy_label=spec.label, events=keep_events,
                                memory=memory, p_write=series_plan.p_write if series_plan is not None else 0.0)
            except Exception as e:  # the run goes on; the row says what failed (exit code 1)
                session_rows.append(_error_row(scenario, planned.session_index, seed, spec, e) | extra)
                continue
            if result.memory is not None:
                memories[spec.label] = result.memory
            memory_row = (result.memory_row or MEMORY_OFF_ROW) if series_plan is not None else {}
            session_rows.append(result.record.as_row() | spec.tags | extra | memory_row)
            call_rows.extend(c.as_row() for c in result.calls)
            event_rows.extend(result.event_rows)
    return BatchResult(task.batch.id, session_rows, call_rows, EventLines.of(event_rows))


def _variant_parts(spec: VariantTask) -> tuple[ContextStrategy, Switches] | Exception:
    """A variant's strategy and switches, or what making them raised."""
    try:
        return strategies.create(spec.name, **spec.params), Switches(**spec.switches)
    except Exception as e:  # reported against each of the variant's sessions, as a replay's failure is
        return e


def _error_row(scenario: str, index: int, seed: int, spec: VariantTask, e: BaseException) -> dict[str, Any]:
    """The row of a session whose replay raised: every column at its default (no counts, no cost), then the
    session's identity, the switches it was to run with, outcome ``error`` and the exception."""
    switches = spec.switches
    row = tables.defaults(tables.select(tables.SESSION_COLUMNS, SIMULATED_SESSION_COLUMNS))
    row |= {"scenario": scenario, "session_index": index, "seed": seed, "strategy": spec.label, "outcome": "error",
            "contracts": bool(switches["contracts"]), "errors": switches["errors"],
            "breaker": bool(switches["breaker"]), "output_cap_chars": int(switches["output_cap_chars"]),
            "token_budget": int(switches["token_budget"]),
            "normalize_tool_names": bool(switches.get("normalize_tool_names", False)),
            "family": scenario,
            "error": "".join(traceback.format_exception_only(type(e), e)).strip()} | spec.tags
    return row
