"""Speed of ``ctxbench report`` (``reports.render.write_report``) on a synthetic run of 3,000 sessions
under 10 strategies: a sessions table of 30,000 rows and a calls table of about two million, the size
of performance goal P6 (under 10 s on the 2-core dev machine).

`make test` runs it once, untimed, on a tenth of that (300 sessions: keeps the suite quick) and checks
what it wrote; `make benchmarks` times it at full size. Each stage's seconds go into ``extra_info``; no
wall-clock threshold is asserted, since the machine's speed is not the code's.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from reports.plots import PLOT_NAMES
from reports.render import write_report

SESSIONS = 3000
#: Sessions per strategy when the benchmark runs untimed inside `make test`.
UNTIMED_SESSIONS = 300
STRATEGIES = ("unbounded", "sliding_window", "truncate_then_slide", "observation_masking", "summarize", "condense",
              "hybrid", "offload_contracts", "pipeline", "drop_all")
OUTCOMES = ("success", "stuck", "overflow", "wrong_answer", "max_turns")
FAMILIES = ("deploy_regression", "k8s_crashloop", "db_migration")


def synthetic_run(folder: Path, sessions: int, seed: int = 0) -> tuple[int, int]:
    """Write ``sessions.parquet`` and ``calls.parquet`` of ``sessions`` sessions replayed by every
    strategy into ``folder`` (a run directory without a manifest, which reports read as one); returns
    (session rows, call rows). Every strategy replays the same sessions: the paired statistics pair."""
    rng = np.random.default_rng(seed)
    k, n = len(STRATEGIES), sessions
    index = np.tile(np.arange(n), k)
    strategy = np.repeat(np.array(STRATEGIES), n)
    turns = np.tile(rng.integers(20, 120, n), k) + rng.integers(-5, 6, k * n)
    growth = np.repeat(rng.uniform(100, 900, k), n)
    context_mean = turns * growth / 2 + rng.normal(0, 500, k * n)
    input_tokens = (turns * (context_mean + 2000)).astype(np.int64)
    success = rng.random(k * n) < np.repeat(rng.uniform(0.1, 0.9, k), n)
    loop = ~success & (rng.random(k * n) < 0.3)
    frame = pd.DataFrame({
        "scenario": "mix", "session_index": index, "strategy": strategy,
        "outcome": np.where(success, "success", np.where(loop, "stuck", rng.choice(OUTCOMES[2:], k * n))),
        "family": np.tile(rng.choice(FAMILIES, n), k), "loop_detected": loop,
        "loop_rule": np.where(loop, "repeat", ""), "context_tokens_mean": context_mean.round(3),
        "input_tokens": input_tokens,
        "cached_input_tokens": (input_tokens * rng.uniform(0, 0.9, k * n)).astype(np.int64),
        "tool_calls": turns, "tool_syntax_errors": rng.binomial(turns, 0.015),
        "latency_s": turns * rng.lognormal(1.6, 0.2, k * n), "cost_usd": input_tokens * 3e-7,
    })
    frame.to_parquet(folder / "sessions.parquet", index=False)
    # One agent call per turn: its context grows along the session; about 1.5% come back malformed.
    rows = np.repeat(np.arange(k * n), turns)
    call_index = np.arange(len(rows)) - np.repeat(np.cumsum(turns) - turns, turns)
    context = (call_index * np.repeat(growth, turns) + rng.integers(0, 2000, len(rows))).astype(np.int64)
    calls = pd.DataFrame({
        "scenario": "mix", "session_index": index[rows], "strategy": strategy[rows], "call_index": call_index,
        "call_kind": "agent", "context_tokens": context, "input_tokens": context + 2000,
        "malformed_kind": np.where(rng.random(len(rows)) < 0.015, "invalid_json", ""),
    })
    calls.to_parquet(folder / "calls.parquet", index=False)
    return len(frame), len(calls)


def test_report_of_30000_session_rows(benchmark, tmp_path: Path) -> None:
    sessions = UNTIMED_SESSIONS if benchmark.disabled else SESSIONS
    session_rows, call_rows = synthetic_run(tmp_path, sessions)
    stages: list[tuple[str, float]] = []

    def report() -> list[Path]:
        started = time.perf_counter()
        return write_report(tmp_path, log=lambda stage: stages.append((stage, time.perf_counter() - started)))

    written = benchmark.pedantic(report, rounds=1, iterations=1)
    benchmark.extra_info["session_rows"] = session_rows
    benchmark.extra_info["call_rows"] = call_rows
    benchmark.extra_info["stage_started_s"] = {stage: round(at, 2) for stage, at in stages}

    assert session_rows == sessions * len(STRATEGIES)
    assert [path.name for path in written] == ["report.html", "report.md"]
    assert sorted(path.stem for path in (tmp_path / "plots").glob("*.png")) == sorted(PLOT_NAMES)
    markdown = (tmp_path / "report.md").read_text()
    # Every strategy has its headline row, and every other one its paired row against unbounded.
    assert all(markdown.count(f"| {name} (n = {sessions}) |") == 1 for name in STRATEGIES)
    assert markdown.count(f" ({sessions} paired sessions) |") == len(STRATEGIES) - 1
    assert [stage.split(" ")[0] for stage, _at in stages] == ["bootstrap", "paired", "drawing", "the", "writing"]
