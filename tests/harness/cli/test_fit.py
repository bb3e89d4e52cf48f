"""``ctxbench fit`` (harness/cli/fit.py): synthetic trace files in, a workload config that loads and runs and
a report out; an existing --out, or a trace that cannot be read, is one error line with exit 2 and nothing
written."""

from __future__ import annotations

import subprocess
from pathlib import Path

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
    # Chat Completions has no error status, so a failed call whose fallback is another call reads as one
    # more successful call: the length is the generators' 24 give or take those.
    assert 24 <= config.scenarios[0].params["turns"] <= 26
    report = tmp_path / "workload-fit"
    assert (report / "report.html").is_file() and (report / "report.md").is_file()
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
