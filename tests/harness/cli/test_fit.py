"""``ctxbench fit`` (harness/cli/fit.py): synthetic trace files in, a workload config that loads and runs and
a report out, whose first table puts measured and generated side by side; an empty tool output is an output,
not a crash; an existing --out, or a trace that cannot be read, is one error line with exit 2 and nothing
written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.run.config import load_config
from harness.run.fitting import write_synthetic_traces
from tests.harness.cli.invoke import assert_usage_error


def _fit(args: list[str], capsys: pytest.CaptureFixture[str]) -> subprocess.CompletedProcess[str]:
    """``ctxbench fit ARGS`` in this process, as a completed process (for `assert_usage_error`)."""
    try:
        code = main(["fit", *args])
    except SystemExit as e:  # argparse's own errors exit through CommandParser.error
        code = int(e.code or 0)
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(["ctxbench", "fit", *args], code, captured.out, captured.err)


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("traces")
    write_synthetic_traces(folder, 6, "openai-chat", scenario="k8s_crashloop", seed=4, turns=24)
    return folder


def test_fit_writes_a_config_that_loads_and_runs_and_a_report(traces: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "workload.toml"
    result = _fit([str(traces), "--out", str(out), "--sessions", "3", "--quiet"], capsys)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == str(out)
    config = load_config(out)
    assert config.scenarios[0].name == "k8s_crashloop"
    # The length is the median of the sessions' tool calls: the generators' 24 give or take failed attempts.
    assert 24 <= config.scenarios[0].params["turns"] <= 26
    report = tmp_path / "workload-fit"
    assert (report / "report.html").is_file() and (report / "report.md").is_file()
    markdown = (report / "report.md").read_text()
    # The side-by-side comes first, each measure with its verdict.
    assert markdown.index("Does the generated workload resemble the transcripts?") < markdown.index(
        "## Measured and generated")
    assert "| median session length, tool calls | 24.0 |" in markdown and "within 20%" in markdown
    assert 'id="agreement"' in (report / "report.html").read_text()
    assert (report / "plots" / "qq_payload_fit.png").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left
    code = main(["run", str(out), "--sessions", "2", "--strategies", "unbounded", "--executor", "serial",
                 "--out", str(tmp_path / "run"), "--quiet", "--no-report"])
    assert code == 0


def test_fit_refuses_to_overwrite_an_existing_out(traces: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "workload.toml"
    out.write_text("# mine\n")
    result = _fit([str(traces), "--out", str(out)], capsys)
    assert_usage_error(result, "--out", str(out), "--force")
    assert out.read_text() == "# mine\n"
    assert not (tmp_path / "workload-fit").exists()


def test_a_trace_that_cannot_be_read_is_one_line_naming_the_file(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"messages": [{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}]')
    out = tmp_path / "workload.toml"
    result = _fit([str(bad), "--out", str(out)], capsys)
    assert_usage_error(result, "bad.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]


def _fake_run_dir(folder: Path) -> Path:
    """A folder that reads as a run directory (a manifest beside its config), for refusals only."""
    folder.mkdir()
    (folder / "manifest.json").write_text("{}\n")
    (folder / "config.toml").write_text("sessions = 2\n")
    return folder


def test_a_run_directory_or_its_files_are_never_outputs_even_with_force(traces: Path, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    run = _fake_run_dir(tmp_path / "run")
    result = _fit([str(traces), "--out", str(run / "config.toml"), "--force"], capsys)
    assert_usage_error(result, "--out", "config.toml", "run directory")
    result = _fit([str(traces), "--out", str(tmp_path / "w.toml"), "--report", str(run), "--force"], capsys)
    assert_usage_error(result, "--report", "run directory", "even with --force")
    assert sorted(p.name for p in run.iterdir()) == ["config.toml", "manifest.json"]
    assert (run / "config.toml").read_text() == "sessions = 2\n"
    assert not (tmp_path / "w.toml").exists()


def test_a_report_folder_holding_other_files_is_not_replaced(traces: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "rep"
    (report / "plots").mkdir(parents=True)
    (report / "report.html").write_text("old\n")
    (report / "plots" / "mine.png").write_text("mine\n")
    result = _fit([str(traces), "--out", str(tmp_path / "w.toml"), "--report", str(report), "--force"], capsys)
    assert_usage_error(result, "--report", "plots/mine.png", "which fit did not write")
    assert (report / "plots" / "mine.png").read_text() == "mine\n" and not (tmp_path / "w.toml").exists()
    result = _fit([str(traces), "--out", str(report / "w.toml"), "--report", str(report), "--force"], capsys)
    assert_usage_error(result, "--out", "inside the --report folder")


def test_an_earlier_fit_report_is_replaced_with_force(traces: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    args = [str(traces), "--out", str(tmp_path / "w.toml"), "--sessions", "2", "--quiet"]
    assert _fit(args, capsys).returncode == 0
    assert_usage_error(_fit(args, capsys), "--force")
    (tmp_path / "w-fit" / ".report.md.x1y2z3.tmp").write_text("left by an interrupted write\n")
    again = _fit([*args, "--force"], capsys)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in (tmp_path / "w-fit").iterdir()) == ["plots", "report.html", "report.md"]


def _swe_agent_chat(tool_outputs: list[tuple[str, dict[str, Any], str]]) -> dict[str, Any]:
    """An invented SWE-agent-like function-calling session in Chat Completions form."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an autonomous programmer."},
                                      {"role": "user", "content": "Fix the rounding bug in the duration field."}]
    for i, (name, arguments, output) in enumerate(tool_outputs):
        messages.append({"role": "assistant", "content": f"Step {i}.", "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": output})
    return {"messages": messages}


def test_an_empty_tool_output_is_an_output_not_a_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "swe.json"
    trace.write_text(json.dumps(_swe_agent_chat([
        ("find_file", {"file_name": "fields.py"}, "Found 1 matches for fields.py in /repo:\n/repo/src/fields.py"),
        ("open", {"path": "src/fields.py"}, "[File: /repo/src/fields.py (40 lines total)]\n1:import math"),
        ("bash", {"command": "rm reproduce.py"}, ""),
        ("edit", {"start_line": 12, "end_line": 12, "replacement_text": "    return round(x)"}, "File updated."),
        ("submit", {}, "diff --git a/src/fields.py b/src/fields.py")])))
    out = tmp_path / "w.toml"
    result = _fit([str(trace), "--out", str(out), "--sessions", "2", "--quiet"], capsys)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    text = out.read_text()
    assert "1 of 5 tool outputs are empty" in text
    assert load_config(out).scenarios[0].name == "code_repair"


def test_a_trace_of_text_actions_is_fitted_from_its_commands(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an autonomous programmer."},
                                      {"role": "user", "content": "Fix the failing test."}]
    for command, output in [("ls -F", "setup.py\nsrc/\ntests/"), ("open src/app.py", "[File: src/app.py]\n1:x = 1"),
                            ("python reproduce.py", "Traceback (most recent call last):"), ("submit", "")]:
        messages += [{"role": "assistant", "content": f"Let us run it.\n```\n{command}\n```"},
                     {"role": "user", "content": output}]
    trace = tmp_path / "text.json"
    trace.write_text(json.dumps({"messages": messages}))
    out = tmp_path / "w.toml"
    assert _fit([str(trace), "--out", str(out), "--sessions", "2", "--quiet"], capsys).returncode == 0
    assert "read from the assistant's text" in out.read_text()
    report = (tmp_path / "w-fit" / "report.md").read_text()
    assert "| median session length, tool calls | 4.0 |" in report


def test_the_help_says_the_generated_side_is_replayed_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["fit", "--help"])
    assert exit_info.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "in-process" in help_text and "within 20%" in help_text and "--sessions" in help_text
