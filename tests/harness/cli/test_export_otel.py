"""``ctxbench export-otel`` (harness/cli/export_otel.py) and the two steps of ``ctxbench run --otel``: exit 0
with a summary line, exit 1 when a receiver refuses the spans, exit 2 with one line naming the variable or
path and nothing exported or replayed when the exporter cannot be configured. Run in-process through
`harness.cli.main`, with the subcommand registered for the test when the command list lacks it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import harness.cli
from harness.cli import export_otel
from harness.cli.errors import UsageError
from harness.run.config import RunConfig
from harness.run.runner import run
from tests.harness.cli.invoke import TINY
from tests.harness.run.test_otel import Receiver


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OTLP variable of the machine's; no proxy for localhost."""
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export-otel") / "tiny"
    run(RunConfig(**TINY), out, quiet=True)
    return out


def one_error_line(err: str, *expected: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctxbench: error: "), err
    assert "Traceback" not in err
    for part in expected:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def test_export_to_a_file_prints_the_summary(tiny_run: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "traces.jsonl"
    assert harness.cli.main(["export-otel", str(tiny_run), "--out", str(out), "--quiet"]) == 0
    stdout, stderr = capsys.readouterr()
    assert stdout.startswith("ctxbench export-otel: 8 traces, ") and "invoke_agent" in stdout and str(out) in stdout
    assert stderr == ""
    spans = sum(len(ss["spans"]) for line in out.read_text().splitlines()
                for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"])
    assert f"{spans} spans (" in stdout


def test_export_writes_into_the_run_directory_by_default(tiny_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert harness.cli.main(["export-otel", str(tiny_run), "--quiet"]) == 0
    assert (tiny_run / export_otel.DEFAULT_TRACE_FILE).stat().st_size > 0
    assert str(tiny_run / export_otel.DEFAULT_TRACE_FILE) in capsys.readouterr().out


def test_export_to_a_real_receiver(tiny_run: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    with Receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        assert harness.cli.main(["export-otel", str(tiny_run), "--to", "otlp", "--quiet"]) == 0
    stdout = capsys.readouterr().out
    assert receiver.spans > 0 and f"{receiver.spans} spans sent" in stdout


def test_a_receiver_answering_500_exits_1_and_says_so(tiny_run: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with Receiver(status=500) as failing:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{failing.url}/v1/traces")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "0.3")
        assert harness.cli.main(["export-otel", str(tiny_run), "--to", "otlp", "--quiet"]) == 1
    stdout, stderr = capsys.readouterr()
    assert "FAILED" in stdout and "HTTP 500" in stdout
    assert "spans were not exported" in stderr and "Traceback" not in stderr
    assert failing.requests and failing.spans == 0


@pytest.mark.parametrize(("variable", "value"), [
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url"),
    ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
])
def test_a_bad_variable_exits_2_with_one_line_and_exports_nothing(
        tiny_run: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        variable: str, value: str) -> None:
    with Receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{receiver.url}/v1/traces")
        monkeypatch.setenv(variable, value)
        if variable == "OTEL_EXPORTER_OTLP_ENDPOINT":  # the signal's own variable would be used instead
            monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        assert harness.cli.main(["export-otel", str(tiny_run), "--to", "otlp"]) == 2
    one_error_line(capsys.readouterr().err, variable, repr(value))
    assert receiver.requests == []


def test_a_file_in_a_missing_directory_exits_2_and_writes_nothing(tiny_run: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "missing" / "traces.jsonl"
    assert harness.cli.main(["export-otel", str(tiny_run), "--out", str(out)]) == 2
    one_error_line(capsys.readouterr().err, str(out), "does not exist")
    assert not out.parent.exists()


def test_flag_mistakes_exit_2(tiny_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert harness.cli.main(["export-otel", str(tiny_run), "--to", "otlp", "--out", "t.jsonl"]) == 2
    one_error_line(capsys.readouterr().err, "--out is for --to file")
    with pytest.raises(SystemExit) as exited:  # argparse's own errors leave through sys.exit
        harness.cli.main(["export-otel", str(tiny_run), "--to", "jaeger"])
    assert exited.value.code == 2
    one_error_line(capsys.readouterr().err, "invalid choice: 'jaeger'")


def test_what_is_not_a_finished_run_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert harness.cli.main(["export-otel", str(tmp_path / "nope")]) == 2
    one_error_line(capsys.readouterr().err, "nope", "no such directory")
    assert harness.cli.main(["export-otel", str(tmp_path)]) == 2
    one_error_line(capsys.readouterr().err, "not a finished run directory")
    assert list(tmp_path.iterdir()) == []


def test_run_otel_checks_the_exporter_before_the_run_directory_exists(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``ctxbench run --otel`` does before any session replays: a bad configuration is a UsageError and
    the run directory is not made; a good one leaves the directory to the run."""
    out = tmp_path / "runs" / "tiny"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with pytest.raises(UsageError, match="OTEL_EXPORTER_OTLP_PROTOCOL"):
        export_otel.check_exporter_config("otlp", run_dir=out)
    config = export_otel.check_exporter_config("file", run_dir=out)
    assert config.path == out / export_otel.DEFAULT_TRACE_FILE
    assert not (tmp_path / "runs").exists()


def test_run_otel_exports_once_the_tables_are_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The steps of ``ctxbench run --otel file`` in order: check, run, export into the run directory."""
    out = tmp_path / "tiny"
    config = export_otel.check_exporter_config("file", run_dir=out)
    run(RunConfig(**TINY | {"sessions": 1}), out, quiet=True)
    assert export_otel.export_run(out, config, quiet=True) == 0
    assert (out / export_otel.DEFAULT_TRACE_FILE).is_file()
    assert capsys.readouterr().out.startswith("ctxbench export-otel: 2 traces")


def test_run_with_a_bad_otel_configuration_replays_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from tests.harness.cli.invoke import write_config

    config = write_config(tmp_path, TINY)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
    out = tmp_path / "run"
    assert harness.cli.main(["run", str(config), "--out", str(out), "--otel", "otlp", "--quiet"]) == 2
    one_error_line(capsys.readouterr().err, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "'grpc'")
    assert not out.exists()


def test_run_with_otel_file_writes_the_traces_after_the_tables(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from tests.harness.cli.invoke import write_config

    config = write_config(tmp_path, TINY | {"sessions": 1})
    out = tmp_path / "run"
    assert harness.cli.main(["run", str(config), "--out", str(out), "--otel", "file", "--quiet", "--json",
                             "--no-report"]) == 0
    stdout, stderr = capsys.readouterr()
    assert json.loads(stdout)["run"]["run_dir"] == str(out)  # --json keeps stdout to itself
    assert "ctxbench export-otel: 2 traces" in stderr
    assert (out / export_otel.DEFAULT_TRACE_FILE).is_file()
