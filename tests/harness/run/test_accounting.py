"""Accounting runs (harness.run.accounting) over the sample traces of every format: the unbounded strategy's
accounting equals the tokens of the transcripts as imported, the tables are the same on every run, and the
run directory is an ordinary one the report reads."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.core.rundir import ACCOUNTING_MODE, CALLS_TABLE, HIDDEN_TABLE, SESSIONS_TABLE, Manifest, verify_tables
from harness.run.accounting import account_traces, accounting_entries
from harness.run.config import config_from_data
from harness.run.directory import RunError
from harness.run.traces import TRACE_FORMATS, load_traces
from harness.sim.profiles import profile

TRACES = Path(__file__).resolve().parents[2] / "data" / "traces"


@pytest.fixture(scope="module")
def sessions() -> list:  # type: ignore[type-arg]
    return load_traces(sorted(TRACES.iterdir()))


def test_the_samples_cover_every_format(sessions: list) -> None:  # type: ignore[type-arg]
    # swe-agent-steps reads the same .traj files as swe-agent, and only when named (--format): never sniffed.
    assert {s.format for s in sessions} == set(TRACE_FORMATS) - {"swe-agent-steps"}


def test_unbounded_accounting_equals_the_transcripts_tokens(sessions: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    config = config_from_data({"strategies": [{"name": "unbounded"}, {"name": "sliding_window", "window_size": 4}]})
    account_traces(sessions, config, tmp_path / "run", quiet=True)
    rows = pd.read_parquet(tmp_path / "run" / SESSIONS_TABLE)
    calls = pd.read_parquet(tmp_path / "run" / CALLS_TABLE)
    window = profile("frontier").window_tokens
    for index, session in enumerate(sessions):
        messages = session.messages
        # The system prompt and every declared tool's schema go with every call, as providers bill them.
        count = messages[0].meter.tokenizer.count
        system = count(session.system) if session.system else 0
        system += sum(count(schema) for schema in session.tool_schemas)
        calls_at = [i for i, m in enumerate(messages) if m.role == "assistant"]
        expected = [system + sum(m.tokens for m in messages[:i]) for i in calls_at]
        assert max(expected) < window  # every sample fits the frontier window whole
        got = calls[(calls["strategy"] == "unbounded") & (calls["session_index"] == index)]
        assert got["input_tokens"].tolist() == expected, session.source
        row = rows[(rows["strategy"] == "unbounded") & (rows["session_index"] == index)].iloc[0]
        assert row["input_tokens"] == sum(expected)
        assert row["output_tokens"] == sum(m.tokens - 4 for m in messages if m.role == "assistant")
        assert row["trace"] == session.source and row["format"] == session.format
        assert row["hidden_outputs"] == 0 and row["calls_not_sent"] == 0
    slid = rows[rows["strategy"] == "sliding_window"]
    assert (slid["input_tokens"].to_numpy() <= rows[rows["strategy"] == "unbounded"]["input_tokens"].to_numpy()).all()
    assert slid["hidden_outputs"].sum() > 0


def test_the_run_directory_is_verified_and_the_same_every_time(sessions: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    config = config_from_data({"strategies": [{"name": "unbounded"}, {"name": "observation_masking"}]})
    for name in ("a", "b"):
        account_traces(sessions, config, tmp_path / name, quiet=True)
    manifest = Manifest.read(tmp_path / "a")
    assert manifest.mode == ACCOUNTING_MODE
    verify_tables(tmp_path / "a", manifest)
    for table in (SESSIONS_TABLE, CALLS_TABLE, HIDDEN_TABLE):
        assert (tmp_path / "a" / table).read_bytes() == (tmp_path / "b" / table).read_bytes()
    assert manifest.sha256 == Manifest.read(tmp_path / "b").sha256


def test_a_directory_of_other_files_is_refused_and_left_as_it_was(sessions: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    out = tmp_path / "run"
    out.mkdir()
    (out / "keep.txt").write_text("keep me\n")
    config = config_from_data({"strategies": [{"name": "unbounded"}]})
    with pytest.raises(RunError, match="not a ctxbench run directory"):
        account_traces(sessions[:1], config, out, quiet=True)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_a_directory_of_other_traces_or_strategies_is_refused_as_another_config(
        sessions: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    config = config_from_data({"strategies": [{"name": "unbounded"}]})
    out = tmp_path / "run"
    account_traces(sessions[:2], config, out, quiet=True)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    other = config_from_data({"strategies": [{"name": "sliding_window"}]})
    for other_sessions, other_config in ((sessions[:3], config), (sessions[:2], other)):
        with pytest.raises(RunError, match="another config"):
            account_traces(other_sessions, other_config, out, quiet=True)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_the_tables_are_the_same_bytes_whatever_the_executor_and_jobs(sessions: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    base = {"strategies": [{"name": "unbounded"}, {"name": "sliding_window"}, {"name": "observation_masking"}],
            "batch_size": 3}
    written = []
    for name, where in (("serial", {"executor": "serial"}), ("one", {"jobs": 1}), ("two", {"jobs": 2})):
        account_traces(sessions, config_from_data(base | where), tmp_path / name, quiet=True)
        written.append({t: (tmp_path / name / t).read_bytes() for t in (SESSIONS_TABLE, CALLS_TABLE, HIDDEN_TABLE)})
    assert written[0] == written[1] == written[2]
    assert len(Manifest.read(tmp_path / "two").strategies) == 3


def test_a_replay_interrupted_after_some_batches_resumes_to_the_same_bytes(
        sessions: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[type-arg]
    """The parts of the finished batches stay; the next replay runs only the others and writes the tables an
    uninterrupted replay writes (the CLI test kills a real process with SIGKILL)."""
    import harness.run.accounting as accounting

    config = config_from_data({"strategies": [{"name": "unbounded"}, {"name": "sliding_window"}], "batch_size": 2,
                               "executor": "serial"})
    account_traces(sessions, config, tmp_path / "whole", quiet=True)
    calls = 0
    real = accounting.account_batch

    def failing_after_three(task):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls > 3:
            raise KeyboardInterrupt
        return real(task)

    monkeypatch.setattr(accounting, "account_batch", failing_after_three)
    with pytest.raises(KeyboardInterrupt):
        account_traces(sessions, config, tmp_path / "cut", quiet=True)
    assert len(list((tmp_path / "cut" / "parts").glob("*.jsonl"))) == 3
    assert not (tmp_path / "cut" / SESSIONS_TABLE).exists()
    monkeypatch.setattr(accounting, "account_batch", real)
    account_traces(sessions, config, tmp_path / "cut", quiet=True)
    for table in (SESSIONS_TABLE, CALLS_TABLE, HIDDEN_TABLE):
        assert (tmp_path / "cut" / table).read_bytes() == (tmp_path / "whole" / table).read_bytes()
    assert not (tmp_path / "cut" / "parts").exists()


def test_the_default_strategies_are_every_registered_one_that_can_be_made() -> None:
    import strategies

    names = [e["name"] for e in accounting_entries()]
    assert set(names) <= set(strategies.names())
    assert {"unbounded", "sliding_window", "clear_tool_uses", "adk_compaction", "langchain_summarization",
            "pipeline"} <= set(names)
