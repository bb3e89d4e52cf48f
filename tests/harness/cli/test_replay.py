"""``ctxbench replay`` as a user runs it: the sample traces of every format into a run directory and its
report, which says first that its numbers are exact; the report and list commands read it back; compare
and view refuse it in one line."""

from __future__ import annotations

from pathlib import Path

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
