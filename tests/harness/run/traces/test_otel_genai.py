"""The OpenTelemetry GenAI reader: OTLP/JSON spans in the newest conventions, OpenLLMetry's flattened
attributes and strands-agents' events become sessions (one per conversation or trace) with the usage of
every chat span; ctxbench's own export (usage without messages) is refused in one line; the writer round-trips;
bad files fail in one line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.core.messages import Text, ToolResult, ToolUse
from harness.run.traces import ImportedSession, TraceError, detect_format, dump_session, load_trace
from harness.run.traces.formats import Claim
from harness.run.traces.normal import RecordedUsage
from harness.run.traces.otel_genai import NAME, SNIFF_RANK, sniff
from harness.run.traces.reading import read_trace

REPO = Path(__file__).resolve().parents[4]
DATA = REPO / "tests" / "data" / "traces"
SAMPLES = DATA / "otel-genai"
INCIDENT = SAMPLES / "incident_triage.json"
OPENLLMETRY = SAMPLES / "replication_lag_openllmetry.jsonl"
STRANDS = SAMPLES / "strands_two_traces.json"
REAL = REPO / ".." / "shared" / "realtraces" / "otel-genai"
#: A config small enough for a quick run of ctxbench (two sessions of the shortest scenario).
TINY_CONFIG = ('sessions = 2\nseed = 1\nexecutor = "serial"\njobs = 1\nbatch_size = 1\n[[scenarios]]\n'
               'name = "log_triage"\nturns = 20\n[[strategies]]\nname = "unbounded"\n')


def _uses(session: ImportedSession) -> list[ToolUse]:
    return [b for m in session.messages for b in m.blocks if isinstance(b, ToolUse)]


def _results(session: ImportedSession) -> list[ToolResult]:
    return [b for m in session.messages for b in m.blocks if isinstance(b, ToolResult)]


def _counts(session: ImportedSession) -> list[tuple[int | None, int | None, int | None, int | None]]:
    return [(u.call, u.input_tokens, u.cached_tokens, u.output_tokens) for u in session.usage]


# What is read ---------------------------------------------------------------------------------------------

def test_newest_conventions_sample() -> None:
    (session,) = load_trace(INCIDENT)
    # The conversation id is on the root span only; the chat spans are out of start order in the file.
    assert (session.format, session.session_id) == (NAME, "incident-triage-0314")
    assert session.model == "ops-model-large-2025-02-01"  # the response's model, not the requested one
    assert session.system.startswith("You are an on-call SRE assistant")
    assert session.tools == ("kubectl_get_pods", "get_deploy_history", "kubectl_logs", "query_metrics")
    assert json.loads(session.tool_schemas[0]) == {"name": "kubectl_get_pods", "parameters": {"type": "object"},
                                                   "type": "function"}
    assert [m.role for m in session.messages] == ["user", "assistant"] * 5
    assert len(session.messages[1].uses) == 2
    assert [u.name for u in _uses(session)] == ["kubectl_get_pods", "get_deploy_history", "kubectl_logs",
                                                 "query_metrics", "query_metrics"]
    assert _uses(session)[0].input == {"namespace": "payments", "selector": "app=payments-api"}
    # The conventions' tool messages have no error flag: the failed execute_tool span says it.
    assert [r.status for r in _results(session)] == ["success"] * 3 + ["error", "success"]
    assert session.messages[-1].kind == "final" and "revision 42" in session.messages[-1].text
    assert _counts(session) == [(1, 1480, 0, 96), (3, 2130, 1408, 41), (5, 10950, 2048, 58), (7, 11170, 10880, 47),
                                (9, 11260, 11136, 83)]
    assert all(u.latency_s == pytest.approx(2.0) for u in session.usage)
    assert session.usage[0].timestamp == pytest.approx(1741943401.0)
    assert session.notes == ()


def test_openllmetry_sample_across_two_export_requests() -> None:
    (session,) = load_trace(OPENLLMETRY)
    assert session.session_id == "0af7651916cd43dd8448eb211c80319c"  # no conversation id: the trace's
    assert session.system == "You are a database reliability assistant."
    assert (session.model, session.tools) == ("ops-model-small", ("mysql_query",))
    assert json.loads(session.tool_schemas[0])["parameters"]["required"] == ["host", "sql"]
    assert [m.role for m in session.messages] == ["user", "assistant"] * 3
    assert _uses(session)[1].input == {"host": "orders-db-replica-1", "sql": "SHOW PROCESSLIST"}
    assert _results(session)[0].content.startswith("Replica_IO_Running: Yes")
    assert "900-second DELETE" in session.messages[-1].text
    assert _counts(session) == [(1, 412, 0, 31), (3, 520, 384, 44), (5, 640, 512, 38)]


def test_strands_sample_has_two_traces_in_old_and_new_events() -> None:
    old, new = load_trace(STRANDS)
    assert (old.session_id, new.session_id) == ("7e1d2c3b4a5968778695a4b3c2d1e0f1", "8f2e3d4c5b6a79889706b5c4d3e2f102")
    for session in (old, new):
        assert session.system == "You check TLS certificates. Use the shell tool; never change anything."
        assert (session.tools, session.tool_schemas) == (("shell",), ())
        assert session.model == "us.anthropic.claude-sonnet-4-v1:0"
    assert [r.status for r in _results(old)] == ["error", "success"]
    assert _results(old)[1].content == "notAfter=May  2 23:59:59 2025 GMT"
    assert [len(m.blocks) for m in old.messages] == [1, 2, 1, 1, 1, 1]  # the reasoning block is skipped
    assert json.loads(_results(new)[0].content) == {"issuer": "Example Internal CA",
                                                     "notAfter": "Jan 10 12:00:00 2026 GMT"}
    # strands records Bedrock's inputTokens, which leave the cache out: read and written cache tokens are added.
    assert _counts(old) == [(1, 380 + 1210, 0, 52), (3, 96 + 1210 + 140, 1210, 61), (5, 40 + 1350 + 101, 1350, 33)]
    assert _counts(new) == [(1, 412, 0, 58), (3, 130, 0, 20)]


def _span(trace: str, span: str, attributes: dict[str, Any], start: int, parent: str = "",
          events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    attrs = []
    for key, value in attributes.items():
        if isinstance(value, bool):
            attrs.append({"key": key, "value": {"boolValue": value}})
        elif isinstance(value, int):
            attrs.append({"key": key, "value": {"intValue": str(value)}})
        else:
            attrs.append({"key": key, "value": {"stringValue": value if isinstance(value, str) else json.dumps(value)}})
    out: dict[str, Any] = {"traceId": trace, "spanId": span, "name": "chat", "startTimeUnixNano": str(start),
                           "endTimeUnixNano": str(start + 1000), "attributes": attrs}
    if parent:
        out["parentSpanId"] = parent
    if events is not None:
        out["events"] = events
    return out


def _document(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": list(spans)}]}]}


def _write(tmp_path: Path, doc: Any, name: str = "trace.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    return path


USER = {"role": "user", "parts": [{"type": "text", "content": "Restart the worker."}]}
CALL = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "restart", "arguments": '{"n": 1}'}]}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": {"ok": True}}]}
DONE = {"role": "assistant", "parts": [{"type": "text", "content": "Restarted."}], "finish_reason": "stop"}


def _chat(span: str, inputs: list[Any] | None, outputs: list[Any] | None, start: int, **more: Any) -> dict[str, Any]:
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 100 + start,
                                  "gen_ai.usage.output_tokens": 7, **more}
    if inputs is not None:
        attributes["gen_ai.input.messages"] = inputs
    if outputs is not None:
        attributes["gen_ai.output.messages"] = outputs
    return _span("t" * 32, span, attributes, start)


def test_conversations_group_spans_and_a_cut_history_leaves_usage_unplaced(tmp_path: Path) -> None:
    doc = _document(
        _chat("s1", [USER], [CALL], 1, **{"gen_ai.conversation.id": "conv-a"}),
        # The agent dropped its history before this call: its input holds no assistant turn.
        _chat("s2", [USER, RESULT], [DONE], 2, **{"gen_ai.conversation.id": "conv-a"}),
        _chat("s3", [USER], [DONE], 3, **{"gen_ai.conversation.id": "conv-b"}))
    with pytest.raises(TraceError, match="orphan tool result"):
        load_trace(_write(tmp_path, doc))
    doc = _document(
        _chat("s1", [USER], [CALL], 1, **{"gen_ai.conversation.id": "conv-a"}),
        _chat("s2", [USER, CALL, RESULT], [DONE], 2, **{"gen_ai.conversation.id": "conv-a"}),
        _chat("s3", [USER], [DONE], 3, **{"gen_ai.conversation.id": "conv-b"}),
        _chat("s4", [USER], None, 4, **{"gen_ai.conversation.id": "conv-b"}))
    first, second = load_trace(_write(tmp_path, doc))
    assert (first.session_id, second.session_id) == ("conv-a", "conv-b")
    assert _counts(first) == [(1, 101, None, 7), (3, 102, None, 7)]
    assert _results(first)[0].content == '{"ok": true}' and _uses(first)[0].input == {"n": 1}
    # conv-b's last span holds the input only (its call failed): the transcript is the task; two unplaced.
    assert [m.role for m in second.messages] == ["user"] and second.usage == ()
    assert any("2 chat span(s) produced a message the transcript does not hold" in n for n in second.notes)


def test_chat_spans_without_messages_after_the_last_with_them_are_noted(tmp_path: Path) -> None:
    doc = _document(_chat("s1", [USER], [DONE], 1), _chat("s2", None, None, 2))
    (session,) = load_trace(_write(tmp_path, doc))
    assert [m.role for m in session.messages] == ["user", "assistant"]
    assert any("the last 1 chat span(s) carry no input messages" in n for n in session.notes)


def test_where_chat_spans_are_named_other_spans_with_messages_are_not_calls(tmp_path: Path) -> None:
    # An agent-loop span (no operation name) that starts last and holds a broken history: not read.
    loop = _span("t" * 32, "s9", {"event_loop.cycle_id": "c-1", "gen_ai.input.messages": [USER, RESULT]}, 9)
    doc = _document(_chat("s1", [USER], [CALL], 1), _chat("s2", [USER, CALL, RESULT], [DONE, CALL], 2), loop)
    (session,) = load_trace(_write(tmp_path, doc))
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]
    assert session.messages[-1].text == "Restarted." and _counts(session) == [(1, 101, None, 7), (3, 102, None, 7)]
    assert any("has 2 output messages (choices): the first one is read" in n for n in session.notes)


def test_structured_values_plain_text_and_numbers_as_json_numbers(tmp_path: Path) -> None:
    def kv(**fields: Any) -> dict[str, Any]:
        return {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in fields.items()]}}

    text_part = kv(type={"stringValue": "text"}, content={"stringValue": "Hi there."})
    message = kv(role={"stringValue": "assistant"}, parts={"arrayValue": {"values": [text_part]}})
    span = {"traceId": "t1", "spanId": "s1", "startTimeUnixNano": 5, "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.input.messages", "value": {"stringValue": "hello?"}},
        {"key": "gen_ai.output.messages", "value": {"arrayValue": {"values": [message]}}},
        {"key": "gen_ai.system.instructions", "value": {"stringValue": '[{"type": "text", "content": "Be kind."}]'}},
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": 19}},
        {"key": "gen_ai.usage.output_tokens", "value": {"doubleValue": 4.0}}],
        "status": {"code": "STATUS_CODE_OK"}}
    (session,) = load_trace(_write(tmp_path, _document(span)))
    assert [m.text for m in session.messages] == ["hello?", "Hi there."] and session.system == "Be kind."
    assert _counts(session) == [(1, 19, None, 4)]
    assert any("1 message attribute(s) hold plain text" in n for n in session.notes)


def test_semconv_parts_of_other_vocabularies(tmp_path: Path) -> None:
    inputs = [{"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
              {"role": "user", "parts": [{"type": "text", "content": "Look."},
                                         {"type": "blob", "modality": "image", "content": "AAAA"},
                                         {"type": "uri", "modality": "audio", "uri": "s3://x"}]},
              {"role": "assistant", "parts": [{"type": "reasoning", "content": "hm"},
                                              {"type": "tool_call", "id": "c1", "name": "ls", "arguments": None}]},
              {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",
                                          "result": [{"type": "text", "content": "a"}, {"json": {"b": 2}}]}]},
              {"role": "user", "content": '[{"type": "text", "text": "Chat-style parts."}]'}]
    outputs = [{"role": "assistant", "parts": [{"type": "server_tool_call", "id": "x"},
                                               {"type": "text", "content": "Done."}]}]
    (session,) = load_trace(_write(tmp_path, _document(_chat("s1", inputs, outputs, 1))))
    assert session.system == "Be brief."
    assert [b.text for b in session.messages[0].blocks if isinstance(b, Text)] == [
        "Look.", "[image omitted]", "[audio omitted]"]
    assert _uses(session)[0].input == {}
    assert _results(session)[0].content == 'a\n{"b": 2}'
    assert "Chat-style parts." in session.messages[2].text
    assert any("unknown types skipped (1 'server_tool_call')" in n for n in session.notes)


# ctxbench's own export ---------------------------------------------------------------------------------------

def test_ctxbench_export_is_recognised_and_refused_in_one_line(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``ctxbench export-otel`` writes chat spans with usage but no messages: there is nothing to replay."""
    pytest.importorskip("opentelemetry.sdk.trace")
    config = tmp_path / "tiny.toml"
    config.write_text(TINY_CONFIG)
    run, exported = tmp_path / "run", tmp_path / "export.otlp.jsonl"
    assert main(["run", str(config), "--out", str(run), "--quiet", "--no-report"]) == 0
    assert main(["export-otel", str(run), "--out", str(exported), "--quiet"]) == 0
    capsys.readouterr()
    assert sniff(read_trace(exported)) == Claim.document(SNIFF_RANK) and detect_format(exported) == NAME
    with pytest.raises(TraceError) as caught:
        load_trace(exported)
    text = str(caught.value)
    assert "\n" not in text and text.startswith(str(exported))
    assert "no chat span carries messages" in text and "ctxbench's own export-otel records usage" in text
    # What the export does carry: one conversation per session, chat spans with their usage.
    request = json.loads(exported.read_text().splitlines()[0])
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    chat = [s for s in spans if s["name"].startswith("chat")]
    keys = {a["key"] for a in chat[0]["attributes"]}
    assert {"gen_ai.usage.input_tokens", "gen_ai.conversation.id"} <= keys
    assert not keys & {"gen_ai.input.messages", "gen_ai.output.messages"}


# Writing ------------------------------------------------------------------------------------------------------

ROUND_TRIP = ["anthropic/incident_triage.json", "openai-chat/incident_triage.json", "atif/replication_lag.json",
              "openai-chat/cert_expiry_raw_arguments.json", "claude-code/replication_lag_compacted.jsonl",
              "otel-genai/strands_two_traces.json"]


@pytest.mark.parametrize("rel", ROUND_TRIP)
def test_round_trip_keeps_messages_statuses_usage_and_header(tmp_path: Path, rel: str) -> None:
    for session in load_trace(DATA / rel):
        path = tmp_path / "written.json"
        path.write_text(str(dump_session(session, NAME)), encoding="utf-8")
        assert detect_format(path) == NAME
        (loaded,) = load_trace(path)
        assert loaded.messages == session.messages
        assert (loaded.session_id, loaded.system, loaded.model, loaded.tools, loaded.tool_schemas) == (
            session.session_id, session.system, session.model, session.tools, session.tool_schemas)
        assert _counts(loaded) == _counts(session)


def test_writing_is_deterministic_and_keeps_usage_of_every_call(tmp_path: Path) -> None:
    (session,) = load_trace(INCIDENT)
    assert dump_session(session, NAME) == dump_session(session, NAME)
    changed = dataclasses.replace(session, usage=(RecordedUsage(call=3, input_tokens=5, cached_tokens=2),))
    path = _write(tmp_path, str(dump_session(changed, NAME)))
    (loaded,) = load_trace(path)
    assert _counts(loaded) == [(3, 5, 2, None)]


# Sniffing -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", sorted(SAMPLES.iterdir()), ids=lambda p: p.name)
def test_samples_are_claimed(path: Path) -> None:
    assert sniff(read_trace(path)) == Claim.document(SNIFF_RANK)
    assert detect_format(path) == NAME


def _other_samples() -> list[Path]:
    return sorted(p for p in DATA.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")
                  and SAMPLES not in p.parents)


@pytest.mark.parametrize("path", _other_samples(), ids=lambda p: str(p.relative_to(DATA)))
def test_other_formats_samples_are_not_claimed(path: Path) -> None:
    assert sniff(read_trace(path)) is None


@pytest.mark.parametrize("text", ["[1]", '"x"', "3", '{"resourceLogs": []}', '{"spans": []}'])
def test_sniff_refuses_other_shapes_without_raising(tmp_path: Path, text: str) -> None:
    assert sniff(read_trace(_write(tmp_path, text))) is None


# Bad files ------------------------------------------------------------------------------------------------

def _with(attributes: dict[str, Any]) -> dict[str, Any]:
    return _document(_chat("s1", None, [DONE], 1, **attributes))


BAD: dict[str, tuple[Any, str]] = {
    "not-a-list": ({"resourceSpans": {}}, "$.resourceSpans: expected an array, got an object"),
    "no-trace-id": (_document({"spanId": "s"}), "$.resourceSpans[0].scopeSpans[0].spans[0].traceId: missing"),
    "int-not-a-number": (
        {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "t", "spanId": "s", "attributes": [
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "many"}}]}]}]}]},
        "spans[0].attributes[0].value.intValue: expected a whole number (a decimal string), got 'many'"),
    "messages-not-json": (_with({"gen_ai.input.messages": "[{"}),
                          "gen_ai.input.messages is not JSON (Expecting property name enclosed in double quotes)"),
    "call-without-id": (_document(_chat("s1", [USER], [{"role": "assistant", "parts": [
        {"type": "tool_call", "name": "ls"}]}], 1)), "a tool call without an id"),
    "unknown-role": (_document(_chat("s1", [{"role": "robot", "parts": []}], [DONE], 1)), "unknown role 'robot'"),
    "token-count-string": (_document(_span("t", "s", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": [USER],
                                                      "gen_ai.usage.output_tokens": "7"}, 1)),
                           "gen_ai.usage.output_tokens: expected a token count"),
    "no-chat-spans": (_document(_span("t", "s", {"http.request.method": "GET"}, 1)), "no GenAI chat spans"),
    "reused-id-unanswered": (_document(_chat("s1", [USER, CALL, CALL], [DONE], 1)),
                             "tool id 'c1' is used again while its call"),
    "value-two-kinds": ({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "t", "spanId": "s", "attributes": [
        {"key": "k", "value": {"intValue": "1", "stringValue": "1"}}]}]}]}]}, "an OTLP value holds one of"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_file_is_one_line_naming_the_file_and_place(tmp_path: Path, name: str) -> None:
    doc, expected = BAD[name]
    path = _write(tmp_path, doc, f"{name}.json")
    with pytest.raises(TraceError) as caught:
        load_trace(path, NAME)
    text = str(caught.value)
    assert "\n" not in text and text.startswith(str(path)) and expected in text


def test_a_truncated_file_names_its_line(tmp_path: Path) -> None:
    text = OPENLLMETRY.read_text()
    path = _write(tmp_path, text[: len(text) // 2], "cut.jsonl")
    with pytest.raises(TraceError, match=r"cut.jsonl: line 2: invalid JSON"):
        load_trace(path)


# End to end and real files ----------------------------------------------------------------------------------

def test_replay_of_the_samples_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", str(SAMPLES), "--out", str(tmp_path / "out"), "--quiet", "--no-report",
                 "--strategies", "unbounded,sliding_window"])
    assert code == 0, capsys.readouterr().err


def test_real_otel_files_load() -> None:
    if not REAL.is_dir():
        pytest.skip(f"no real OTLP/JSON GenAI traces at {REAL}")
    files = sorted(p for p in REAL.rglob("*") if p.suffix in (".json", ".jsonl"))
    if not files:
        pytest.skip(f"no *.json or *.jsonl under {REAL}")
    for path in files:
        assert load_trace(path, NAME)
