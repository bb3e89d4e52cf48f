"""mini-swe-agent trajectories: v1 text actions (the action regex's one match as a bash call), v2 tool calls
and Responses objects, per-call and session usage, model and ids, sniffing, malformed files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.core.messages import Message, Text, ToolResult, ToolUse
from harness.run.traces import TraceError, detect_format, load_trace
from harness.run.traces.normal import ImportedSession, RecordedUsage

ROOT = Path(__file__).resolve().parents[4]
DATA = ROOT / "tests" / "data" / "traces"
V1 = DATA / "mini-swe-agent" / "brine-88.traj.json"
V2 = DATA / "mini-swe-agent" / "kelp_export.traj.json"


def _uses(session: ImportedSession) -> list[ToolUse]:
    return [b for m in session.messages for b in m.blocks if isinstance(b, ToolUse)]


def _results(session: ImportedSession) -> list[ToolResult]:
    return [b for m in session.messages for b in m.blocks if isinstance(b, ToolResult)]


def _texts(message: Message) -> list[str]:
    return [b.text for b in message.blocks if isinstance(b, Text)]


def _trajectory(*messages: dict[str, Any], info: dict[str, Any] | None = None,
                version: Any = "mini-swe-agent-1") -> dict[str, Any]:
    return {"info": info if info is not None else {"model_stats": {"instance_cost": 0.0, "api_calls": 0}},
            "messages": [{"role": "system", "content": "You run shell commands."},
                         {"role": "user", "content": "Please solve this issue: tests fail on Mondays."}, *messages],
            "trajectory_format": version}


def _write(tmp_path: Path, doc: Any, name: str = "t.traj.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


# The samples -------------------------------------------------------------------------------------------------

def test_v1_text_actions_become_bash_calls_answered_by_the_next_user_message() -> None:
    [session] = load_trace(V1)
    assert session.format == "mini-swe-agent"
    assert session.session_id == "brine__brine-88"
    assert session.model == "anthropic/claude-sonnet-4-20250514"
    assert session.system.startswith("You are a helpful assistant")
    uses = _uses(session)
    assert [u.name for u in uses] == ["bash"] * 3
    assert uses[0].input == {"command": 'grep -rn "version" brine/cli.py'}
    assert _texts(session.messages[1]) == ["THOUGHT: Find where the version flag is handled."]  # block once
    # two blocks: the agent refused the response, which stays text, and its format error user text
    assert session.messages[3].kind == "text" and "```bash\ncat brine/cli.py\n```" in session.messages[3].text
    assert session.messages[4].text.startswith("Please always provide EXACTLY ONE action")
    results = _results(session)
    assert [r.tool_use_id for r in results] == [u.id for u in uses]
    assert results[-1].content == ""  # the submission's empty output is an output
    assert any("3 text action(s)" in n for n in session.notes)


def test_v1_per_call_usage_names_each_assistant_message() -> None:
    [session] = load_trace(V1)
    per_call = [u for u in session.usage if u.call is not None]
    assert [u.call for u in per_call] == [1, 3, 5, 7]
    assert all(u.call is not None and session.messages[u.call].role == "assistant" for u in per_call)
    assert per_call[1] == RecordedUsage(call=3, input_tokens=530, output_tokens=40, cached_tokens=412,
                                        timestamp=1760000006.0)
    assert session.usage[-1] == RecordedUsage(call=None, input_tokens=None, calls=4, cost_usd=0.0123)


def test_v2_tool_calls_format_errors_and_exit_message() -> None:
    [session] = load_trace(V2)
    assert session.session_id == "kelp_export"  # no instance_id: the file's name without .traj
    assert session.model == "openai/gpt-5-mini"
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant", "user"]
    uses = _uses(session)
    assert [u.id for u in uses] == ["toolu_k1", "toolu_k2", "toolu_k3"]
    assert uses[1].input == {"command": "ls tests"}
    assert [r.tool_use_id for r in _results(session)] == ["toolu_k1", "toolu_k2", "toolu_k3"]
    assert _texts(session.messages[2]) == ["No tool calls found in the response. Every response MUST include at "
                                           "least one tool call."]
    assert [(u.call, u.input_tokens, u.cost_usd) for u in session.usage] == [
        (1, 380, 0.0021), (3, 505, 0.0024), (None, None, 0.0054)]
    assert session.usage[-1].calls == 3
    assert any("1 format-error message(s)" in n for n in session.notes)
    assert not any("text action" in n for n in session.notes)


# Variants ----------------------------------------------------------------------------------------------------

def test_the_recorded_action_regex_is_the_one_used(tmp_path: Path) -> None:
    info = {"config": {"model": {"model_name": "m", "action_regex": r"```mswea_bash_command\s*\n(.*?)\n```"}}}
    doc = _trajectory({"role": "assistant", "content": "Run it.\n```bash\nls\n```\n```mswea_bash_command\npytest\n```"},
                      {"role": "user", "content": "<returncode>0</returncode>"}, info=info,
                      version="mini-swe-agent-1.1")
    [session] = load_trace(_write(tmp_path, doc))
    assert [u.input for u in _uses(session)] == [{"command": "pytest"}]
    assert _texts(session.messages[1]) == ["Run it.\n```bash\nls\n```"]


def test_without_a_recorded_regex_the_defaults_are_tried(tmp_path: Path) -> None:
    doc = _trajectory({"role": "assistant", "content": "```mswea_bash_command\nmake test\n```"},
                      {"role": "user", "content": "ok"}, info={})
    [session] = load_trace(_write(tmp_path, doc))
    assert [u.input for u in _uses(session)] == [{"command": "make test"}]
    assert session.usage == ()  # no model_stats


def test_a_broken_recorded_regex_is_a_note_and_the_defaults_are_used(tmp_path: Path) -> None:
    doc = _trajectory({"role": "assistant", "content": "```bash\nls\n```"}, {"role": "user", "content": "a"},
                      info={"config": {"agent": {"action_regex": "(unclosed"}}})
    [session] = load_trace(_write(tmp_path, doc))
    assert [u.input for u in _uses(session)] == [{"command": "ls"}]
    assert any("action_regex '(unclosed' is not a regular expression" in n for n in session.notes)


def test_a_transcript_without_actions_says_so(tmp_path: Path) -> None:
    doc = _trajectory({"role": "assistant", "content": "I would rather not run anything."},
                      {"role": "user", "content": "Please always provide EXACTLY ONE action."})
    [session] = load_trace(_write(tmp_path, doc))
    assert _uses(session) == []
    assert any("no assistant message holds a tool call or exactly one action block" in n for n in session.notes)


def test_responses_objects_and_items_are_read(tmp_path: Path) -> None:
    response = {"object": "response", "id": "resp_1", "output": [
        {"type": "reasoning", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Listing."}]},
        {"type": "function_call", "call_id": "fc_1", "name": "bash", "arguments": '{"command": "ls"}'}],
        "usage": {"input_tokens": 210, "output_tokens": 19, "input_tokens_details": {"cached_tokens": 128}},
        "extra": {"cost": 0.001, "timestamp": 1760200000.5}}
    output = {"type": "function_call_output", "call_id": "fc_1", "output": "<returncode>0</returncode>",
              "extra": {"returncode": 0}}
    doc = _trajectory(response, output, {"type": "message", "role": "user",
                                         "content": [{"type": "input_text", "text": "Continue."}]},
                      version="mini-swe-agent-1.1")
    [session] = load_trace(_write(tmp_path, doc))
    assert [(u.id, u.input) for u in _uses(session)] == [("fc_1", {"command": "ls"})]
    assert _texts(session.messages[1]) == ["Listing."]
    assert [r.content for r in _results(session)] == ["<returncode>0</returncode>"]
    assert _texts(session.messages[2]) == ["Continue."]
    assert session.usage == (RecordedUsage(call=1, input_tokens=210, output_tokens=19, cached_tokens=128,
                                           cost_usd=0.001, timestamp=1760200000.5),)


def test_the_usage_of_an_empty_response_names_no_message(tmp_path: Path) -> None:
    usage = {"response": {"usage": {"prompt_tokens": 50, "completion_tokens": 0}}}
    doc = _trajectory({"role": "assistant", "content": "", "extra": usage},
                      {"role": "user", "content": "Please always provide EXACTLY ONE action."})
    [session] = load_trace(_write(tmp_path, doc))
    assert session.usage == ()
    assert any("usage of 1 empty response(s) is not read" in n for n in session.notes)


# Sniffing ----------------------------------------------------------------------------------------------------

def test_each_sample_is_sniffed_and_the_same_messages_without_the_mark_stay_openai_chat(tmp_path: Path) -> None:
    assert detect_format(V1) == "mini-swe-agent"
    assert detect_format(V2) == "mini-swe-agent"
    doc = json.loads(V1.read_text())
    bare = [{"role": m["role"], "content": m["content"]} for m in doc["messages"]]
    assert detect_format(_write(tmp_path, {"messages": bare}, "chat.json")) == "openai-chat"
    assert detect_format(_write(tmp_path, bare, "list.json")) == "openai-chat"
    del doc["trajectory_format"]
    assert detect_format(_write(tmp_path, doc, "unmarked.json")) == "openai-chat"
    assert detect_format(DATA / "openai-chat" / "incident_triage.json") == "openai-chat"


# Malformed ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("doc", "problem"), [
    (_trajectory(version="mini-swe-agent-9"), r"\$\.trajectory_format: unsupported trajectory_format "
                                              r"'mini-swe-agent-9'"),
    (_trajectory(version=7), r"\$\.trajectory_format: expected a string, got a number"),
    ({"info": {}, "trajectory_format": "mini-swe-agent-1"}, r"\$\.messages: missing"),
    ({"info": {}, "messages": {}, "trajectory_format": "mini-swe-agent-1"}, r"\$\.messages: expected an array"),
    (_trajectory({"role": "robot", "content": "beep"}), r"\$\.messages\[2\]\.role: unknown role 'robot'"),
    (_trajectory({"role": "assistant", "content": "x", "tool_calls": [
        {"id": "c", "function": {"name": "bash", "arguments": "{}"}}]}, {"role": "tool", "content": "out"}),
     r"\$\.messages\[3\]\.tool_call_id: missing"),
    (_trajectory({"role": "assistant", "content": "x", "tool_calls": [
        {"id": "c", "function": {"name": "bash", "arguments": 3}}]}),
     r"\$\.messages\[2\]\.tool_calls\[0\]\.function\.arguments: expected a JSON string or an object"),
    (_trajectory({"role": "assistant", "content": "x",
                  "extra": {"response": {"usage": {"prompt_tokens": "many"}}}}),
     r"\$\.messages\[2\]\.extra\.response\.usage\.prompt_tokens: expected a non-negative number, got 'many'"),
    (_trajectory(info={"model_stats": {"instance_cost": -1}}),
     r"\$\.info\.model_stats\.instance_cost: expected a non-negative number, got -1"),
])
def test_a_malformed_trajectory_is_one_line_naming_the_place(tmp_path: Path, doc: Any, problem: str) -> None:
    path = _write(tmp_path, doc)
    with pytest.raises(TraceError, match=problem) as raised:
        load_trace(path)
    assert "\n" not in str(raised.value) and str(raised.value).startswith(str(path))
