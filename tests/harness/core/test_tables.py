"""The run directory's table schemas (`harness.core.tables`) against what writes and reads the tables: the
simulator's records have exactly the declared columns, the outcome names are the ones a replay can end in,
and the run directory, the explorer and the report inputs take their columns from the declarations."""

from __future__ import annotations

import re
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

import pyarrow as pa
import pytest

import harness.run.worker
import harness.sim
from harness.core import tables
from harness.run.accounting import CALLS_SCHEMA, HIDDEN_SCHEMA
from harness.run.plan import EVENT_SCHEMA, SIMULATED_CALL_COLUMNS, SIMULATED_SESSION_COLUMNS
from harness.sim.events import DEFAULTS, EVENT_COLUMNS, EVENT_KEY, EventRecord
from harness.sim.memory import MEMORY_BUDGET_CHARS as SIM_BUDGET
from harness.sim.metrics import MEMORY_COLUMNS, MEMORY_OFF_ROW, OUTCOMES, SERIES_COLUMNS, CallRecord, SessionRecord
from reports import explorer, inputs, outcomes, plots
from reports.memory import MEMORY_BUDGET_CHARS as REPORT_BUDGET
from reports.stats import SCRIPT_KEY

#: The Python type of a record field holding each Arrow type.
PYTHON_TYPE: dict[str, type] = {"string": str, "bool": bool, "int32": int, "int64": int, "uint64": int, "double": float}


def _python_type(hint: Any) -> type:
    """The value type of a field's annotation: a Literal's values' type, the type itself otherwise."""
    if get_origin(hint) is Literal:
        (kind,) = {type(v) for v in get_args(hint)}
        return kind
    assert isinstance(hint, type), hint
    return hint


@pytest.mark.parametrize(("record", "columns"), [
    (SessionRecord, tables.SESSION_COLUMNS),
    (CallRecord, tables.CALL_COLUMNS),
    (EventRecord, tables.EVENT_COLUMNS),
])
def test_a_record_has_exactly_the_declared_columns_in_order_with_their_types(
        record: type, columns: tuple[tables.Column, ...]) -> None:
    assert tuple(f.name for f in fields(record)) == tables.names(columns)
    hints = get_type_hints(record)
    declared = {c.name: c for c in columns}
    for f in fields(record):
        assert _python_type(hints[f.name]) is PYTHON_TYPE[declared[f.name].arrow], f.name
        if f.default is not MISSING:
            assert f.default == declared[f.name].default, f.name


def test_each_column_is_declared_once_per_table_with_a_default_of_its_type() -> None:
    for columns in (tables.SESSION_COLUMNS, tables.CALL_COLUMNS, tables.EVENT_COLUMNS, tables.HIDDEN_COLUMNS):
        assert len({c.name for c in columns}) == len(columns)
        for c in columns:
            assert c.default is None or type(c.default) is PYTHON_TYPE[c.arrow], c.name


def test_the_outcomes_are_the_ones_a_replay_can_end_in() -> None:
    assert OUTCOMES == get_args(tables.Outcome) == tables.OUTCOMES
    assert get_type_hints(SessionRecord)["outcome"] == tables.Outcome
    sim = Path(harness.sim.__file__).parent
    ended = {m for path in sim.glob("*.py") for m in re.findall(r'SessionEnded\("(\w+)"', path.read_text())}
    graded = set(re.findall(r'"(success)" if .* else "(wrong_answer)"', (sim / "kernel.py").read_text())[0])
    raised = set(re.findall(r'"outcome": "(\w+)"', Path(harness.run.worker.__file__).read_text()))
    assert ended | graded | raised == set(tables.OUTCOMES)


def test_the_reports_know_every_outcome() -> None:
    assert plots.OUTCOME_ORDER == tables.OUTCOMES
    assert set(plots.OUTCOME_STYLE) == set(tables.OUTCOMES)
    assert set(outcomes.MEANINGS) == set(tables.OUTCOMES) - {"success"}


def test_the_keys() -> None:
    assert tables.SCRIPT_KEY == ("scenario", "session_index")
    assert (*tables.SCRIPT_KEY, "strategy") == tables.SESSION_ROW_KEY
    assert list(tables.SCRIPT_KEY) == SCRIPT_KEY
    assert EVENT_KEY == tables.EVENT_ROW_KEY
    for columns, key in ((tables.SESSION_COLUMNS, tables.SESSION_ROW_KEY), (tables.CALL_COLUMNS, tables.CALL_ROW_KEY),
                         (tables.EVENT_COLUMNS, tables.EVENT_ROW_KEY)):
        assert set(key) <= set(tables.names(columns))
    assert tables.names(tables.EVENT_COLUMNS)[:3] == tables.SESSION_ROW_KEY  # a part's event key is read by position


def test_the_store_writes_the_declared_columns() -> None:
    assert [*tables.names(tables.SESSION_COLUMNS), "model", "sweep_param", "sweep_value"] == SIMULATED_SESSION_COLUMNS
    assert list(tables.names(tables.CALL_COLUMNS)) == SIMULATED_CALL_COLUMNS
    assert EVENT_SCHEMA.equals(pa.schema([(c.name, pa.type_for_alias(c.arrow)) for c in tables.EVENT_COLUMNS]),
                               check_metadata=True)
    assert EVENT_SCHEMA.metadata is None
    assert SERIES_COLUMNS == ("series", "series_position")
    assert tuple(MEMORY_OFF_ROW) == MEMORY_COLUMNS
    assert MEMORY_OFF_ROW == {"memory": False, "memory_chars": 0, "memory_truncated": False, "memory_facts_used": 0,
                              "stale_memory_used": False, "steps_skipped": 0}
    assert tuple(CALLS_SCHEMA.names[-4:]) == tables.names(tables.CALL_COLUMNS, ("accounting",))
    assert tuple(HIDDEN_SCHEMA.names) == tables.names(tables.HIDDEN_COLUMNS)


def test_the_event_defaults_are_the_records() -> None:
    assert tables.names(tables.EVENT_COLUMNS) == EVENT_COLUMNS
    assert {k: v for k, v in tables.defaults(tables.EVENT_COLUMNS).items() if k in DEFAULTS} == DEFAULTS


def test_the_explorer_and_the_report_inputs_read_the_declared_columns() -> None:
    declared = {c.name: c for c in tables.EVENT_COLUMNS}
    assert list(explorer.EVENT_COLUMNS) == [n for n in declared if n not in tables.SESSION_ROW_KEY]
    for name, (kind, default) in explorer.EVENT_COLUMNS.items():
        assert kind == (inputs.TEXT if declared[name].text else inputs.NUMBER)
        assert default == declared[name].default
    sessions = {c.name: c for c in tables.SESSION_COLUMNS}
    for name, kind in inputs.REPORT_COLUMNS.items():
        assert kind == (inputs.TEXT if sessions[name].text else inputs.NUMBER), name
    calls = {c.name: c for c in tables.CALL_COLUMNS}
    for name, kind in inputs.REPORT_CALL_COLUMNS.items():
        assert kind == (inputs.TEXT if calls[name].text else inputs.NUMBER), name
    assert set(explorer.REPORT_CALL_COLUMNS) <= set(calls)
    assert {c for c, _, _ in explorer.EXPLORER_SESSION_COLUMNS} <= set(sessions)
    assert tables.names(tables.SESSION_COLUMNS, ("sweep",)) == inputs.SWEEP_COLUMNS


def test_one_memory_budget() -> None:
    assert SIM_BUDGET is REPORT_BUDGET is tables.MEMORY_BUDGET_CHARS
