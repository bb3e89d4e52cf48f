"""The Claude Code reader: a session's lines become the normal form (split assistant messages merged into one
call, the parentUuid chain followed past abandoned branches and a compaction, sidechains skipped), with the
usage of every call; sniffing claims Claude Code files only; bad files fail in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.core.messages import Text, ToolResult, ToolUse
from harness.run.traces import TraceError, detect_format, load_trace
from harness.run.traces.claude_code import NAME, SNIFF_RANK, sniff
from harness.run.traces.formats import Claim
from harness.run.traces.reading import read_trace

REPO = Path(__file__).resolve().parents[4]
DATA = REPO / "tests" / "data" / "traces"
SAMPLES = DATA / "claude-code"
INCIDENT = SAMPLES / "incident_triage.jsonl"
COMPACTED = SAMPLES / "replication_lag_compacted.jsonl"
REAL = REPO / ".." / "shared" / "realtraces" / "claude-code"
SESSION = "9c4a2e61-7d0b-4f3a-8e25-b61f0d3c7a48"


def _blocks(message: Any) -> list[tuple[str, str]]:
    """Each block of a message as (kind, id or the start of its text)."""
    out = []
    for block in message.blocks:
        if isinstance(block, Text):
            out.append(("text", block.text[:20]))
        elif isinstance(block, ToolUse):
            out.append(("use", block.id))
        elif isinstance(block, ToolResult):
            out.append((f"result-{block.status}", block.tool_use_id))
    return out


# What is read ---------------------------------------------------------------------------------------------

def test_incident_session_merges_split_messages_and_parallel_results() -> None:
    (session,) = load_trace(INCIDENT)
    assert (session.format, session.session_id, session.model) == (NAME, "5b0e7c1a-3f42-4d8e-9a61-0c2d7e4f9b13",
                                                                      "claude-sonnet-4-5")
    assert session.system == "" and session.tools == () and session.tool_schemas == ()
    assert [m.role for m in session.messages] == ["user", "assistant"] * 5
    # Four lines (thinking, text, two calls) of one API message are one assistant message; the two results,
    # each hanging off its own call's line, are one user message.
    assert _blocks(session.messages[1]) == [("text", "Checking the pods an"), ("use", "toolu_01pods01"),
                                            ("use", "toolu_01deploy02")]
    assert _blocks(session.messages[2]) == [("result-success", "toolu_01pods01"),
                                            ("result-success", "toolu_01deploy02")]
    assert _blocks(session.messages[6]) == [("result-error", "toolu_01metrics04")]
    assert session.messages[-1].kind == "final" and "revision 42" in session.messages[-1].text


def test_incident_usage_is_one_call_per_api_message_counting_the_cache() -> None:
    (session,) = load_trace(INCIDENT)
    got = [(u.call, u.input_tokens, u.cached_tokens, u.output_tokens) for u in session.usage]
    # input = input_tokens + cache_creation_input_tokens + cache_read_input_tokens; the last line's output.
    assert got == [(1, 4 + 14980, 0, 96), (3, 3 + 1204 + 14980, 14980, 41), (5, 3 + 9350 + 16184, 16184, 58),
                   (7, 3 + 190 + 25534, 25534, 47), (9, 3 + 236 + 25724, 25724, 83)]
    assert all(u.calls == 1 and u.timestamp is not None for u in session.usage)
    assert session.usage[0].timestamp == pytest.approx(1741943402.0)


def test_incident_notes_say_what_was_skipped_and_what_is_missing() -> None:
    (session,) = load_trace(INCIDENT)
    assert any("(1 file-history-snapshot, 5 progress, 1 summary)" in n for n in session.notes)
    assert any("neither its system prompt nor its tool schemas" in n for n in session.notes)


def test_compacted_session_follows_the_chain_past_a_rewind_and_the_compaction() -> None:
    (session,) = load_trace(COMPACTED)
    assert session.session_id == SESSION and session.model == "claude-sonnet-4-5"
    shapes = [_blocks(m) for m in session.messages]
    assert shapes == [
        [("text", "orders-db replica la")],
        [("text", "Checking the replica"), ("use", "toolu_01repl01")],
        [("result-success", "toolu_01repl01")],
        [("use", "toolu_01repl02")],
        [("result-error", "toolu_01repl02")],
        # One API message over three lines, a result written between them: the calls stay together.
        [("text", "Typo in the host. Re"), ("use", "toolu_01repl03"), ("use", "toolu_01repl04")],
        [("result-success", "toolu_01repl03"), ("result-success", "toolu_01repl04")],
        [("text", "A single 900-second ")],
        # The rewound prompt ("10k rows") and its answer are gone; the API error line is skipped.
        [("text", "Yes, draft it: 5k ro")],
        [("text", "Writing the batched "), ("use", "toolu_01repl05")],
        # The summary after the compaction reads as user text, with the next prompt.
        [("result-success", "toolu_01repl05"), ("text", "This session is bein"), ("text", "Run it against stagi")],
        [("use", "toolu_01repl06")],
        [("result-success", "toolu_01repl06")],
        [("text", "On staging each 5k-r")],
    ]
    results = [b for m in session.messages for b in m.blocks if isinstance(b, ToolResult)]
    assert results[3].content == "Table: order_events | Key_name: PRIMARY | Column_name: id\n(no index on created_at)"
    assert "10k rows" not in " ".join(m.text for m in session.messages)
    assert "Runbook DB-7" not in " ".join(m.text for m in session.messages)


def test_compacted_session_usage_and_notes() -> None:
    (session,) = load_trace(COMPACTED)
    assert [(u.call, u.input_tokens, u.cached_tokens, u.output_tokens) for u in session.usage] == [
        (1, 13213, 0, 61), (3, 13355, 13210, 44), (5, 13475, 13352, 88), (7, 13785, 13472, 52),
        (9, 13843, 13782, 143), (11, 2953, 0, 77), (13, 3143, 2950, 46)]
    notes = "\n".join(session.notes)
    assert "line 24 $: the conversation was compacted here (compact_boundary, trigger manual, 14,105 tokens before)" \
        in notes
    assert "2 sidechain line(s)" in notes
    assert "line 17 $: 2 line(s) off the conversation's parentUuid chain" in notes
    assert "1 assistant line(s) Claude Code wrote itself" in notes
    assert "1 line(s) of assistant messages come after tool results" in notes
    assert "(1 queue-operation, 1 system (turn_duration))" in notes


def _line(uuid: str, parent: str | None, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message |= {"id": extra.pop("message_id", f"msg_{uuid}"), "model": extra.pop("model", "claude-opus-4-1"),
                    "usage": extra.pop("usage", {"input_tokens": 10, "output_tokens": 5})}
    return {"parentUuid": parent, "isSidechain": False, "sessionId": "s-1", "type": kind, "message": message,
            "uuid": uuid, "timestamp": "2025-05-01T10:00:00Z", **extra}


def _write(tmp_path: Path, lines: list[dict[str, Any]], name: str = "session.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_lines_out_of_file_order_are_read_in_parent_order(tmp_path: Path) -> None:
    lines = [_line("u1", None, "user", "List the pods."),
             _line("r1", "a1", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "pod-a"}]),
             _line("a1", "u1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"c": "k"}}]),
             _line("a2", "r1", "assistant", [{"type": "text", "text": "One pod: pod-a."}])]
    (session,) = load_trace(_write(tmp_path, lines))
    assert [_blocks(m) for m in session.messages] == [
        [("text", "List the pods.")], [("use", "t1")], [("result-success", "t1")], [("text", "One pod: pod-a.")]]
    assert any("line 2 $: the file puts this line before its parent" in n for n in session.notes)
    assert [u.call for u in session.usage] == [1, 3]


def test_a_compaction_that_keeps_a_segment_is_noted_off_the_chain(tmp_path: Path) -> None:
    boundary = {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None,
                "sessionId": "s-1", "compactMetadata": {"trigger": "auto", "preTokens": 170000,
                                                       "preservedMessages": {"anchorUuid": "a1", "uuids": ["u2"]}}}
    lines = [_line("u1", None, "user", "Start."), _line("a1", "u1", "assistant", "Started."),
             _line("u2", "a1", "user", "Keep going."), boundary, _line("a2", "u2", "assistant", "Going.")]
    (session,) = load_trace(_write(tmp_path, lines))
    assert [m.text for m in session.messages] == ["Start.", "Started.", "Keep going.", "Going."]
    assert any("line 4 $: the conversation was compacted here (compact_boundary, trigger auto, 170,000 tokens"
               in n for n in session.notes)


def test_a_sub_agent_file_is_read_as_its_own_conversation(tmp_path: Path) -> None:
    lines = [_line("u1", None, "user", "Find the runbook.", isSidechain=True, agentId="a1b2c3d"),
             _line("a1", "u1", "assistant", [{"type": "text", "text": "Runbook DB-7."}], isSidechain=True)]
    (session,) = load_trace(_write(tmp_path, lines, "agent-a1b2c3d.jsonl"))
    assert [m.role for m in session.messages] == ["user", "assistant"]
    assert any("every line is a sidechain" in n for n in session.notes)


def test_a_call_of_thinking_only_places_no_usage_and_several_models_are_noted(tmp_path: Path) -> None:
    lines = [_line("u1", None, "user", "Why?"),
             _line("a1", "u1", "assistant", [{"type": "thinking", "thinking": "hmm", "signature": "x"}],
                   model="claude-haiku-4-5"),
             _line("a2", "a1", "assistant", [{"type": "text", "text": "Because."}], message_id="msg_2"),
             _line("a3", "a2", "assistant", [{"type": "mystery_block", "x": 1}], message_id="msg_2")]
    (session,) = load_trace(_write(tmp_path, lines))
    assert [u.call for u in session.usage] == [1]
    notes = "\n".join(session.notes)
    assert "thinking only" in notes and "2 models" in notes and "unknown type 'mystery_block'" in notes
    assert session.model in ("claude-opus-4-1", "claude-haiku-4-5")


def test_two_calls_without_a_user_message_between_share_their_message(tmp_path: Path) -> None:
    lines = [_line("u1", None, "user", "Go on."),
             _line("a1", "u1", "assistant", [{"type": "text", "text": "First part."}]),
             _line("a2", "a1", "assistant", [{"type": "text", "text": "Second part."}])]
    (session,) = load_trace(_write(tmp_path, lines))
    assert [m.role for m in session.messages] == ["user", "assistant"]
    assert [u.call for u in session.usage] == [1, 1]
    assert any("1 model call(s) answered without a user message between" in n for n in session.notes)


def test_tool_result_content_blocks_and_a_missing_content(tmp_path: Path) -> None:
    lines = [_line("u1", None, "user", [{"type": "text", "text": "Look."}, {"type": "image", "source": {}}]),
             _line("a1", "u1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}},
                                             {"type": "tool_use", "id": "t2", "name": "Read", "input": {}}]),
             _line("r1", "a1", "user", [{"type": "tool_result", "tool_use_id": "t1",
                                         "content": [{"type": "text", "text": "a"}, {"type": "image"},
                                                     {"type": "tool_reference", "tool_name": "Grep"}]},
                                        {"type": "tool_result", "tool_use_id": "t2"}])]
    (session,) = load_trace(_write(tmp_path, lines))
    assert [b.text for b in session.messages[0].blocks if isinstance(b, Text)] == ["Look.", "[image omitted]"]
    first, second = session.messages[2].blocks
    assert isinstance(first, ToolResult) and isinstance(second, ToolResult)
    assert first.content == 'a\n[image omitted]\n{"tool_name": "Grep", "type": "tool_reference"}'
    assert second.content == ""
    assert session.messages[1].kind != "final"


# Sniffing -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", sorted(SAMPLES.iterdir()), ids=lambda p: p.name)
def test_samples_are_claimed_as_claude_code(path: Path) -> None:
    assert sniff(read_trace(path)) == Claim.document(SNIFF_RANK)
    assert detect_format(path) == NAME


def _other_samples() -> list[Path]:
    return sorted(p for p in DATA.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")
                  and SAMPLES not in p.parents)


@pytest.mark.parametrize("path", _other_samples(), ids=lambda p: str(p.relative_to(DATA)))
def test_other_formats_samples_are_not_claimed(path: Path) -> None:
    assert sniff(read_trace(path)) is None


@pytest.mark.parametrize("first", [
    {"type": "summary", "summary": "A title", "leafUuid": "x"},
    {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}, "isSnapshotUpdate": False},
    {"type": "queue-operation", "operation": "dequeue", "timestamp": "t", "sessionId": "s"},
])
def test_a_file_opening_with_bookkeeping_is_claimed(tmp_path: Path, first: dict[str, Any]) -> None:
    path = _write(tmp_path, [first, _line("u1", None, "user", "Hi."), _line("a1", "u1", "assistant", "Hello.")])
    assert sniff(read_trace(path)) == Claim.document(SNIFF_RANK)
    (session,) = load_trace(path)
    assert [m.role for m in session.messages] == ["user", "assistant"]


@pytest.mark.parametrize("text", [
    '[1, 2]', '"text"', '{"type": "user", "message": {}}', '{"type": 3}',
    '{"role": "user", "content": "hi"}\n{"type": "user", "uuid": "u", "parentUuid": null}'])
def test_sniff_refuses_other_shapes_without_raising(tmp_path: Path, text: str) -> None:
    path = tmp_path / "other.jsonl"
    path.write_text(text + "\n")
    assert sniff(read_trace(path)) is None


# Bad files ------------------------------------------------------------------------------------------------

BAD: dict[str, tuple[list[dict[str, Any]] | str, str]] = {
    "loop": ([_line("u1", "a1", "user", "Hi."), _line("a1", "u1", "assistant", "Hello.")],
             "the parentUuid chain loops back to this line"),
    "no-uuid": ([{k: v for k, v in _line("u1", None, "user", "Hi.").items() if k != "uuid"}], "line 1 $.uuid: missing"),
    "content-number": ([_line("u1", None, "user", 7)],
                       "line 1 $.message.content: expected a string or an array of content blocks, got a number"),
    "usage-string": ([_line("u1", None, "user", "Hi."), _line("a1", "u1", "assistant", "Yo.",
                                                              usage={"input_tokens": "12"})],
                     "line 2 $.message.usage.input_tokens: expected a non-negative number"),
    "result-in-assistant": ([_line("u1", None, "user", "Hi."), _line("a1", "u1", "assistant", [
        {"type": "tool_result", "tool_use_id": "t", "content": ""}])], "a tool_result block in an assistant message"),
    "reused-id": ([_line("u1", None, "user", "Hi."),
                   _line("a1", "u1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]),
                   _line("a2", "a1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
                         message_id="msg_a1")], "tool id 't1' is used again while its call"),
    "bookkeeping-only": ([{"type": "summary", "summary": "t", "leafUuid": "x"}], "no user or assistant lines"),
    "not-an-object": ('{"type": "user", "uuid": "u1", "parentUuid": null, "message": {"content": "Hi."}}\n[1]\n',
                      "line 2 $: expected a Claude Code record object, got an array"),
    "wrong-role": ([_line("u1", None, "user", "Hi.") | {"message": {"role": "assistant", "content": "x"}}],
                   "line 1 $.message.role: a user line holds a message of role 'assistant'"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_file_is_one_line_naming_the_file_and_place(tmp_path: Path, name: str) -> None:
    lines, expected = BAD[name]
    path = tmp_path / f"{name}.jsonl"
    if isinstance(lines, str):
        path.write_text(lines)
    else:
        _write(tmp_path, lines, path.name)
    with pytest.raises(TraceError) as caught:
        load_trace(path, NAME)
    text = str(caught.value)
    assert "\n" not in text and text.startswith(str(path)) and expected in text


def test_a_truncated_last_line_names_its_line(tmp_path: Path) -> None:
    text = INCIDENT.read_text()
    path = tmp_path / "cut.jsonl"
    path.write_text(text[: len(text) - 200])
    with pytest.raises(TraceError, match=r"cut.jsonl: line 26: invalid JSON"):
        load_trace(path)


# End to end and real files ----------------------------------------------------------------------------------

def test_replay_of_the_samples_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", str(INCIDENT), str(COMPACTED), "--out", str(tmp_path / "out"), "--quiet", "--no-report",
                 "--strategies", "unbounded,sliding_window"])
    assert code == 0, capsys.readouterr().err


def test_real_claude_code_files_load() -> None:
    if not REAL.is_dir():
        pytest.skip(f"no real Claude Code transcripts at {REAL}")
    files = sorted(REAL.rglob("*.jsonl"))
    if not files:
        pytest.skip(f"no *.jsonl under {REAL}")
    for path in files:
        sessions = load_trace(path, NAME)
        assert sessions and sessions[0].messages[0].role == "user"
