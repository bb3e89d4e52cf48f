"""``ctxbench replay`` as a user runs it: the sample traces of every format into a run directory and its
report, which says first that its numbers are exact; the report and list commands read it back; compare
and view refuse it in one line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.cli import main
from harness.cli.replay import default_out
from harness.run.accounting import CALLS_SCHEMA
from tests.harness.cli.invoke import ROOT, assert_usage_error, ctxbench

TRACES = ROOT / "tests" / "data" / "traces"


def test_replay_of_every_format_writes_a_report_that_says_it_is_exact(tmp_path: Path) -> None:
    out = tmp_path / "run"
    folders = sorted(str(p.relative_to(ROOT)) for p in TRACES.iterdir())
    done = ctxbench("replay", *folders, "--out", out, "--strategies", "unbounded,sliding_window,clear_tool_uses",
                    cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert f"{out}/report.html" in done.stdout.splitlines()
    assert "14 recorded sessions x 3 strategies" in done.stdout
    md = (out / "report.md").read_text()
    assert md.startswith("# ctxbench accounting report: run")
    lead = md.splitlines()[2]
    assert lead.startswith("14 recorded sessions, 3 strategies, among those that sent every call: fewest input "
                           "tokens, ")
    assert "lowest cost, " in lead
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
    assert "finished: 42 session rows, 3 strategies" in listed.stdout


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
        f"ctxbench: note: {trace}: 2 lone UTF-16 surrogates (half a character) replaced by U+FFFD"]
    assert pq.read_table(out / "sessions.parquet").column("session_id").to_pylist() == ["cut-\ufffd"]
    assert "cut-\ufffd" in (out / "report.md").read_text(encoding="utf-8")
