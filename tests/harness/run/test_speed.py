"""The speed goals' measurements (harness/run/speed.py): each measures what it says on a small size,
and the report's input at scale is a valid run directory. Only structure is checked here; the figures
themselves are `ctxbench bench`'s output, never asserted as times."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from harness.core import tokens
from harness.core.rundir import CALLS_TABLE, EVENTS_TABLE, SESSIONS_TABLE, Manifest, verify_tables
from harness.run import speed
from harness.run.config import RunConfig
from harness.run.runner import run
from tests.harness.cli.invoke import TINY, write_config


def test_interleaved_best_alternates_and_returns_the_last_results() -> None:
    calls: list[str] = []

    def side(name: str) -> str:
        calls.append(name)
        return name.upper()

    short_s, long_s, short, long = speed.interleaved_best(3, lambda: side("s"), lambda: side("l"), min_seconds=0.0)
    assert (short, long) == ("S", "L")
    # one warm-up run of each side (the short one also calibrates the loops), then alternating samples
    assert calls == ["s", "l", "s", "l", "s", "l", "s", "l"]
    assert short_s >= 0 and long_s >= 0


def test_interleaved_best_gives_each_side_the_same_starting_state() -> None:
    # A workload that is fast when it ran last (a warm cache of its own) and slow otherwise: both sides
    # must be measured in the slow state, so their ratio is 1, not the 0.1 that a warm first short
    # sample would give.
    last: list[str] = [""]

    def work(side: str) -> str:
        time.sleep(0.001 if last[0] == side else 0.01)
        last[0] = side
        return side

    short_s, long_s, _, _ = speed.interleaved_best(3, lambda: work("s"), lambda: work("l"), min_seconds=0.0)
    assert short_s >= 0.01 and long_s >= 0.01


def test_the_floor_counts_every_text_the_replays_counted_once_with_a_cold_tokenizer() -> None:
    config = RunConfig(**(TINY | {"sessions": 2}))
    before = tokens.default_tokenizer()
    goal = speed.tokenization_floor(config, 1, repeats=1)
    assert tokens.default_tokenizer() is before  # the measurement's tokenizers are gone again
    assert goal.values["replays"] == len(config.variants())
    assert goal.values["texts"] > 10
    assert goal.values["ratio"] == pytest.approx(goal.values["replay_s"] / goal.values["floor_s"])
    assert goal.met is (goal.values["ratio"] <= 3)


def test_linearity_replays_each_strategy_at_n_and_2n_steps() -> None:
    goal = speed.linearity(20, repeats=1, names=["unbounded", "sliding_window"])
    assert set(goal.values["ratios"]) == {"unbounded", "sliding_window"}
    for short, long in goal.values["turns"].values():
        assert 1.6 <= long / short <= 2.4
    assert goal.met is all(r <= 2.2 for r in goal.values["ratios"].values())


def test_strands_operations_time_both_sides_when_strands_is_installed() -> None:
    pytest.importorskip("strands")
    goal = speed.strands_operations(turns=40, repeats=1)
    assert set(goal.values["ratios"]) == {"sliding_window", "summarize"}
    assert goal.met is not None


def test_a_run_in_a_child_process_reports_its_time_rows_and_memory(tmp_path: Path) -> None:
    path = write_config(tmp_path, TINY | {"sessions": 2})
    goal, result = speed.replay_rate(path, 2, 1, tmp_path / "out")
    assert result["rows"] == 2 * len(TINY["strategies"])
    assert result["peak_rss_mb"] > 10 and result["seconds"] > 0
    assert goal.values["replays_per_s"] == pytest.approx(result["rows"] / result["seconds"])


def test_p4_takes_the_larger_of_the_run_and_the_tables_extrapolated() -> None:
    run = {"peak_rss_mb": 300.0}
    growing = speed.peak_rss(run, 400, {"peak_rss_mb": 100.0}, 10, {"peak_rss_mb": 110.0}, 20)
    assert growing.values["mb_per_1000_sessions"] == pytest.approx(1000.0)
    assert growing.values["projected_mb"] == pytest.approx(110 + 1000 * (100_000 - 20) / 1000)
    assert growing.met is False
    level = speed.peak_rss(run, 400, {"peak_rss_mb": 700.0}, 3000, {"peak_rss_mb": 690.0}, 9000)
    assert level.values["projected_mb"] == 700.0 - 10.0 and level.met is True  # a falling line is held level
    replaying = speed.peak_rss({"peak_rss_mb": 2000.0}, 400, {"peak_rss_mb": 700.0}, 3000,
                               {"peak_rss_mb": 700.0}, 9000)
    assert replaying.values["projected_mb"] == 2000.0 and replaying.met is False


def test_tiled_batches_give_the_tables_of_a_bigger_run_in_table_order(tmp_path: Path) -> None:
    config = RunConfig(**(TINY | {"sessions": 3, "batch_size": 1}))
    run(config, tmp_path / "src", quiet=True)
    source = pd.read_parquet(tmp_path / "src" / SESSIONS_TABLE)
    result = speed.table_phase(tmp_path / "src", 7, tmp_path / "big")
    tiled = pd.read_parquet(tmp_path / "big" / SESSIONS_TABLE)
    assert result["session_rows"] == len(tiled) == 7 * len(source) // 3
    assert not tiled.duplicated(["scenario", "session_index", "strategy"]).any()
    assert sorted(tiled["session_index"].unique()) == list(range(7))  # 3 sessions a copy, indices contiguous
    calls = pd.read_parquet(tmp_path / "big" / CALLS_TABLE)
    source_calls = pd.read_parquet(tmp_path / "src" / CALLS_TABLE)
    per_session = source_calls.groupby("session_index").size()
    assert len(calls) == sum(per_session[i % 3] for i in range(7))  # whole sessions, their calls with them
    assert result["peak_rss_mb"] > 10


def test_a_tiled_run_repeats_whole_sessions_and_checks_against_its_manifest(tmp_path: Path) -> None:
    run(RunConfig(**(TINY | {"sessions": 3})), tmp_path / "src", quiet=True)
    made = speed.tiled_run(tmp_path / "src", tmp_path / "tiled", 20)
    source = pd.read_parquet(tmp_path / "src" / SESSIONS_TABLE)
    tiled = pd.read_parquet(tmp_path / "tiled" / SESSIONS_TABLE)
    assert made == len(tiled) == 4 * len(source)  # 6 rows a copy: four copies reach 20
    assert not tiled.duplicated(["scenario", "session_index", "strategy"]).any()
    assert tiled.equals(tiled.sort_values(["scenario", "session_index", "strategy"], kind="stable")
                        .reset_index(drop=True))
    for name in (CALLS_TABLE, EVENTS_TABLE):
        assert len(pd.read_parquet(tmp_path / "tiled" / name)) == 4 * len(pd.read_parquet(tmp_path / "src" / name))
    manifest = Manifest.read(tmp_path / "tiled")
    verify_tables(tmp_path / "tiled", manifest)  # raises if a checksum does not match
    assert manifest.rows[SESSIONS_TABLE] == made and set(manifest.sha256) == {SESSIONS_TABLE, CALLS_TABLE, EVENTS_TABLE}


def test_the_accounting_rate_replays_the_repeated_traces_under_every_strategy(tmp_path: Path) -> None:
    from harness.run.traces import load_traces

    path = write_config(tmp_path, TINY)
    goal = speed.accounting_rate(path, 5, 2, 1, tmp_path / "p7", 250.0)
    values = goal.values
    assert goal.name.startswith("P7 ")
    assert (values["files"], values["sessions"], values["distinct_ids"]) == (2, 5, 5)
    assert values["strategies"] == len(TINY["strategies"])
    assert values["rows"][SESSIONS_TABLE] == 5 * len(TINY["strategies"])
    # the two files' sessions, repeated in order: their recorded calls (the assistant messages after the task)
    read = load_traces([tmp_path / "p7" / "traces"])
    calls = [sum(1 for m in s.messages[1:] if m.role == "assistant") for s in read]
    assert len(read) == 2 and values["recorded_calls"] == sum(calls[i % 2] for i in range(5))
    assert values["mean_calls"] == pytest.approx(values["recorded_calls"] / 5)
    assert values["calls_min"] == min(calls) and values["calls_max"] == max(calls) and min(calls) > 10
    assert values["seconds"] > 0 and values["read_s"] >= 0 and values["generate_s"] > 0
    assert values["replays_per_s"] == pytest.approx(values["rows"][SESSIONS_TABLE] / values["seconds"])
    assert values["replays_per_s"] > 0 and values["p1_replays_per_s"] == 250.0
    assert values["ratio_to_p1"] == pytest.approx(values["replays_per_s"] / 250.0)
    assert goal.met is (values["replays_per_s"] >= 250.0)  # no slower than the simulated replay given
    assert f"{values['rows'][SESSIONS_TABLE]:,} session-replays" in goal.how


def test_the_accounting_config_hash_is_the_content_hash_of_all_sessions_streamed() -> None:
    # The plan hashes every recorded session's content one at a time (10,000 sessions' JSON text is
    # several GB): the same sha256 as the canonical JSON of the whole.
    from harness.run import accounting
    from harness.run.config import content_hash
    from harness.run.fitting import synthetic_sessions

    sessions = synthetic_sessions("k8s_crashloop", 2, 0, turns=20)
    head = {"mode": "accounting", "model": "frontier", "strategies": [{"name": "unbounded", "note": "sessions"}],
            "batch_size": 8}
    for chosen in ([], sessions[:1], sessions):
        plain = content_hash({**head, "sessions": [accounting._content(s) for s in chosen]})
        assert accounting._config_hash(head, chosen) == plain
