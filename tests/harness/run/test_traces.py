"""Trace import: every sample trace of tests/data/traces loads into the normal form, every malformed one fails
with one line naming the file and a line or JSON path, and the writers round-trip."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.messages import Text, ToolResult, ToolUse
from harness.run.traces import (
    TRACE_FORMATS,
    ImportedSession,
    TraceError,
    detect_format,
    dump_session,
    load_trace,
    load_traces,
)
from harness.run.traces.normal import FRAGMENT_TASK, TranscriptBuilder

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"
MALFORMED = DATA.parent / "malformed_traces"
LARGE_OUTPUT_BYTES = 8 * 1024

#: Every good sample: (format, path relative to DATA, session ids, messages per session).
GOOD = [
    ("openai-chat", "openai-chat/incident_triage.json", ["incident_triage"], [10]),
    ("openai-chat", "openai-chat/replication_lag.jsonl", ["replication_lag"], [6]),
    ("openai-chat", "openai-chat/cert_expiry_raw_arguments.json", ["cert_expiry_raw_arguments"], [4]),
    ("anthropic", "anthropic/incident_triage.json", ["incident_triage"], [10]),
    ("anthropic", "anthropic/two_sessions.jsonl", ["replication-lag-0402", "cert-expiry-0415"], [6, 4]),
    ("openai-responses", "openai-responses/incident_triage.json", ["resp_incident0314"], [10]),
    ("openai-responses", "openai-responses/replication_lag.json", ["replication_lag"], [6]),
    ("atif", "atif/incident_triage.json", ["incident-triage-0314"], [10]),
    ("atif", "atif/replication_lag.json", ["replication-lag-0402"], [6]),
    ("strands", "strands/session_incident-triage-0314", ["incident-triage-0314"], [10]),
    ("strands", "strands/session_replication-lag-0402", ["replication-lag-0402"], [6]),
    ("openhands", "openhands/incident-triage-0314", ["incident-triage-0314-conv"], [10]),
    ("openhands", "openhands/replication-lag-0402", ["replication-lag-0402-conv"], [6]),
    ("openhands-events", "openhands-events/incident-triage-0314.jsonl", ["incident-triage-0314"], [10]),
    ("claude-code", "claude-code/incident_triage.jsonl", ["5b0e7c1a-3f42-4d8e-9a61-0c2d7e4f9b13"], [10]),
    ("claude-code", "claude-code/replication_lag_compacted.jsonl", ["9c4a2e61-7d0b-4f3a-8e25-b61f0d3c7a48"], [14]),
    ("otel-genai", "otel-genai/incident_triage.json", ["incident-triage-0314"], [10]),
    ("otel-genai", "otel-genai/replication_lag_openllmetry.jsonl", ["0af7651916cd43dd8448eb211c80319c"], [6]),
    ("otel-genai", "otel-genai/strands_two_traces.json",
     ["7e1d2c3b4a5968778695a4b3c2d1e0f1", "8f2e3d4c5b6a79889706b5c4d3e2f102"], [6, 4]),
]
#: Formats whose traces can say a tool result failed (OpenAI's have no error flag).
HAS_ERROR_FLAG = {"anthropic", "atif", "strands", "openhands", "openhands-events", "claude-code", "otel-genai"}

#: Every malformed sample and a text its one error line must contain.
MALFORMED_CASES = {
    "anthropic_tool_input_not_object.json": "$.messages[1].content[0].input: expected an object",
    "anthropic_unknown_block_type.json": "unknown content block type 'hologram'",
    "array_of_numbers.json": "unknown trace format (an array of numbers)",
    "atif_bad_step_source.json": "$.steps[1].source: unknown step source 'robot'",
    "atif_missing_steps.json": "$.steps: missing",
    "atif_wrong_schema_version.json": "unsupported schema_version 'ATIF-v9.0'",
    "binary_junk.json": "line 1: a binary file",
    "duplicate_tool_ids.json": "tool id 'toolu_1' is used again while its call at $.messages[1].content[0] is not "
                               "answered yet",
    "duplicate_tool_result.json": "$.messages[3]: duplicate tool result for id 'call_1'",
    "empty_file.json": "line 1: empty file",
    "empty_tool_id.json": "has an empty id",
    "invalid_jsonl_line3.jsonl": "line 3: invalid JSON",
    "jsonl_number_on_line2.jsonl": "line 2 $: expected a message object, got a number",
    "nested_too_deep.json": "nested deeper than",
    "nested_too_deep_but_parseable.json": "nested deeper than",
    "no_messages.json": "no conversation messages",
    "not_utf8.json": "not UTF-8 text (byte 0xe9",
    "number_where_message_expected.json": "$[1]: expected a message object, got a number",
    "openhands_bad_event_json": "event-00001-00000001-0000-4000-8000-000000000001.json: line 2: invalid JSON",
    "openhands_event_gap": "event 1 is missing",
    "openhands_event_without_kind": "$.kind: missing",
    "openhands_orphan_observation": "orphan tool result: no earlier tool call has id 'call_x'",
    "orphan_tool_result_anthropic.json": "$.messages[1].content[0]: orphan tool result",
    "orphan_tool_result_chat.json": "$.messages[3]: orphan tool result",
    "responses_call_without_call_id.json": "$.input[1].call_id: missing",
    "responses_unknown_item_type.json": "unknown item type 'teleport_call'",
    "session_strands_bad_message_file": "message_1.json: line 2: invalid JSON",
    "session_strands_bad_status": "toolResult.status: unknown status",
    "session_strands_gap": "message_2.json is missing",
    "session_strands_message_id_mismatch": "$.message_id: 7 does not match the file name",
    "tool_call_never_answered.json": "$.messages[1].tool_calls[0]: tool call 'call_1' (kubectl_logs) is never answered",
    "tool_calls_not_array.json": "$.messages[1].tool_calls: expected an array",
    "tool_result_not_in_next_message.json": "is answered only later",
    "tool_role_without_tool_call_id.json": "$.messages[2].tool_call_id: a 'tool' message needs tool_call_id",
    "tool_use_in_user_message.json": "tool_use block in a user message",
    "top_level_number.json": "unknown trace format",
    "top_level_string.json": "unknown trace format",
    "truncated_json.json": "invalid JSON (Unterminated string",
    "unknown_content_part_type.json": "unknown content part type 'video_url'",
    "unknown_format_dir": "unknown trace format",
    "unknown_format_object.json": "unknown trace format (a JSON object with keys 'trace_version', 'events')",
    "unknown_role.json": "$.messages[1].role: unknown role 'robot'",
    "utf16_with_bom.json": "UTF-16 byte-order mark",
    "whitespace_only.json": "line 1: empty file",
}


def _results(session: ImportedSession) -> list[ToolResult]:
    return [b for m in session.messages for b in m.blocks if isinstance(b, ToolResult)]


def _uses(session: ImportedSession) -> list[ToolUse]:
    return [b for m in session.messages for b in m.blocks if isinstance(b, ToolUse)]


@pytest.mark.parametrize(("fmt", "rel", "ids", "counts"), GOOD, ids=[g[1] for g in GOOD])
def test_each_sample_loads_in_normal_form(fmt: str, rel: str, ids: list[str], counts: list[int]) -> None:
    path = DATA / rel
    assert detect_format(path) == fmt
    sessions = load_trace(path)
    assert [s.session_id for s in sessions] == ids
    assert [len(s.messages) for s in sessions] == counts
    for session in sessions:
        assert session.format == fmt and session.source == str(path)
        messages = session.messages
        assert messages[0].role == "user" and messages[0].kind == "task"
        assert all(a.role != b.role for a, b in pairwise(messages))
        for i, message in enumerate(messages[:-1]):
            assert message.uses <= messages[i + 1].results
        ids_seen = [u.id for u in _uses(session)]
        assert len(ids_seen) == len(set(ids_seen))


#: The formats whose samples hold the incident session (the readers of what agents publish have their own
#: samples and tests: tests/harness/run/traces/).
INCIDENT_FORMATS = sorted({g[0] for g in GOOD if "incident" in g[1]})


@pytest.mark.parametrize("fmt", INCIDENT_FORMATS)
def test_incident_session_has_parallel_calls_an_error_and_a_large_output(fmt: str) -> None:
    """The incident session of every format: two parallel calls, a large log output, one error (where the
    format can say so), and a final answer."""
    (path,) = [DATA / g[1] for g in GOOD if g[0] == fmt and "incident" in g[1]]
    (session,) = load_trace(path)
    assert len(session.messages[1].uses) == 2
    assert [u.name for u in _uses(session)] == [
        "kubectl_get_pods", "get_deploy_history", "kubectl_logs", "query_metrics", "query_metrics"]
    results = _results(session)
    assert max(len(r.content.encode()) for r in results) >= LARGE_OUTPUT_BYTES
    statuses = [r.status for r in results]
    assert statuses.count("error") == (1 if fmt in HAS_ERROR_FLAG else 0)
    if fmt in HAS_ERROR_FLAG:
        assert statuses.index("error") == 3
        assert "prometheus query exceeded 30s" in results[3].content
    assert session.messages[-1].kind == "final" and "revision 42" in session.messages[-1].text


def test_details_of_particular_formats() -> None:
    (raw,) = load_trace(DATA / "openai-chat/cert_expiry_raw_arguments.json")
    last = raw.messages[-1]
    assert last.role == "assistant" and last.has_use  # the trace ends mid-call
    assert "_raw_arguments" in _uses(raw)[-1].input
    (strands_incident,) = load_trace(DATA / "strands/session_incident-triage-0314")
    deploys = _results(strands_incident)[1].content
    assert json.loads(deploys)[0]["revision"] == 42 and deploys == json.dumps(json.loads(deploys), sort_keys=True)
    (chat,) = load_trace(DATA / "openai-chat/incident_triage.json")
    assert chat.model == "ops-model-large" and chat.tools[0] == "kubectl_get_pods"
    assert chat.system.startswith("You are an on-call SRE assistant")
    (atif_session,) = load_trace(DATA / "atif/replication_lag.json")
    assert atif_session.tools == ("mysql_query",) and atif_session.model == "ops-model-small"


def test_load_traces_walks_directories_in_order() -> None:
    sessions = load_traces([DATA / "anthropic", DATA / "strands", DATA / "openai-chat/incident_triage.json"])
    assert [s.session_id for s in sessions] == [
        "incident_triage", "replication-lag-0402", "cert-expiry-0415", "incident-triage-0314",
        "replication-lag-0402", "incident_triage"]


@pytest.mark.parametrize("name", sorted(MALFORMED_CASES))
def test_malformed_trace_is_one_line_naming_file_and_place(name: str) -> None:
    path = MALFORMED / name
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith(str(path))
    assert MALFORMED_CASES[name] in line
    assert re.search(r": (line \d+|\$\S*|directory)[ :]", line)


def test_every_malformed_file_is_in_the_table() -> None:
    assert sorted(p.name for p in MALFORMED.iterdir()) == sorted(MALFORMED_CASES)
    assert len(MALFORMED_CASES) >= 32


@pytest.mark.parametrize(("fmt", "rel"), [(g[0], g[1]) for g in GOOD], ids=[g[1] for g in GOOD])
def test_a_forced_wrong_format_is_a_trace_error_not_a_crash(fmt: str, rel: str) -> None:
    for other in TRACE_FORMATS:
        if other == fmt:
            continue
        try:
            load_trace(DATA / rel, other)
        except TraceError as e:
            assert "\n" not in str(e) and str(e).startswith(str(DATA / rel))
    with pytest.raises(TraceError, match="unknown trace format 'yaml'"):
        load_trace(DATA / rel, "yaml")


def test_wrong_format_examples() -> None:
    with pytest.raises(TraceError, match=r"\$.schema_version: missing"):
        load_trace(DATA / "anthropic/incident_triage.json", "atif")
    with pytest.raises(TraceError, match="is a session directory, not a file"):
        load_trace(DATA / "openai-chat/incident_triage.json", "strands")
    with pytest.raises(TraceError, match="is a file, not a directory"):
        load_trace(DATA / "strands/session_incident-triage-0314", "anthropic")
    with pytest.raises(TraceError, match=r"\$.messages\[0\].role: unknown role 'system'"):
        load_trace(DATA / "openai-chat/incident_triage.json", "anthropic")


def _fingerprint(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_loading_writes_nothing(tmp_path: Path) -> None:
    copy = tmp_path / "traces"
    shutil.copytree(DATA, copy)
    before = _fingerprint(copy)
    sessions = load_traces([copy])
    assert len(sessions) == 31  # every sample session of every format (tests/data/traces)
    assert _fingerprint(copy) == before


# Round trips ----------------------------------------------------------------------------------------------

_TEXT = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=30)
_ARGS = st.dictionaries(st.sampled_from(["pod", "namespace", "tail", "query"]),
                        st.one_of(_TEXT, st.integers(-5, 500), st.booleans()), max_size=3)


@st.composite
def sessions(draw: st.DrawFn) -> ImportedSession:
    """Sessions in normal form, as the trace formats write them: a task, turns of an assistant's texts then
    its calls answered by results (and maybe user text), then a final answer or an unanswered call."""
    builder = TranscriptBuilder("generated")
    builder.system(draw(st.sampled_from(["", "You are an SRE assistant."])))
    builder.text("user", draw(_TEXT), "generated", "$")
    n = 0
    for _ in range(draw(st.integers(0, 3))):
        for text in draw(st.lists(_TEXT, max_size=2)):
            builder.text("assistant", text, "generated", "$")
        ids = [f"call_{n + k}" for k in range(draw(st.integers(1, 3)))]
        n += len(ids)
        for call_id in ids:
            arguments = draw(st.one_of(_ARGS, st.builds(lambda t: {"_raw_arguments": "{" + t + ",,"}, _TEXT)))
            builder.tool_use(call_id, draw(st.sampled_from(["kubectl_logs", "query_metrics"])), arguments,
                             "generated", "$")
        for call_id in ids:
            builder.tool_result(call_id, draw(st.sampled_from(["success", "error"])), draw(st.text(max_size=40)),
                                "generated", "$")
        for text in draw(st.lists(_TEXT, max_size=1)):
            builder.text("user", text, "generated", "$")
    if draw(st.booleans()):
        builder.text("assistant", draw(_TEXT), "generated", "$")
    else:
        builder.tool_use(f"call_{n}", "kubectl_logs", {}, "generated", "$")
    return ImportedSession(source="generated", session_id="s-1", format="openai-chat",
                           system=builder.system_prompt, messages=builder.build(),
                           model=draw(st.sampled_from([None, "ops-model"])), tools=("kubectl_logs",))


def _statuses_as_success(session: ImportedSession) -> list[tuple[object, ...]]:
    return [tuple(ToolResult(b.tool_use_id, "success", b.content) if isinstance(b, ToolResult) else b
                  for b in m.blocks) for m in session.messages]


def _reload(session: ImportedSession, fmt: str, name: str) -> ImportedSession:
    written = dump_session(session, fmt)
    with tempfile.TemporaryDirectory() as folder:
        if isinstance(written, str):
            path = Path(folder) / name
            path.write_text(written, encoding="utf-8")
        else:
            for rel, text in written.items():
                (Path(folder) / rel).parent.mkdir(parents=True, exist_ok=True)
                (Path(folder) / rel).write_text(text, encoding="utf-8")
            path = Path(folder) / next(iter(written)).split("/")[0]
        # Plain text conversations read the same in every chat format; anything more says its format.
        if any(m.has_use for m in session.messages):
            assert detect_format(path) == fmt
        (loaded,) = load_trace(path, fmt)
    return loaded


@settings(max_examples=40)
@given(sessions())
def test_anthropic_round_trip_keeps_every_message(session: ImportedSession) -> None:
    loaded = _reload(session, "anthropic", "trace.json")
    assert loaded.messages == session.messages
    assert (loaded.system, loaded.model, loaded.tools) == (session.system, session.model, session.tools)


@settings(max_examples=40)
@given(sessions())
def test_openai_chat_round_trip_keeps_messages_but_error_statuses(session: ImportedSession) -> None:
    """OpenAI chat has no error flag: results read back as success; everything else is kept."""
    loaded = _reload(session, "openai-chat", "trace.json")
    assert _statuses_as_success(loaded) == _statuses_as_success(session)
    assert [m.kind for m in loaded.messages if not m.results] == [m.kind for m in session.messages if not m.results]
    assert (loaded.system, loaded.model, loaded.tools) == (session.system, session.model, session.tools)


@settings(max_examples=15)
@given(sessions())
def test_strands_and_responses_round_trips(session: ImportedSession) -> None:
    strands = _reload(session, "strands", "unused")
    assert strands.messages == session.messages
    # strands keeps neither itself: they go into the agent's state, where the reader takes them from.
    assert (strands.system, strands.model) == (session.system, session.model)
    responses = _reload(session, "openai-responses", "trace.json")
    assert _statuses_as_success(responses) == _statuses_as_success(session)


def test_dump_of_a_format_without_writer_is_refused() -> None:
    (session,) = load_trace(DATA / "openai-chat/replication_lag.jsonl")
    with pytest.raises(ValueError, match="no writer"):
        dump_session(session, "openhands")
    assert isinstance(dump_session(session, "atif"), str)
    assert all(isinstance(b, Text | ToolUse | ToolResult) for m in session.messages for b in m.blocks)


# Hostile file systems and JSON: links, pipes, huge integers, lone surrogates -------------------------------------

def _trace_in(folder: Path, name: str = "incident_triage.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    shutil.copyfile(DATA / "anthropic/incident_triage.json", path)
    return path


def test_a_walk_reaches_each_real_folder_and_file_once_whatever_the_links(tmp_path: Path) -> None:
    root = tmp_path / "d"
    _trace_in(root / "a")
    (root / "b").mkdir()
    (root / "a" / "to-b").symlink_to("../b")
    (root / "b" / "to-a").symlink_to("../a")  # two loops through each other
    (root / "a" / "up").symlink_to("..")
    (root / "again").symlink_to(".")
    (root / "b" / "same.json").symlink_to("../a/incident_triage.json")
    shutil.copytree(DATA / "openhands/incident-triage-0314", root / "conversation")
    (root / "conversation-link").symlink_to("conversation")
    sessions = load_traces([root, root / "a", root / "b" / "same.json", root / "a" / ".." / "conversation"])
    assert sorted(s.session_id for s in sessions) == ["incident-triage-0314-conv", "incident_triage"]


def test_a_walk_has_no_depth_limit(tmp_path: Path) -> None:
    deep = tmp_path / "d" / Path(*["deeper"] * 200)
    _trace_in(deep)
    assert [s.session_id for s in load_traces([tmp_path / "d"])] == ["incident_triage"]


def test_a_link_that_leads_nowhere_is_one_line_naming_it(tmp_path: Path) -> None:
    _trace_in(tmp_path / "d")
    (tmp_path / "d" / "loop.json").symlink_to("loop.json")
    with pytest.raises(TraceError, match=r"loop\.json: line 1: cannot be read \(Too many levels"):
        load_traces([tmp_path / "d"])


def test_only_regular_files_are_read_a_pipe_is_refused_at_once(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)
    with pytest.raises(TraceError, match=r"pipe\.json: line 1: cannot be read \(a named pipe, not a regular file\)"):
        load_traces([pipe])
    conversation = tmp_path / "conversation"
    shutil.copytree(DATA / "openhands/incident-triage-0314", conversation)
    event = next((conversation / "events").glob("event-00003-*"))
    event.unlink()
    os.mkfifo(event)
    with pytest.raises(TraceError, match=r"event-00003-.*a named pipe"):
        load_traces([conversation])
    session = tmp_path / "session_x"
    shutil.copytree(DATA / "strands/session_incident-triage-0314", session)
    (session / "session.json").unlink()
    os.mkfifo(session / "session.json")  # a file read for its id only: refused all the same
    with pytest.raises(TraceError, match=r"session\.json: line 1: .*named pipe"):
        load_traces([session])


@pytest.mark.parametrize(("text", "suffix", "where"), [
    ('{"messages": [{"role": "user", "content": "go", "n": %s}]}', ".json", r"\$\.messages\[0\]\.n"),
    ('{"messages": [{"role": "user", "content": "go"}], "x": [1, {"y": -%s}]}', ".json", r"\$\.x\[1\]\.y"),
    ('{"role": "user", "content": "go"}\n{"role": "assistant", "content": "ok", "n": %s}\n', ".jsonl",
     r"line 2 \$\.n"),
])
def test_an_integer_too_long_to_convert_is_one_line_naming_its_json_path(tmp_path: Path, text: str, suffix: str,
                                                                       where: str) -> None:
    path = tmp_path / f"big{suffix}"
    path.write_text(text % ("9" * 5000))
    with pytest.raises(TraceError, match=rf"big{suffix}: {where}: an integer of 5,000 digits"):
        load_traces([path])


def test_lone_surrogates_are_replaced_and_counted_once_per_file(tmp_path: Path) -> None:
    original = (DATA / "anthropic/incident_triage.json").read_text()
    cut = original.replace('Find the cause."', 'Find the cause \\ud83d."', 1).replace(
        "READY   STATUS", "READY \\udc00 STATUS").replace("{", '{"id": "x\\udbff", "k\\ude00": 1,', 1)
    path = tmp_path / "cut.json"
    path.write_text(cut)
    notes: list[str] = []
    (session,) = load_traces([path], notes=notes)
    assert notes == [f"{path}: 4 lone UTF-16 surrogates (half a character) replaced by U+FFFD"]
    assert session.session_id == "x\ufffd"
    assert session.messages[0].text.endswith("Find the cause \ufffd.")
    assert "READY \ufffd STATUS" in _results(session)[0].content
    pair = tmp_path / "pair.json"  # a whole pair is a character, not a surrogate
    pair.write_text(original.replace('Find the cause."', 'Find the cause \\ud83d\\ude00."', 1))
    notes.clear()
    (paired,) = load_traces([pair], notes=notes)
    assert notes == [] and paired.messages[0].text.endswith("\U0001f600.")


def test_names_from_file_names_are_text_whatever_their_bytes(tmp_path: Path) -> None:
    path = _trace_in(tmp_path, "cut-\udcff.json")  # the file name's byte 0xff is not UTF-8
    (session,) = load_traces([path])
    assert session.session_id == "cut-\ufffd" and session.source.endswith("cut-\ufffd.json")
    session.source.encode("utf-8")


# Real data, not perfect data --------------------------------------------------------------------------------


def _reusing(second_id: str) -> TranscriptBuilder:
    builder = TranscriptBuilder("t.json")
    builder.text("user", "Find the cause.", "t.json", "$[0]")
    builder.tool_use("call_1", "get_pods", {}, "t.json", "$[1]")
    builder.tool_result("call_1", "success", "pod a", "t.json", "$[2]")
    builder.tool_use(second_id, "get_logs", {"pod": "a"}, "t.json", "$[3]")
    builder.tool_result(second_id, "success", "", "t.json", "$[4]")
    builder.text("assistant", "Pod a.", "t.json", "$[5]")
    return builder


def test_a_tool_id_reused_after_its_call_was_answered_is_a_new_call() -> None:
    builder = _reusing("call_1")
    messages = builder.build()
    (first,), (second,) = messages[1].blocks, messages[3].blocks
    assert isinstance(first, ToolUse) and isinstance(second, ToolUse)
    assert (first.id, second.id) == ("call_1", "call_1#2")
    result = messages[4].blocks[0]
    assert isinstance(result, ToolResult) and result.tool_use_id == "call_1#2"
    assert result.content == ""  # an empty output is an output
    assert builder.notes == ["t.json: 1 tool call(s) reuse the id of an earlier, answered call (legal: providers "
                             "reuse ids); they are read as new calls"]
    assert _reusing("call_2").build()[3].blocks[0] == ToolUse("call_2", "get_logs", {"pod": "a"})


def test_a_tool_id_reused_while_its_call_is_unanswered_is_ambiguous() -> None:
    builder = TranscriptBuilder("t.json")
    builder.text("user", "Find the cause.", "t.json", "$[0]")
    builder.tool_use("call_1", "get_pods", {}, "t.json", "$[1]")
    builder.tool_use("call_1", "get_logs", {}, "t.json", "$[2]")
    with pytest.raises(TraceError, match=r"t.json: \$\[2\]: tool id 'call_1' is used again while its call at \$\[1\]"):
        builder.build()


def test_a_transcript_that_starts_with_the_agent_is_a_fragment_read_with_a_note() -> None:
    path = DATA.parent / "fragment_traces" / "starts_with_assistant.json"
    (session,) = load_trace(path)
    assert session.messages[0].kind == "task" and session.messages[0].text == FRAGMENT_TASK
    assert session.messages[1].role == "assistant" and "upstream pod restarted" in session.messages[1].text
    assert session.notes == (f"{path}: $.messages[0].content: the transcript starts with the agent (a fragment): "
                             f"read after a placeholder task {FRAGMENT_TASK!r}",)


def test_an_openhands_events_file_reads_as_its_directory_of_events() -> None:
    """The same events, one per line, are the same session as the conversation directory holding them."""
    (lines,) = load_trace(DATA / "openhands-events/incident-triage-0314.jsonl")
    (folder,) = load_trace(DATA / "openhands/incident-triage-0314")
    assert lines.format == "openhands-events" and folder.format == "openhands"
    assert [m.blocks for m in lines.messages] == [m.blocks for m in folder.messages]
    assert (lines.system, lines.tools) == (folder.system, folder.tools)


def test_in_a_fragment_an_output_whose_call_is_missing_is_text(tmp_path: Path) -> None:
    text = (DATA / "openhands-events/incident-triage-0314.jsonl").read_text()
    events = [json.loads(line) for line in text.splitlines()]
    kinds = [e["kind"] for e in events]
    # Cut before the first action (a fragment), and drop the second action so that its output has no call.
    start = kinds.index("ActionEvent")
    cut = events[start:]
    actions = [i for i, e in enumerate(cut) if e["kind"] == "ActionEvent"]
    del cut[actions[1]]
    path = tmp_path / "fragment.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in cut))
    (session,) = load_trace(path)
    assert session.messages[0].text == FRAGMENT_TASK
    shown = [m.text for m in session.messages if m.role == "user"]
    assert any("[output of a call the transcript does not hold]" in text for text in shown)
    assert any("tool output(s) whose call the fragment does not hold read as text" in n for n in session.notes)


def test_a_jsonl_trace_is_streamed_and_bounded_per_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSONL file is read a line at a time: larger than the bound on one JSON document, it still reads, and
    only a line above the bound is refused (naming its line)."""
    from harness.run.traces import reading

    source = (DATA / "openai-chat/replication_lag.jsonl").read_text()
    longest = max(len(line.encode()) for line in source.splitlines())
    monkeypatch.setattr(reading, "MAX_TRACE_BYTES", longest + 1)
    path = tmp_path / "big.jsonl"
    path.write_text(source)
    assert path.stat().st_size > reading.MAX_TRACE_BYTES  # the whole file is over the bound
    assert [s.session_id for s in load_trace(path)] == ["big"]
    as_document = tmp_path / "big.json"
    as_document.write_text(json.dumps({"messages": [json.loads(line) for line in source.splitlines()]}))
    with pytest.raises(TraceError, match="larger than"):
        load_trace(as_document)
    monkeypatch.setattr(reading, "MAX_TRACE_BYTES", longest - 1)
    with pytest.raises(TraceError, match=r"big.jsonl: line \d+: a line longer than"):
        load_trace(path)


def test_atif_step_metrics_are_the_recorded_usage_of_their_calls(tmp_path: Path) -> None:
    doc = {"schema_version": "ATIF-v1.4", "session_id": "m-1",
           "agent": {"name": "a", "version": "1", "model_name": "gpt-4o",
                     "tool_definitions": [{"type": "function", "function": {"name": "get_pods",
                                                                            "parameters": {"type": "object"}}}]},
           "steps": [{"step_id": 1, "source": "user", "message": "Find the cause."},
                     {"step_id": 2, "source": "agent", "message": "",
                      "tool_calls": [{"tool_call_id": "c1", "function_name": "get_pods", "arguments": {}}],
                      "observation": {"results": [{"source_call_id": "c1", "content": "pod a"}]},
                      "metrics": {"prompt_tokens": 120, "completion_tokens": 9, "cached_tokens": 64}},
                     {"step_id": 3, "source": "agent", "message": "Pod a.", "metrics": {"prompt_tokens": 150}}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    (session,) = load_trace(path)
    assert [(u.call, u.input_tokens, u.output_tokens, u.cached_tokens) for u in session.usage] == [
        (1, 120, 9, 64), (3, 150, None, None)]
    assert session.messages[1].role == session.messages[3].role == "assistant"
    assert json.loads(session.tool_schemas[0])["function"]["name"] == "get_pods"
