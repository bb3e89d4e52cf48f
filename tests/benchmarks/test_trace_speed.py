"""Speed of importing and accounting recorded sessions (harness.run.traces, harness.sim.recorded) with
pytest-benchmark, on larger synthetic traces written by ctxbench's own generators
(`harness.run.fitting.write_synthetic_traces`, also behind tests/data/make_synthetic_traces.py).

Reading a trace and accounting it under a strategy should cost time in proportion to its calls: twice the
sessions of the same length, about twice the time. The ratio of the two, measured in the same run as the
best of 5, goes to ``extra_info``; `make test` runs it untimed and checks only what was read and billed,
`make benchmarks` times it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.run.fitting import write_synthetic_traces
from harness.run.speed import interleaved_best
from harness.run.traces import ImportedSession, load_traces
from harness.sim.profiles import profile
from harness.sim.recorded import account
from strategies import create

N = 6
TURNS = 60
STRATEGIES = ("unbounded", "sliding_window", "clear_tool_uses", "observation_masking")
FRONTIER = profile("frontier")


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("synthetic")
    out = {}
    for n in (N, 2 * N):
        out[n] = root / f"n{n}"
        write_synthetic_traces(out[n], n, "anthropic", turns=TURNS, seed=3)
    return out


def _import_and_account(folder: Path) -> tuple[list[ImportedSession], int]:
    sessions = load_traces([folder])
    calls = 0
    for session in sessions:
        for name in STRATEGIES:
            calls += account(session.messages, create(name), FRONTIER).row["model_calls"]
    return sessions, calls


def test_import_and_accounting_grow_linearly_with_the_sessions(benchmark, folders: dict[int, Path]) -> None:
    benchmark.pedantic(_import_and_account, args=(folders[2 * N],), rounds=3, iterations=1)
    if benchmark.disabled:
        short, long = _import_and_account(folders[N]), _import_and_account(folders[2 * N])
    else:
        short_s, long_s, short, long = interleaved_best(5, lambda: _import_and_account(folders[N]),
                                                        lambda: _import_and_account(folders[2 * N]))
        benchmark.extra_info["ratio_2n_over_n"] = round(long_s / short_s, 2)
    assert (len(short[0]), len(long[0])) == (N, 2 * N)
    benchmark.extra_info["calls"] = [short[1], long[1]]
    # Every recorded call was billed under every strategy (none of these makes a summary call), and the
    # sessions are long: a session of TURNS steps ends early only when its agent gets stuck.
    recorded = sum(1 for s in short[0] for m in s.messages[1:] if m.role == "assistant")
    assert short[1] == len(STRATEGIES) * recorded
    assert recorded >= N * TURNS * 0.75
    assert 1.6 <= long[1] / short[1] <= 2.4
