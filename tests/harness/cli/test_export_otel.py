"""``ctxbench export-otel`` (harness/cli/export_otel.py) and the two steps of ``ctxbench run --otel``: exit 0
with a summary line, exit 1 when a receiver refuses the spans, exit 2 with one line naming the variable or
path and nothing exported or replayed when the exporter cannot be configured. Run in-process through
`harness.cli.main`, with the subcommand registered for the test when the command list lacks it."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

import harness.cli
from harness.cli import export_otel
from harness.cli.errors import UsageError
from harness.run.config import RunConfig
from harness.run.runner import run
from tests.harness.cli.invoke import TINY

# clean_otel_environment: the export tests' autouse fixture (no OTLP variable of the machine, no proxy for
# localhost), active here by being imported.
from tests.reports.test_otel import Receiver, clean_otel_environment  # noqa: F401


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


# Where the traces may go, and what an export must not leave behind -------------------------------------------


@pytest.mark.parametrize("target", ["own sessions table", "own manifest", "another run's calls table",
                                    "a part of another run", "a link to a table"])
def test_a_run_directorys_own_files_are_never_overwritten(tiny_run: Path, tmp_path: Path, target: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    other = tmp_path / "other"
    shutil.copytree(tiny_run, other)
    (other / "parts").mkdir(exist_ok=True)
    (other / "parts" / "00-0000000.jsonl").write_text("{}\n")
    (tmp_path / "link.jsonl").symlink_to(other / "sessions.parquet")
    out = {"own sessions table": tiny_run / "sessions.parquet", "own manifest": tiny_run / "manifest.json",
           "another run's calls table": other / "calls.parquet",
           "a part of another run": other / "parts" / "00-0000000.jsonl",
           "a link to a table": tmp_path / "link.jsonl"}[target]
    before = {p: p.read_bytes() for p in [*tiny_run.iterdir(), *other.iterdir()] if p.is_file()}
    assert harness.cli.main(["export-otel", str(tiny_run), "--out", str(out), "--quiet"]) == 2
    one_error_line(capsys.readouterr().err, "--out", str(out), "run directory")
    assert {p: p.read_bytes() for p in before} == before
    assert (tmp_path / "link.jsonl").is_symlink() and not list(tmp_path.glob(".*.tmp"))


def test_a_file_export_says_its_spans_were_written(tiny_run: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert harness.cli.main(["export-otel", str(tiny_run), "--out", str(tmp_path / "t.jsonl"), "--quiet"]) == 0
    stdout = capsys.readouterr().out
    assert " spans written in " in stdout and " sent " not in stdout


@pytest.mark.parametrize(("header", "named"), [("bad key=v", "'bad key'"), ("k=a%0Ab", "the value of 'k'")])
def test_a_header_that_cannot_be_sent_exits_2_before_anything_is_sent(
        tiny_run: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], header: str,
        named: str) -> None:
    with Receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", header)
        assert harness.cli.main(["export-otel", str(tiny_run), "--to", "otlp", "--quiet"]) == 2
    one_error_line(capsys.readouterr().err, "OTEL_EXPORTER_OTLP_HEADERS", named)
    assert receiver.requests == []


def test_a_receiver_rejecting_every_span_in_a_200_exits_1_and_says_why(
        tiny_run: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    with Receiver(reject="span attributes over the tenant's limit") as rejecting:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rejecting.url)
        assert harness.cli.main(["export-otel", str(tiny_run), "--to", "otlp", "--quiet"]) == 1
    stdout, stderr = capsys.readouterr()
    assert rejecting.requests and "FAILED" in stdout and "rejected by the receiver" in stdout
    assert "span attributes over the tenant's limit" in stdout and "spans were not exported" in stderr
    assert "rejected by the receiver" in stderr and "Traceback" not in stderr


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_no_receiver_exits_2_naming_the_endpoint_before_any_session_replays(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.harness.cli.invoke import write_config

    endpoint = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    config = write_config(tmp_path, TINY)
    out = tmp_path / "run"
    assert harness.cli.main(["run", str(config), "--out", str(out), "--otel", "otlp", "--quiet"]) == 2
    one_error_line(capsys.readouterr().err, f"{endpoint}/v1/traces", "no OTLP receiver")
    assert not out.exists()


def test_a_non_finite_number_in_a_table_is_one_line_naming_table_and_column(
        tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    import pandas as pd

    copy = tmp_path / "copied-tables"  # tables copied without their manifest: no checksum to catch them
    copy.mkdir()
    for name in ("sessions.parquet", "calls.parquet", "events.parquet"):
        shutil.copyfile(tiny_run / name, copy / name)
    sessions = pd.read_parquet(copy / "sessions.parquet")
    sessions.loc[3, "latency_s"] = float("nan")
    sessions.to_parquet(copy / "sessions.parquet")
    assert harness.cli.main(["export-otel", str(copy), "--out", str(tmp_path / "t.jsonl"), "--quiet"]) == 2
    one_error_line(capsys.readouterr().err, "sessions.parquet", "column latency_s", "row 3")
    assert not (tmp_path / "t.jsonl").exists()


INTERRUPTING = [signal.SIGINT, signal.SIGTERM]


@pytest.fixture(scope="module")
def longer_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose export takes several batches (about 5,000 spans), so a signal lands in the middle."""
    out = tmp_path_factory.mktemp("export-otel-long") / "run"
    run(RunConfig(**TINY | {"sessions": 60, "seed": 9}), out, quiet=True)
    return out


@pytest.mark.parametrize("previous", [b"", b'{"resourceSpans": []}\n'], ids=["no-file", "old-file"])
@pytest.mark.parametrize("sig", INTERRUPTING, ids=[s.name for s in INTERRUPTING])
def test_an_interrupted_export_leaves_the_old_file_and_no_temporary_one(longer_run: Path, tmp_path: Path,
                                                                        sig: signal.Signals, previous: bytes) -> None:
    import time

    from tests.harness.cli.invoke import start

    out = tmp_path / "traces.jsonl"
    if previous:
        out.write_bytes(previous)
    proc = start("export-otel", longer_run, "--out", out, "--quiet")
    try:
        deadline = time.monotonic() + 120
        # The first batch is in the temporary file beside the target: the export is under way.
        while not list(tmp_path.glob(".traces.jsonl.*.tmp")):
            assert proc.poll() is None, "the export ended before it wrote its first batch"
            assert time.monotonic() < deadline, "no temporary file appeared"
            time.sleep(0.005)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, err
    assert "interrupted" in err and "Traceback" not in err
    assert list(tmp_path.glob(".*")) == []
    assert (out.read_bytes() == previous) if previous else not out.exists()
