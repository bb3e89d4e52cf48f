"""The rows of the two tables (harness/sim/metrics.py): a record's row is exactly its fields."""

from __future__ import annotations

import dataclasses

import scenarios
from harness.sim.kernel import replay


def test_rows_are_the_records_fields_in_order_with_their_values() -> None:
    script = scenarios.generate("mix", 5, turns=30)
    result = replay(script, "summarize", "frontier")
    assert result.calls
    for record in [result.record, *result.calls]:
        row = record.as_row()
        assert row == dataclasses.asdict(record)
        assert list(row) == [f.name for f in dataclasses.fields(record)]
