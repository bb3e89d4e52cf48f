"""A third-party trace format, installed through the ``ctxbench.trace_formats`` entry point (a package and
its ``*.dist-info/entry_points.txt`` on PYTHONPATH): ``ctxbench replay FILE`` sniffs and reads its file into
the sessions table, ``ctxbench replay --help`` lists it, ``--format`` selects it. A plugin that cannot be
loaded is one line and exit 2; two formats with equal claims on a trace are one line naming both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from harness.core.registry import NO_PLUGINS_ENV, PluginError
from harness.run.traces import (
    FILE,
    TRACE_FORMATS,
    Claim,
    TraceError,
    TraceFormat,
    TraceText,
    detect_format,
    format_names,
    load_trace,
    registry,
)
from tests.harness.cli.invoke import assert_usage_error

ROOT = Path(__file__).resolve().parents[3]
ATIF_SAMPLE = ROOT / "tests" / "data" / "traces" / "atif" / "replication_lag.json"

#: The plugin's module: a made-up format, ``{"toy_trace": 1, "sessions": [...]}``, each session a task, the
#: tool calls made (each answered at once) and the final answer.
FORMAT_MODULE = '''
"""toy: a made-up trace format, one JSON object listing whole sessions."""

from __future__ import annotations

from harness.run.traces import FILE, Claim, ImportedSession, TraceFormat, TraceText
from harness.run.traces.normal import TranscriptBuilder


def sniff(trace: TraceText) -> Claim | None:
    first = trace.records[0].value
    return Claim.document() if isinstance(first, dict) and "toy_trace" in first else None


def load(trace: TraceText) -> list[ImportedSession]:
    sessions = []
    for index, recorded in enumerate(trace.records[0].value["sessions"]):
        where = f"$.sessions[{index}]"
        builder = TranscriptBuilder(trace.source, where)
        builder.text("user", recorded["task"], trace.source, where)
        for number, (tool, output) in enumerate(recorded["calls"]):
            builder.tool_use(f"call_{number}", tool, {"pod": "api-0"}, trace.source, where)
            builder.tool_result(f"call_{number}", "success", output, trace.source, where)
        builder.text("assistant", recorded["answer"], trace.source, where)
        sessions.append(ImportedSession(source=trace.source, session_id=recorded["id"], format="toy", system="",
                                        messages=builder.build()))
    return sessions


FORMAT = TraceFormat(name="toy", kind=FILE, description="made-up whole-session dumps", sniff=sniff, load=load)
'''

#: A trace of the toy format: two sessions.
TOY_TRACE = {"toy_trace": 1, "sessions": [
    {"id": "toy-checkout", "task": "Why is checkout failing?",
     "calls": [["kubectl_logs", "ERROR payment timeout\n" * 40]], "answer": "The payment service times out."},
    {"id": "toy-login", "task": "Why are logins slow?",
     "calls": [["kubectl_logs", "WARN slow query\n" * 30], ["kubectl_logs", "ok\n"]],
     "answer": "A slow query on the sessions table."},
]}


def _install(site: Path, name: str, module: str) -> None:
    """The package ``<name>`` with ``format.py`` and the metadata naming its ``FORMAT`` in the entry-point group."""
    (site / name).mkdir(parents=True)
    (site / name / "__init__.py").write_text("")
    (site / name / "format.py").write_text(textwrap.dedent(module))
    dist = site / f"{name}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[ctxbench.trace_formats]\n{name} = {name}.format:FORMAT\n")


def _ctxbench(site: Path, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``ctxbench ARGS`` in a process that sees the plugins under ``site`` (plugins on: the test session turns
    them off for itself)."""
    env = {k: v for k, v in os.environ.items() if k != NO_PLUGINS_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "harness.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture
def toy_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    _install(site, "toy_traces", FORMAT_MODULE)
    return site


def test_a_plugin_format_is_sniffed_read_and_replayed(toy_site: Path, tmp_path: Path) -> None:
    trace = tmp_path / "incidents.json"
    trace.write_text(json.dumps(TOY_TRACE))
    done = _ctxbench(toy_site, "replay", trace, "--out", tmp_path / "run", "--strategies", "unbounded",
                     "--quiet", "--no-report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = pq.read_table(tmp_path / "run" / "sessions.parquet", columns=["session_id", "format", "trace"]).to_pylist()
    assert sorted(r["session_id"] for r in rows) == ["toy-checkout", "toy-login"]
    assert {(r["format"], r["trace"]) for r in rows} == {("toy", str(trace))}


def test_replay_help_lists_the_plugin_format_after_the_built_ins(toy_site: Path, tmp_path: Path) -> None:
    done = _ctxbench(toy_site, "replay", "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = " ".join(done.stdout.split())
    assert "openhands-events (OpenHands SDK events, one per line (JSONL)), toy (made-up whole-session dumps)" in listed
    assert all(f"{name} (" in listed for name in TRACE_FORMATS)


def test_format_selects_the_plugin_format_for_a_file_it_does_not_sniff(toy_site: Path, tmp_path: Path) -> None:
    unmarked = {k: v for k, v in TOY_TRACE.items() if k != "toy_trace"}
    trace = tmp_path / "unmarked.json"
    trace.write_text(json.dumps(unmarked))
    sniffed = _ctxbench(toy_site, "replay", trace, "--out", tmp_path / "sniffed", cwd=tmp_path)
    assert_usage_error(sniffed, "unknown trace format", "expected one of: atif,", ", openhands-events, toy")
    forced = _ctxbench(toy_site, "replay", trace, "--format", "toy", "--out", tmp_path / "run", "--strategies",
                       "unbounded", "--quiet", "--no-report", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    rows = pq.read_table(tmp_path / "run" / "sessions.parquet", columns=["session_id"]).to_pylist()
    assert sorted(r["session_id"] for r in rows) == ["toy-checkout", "toy-login"]


def test_a_plugin_that_cannot_be_loaded_is_one_line_and_exit_2(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _install(site, "broken_traces", "import toy_dependency_that_is_not_installed\n")
    result = _ctxbench(site, "replay", ATIF_SAMPLE, "--out", tmp_path / "run", cwd=tmp_path)
    assert_usage_error(result, "trace format plugin 'broken_traces' (broken_traces.format:FORMAT) cannot be loaded",
                       "toy_dependency_that_is_not_installed")
    assert not (tmp_path / "run").exists()
    helped = _ctxbench(site, "replay", "--help", cwd=tmp_path)  # help still prints, naming the plugin's trouble
    assert helped.returncode == 0 and "broken_traces" in helped.stdout, helped.stderr


# In-process: the registry's own checks ------------------------------------------------------------------------

@dataclass
class FakeEntryPoint:
    name: str
    value: str
    loaded: Any

    def load(self) -> Any:
        return self.loaded


def _claims_every_document(trace: TraceText) -> Claim | None:
    return Claim.document()


def _reads_nothing(trace: TraceText) -> list[Any]:
    return []


GREEDY = TraceFormat(name="greedy", kind=FILE, description="claims every file as ATIF does",
                     sniff=_claims_every_document, load=_reads_nothing)


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[FakeEntryPoint]]:
    """The entry points the registry sees (plugins on), the loaded ones forgotten before and after."""
    entries: list[FakeEntryPoint] = []
    monkeypatch.delenv(NO_PLUGINS_ENV, raising=False)
    monkeypatch.setattr(registry, "entry_points",
                        lambda group: [e for e in entries if group == registry.ENTRY_POINT_GROUP])
    registry._plugin_formats.cache_clear()
    yield entries
    registry._plugin_formats.cache_clear()


def test_equal_claims_of_two_formats_are_one_line_naming_both(plugins: list[FakeEntryPoint]) -> None:
    plugins.append(FakeEntryPoint("greedy", "greedy_pkg:FORMAT", GREEDY))
    with pytest.raises(TraceError) as caught:
        load_trace(ATIF_SAMPLE)
    assert str(caught.value) == (f"{ATIF_SAMPLE}: $: ambiguous trace format: it could be atif or greedy "
                                 "(name the format to read it as)")
    anthropic = ROOT / "tests" / "data" / "traces" / "anthropic" / "incident_triage.json"
    assert detect_format(anthropic) == "greedy"  # a document mark beats anthropic's (rank 2)
    assert load_trace(ATIF_SAMPLE, "atif")[0].format == "atif"


@pytest.mark.parametrize(("loaded", "problem"), [
    (object(), "expected a TraceFormat, got object"),
    (TraceFormat(name="atif", kind=FILE, description="x", sniff=_claims_every_document, load=_reads_nothing),
     "a trace format named 'atif' is already registered"),
])
def test_a_plugin_that_is_no_new_trace_format_is_refused_naming_its_entry_point(
        plugins: list[FakeEntryPoint], loaded: Any, problem: str) -> None:
    plugins.append(FakeEntryPoint("odd", "odd_pkg:FORMAT", loaded))
    with pytest.raises(PluginError) as caught:
        format_names()
    assert str(caught.value) == f"trace format plugin 'odd' (odd_pkg:FORMAT) cannot be loaded: {problem}"


def test_plugins_are_off_with_the_environment_variable(plugins: list[FakeEntryPoint],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    plugins.append(FakeEntryPoint("greedy", "greedy_pkg:FORMAT", GREEDY))
    monkeypatch.setenv(NO_PLUGINS_ENV, "1")
    assert format_names() == TRACE_FORMATS


def test_a_format_declaration_is_checked() -> None:
    with pytest.raises(ValueError, match="kind must be"):
        TraceFormat(name="x", kind="folder", description="x", sniff=_claims_every_document,  # type: ignore[arg-type]
                    load=_reads_nothing)
    with pytest.raises(ValueError, match="without commas"):
        TraceFormat(name="a,b", kind=FILE, description="x", sniff=_claims_every_document, load=_reads_nothing)
