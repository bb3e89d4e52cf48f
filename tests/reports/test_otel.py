"""`reports.otel`: a finished run exported as one trace per session (GenAI semantic conventions) on the
simulated clock, to the in-memory exporter, to an OTLP/JSON file and to a real OTLP/HTTP receiver on
localhost; its configuration checked before any span is made, and failed batches counted."""

from __future__ import annotations

import json
import math
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from harness.run.config import RunConfig
from harness.run.runner import run
from reports.otel import (
    ExporterConfig,
    OtelConfigError,
    OtelInputError,
    check_exporter_config,
    check_receiver,
    export_run,
)
from tests.harness.cli.invoke import TINY

KEY = ["scenario", "session_index", "strategy"]
#: Rounding of clock_s and model_s to microseconds lets a call start up to a microsecond before the last ended.
TOLERANCE_NS = 2_000


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("otel") / "tiny"
    run(RunConfig(**TINY), out, quiet=True)
    return out


@pytest.fixture(autouse=True)
def clean_otel_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OTLP variable of the machine's leaks in; the local receiver is never reached through a proxy."""
    import os

    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def exported(run_dir: Path, **kwargs: Any) -> tuple[list[ReadableSpan], Any]:
    memory = InMemorySpanExporter()
    summary = export_run(run_dir, memory, **kwargs)
    return list(memory.get_finished_spans()), summary


def traces_of(spans: list[ReadableSpan]) -> dict[int, list[ReadableSpan]]:
    traces: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        assert span.context is not None
        traces.setdefault(span.context.trace_id, []).append(span)
    return traces


def test_one_span_per_session_model_call_and_tool_call(tiny_run: Path) -> None:
    spans, summary = exported(tiny_run)
    sessions = pd.read_parquet(tiny_run / "sessions.parquet")
    calls = pd.read_parquet(tiny_run / "calls.parquet")
    kinds = pd.Series([str(attrs(s)["gen_ai.operation.name"]) for s in spans]).value_counts().to_dict()
    assert kinds == {"invoke_agent": len(sessions), "chat": len(calls), "execute_tool": int(sessions.tool_calls.sum())}
    assert len(spans) == len(sessions) + len(calls) + int(sessions.tool_calls.sum())
    assert summary.ok and summary.spans_sent == len(spans) and summary.traces == len(sessions)
    assert dict(summary.spans_by_kind) == kinds and summary.has_events


def test_chat_spans_carry_the_calls_table_usage(tiny_run: Path) -> None:
    spans, _ = exported(tiny_run)
    calls = pd.read_parquet(tiny_run / "calls.parquet").set_index([*KEY, "call_index"])
    checked = 0
    for span in spans:
        attributes = attrs(span)
        if attributes["gen_ai.operation.name"] != "chat":
            continue
        _, scenario, index, strategy = str(attributes["gen_ai.conversation.id"]).split("/")
        row = calls.loc[(scenario, int(index), strategy, attributes["ctxbench.call_index"])]
        assert attributes["gen_ai.usage.input_tokens"] == row.input_tokens
        assert attributes["gen_ai.usage.output_tokens"] == row.output_tokens
        assert attributes["gen_ai.usage.cache_read.input_tokens"] == row.cached_input_tokens
        assert attributes["gen_ai.usage.cache_creation.input_tokens"] == row.cache_write_tokens
        assert attributes["gen_ai.agent.name"] == row.agent and attributes["ctxbench.call_kind"] == row.call_kind
        assert span.name == "chat frontier" and attributes["gen_ai.request.model"] == "frontier"
        checked += 1
    assert checked == len(calls)


def test_each_session_is_one_trace_under_its_invoke_agent_root(tiny_run: Path) -> None:
    spans, _ = exported(tiny_run)
    sessions = pd.read_parquet(tiny_run / "sessions.parquet").set_index(KEY)
    first_agent = pd.read_parquet(tiny_run / "calls.parquet").sort_values("call_index").groupby(KEY).agent.first()
    traces = traces_of(spans)
    assert len(traces) == len(sessions)
    for members in traces.values():
        roots = [s for s in members if s.parent is None]
        assert len(roots) == 1
        root = roots[0]
        assert root.context is not None
        attributes = attrs(root)
        key = (attributes["ctxbench.scenario"], attributes["ctxbench.session_index"], attributes["ctxbench.strategy"])
        assert root.name == f"invoke_agent {first_agent[key]}" == f"invoke_agent {attributes['gen_ai.agent.name']}"
        assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in members if s is not root)
        assert len({s.context.span_id for s in members if s.context is not None}) == len(members)
        row = sessions.loc[key]
        assert attributes["ctxbench.outcome"] == row.outcome
        assert attributes["gen_ai.usage.input_tokens"] == row.input_tokens
        if row.outcome == "success":
            assert root.status.status_code == StatusCode.UNSET and "error.type" not in attributes
        else:
            assert root.status.status_code == StatusCode.ERROR and attributes["error.type"] == row.outcome
    assert any(s.status.status_code == StatusCode.ERROR for s in spans if s.parent is None), \
        "the tiny run has a session that did not succeed"


def test_span_times_follow_the_simulated_clock(tiny_run: Path) -> None:
    spans, _ = exported(tiny_run)
    sessions = pd.read_parquet(tiny_run / "sessions.parquet").set_index(KEY)
    for members in traces_of(spans).values():
        root = next(s for s in members if s.parent is None)
        attributes = attrs(root)
        assert root.start_time is not None and root.end_time is not None
        latency = sessions.loc[(attributes["ctxbench.scenario"], attributes["ctxbench.session_index"],
                                attributes["ctxbench.strategy"])].latency_s
        assert root.end_time - root.start_time == round(latency * 1e9)
        children = sorted((s for s in members if s is not root),
                          key=lambda s: (attrs(s)["ctxbench.call_index"], s.name.startswith("execute_tool")))
        previous_end = root.start_time
        for span in children:
            assert span.start_time is not None and span.end_time is not None
            assert span.start_time >= previous_end - TOLERANCE_NS
            assert span.end_time >= span.start_time and span.end_time <= root.end_time
            previous_end = span.end_time
        stamps = [event.timestamp for event in root.events]
        assert stamps == sorted(stamps) and all(root.start_time <= t <= root.end_time for t in stamps)


def test_tool_spans_follow_their_model_call(tiny_run: Path) -> None:
    spans, _ = exported(tiny_run)
    events = pd.read_parquet(tiny_run / "events.parquet")
    tool_calls = events[(events.event == "call") & (events.tool != "")]
    by_id = {(s.context.trace_id, attrs(s)["ctxbench.call_index"], s.name.split()[0]): s
             for s in spans if s.parent is not None and s.context is not None}
    tools = [s for s in spans if s.name.startswith("execute_tool ")]
    assert sorted(attrs(s)["gen_ai.tool.name"] for s in tools) == sorted(tool_calls.tool)
    for span in tools:
        assert span.context is not None
        chat = by_id[(span.context.trace_id, attrs(span)["ctxbench.call_index"], "chat")]
        assert span.start_time == chat.end_time
        assert attrs(span)["gen_ai.tool.call.id"] == f"call_{attrs(span)['ctxbench.call_index']}"
        failed = attrs(span)["ctxbench.status"] == "error"
        assert (span.status.status_code == StatusCode.ERROR) == failed
        assert ("error.type" in attrs(span)) == failed
    compactions = sum(1 for s in spans for e in s.events if e.name == "ctxbench.compaction")
    assert compactions == int((events.event == "compaction").sum())


def test_two_exports_give_identical_spans(tiny_run: Path) -> None:
    def fingerprint(spans: list[ReadableSpan]) -> list[Any]:
        return [(s.name, s.context.trace_id if s.context else None, s.context.span_id if s.context else None,
                 s.parent.span_id if s.parent else None, s.start_time, s.end_time, dict(s.attributes or {}),
                 [(e.name, e.timestamp, dict(e.attributes or {})) for e in s.events]) for s in spans]

    first, _ = exported(tiny_run)
    second, _ = exported(tiny_run, batch_size=7)
    assert fingerprint(first) == fingerprint(second)


def synthetic_run(directory: Path, *, with_events: bool) -> Path:
    """A run directory written by hand (no manifest: a run copied without it): one session that looped,
    two calls (the second a summary), a tool that answered an error, a compaction that made the summary."""
    directory.mkdir()
    pd.DataFrame([{"scenario": "mix", "session_index": 0, "strategy": "summarize", "outcome": "stuck",
                   "latency_s": 10.0, "loop_rule": "repeat", "seed": 2**64 - 1, "tool_calls": 1}]
                 ).to_parquet(directory / "sessions.parquet")
    pd.DataFrame([{"scenario": "mix", "session_index": 0, "strategy": "summarize", "agent": "triage", "call_index": i,
                   "call_kind": kind, "input_tokens": 100 * (i + 1), "cached_input_tokens": 10, "output_tokens": 7,
                   "model_s": 1.0, "clock_s": end} for i, (kind, end) in enumerate([("agent", 1.0), ("summary", 6.0)])]
                 ).to_parquet(directory / "calls.parquet")
    if with_events:
        base = {"scenario": "mix", "session_index": 0, "strategy": "summarize", "agent": "triage", "turn": 1}
        pd.DataFrame([base | {"seq": 0, "event": "call", "call_index": 0, "tool": "kubectl", "status": "error",
                              "error_class": "engineering"},
                      base | {"seq": 1, "event": "compaction", "call_index": 1, "tool": "", "status": "",
                              "hook": "before_call", "how": "summarized"},
                      base | {"seq": 2, "event": "lost", "call_index": -1, "tool": "", "status": "",
                              "fact": "pod", "cause": "compaction"}]).to_parquet(directory / "events.parquet")
    return directory


def test_a_run_without_events_has_no_tool_spans_and_says_so(tmp_path: Path) -> None:
    spans, summary = exported(synthetic_run(tmp_path / "run", with_events=False))
    assert [s.name for s in spans] == ["invoke_agent triage", "chat mock", "chat mock"]
    assert not summary.has_events and "no events.parquet" in summary.line()
    root = spans[0]
    assert [(e.name, e.timestamp) for e in root.events] == [("ctxbench.loop_detected", 10 * 10**9)]
    assert attrs(root)["ctxbench.seed"] == str(2**64 - 1)  # beyond OTLP's signed 64-bit ints: as text
    assert attrs(root)["gen_ai.conversation.id"] == "run/mix/0/summarize"  # run id: the directory's name


def test_events_become_tool_spans_and_root_span_events(tmp_path: Path) -> None:
    spans, summary = exported(synthetic_run(tmp_path / "run", with_events=True))
    assert summary.has_events and summary.spans_by_kind["execute_tool"] == 1
    tool = next(s for s in spans if s.name == "execute_tool kubectl")
    # From the call's end to the next call's start (the summary call): the simulated tool time.
    assert (tool.start_time, tool.end_time) == (1 * 10**9, 5 * 10**9)
    assert tool.status.status_code == StatusCode.ERROR and attrs(tool)["error.type"] == "engineering"
    root = spans[0]
    assert [(e.name, e.timestamp) for e in root.events] == [
        ("ctxbench.compaction", 6 * 10**9), ("ctxbench.fact_lost", 6 * 10**9), ("ctxbench.loop_detected", 10 * 10**9)]
    assert dict(root.events[0].attributes or {})["ctxbench.summary_call_index"] == 1
    assert root.status.status_code == StatusCode.ERROR and attrs(root)["error.type"] == "stuck"


def test_the_file_exporter_writes_otlp_json_lines(tiny_run: Path, tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    summary = export_run(tiny_run, check_exporter_config("file", path=path), batch_size=100)
    lines = path.read_text().splitlines()
    assert summary.ok and len(lines) == summary.batches == -(-summary.spans // 100)
    spans = [span for line in lines for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"]
             for span in ss["spans"]]
    assert len(spans) == summary.spans
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in spans)
    assert all(int(s["traceId"], 16) and int(s["spanId"], 16) for s in spans)  # hex, as OTLP/JSON writes ids
    assert {s["kind"] for s in spans} == {1, 3}  # INTERNAL and CLIENT, as integers
    assert not list(tmp_path.glob(".*.tmp"))


class Receiver:
    """An OTLP/HTTP receiver on localhost: decodes each ExportTraceServiceRequest and counts its spans, or
    answers every request with ``status``. With ``reject`` (a message), it answers 200 with an OTLP partial
    success rejecting every span of the request, as protobuf or (``as_json``) as OTLP/JSON."""

    def __init__(self, status: int = 200, *, reject: str | None = None, as_json: bool = False) -> None:
        self.status = status
        self.spans = 0
        self.requests: list[tuple[str, dict[str, str]]] = []
        receiver = self

        def answer(spans: int) -> tuple[str, bytes]:
            if reject is None:
                return "application/x-protobuf", ExportTraceServiceResponse().SerializeToString()
            if as_json:
                body = {"partialSuccess": {"rejectedSpans": str(spans), "errorMessage": reject}}
                return "application/json", json.dumps(body).encode()
            reply = ExportTraceServiceResponse()
            reply.partial_success.rejected_spans = spans
            reply.partial_success.error_message = reject
            return "application/x-protobuf", reply.SerializeToString()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                spans = 0
                if receiver.status == 200:
                    request = ExportTraceServiceRequest.FromString(body)
                    spans = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
                    receiver.spans += 0 if reject is not None else spans
                content_type, reply = answer(spans)
                self.send_response(receiver.status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


def test_every_span_reaches_a_real_otlp_http_receiver(tiny_run: Path, receiver: Receiver,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=ops%20bench")
    config = check_exporter_config("otlp")
    assert config.endpoint == f"{receiver.url}/v1/traces"
    summary = export_run(tiny_run, config, batch_size=150)
    assert summary.ok and receiver.spans == summary.spans == summary.spans_sent
    assert len(receiver.requests) == summary.batches == -(-summary.spans // 150)
    path, headers = receiver.requests[0]
    assert path == "/v1/traces" and headers["x-team"] == "ops bench"
    assert headers["content-type"] == "application/x-protobuf"


def test_a_receiver_that_answers_500_is_counted_not_silent(tiny_run: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    with Receiver(status=500) as failing:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{failing.url}/custom/path")
        # Shorter than the exporter's first back-off (about a second): each batch is tried once.
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "0.3")
        summary = export_run(tiny_run, check_exporter_config("otlp"), batch_size=100)
    assert not summary.ok and summary.spans_sent == 0 and summary.spans_failed == summary.spans
    assert summary.batches_failed == summary.batches == -(-summary.spans // 100) >= 4
    # After three failed batches in a row the receiver is taken as down: the later ones are not sent.
    assert [path for path, _ in failing.requests] == ["/custom/path"] * 3
    assert "FAILED" in summary.line() and "500" in summary.last_error
    assert "Failed to export" not in capsys.readouterr().err  # reported once, by the summary


@pytest.mark.parametrize(("variables", "named"), [
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318'"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://host:99999"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
    ({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' is not supported"),
    ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"),
    ({"OTEL_EXPORTER_OTLP_HEADERS": "api-key"}, "OTEL_EXPORTER_OTLP_HEADERS: 'api-key' is not key=value"),
    # Names and values no HTTP request can carry: refused before anything is sent, not lost with every batch.
    ({"OTEL_EXPORTER_OTLP_HEADERS": "bad key=v"}, "OTEL_EXPORTER_OTLP_HEADERS: 'bad key' is not an HTTP header name"),
    ({"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-a=1,a%20b=v"}, "OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'a b' is not an HTTP"),
    ({"OTEL_EXPORTER_OTLP_HEADERS": "k:x=v"}, "'k:x' is not an HTTP header name"),
    ({"OTEL_EXPORTER_OTLP_HEADERS": "key=line%0Abreak"}, "OTEL_EXPORTER_OTLP_HEADERS: the value of 'key'"),
    ({"OTEL_EXPORTER_OTLP_HEADERS": "key=%E2%82%AC"}, "OTEL_EXPORTER_OTLP_HEADERS: the value of 'key'"),
    ({"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "soon"}, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"),
    ({"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, "OTEL_EXPORTER_OTLP_COMPRESSION"),
])
def test_a_bad_otlp_variable_is_one_line_naming_it(variables: dict[str, str], named: str) -> None:
    with pytest.raises(OtelConfigError) as caught:
        check_exporter_config("otlp", environ=variables)
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_the_otlp_defaults_follow_the_specification() -> None:
    assert check_exporter_config("otlp", environ={}).endpoint == "http://localhost:4318/v1/traces"
    config = check_exporter_config("otlp", environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318/",
                                                    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
                                                    "OTEL_EXPORTER_OTLP_TIMEOUT": "2.5",
                                                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": " "})
    assert (config.endpoint, config.timeout_s) == ("https://collector:4318/v1/traces", 2.5)


def test_a_file_in_a_missing_directory_is_refused_before_any_span(tmp_path: Path) -> None:
    with pytest.raises(OtelConfigError, match="does not exist"):
        check_exporter_config("file", path=tmp_path / "nowhere" / "traces.jsonl")
    with pytest.raises(OtelConfigError, match="is a directory"):
        check_exporter_config("file", path=tmp_path)
    with pytest.raises(OtelConfigError, match="unknown trace exporter 'jaeger'"):
        check_exporter_config("jaeger")
    assert check_exporter_config("file", path=tmp_path / "later" / "t.jsonl", parent_made_later=True).kind == "file"
    assert not (tmp_path / "nowhere").exists() and not (tmp_path / "later").exists()


def test_a_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with pytest.raises(OtelConfigError, match=r"pip install 'ctxbench\[otel\]'"):
        check_exporter_config("otlp", environ={})
    assert check_exporter_config("file", path=tmp_path / "t.jsonl") == ExporterConfig("file", path=tmp_path / "t.jsonl")


def test_what_is_not_a_finished_simulated_run_is_refused(tiny_run: Path, tmp_path: Path) -> None:
    with pytest.raises(OtelInputError, match="no such directory"):
        export_run(tmp_path / "missing", InMemorySpanExporter())
    with pytest.raises(OtelInputError, match="not a finished run directory"):
        export_run(tmp_path, InMemorySpanExporter())
    changed = tmp_path / "changed"
    shutil.copytree(tiny_run, changed)
    (changed / "calls.parquet").write_bytes(b"not a table")
    memory = InMemorySpanExporter()
    with pytest.raises(OtelInputError, match=r"calls\.parquet: changed after the run"):
        export_run(changed, memory)
    manifest = json.loads((changed / "manifest.json").read_text()) | {"mode": "accounting"}
    (changed / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(OtelInputError, match="accounting run"):
        export_run(changed, memory)
    assert memory.get_finished_spans() == ()


# What a receiver rejects, and a receiver that is not there ---------------------------------------------------


@pytest.mark.parametrize("as_json", [False, True], ids=["protobuf", "json"])
def test_spans_a_receiver_rejects_in_a_200_answer_are_counted_as_failed(tiny_run: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        as_json: bool) -> None:
    with Receiver(reject="quota exceeded for tenant ops", as_json=as_json) as rejecting:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rejecting.url)
        summary = export_run(tiny_run, check_exporter_config("otlp"), batch_size=100)
    assert len(rejecting.requests) == summary.batches  # every batch was sent, and answered 200
    assert not summary.ok and summary.spans_sent == 0
    assert summary.spans_rejected == summary.spans_failed == summary.spans
    assert summary.rejected_message == "quota exceeded for tenant ops"
    line = summary.line()
    assert "FAILED" in line and f"{summary.spans} rejected by the receiver" in line
    assert "quota exceeded for tenant ops" in line


def _closed_port() -> int:
    """A localhost port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_receiver_is_checked_before_anything_is_made(receiver: Receiver) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    config = check_exporter_config("otlp", environ={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint})
    with pytest.raises(OtelConfigError) as caught:
        check_receiver(config)
    message = str(caught.value)
    assert message.startswith(f"{endpoint}/v1/traces: no OTLP receiver") and "refused" in message.lower()
    assert "\n" not in message
    check_receiver(check_exporter_config("otlp", environ={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}))
    check_receiver(ExporterConfig("file", path=Path("t.jsonl")))  # nothing to connect to
    assert receiver.requests == []  # a connection, no request: nothing is sent


def test_an_unreachable_receiver_stops_the_export_at_the_first_batch(tiny_run: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A receiver that went away after the check: one attempt (no back-off retries), the rest counted as
    not sent, without being made; the counts are those of a full export."""
    import requests

    posts: list[str] = []
    original = requests.Session.post

    def counting_post(self: requests.Session, url: Any, *args: Any, **kwargs: Any) -> requests.Response:
        posts.append(str(url))
        return original(self, url, *args, **kwargs)

    monkeypatch.setattr(requests.Session, "post", counting_post)
    config = check_exporter_config("otlp", environ={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{_closed_port()}"})
    summary = export_run(tiny_run, config, batch_size=40)
    _, whole = exported(tiny_run, batch_size=40)
    assert len(posts) == 1
    assert dict(summary.spans_by_kind) == dict(whole.spans_by_kind) and summary.span_events == whole.span_events
    assert summary.batches == whole.batches == summary.batches_failed > 1
    assert summary.spans_failed == summary.spans and summary.spans_sent == 0
    assert "connection refused" in summary.last_error.lower()
    assert f"the last {summary.batches - 1} batches were not sent" in summary.last_error


def test_counting_the_rest_gives_what_making_it_gives(tiny_run: Path) -> None:
    """After three failed batches the rest is counted, not built: the counts of every kind are the same."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Refusing(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.FAILURE

    for batch_size in (1, 7, 64):
        summary = export_run(tiny_run, Refusing(), batch_size=batch_size)
        _, whole = exported(tiny_run, batch_size=batch_size)
        assert dict(summary.spans_by_kind) == dict(whole.spans_by_kind)
        assert (summary.span_events, summary.batches) == (whole.span_events, whole.batches)
        assert summary.batches_failed == summary.batches and summary.spans_failed == summary.spans


def test_a_file_export_says_written_not_sent(tiny_run: Path, tmp_path: Path) -> None:
    summary = export_run(tiny_run, check_exporter_config("file", path=tmp_path / "t.jsonl"))
    assert summary.ok and f"{summary.spans} spans written in {summary.batches} batches" in summary.line()


# Numbers a span cannot be made of -------------------------------------------------------------------------------


def _with_value(tiny_run: Path, tmp_path: Path, table: str, column: str, value: float) -> Path:
    """A copy of the run whose ``table`` holds ``value`` in ``column`` of its first row, with the manifest's
    checksum of it updated (the state of a run that wrote it, not of a table changed afterwards)."""
    import hashlib

    copy = tmp_path / "copy"
    shutil.copytree(tiny_run, copy)
    frame = pd.read_parquet(copy / table)
    frame[column] = frame[column].astype(float)
    frame.loc[0, column] = value
    frame.to_parquet(copy / table)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["sha256"][table] = hashlib.sha256((copy / table).read_bytes()).hexdigest()
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy


@pytest.mark.parametrize(("table", "column", "value"), [
    ("sessions.parquet", "latency_s", math.nan),
    ("sessions.parquet", "latency_s", math.inf),
    ("sessions.parquet", "latency_s", -1.0),
    ("calls.parquet", "clock_s", math.nan),
    ("calls.parquet", "model_s", -math.inf),
    ("calls.parquet", "input_tokens", math.nan),
    ("events.parquet", "call_index", math.nan),
    ("sessions.parquet", "cost_usd", math.inf),  # an attribute only, but no run writes an infinity
])
def test_a_number_that_cannot_be_a_time_or_a_count_is_a_damaged_table(tiny_run: Path, tmp_path: Path, table: str,
                                                                      column: str, value: float) -> None:
    copy = _with_value(tiny_run, tmp_path, table, column, value)
    memory = InMemorySpanExporter()
    with pytest.raises(OtelInputError) as caught:
        export_run(copy, memory)
    message = str(caught.value)
    assert message.startswith(f"{copy / table}: column {column}, row 0: ") and "damaged" in message
    assert "\n" not in message and memory.get_finished_spans() == ()


def test_a_missing_value_of_an_attribute_column_leaves_the_attribute_out(tiny_run: Path, tmp_path: Path) -> None:
    copy = _with_value(tiny_run, tmp_path, "sessions.parquet", "cost_usd", math.nan)
    spans, summary = exported(copy)
    assert summary.ok
    roots = [s for s in spans if s.parent is None]
    assert sum("ctxbench.cost_usd" not in attrs(s) for s in roots) == 1
