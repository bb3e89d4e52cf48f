"""``ctxbench replay`` as a user runs it: the sample traces of every format into a run directory and its
report, which says first that its numbers are exact; the report and list commands read it back; compare
and view refuse it in one line. A replay's directory is a run's: the same table bytes whatever the jobs
and executor, resumed after SIGINT or SIGKILL to the uninterrupted replay's bytes, finished replays left
alone, another config's directory and a second writer refused in one line."""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from harness.cli import main
from harness.cli.replay import default_out
from harness.run.accounting import CALLS_SCHEMA
from tests.harness.cli.invoke import ROOT, assert_usage_error, ctxbench, start, write_config

TRACES = ROOT / "tests" / "data" / "traces"


def test_replay_of_every_format_writes_a_report_that_says_it_is_exact(tmp_path: Path) -> None:
    out = tmp_path / "run"
    folders = sorted(str(p.relative_to(ROOT)) for p in TRACES.iterdir())
    done = ctxbench("replay", *folders, "--out", out, "--strategies", "unbounded,sliding_window,clear_tool_uses",
                    cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert f"{out}/report.html" in done.stdout.splitlines()
    assert "31 recorded sessions x 3 strategies" in done.stdout
    md = (out / "report.md").read_text()
    assert md.startswith("# ctxbench accounting report: run")
    lead = md.splitlines()[2]
    assert lead.startswith("31 recorded sessions, 3 strategies. Recommended: ")
    assert "hid the fewest needed values" in lead
    assert "## What these numbers assume" in md and "## Token counts against the recorded usage" in md
    assert "Exact accounting, not a simulation" in md
    assert "## Against unbounded" in md and "## Recorded sessions" in md
    for section in ("success", "tool-syntax errors", "loops", "latency"):
        assert section in md.split("## Per strategy")[0]  # said to be absent, up front
    html = (out / "report.html").read_text()
    assert "Exact accounting, not a simulation" in html and 'src="data:image/png;base64,' in html
    again = ctxbench("report", out, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (out / "report.md").read_text() == md
    listed = ctxbench("list", "runs", tmp_path, cwd=tmp_path)
    assert "finished: 93 session rows, 3 strategies" in listed.stdout


def test_compare_and_view_refuse_an_accounting_run_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = ctxbench("replay", TRACES / "anthropic", "--out", out, "--strategies", "unbounded", "--quiet",
                    "--no-report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_usage_error(ctxbench("compare", out, out, cwd=tmp_path), "accounting run", "ctxbench report")
    assert_usage_error(ctxbench("view", out, cwd=tmp_path), "accounting run")


def test_a_broken_trace_among_good_ones_writes_nothing(tmp_path: Path) -> None:
    broken = ROOT / "tests" / "data" / "malformed_traces" / "truncated_json.json"
    result = ctxbench("replay", TRACES / "anthropic", broken, "--out", tmp_path / "run", cwd=tmp_path)
    assert_usage_error(result, "truncated_json.json", "line")
    assert not (tmp_path / "run").exists()


def _replay(args: list[str], capsys: pytest.CaptureFixture[str]) -> subprocess.CompletedProcess[str]:
    """``ctxbench replay ARGS`` in this process, as a completed process (for `assert_usage_error`)."""
    try:
        code = main(["replay", *args])
    except SystemExit as e:
        code = int(e.code or 0)
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(["ctxbench", "replay", *args], code, captured.out, captured.err)


def test_the_default_run_directory_is_named_after_the_one_trace_or_none() -> None:
    assert default_out([Path("traces/incident_triage.json")]) == Path("runs/replay-incident_triage")
    assert default_out([Path("tests/data/traces/anthropic")]) == Path("runs/replay-anthropic")
    assert default_out([Path("a.json"), Path("b.json")]) == Path("runs/replay")
    assert default_out([Path("odd\nname\udcff.json")]) == Path("runs/replay-odd_name\ufffd")
    assert len(default_out([Path("n" * 255)]).name.encode()) <= 255
    assert default_out([Path("/")]) == Path("runs/replay")


def test_the_output_is_checked_before_any_trace_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "afile").write_text("keep\n")
    result = _replay([str(tmp_path / "missing.json"), "--out", str(tmp_path / "afile" / "run")], capsys)
    assert_usage_error(result, "--out", "afile")
    assert (tmp_path / "afile").read_text() == "keep\n"


def test_a_session_without_model_calls_is_a_session_row_without_calls(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"messages": [{"role": "user", "content": "check the pods"}]}))
    out = tmp_path / "run"
    result = _replay([str(task), "--out", str(out), "--strategies", "unbounded,sliding_window", "--quiet"], capsys)
    assert result.returncode == 0, result.stderr
    sessions, calls = pq.read_table(out / "sessions.parquet"), pq.read_table(out / "calls.parquet")
    assert sessions.num_rows == 2 and set(sessions.column("recorded_calls").to_pylist()) == {0}
    assert calls.num_rows == 0 and calls.schema == CALLS_SCHEMA
    assert main(["report", str(out)]) == 0


def test_lone_surrogates_are_one_note_and_the_tables_read_back(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "cut.json"
    text = (TRACES / "anthropic" / "incident_triage.json").read_text()
    trace.write_text(text.replace("{", '{"id": "cut-\\ud83d",', 1).replace("READY   STATUS", "READY \\udc00 STATUS"))
    out = tmp_path / "run"
    result = _replay([str(trace), "--out", str(out), "--strategies", "unbounded", "--quiet"], capsys)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        f"ctxbench: note: {trace}: 2 lone UTF-16 surrogates (half a character) replaced by U+FFFD",
        "ctxbench: warning: model 'ops-model-large' has no entry in the price table: priced with the default "
        "profile (pass --model to choose one)"]
    assert pq.read_table(out / "sessions.parquet").column("session_id").to_pylist() == ["cut-\ufffd"]
    assert "cut-\ufffd" in (out / "report.md").read_text(encoding="utf-8")


# A replay is a run: the same tables whatever the jobs, resume after a kill, refusals, one writer --------------

#: The strategies of the long replay's config (a handful: the kill must land while batches still run).
LONG_STRATEGIES = ("unbounded", "sliding_window", "clear_tool_uses")
#: Recorded sessions, model calls per session and words per tool output of the generated long trace:
#: about a second of serial replay in forty batches of one session.
LONG_SESSIONS, LONG_CALLS, LONG_WORDS = 40, 24, 150
REPLAY_TABLES = ("sessions.parquet", "calls.parquet", "hidden.parquet")
KEY = ["scenario", "session_index", "strategy"]
QUIET = ("--quiet", "--no-report")


def long_session(index: int) -> dict[str, object]:
    """One recorded openai-chat conversation: the task, then `LONG_CALLS` tool calls each answered by a
    tool output of `LONG_WORDS` words (drawn from a fixed seed), then a final answer."""
    rng = random.Random(index)
    vocabulary = ("pod", "latency", "error", "replica", "timeout", "deploy", "metric", "queue", "disk", "lock")
    messages: list[dict[str, object]] = [{"role": "user", "content": f"Session {index}: find why checkout is slow."}]
    for call in range(LONG_CALLS):
        call_id = f"call_{index}_{call}"
        messages.append({"role": "assistant", "content": f"Step {call}: looking at the metrics.",
                         "tool_calls": [{"id": call_id, "type": "function",
                                         "function": {"name": "query_metrics",
                                                      "arguments": json.dumps({"step": call})}}]})
        messages.append({"role": "tool", "tool_call_id": call_id,
                         "content": " ".join(rng.choice(vocabulary) for _ in range(LONG_WORDS))})
    messages.append({"role": "assistant", "content": "The lock on the orders table: done."})
    return {"id": f"long-{index:03d}", "messages": messages}


def replay_bytes(run_dir: Path) -> dict[str, bytes]:
    return {name: (run_dir / name).read_bytes() for name in REPLAY_TABLES}


def files_of(run_dir: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(run_dir)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def long_replay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the long trace (``long.jsonl``, one conversation per line), its config
    (``long.toml``: batches of one session) and its uninterrupted serial replay (``reference``)."""
    directory = tmp_path_factory.mktemp("long-replay")
    (directory / "long.jsonl").write_text("".join(json.dumps(long_session(i)) + "\n" for i in range(LONG_SESSIONS)))
    write_config(directory, {"batch_size": 1, "strategies": [{"name": n} for n in LONG_STRATEGIES]}, "long.toml")
    result = ctxbench("replay", "long.jsonl", "--config", "long.toml", "--out", "reference", "--executor", "serial",
                      *QUIET, cwd=directory)
    assert result.returncode == 0, result.stderr
    assert f"{LONG_SESSIONS} recorded sessions x {len(LONG_STRATEGIES)} strategies" in result.stdout
    assert pq.read_table(directory / "reference" / "hidden.parquet").num_rows > 0  # the hidden table is tried too
    return directory


def long_args(out: Path, *flags: str) -> list[str]:
    return ["replay", "long.jsonl", "--config", "long.toml", "--out", str(out), *flags, *QUIET]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_replay_tables_are_byte_identical_whatever_the_jobs(long_replay: Path, tmp_path: Path, jobs: str) -> None:
    """The plan, not the executor, fixes the tables: worker processes finishing batches in any order give
    the bytes the serial replay (the reference) wrote."""
    out = tmp_path / "run"
    result = ctxbench(*long_args(out, "--executor", "process", "--jobs", jobs), cwd=long_replay)
    assert result.returncode == 0, result.stderr
    assert replay_bytes(out) == replay_bytes(long_replay / "reference")


def start_and_stop(args: list[str], cwd: Path, parts: Path, sig: signal.Signals) -> subprocess.Popen[str]:
    """Start ``ctxbench ARGS``, wait for its first finished batch (a part in ``parts``), send ``sig``;
    the process (the caller waits for it, or kills it)."""
    proc = start(*args, cwd=cwd)
    try:
        deadline = time.monotonic() + 60
        while not (parts.is_dir() and any(parts.glob("*.jsonl"))):
            assert proc.poll() is None, "the replay ended before its first batch was seen"
            assert time.monotonic() < deadline, "no batch finished within 60 s"
            time.sleep(0.02)
        proc.send_signal(sig)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_killed_replay_resumes_to_the_same_tables_as_an_uninterrupted_one(long_replay: Path, tmp_path: Path,
                                                                          sig: signal.Signals) -> None:
    """The finished batches of a replay stopped part-way are kept as parts; the same command again replays
    only the rest and writes the uninterrupted replay's bytes, each row once, no temporary file and no
    part left behind."""
    out = tmp_path / "killed"
    proc = start_and_stop(long_args(out, "--executor", "serial"), long_replay, out / "parts", sig)
    try:
        status = proc.wait(timeout=60)
        assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert status == {signal.SIGINT: 130, signal.SIGKILL: -signal.SIGKILL}[sig]
    done_before = len(list((out / "parts").glob("*.jsonl")))
    assert 1 <= done_before < LONG_SESSIONS
    assert not (out / "sessions.parquet").exists() and not (out / "manifest.json").exists()

    again = ctxbench(*long_args(out, "--executor", "serial"), cwd=long_replay)
    assert again.returncode == 0, again.stderr
    assert replay_bytes(out) == replay_bytes(long_replay / "reference")
    sessions = pd.read_parquet(out / "sessions.parquet")
    assert len(sessions) == LONG_SESSIONS * len(LONG_STRATEGIES)
    assert not sessions.duplicated(KEY).any()
    assert sorted(out.rglob(".*.tmp")) == []
    assert not (out / "parts").exists()


def test_two_replays_into_one_directory_at_once_never_interleave(long_replay: Path, tmp_path: Path) -> None:
    """A second replay into a directory another is writing is refused in one line, changing nothing: the
    first (held still with SIGSTOP while the second tries, so the moment is certain) then finishes with
    the reference's bytes."""
    out = tmp_path / "run"
    first = start_and_stop(long_args(out, "--executor", "serial"), long_replay, out / "parts", signal.SIGSTOP)
    try:
        held = files_of(out)
        second = ctxbench(*long_args(out, "--executor", "serial"), cwd=long_replay)
        assert_usage_error(second, str(out), "another ctxbench command is writing")
        assert files_of(out) == held
        first.send_signal(signal.SIGCONT)
        assert first.wait(timeout=120) == 0, first.stderr.read() if first.stderr else ""
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert replay_bytes(out) == replay_bytes(long_replay / "reference")


@pytest.fixture(scope="module")
def finished_replay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished replay (``done``) of the openai-chat samples under two strategies."""
    directory = tmp_path_factory.mktemp("finished-replay")
    result = ctxbench("replay", TRACES / "openai-chat", "--strategies", "unbounded,clear_tool_uses", "--out", "done",
                      "--executor", "serial", *QUIET, cwd=directory)
    assert result.returncode == 0, result.stderr
    return directory / "done"


def copy_of(run_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(run_dir, out)
    return out


def test_replay_again_into_its_finished_directory_exits_0_and_rewrites_nothing(finished_replay: Path,
                                                                                tmp_path: Path) -> None:
    """The same traces and config find their replay finished: no batch runs again and no file is rewritten
    (bytes and modification times as they were)."""
    out = copy_of(finished_replay, tmp_path)
    before = files_of(out)
    result = ctxbench("replay", TRACES / "openai-chat", "--strategies", "unbounded,clear_tool_uses", "--out", out,
                      *QUIET, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert files_of(out) == before


@pytest.mark.parametrize(("traces", "strategies"), [
    (["openai-chat/incident_triage.json"], "unbounded,clear_tool_uses"),
    (["openai-chat"], "unbounded"),
], ids=["other-traces", "other-strategies"])
def test_replay_of_another_config_into_a_finished_directory_is_refused(finished_replay: Path, tmp_path: Path,
                                                                       traces: list[str], strategies: str) -> None:
    """The config hash covers the recorded sessions and the strategies: other traces or other strategies
    into a finished replay's directory are another config, refused in one line naming the directory,
    every file as it was."""
    out = copy_of(finished_replay, tmp_path)
    before = files_of(out)
    result = ctxbench("replay", *(TRACES / t for t in traces), "--strategies", strategies, "--out", out, *QUIET,
                      cwd=tmp_path)
    assert_usage_error(result, str(out), "another config")
    assert files_of(out) == before


def test_no_resume_into_a_finished_replay_is_refused(finished_replay: Path, tmp_path: Path) -> None:
    """``--no-resume`` promises a fresh directory: one holding this replay already is refused, unchanged."""
    out = copy_of(finished_replay, tmp_path)
    before = files_of(out)
    result = ctxbench("replay", TRACES / "openai-chat", "--strategies", "unbounded,clear_tool_uses", "--out", out,
                      "--no-resume", *QUIET, cwd=tmp_path)
    assert_usage_error(result, str(out), "--no-resume")
    assert files_of(out) == before
