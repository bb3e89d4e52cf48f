"""Runs with ``[series]``: batches hold whole series (so tables do not depend on --jobs), durable fact
values are shared within a series and change with ``p_change``, memory saves turns at later positions,
and a config without ``[series]`` plays exactly as before."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.run.config import ConfigError, config_from_data
from harness.run.plan import make_task, plan
from harness.run.runner import run
from harness.run.worker import replay_batch
from scenarios import generate
from scenarios.base import Series

STRATEGIES = [{"name": "observation_masking", "label": "masking"},
              {"name": "observation_masking", "label": "masking+memory", "memory": True}]


def _config(sessions: int, length: int, **extra: Any):  # type: ignore[no-untyped-def]
    return config_from_data({"sessions": sessions, "executor": "serial", "events": False,
                             "scenarios": [{"name": "db_slow_query", "turns": 20}], "strategies": STRATEGIES,
                             "series": {"length": length, "p_change": 0.0}} | extra)


def _rows(config) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    return pd.DataFrame([r for b in plan(config) for r in replay_batch(make_task(config, b)).session_rows])


@pytest.mark.parametrize(("length", "batch_size"), [(3, None), (4, 1), (7, 5)])
def test_a_batch_never_splits_a_series(length: int, batch_size: int | None) -> None:
    config = _config(23, length, batch_size=batch_size)
    for batch in plan(config):
        first, last = batch.sessions[0].session_index, batch.sessions[-1].session_index
        assert first % length == 0
        assert last == 22 or (last + 1) % length == 0


def test_durable_values_are_shared_within_a_series_and_change_with_p_change() -> None:
    def values(p_change: float) -> list[str]:
        return [generate("db_slow_query", 100 + i, series=Series(series_seed=9, position=i, p_change=p_change),
                         turns=20).facts["database"].value for i in range(12)]
    assert len(set(values(0.0))) == 1
    changing = values(0.5)
    assert 1 < len(set(changing)) < 12
    changes = sum(a != b for a, b in itertools.pairwise(changing))
    assert changes == len(set(changing)) - 1  # a value holds until it changes, then the new one holds
    other = generate("db_slow_query", 100, series=Series(series_seed=10, position=0)).facts["database"].value
    assert other != values(0.0)[0]


def test_memory_saves_turns_at_later_positions() -> None:
    rows = _rows(_config(12, 6))
    assert {"series", "series_position", "memory", "memory_chars", "steps_skipped", "stale_memory_used"} <= set(rows)
    later = rows[rows.series_position > 0]
    by_label = later.groupby("strategy")[["tool_calls", "steps_skipped", "memory_facts_used"]].sum()
    assert by_label.loc["masking+memory", "steps_skipped"] > 0
    assert by_label.loc["masking", "steps_skipped"] == 0
    assert by_label.loc["masking+memory", "tool_calls"] < by_label.loc["masking", "tool_calls"]
    first = rows[rows.series_position == 0].groupby("strategy").memory_chars.max()
    assert first.loc["masking+memory"] == 0  # a series starts with an empty MEMORY.md


def test_tables_are_the_same_with_one_job_or_two(tmp_path: Path) -> None:
    config = _config(8, 4, batch_size=1)
    one = run(config.model_copy(update={"executor": "serial"}), out_dir=tmp_path / "one", quiet=True)
    two = run(config.model_copy(update={"executor": "process", "jobs": 2}), out_dir=tmp_path / "two", quiet=True)
    del one, two
    for table in ("sessions.parquet", "calls.parquet"):
        assert (tmp_path / "one" / table).read_bytes() == (tmp_path / "two" / table).read_bytes()


def test_memory_without_series_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"strategies\[1\]\.memory: .*\[series\]"):
        config_from_data({"strategies": STRATEGIES}, "x.toml")


def test_a_config_without_series_plays_as_before(tmp_path: Path) -> None:
    """The series code path off (no ``[series]``) gives the same tables as a config that never heard of it:
    same rows, no series columns, and the memory fields absent from the task."""
    base = {"sessions": 6, "executor": "serial", "scenarios": [{"name": "mix", "turns": 20}],
            "strategies": [{"name": "sliding_window"}]}
    config = config_from_data(base)
    assert make_task(config, plan(config)[0]).series is None
    rows = _rows(config)
    assert not {"series", "memory", "steps_skipped"} & set(rows)
    flagged = config_from_data(base | {"strategies": [{"name": "sliding_window", "memory": False}]})
    assert _rows(flagged).equals(rows)
    assert flagged.config_hash() == config.config_hash()
