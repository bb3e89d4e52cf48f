"""The command as a whole (harness/cli/__init__.py, flags.py, errors.py): --version, every subcommand's
--help, workflow order, the run flags declared once for `run` and `sweep`, library errors reported as
one line, and a parser that imports nothing heavy."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from harness.cli import build_parser, main
from harness.cli.errors import LIBRARY_USAGE_ERRORS, UsageError, usage_error_types
from harness.cli.flags import add_run_flags
from tests.harness.cli.invoke import ctxbench

WORKFLOW_ORDER = ["run", "sweep", "tune", "report", "view", "export-otel", "compare", "validate", "merge", "replay",
                  "fit", "calibrate", "list", "scenario", "validation", "bench"]
RUN_FLAGS = {"--sessions", "--strategies", "--scenarios", "--model", "--seed", "--jobs", "--executor", "--scheduler",
             "--shard", "--out", "--no-resume", "--no-report", "--quiet", "--json", "--otel"}


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subparsers of ``parser`` by name, in the order they were added."""
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def options(parser: argparse.ArgumentParser) -> dict[str, tuple[object, ...]]:
    """Every optional flag of ``parser`` with what defines it: dest, default, type, choices, action, help."""
    return {a.option_strings[-1]: (a.dest, a.default, a.type, a.choices, type(a).__name__, a.help)
            for a in parser._actions if a.option_strings and "--help" not in a.option_strings}


def test_version_prints_the_package_version(tmp_path: Path) -> None:
    result = ctxbench("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"ctxbench {version('ctxbench')}"


def test_subcommands_are_registered_in_workflow_order() -> None:
    assert list(subcommands(build_parser())) == WORKFLOW_ORDER


def test_top_level_help_lists_the_subcommands_in_workflow_order(tmp_path: Path) -> None:
    result = ctxbench("--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    listed = [line.split()[0] for line in result.stdout.splitlines() if line.startswith("    ") and line[4] != " "]
    assert listed == WORKFLOW_ORDER


ALL_COMMANDS = [[name] for name in WORKFLOW_ORDER] + [["scenario", "show"]]


@pytest.mark.parametrize("words", ALL_COMMANDS, ids=[" ".join(w) for w in ALL_COMMANDS])
def test_every_subcommand_help_prints_its_usage_and_exits_0(words: list[str],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*words, "--help"])
    assert exited.value.code == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"usage: ctxbench {' '.join(words)} ")
    assert err == ""


def test_run_and_sweep_take_the_same_run_flags_declared_once() -> None:
    commands = subcommands(build_parser())
    declared = argparse.ArgumentParser()
    add_run_flags(declared)
    assert set(options(declared)) == RUN_FLAGS
    run_flags = options(commands["run"])
    sweep_flags = {k: v for k, v in options(commands["sweep"]).items() if k not in ("--param", "--models")}
    assert run_flags == sweep_flags == options(declared)


def test_no_subcommand_prints_the_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert capsys.readouterr().out.startswith("usage: ctxbench ")


def test_a_config_error_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "absent.toml")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"ctxbench: error: {tmp_path / 'absent.toml'}: no such file\n"


def test_library_usage_errors_name_existing_exception_classes() -> None:
    for module_name, class_name in LIBRARY_USAGE_ERRORS:
        error = getattr(importlib.import_module(module_name), class_name)
        assert issubclass(error, Exception)
        assert error in usage_error_types()
    assert usage_error_types()[0] is UsageError


def test_building_the_parser_imports_no_library_module() -> None:
    """`ctxbench --help` and `ctxbench list` stay fast: the handlers import what they need."""
    code = ("import sys; from harness.cli import build_parser; build_parser(); "
            "print(' '.join(sorted(sys.modules)))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
                 .stdout.split())
    heavy = {m for m in loaded if m.split(".")[0] in ("pandas", "numpy", "pydantic", "reports", "scenarios",
                                                       "strategies")
             or m.startswith(("harness.run", "harness.sim", "harness.core"))}
    assert heavy == set()


def test_python_dash_m_runs_the_command(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "harness.cli", "--version"], cwd=tmp_path, capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"ctxbench {version('ctxbench')}"


def test_an_internal_error_is_one_line_naming_the_log_that_holds_its_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import harness.run.runner

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("an invariant broke\nsecond line")

    monkeypatch.setattr(harness.run.runner, "run", broken)
    out = tmp_path / "out"
    out.mkdir()
    code = main(["run", "--sessions", "2", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("ctxbench: internal error (a bug in ctxbench")
    assert "RuntimeError: an invariant broke" in lines[0]
    logs = list(out.glob("ctxbench-crash-*.log"))
    assert len(logs) == 1 and str(logs[0]) in lines[0]
    text = logs[0].read_text()
    assert "Traceback" in text and "an invariant broke" in text and "command: ctxbench run" in text


def test_an_internal_error_without_a_run_directory_logs_to_the_temporary_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import harness.cli.listing

    monkeypatch.setattr(harness.cli.listing, "print_listing", lambda rows: 1 / 0)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    assert main(["list", "strategies"]) == 1
    err = capsys.readouterr().err
    assert "ZeroDivisionError" in err and len(err.strip().splitlines()) == 1
    assert len(list(tmp_path.glob("ctxbench-crash-*.log"))) == 1


@pytest.mark.parametrize(("flags", "out", "doc"), [
    (["--quick"], "runs/validation-quick", "runs/validation-quick/validation.md"),
    ([], "runs/validation", "docs/validation.md"),
    (["--quick", "--doc", "mine.md"], "runs/validation-quick", "mine.md"),
])
def test_validation_quick_never_writes_over_the_shipped_document_by_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str], out: str, doc: str) -> None:
    import harness.run.validation
    import reports.validation

    seen: dict[str, str] = {}

    class Result:
        checks: tuple[object, ...] = ()
        hard_failures = 0

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(harness.run.validation, "run_validation",
                        lambda out_dir, sizes, **kw: seen.setdefault("out", str(out_dir)))
    monkeypatch.setattr(reports.validation, "write_validation",
                        lambda out_dir, doc_path: seen.setdefault("doc", str(doc_path)) and Result())
    assert main(["validation", "--quiet", *flags]) == 0
    assert seen == {"out": out, "doc": doc}


def test_report_stage_lines_appear_after_the_delay_unless_silenced(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli.report import NO_PROGRESS_ENV, stage_printer

    monkeypatch.delenv(NO_PROGRESS_ENV, raising=False)
    stage_printer("report", after_s=0.0)("drawing the plots")
    stage_printer("report", after_s=3600.0)("never shown")
    monkeypatch.setenv(NO_PROGRESS_ENV, "1")
    stage_printer("report", after_s=0.0)("silenced")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctxbench: report: drawing the plots (")


def test_an_interrupt_that_python_rewrapped_is_still_an_interrupt(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C while a class body runs (matplotlib's, mid-import) reaches main as RuntimeError from KeyboardInterrupt."""
    import harness.cli.listing

    def interrupted_inside_set_name(rows: object) -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as e:
            raise RuntimeError("Error calling __set_name__") from e

    monkeypatch.setattr(harness.cli.listing, "print_listing", interrupted_inside_set_name)
    assert main(["list", "strategies"]) == 130
    assert capsys.readouterr().err.startswith("ctxbench: interrupted")
