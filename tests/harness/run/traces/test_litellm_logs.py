"""The litellm-logs reader: a folder of LiteLLM completion logs (OpenHands ``log_completions``) read as one
session (the last request plus its response), each log one call's recorded usage; prompt-based function
calling read from the text; sniffed as a directory format; refused in one line when malformed; OpenHands'
own logs read natively when the shared folder holds them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.core.messages import Message, Text, ToolResult, ToolUse
from harness.run.traces import TraceError, detect_format, load_trace, load_traces
from harness.run.traces.litellm_logs import DOCUMENT_RANK, NAME, sniff
from harness.run.traces.normal import RecordedUsage

REPO = Path(__file__).resolve().parents[4]
DATA = REPO / "tests" / "data" / "traces" / "litellm-logs"
FNCALL = DATA / "fncall-3-calls"
PROMPT = DATA / "prompt-based-2-calls"
REAL = REPO / ".." / "shared" / "realtraces" / "openhands-sdk" / "original" / "tests" / "fixtures" / "llm_data"


def _text(message: Message) -> str:
    return "\n".join(b.text for b in message.blocks if isinstance(b, Text))


def _calls(session: Any) -> list[ToolUse]:
    return [b for m in session.messages for b in m.blocks if isinstance(b, ToolUse)]


def _results(session: Any) -> list[ToolResult]:
    return [b for m in session.messages for b in m.blocks if isinstance(b, ToolResult)]


def _copy(source: Path, tmp_path: Path, name: str = "logs") -> Path:
    return Path(shutil.copytree(source, tmp_path / name))


def _logs(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json"))


def _edit(file: Path, edit: Any) -> None:
    data = json.loads(file.read_text())
    edit(data)
    file.write_text(json.dumps(data))


# Function calling ------------------------------------------------------------------------------------------

def test_fncall_folder_is_the_last_request_and_its_response() -> None:
    [session] = load_trace(FNCALL)
    assert (session.session_id, session.format, session.model) == (
        "fncall-3-calls", NAME, "litellm_proxy/claude-sonnet-4-20250514")
    assert session.system.startswith("You are an operations agent")  # a cache_control part: its text kept
    assert [m.role for m in session.messages] == ["user", "assistant"] * 3
    assert _text(session.messages[0]) == "The nightly backup job on db-02 failed last night. Find out why."
    assert [(c.id, c.name) for c in _calls(session)] == [
        ("toolu_01Hx7cQm2aLr", "terminal"), ("toolu_01Vb3nKp8wTe", "terminal"), ("toolu_01Zq5yRd4mJs", "finish")]
    assert _calls(session)[2].input == {"message": "The backup failed because /srv/backup is full (100%)."}
    assert _text(session.messages[5]) == "The backup disk is full."  # the last response's message
    assert [r.status for r in _results(session)] == ["success", "success"]
    assert _results(session)[1].content.startswith("Filesystem")
    assert session.notes == ()


def test_fncall_usage_is_one_record_per_log_on_its_assistant_message() -> None:
    [session] = load_trace(FNCALL)
    assert session.usage == (
        RecordedUsage(1, 1490, 64, 0, 1, 0.0068, 3.21, 1757100010.5004),
        RecordedUsage(3, 1612, 48, 1400, 1, 0.0021, 2.64, 1757100014.2503),
        RecordedUsage(5, 1701, 57, 1400, 1, 0.0026, 4.02, 1757100019.8751),
    )


def test_fncall_tools_are_the_request_tools() -> None:
    [session] = load_trace(FNCALL)
    sent = json.loads(_logs(FNCALL)[-1].read_text())["kwargs"]["tools"]
    assert session.tools == ("terminal", "file_viewer", "finish")
    assert session.tool_schemas == tuple(json.dumps(t, sort_keys=True) for t in sent)


def test_logs_are_ordered_by_their_timestamp_not_their_names(tmp_path: Path) -> None:
    folder = tmp_path / "renamed"
    folder.mkdir()
    for name, log in zip(("c.json", "b.json", "a.json"), _logs(FNCALL), strict=True):
        shutil.copy(log, folder / name)
    [session] = load_trace(folder, NAME)
    assert [u.input_tokens for u in session.usage] == [1490, 1612, 1701]


def test_logs_without_a_timestamp_are_ordered_by_the_time_in_their_names(tmp_path: Path) -> None:
    folder = _copy(FNCALL, tmp_path)
    for log in _logs(folder):
        _edit(log, lambda d: d.pop("timestamp"))
    [session] = load_trace(folder)
    assert [u.timestamp for u in session.usage] == [1757100010.5, 1757100014.25, 1757100019.875]


def test_newer_logs_without_kwargs_tools_use_the_top_level_tools(tmp_path: Path) -> None:
    folder = _copy(FNCALL, tmp_path)
    for log in _logs(folder):
        _edit(log, lambda d: d["kwargs"].pop("tools"))
    [session] = load_trace(folder)
    assert len(session.tool_schemas) == 3 and session.tools == ("terminal", "file_viewer", "finish")


def test_failed_calls_are_skipped_with_a_note(tmp_path: Path) -> None:
    folder = _copy(FNCALL, tmp_path)
    error = {"messages": [], "tools": [], "kwargs": {}, "context_window": 200000, "cost": 0.0,
             "error": {"type": "APIConnectionError", "message": "connection reset"}, "timestamp": 1757100012.0,
             "latency_sec": 30.0}
    name = "litellm_proxy__anthropic__claude-sonnet-4-20250514-1757100012.000-0a1b-error.json"
    (folder / name).write_text(json.dumps(error))
    [session] = load_trace(folder)
    assert len(session.usage) == 3
    assert session.notes == (f"{folder}: 1 failed call(s) skipped (error logs without a response: {name})",)


def test_logs_that_do_not_pair_with_the_messages_are_a_session_total(tmp_path: Path) -> None:
    folder = _copy(FNCALL, tmp_path)
    other = json.loads(_logs(FNCALL)[0].read_text()) | {"timestamp": 1757100001.0}  # another conversation's call
    (folder / "litellm_proxy__anthropic__claude-sonnet-4-20250514-1757100001.000.json").write_text(json.dumps(other))
    [session] = load_trace(folder)
    [total] = session.usage
    assert (total.call, total.input_tokens, total.output_tokens, total.cached_tokens, total.calls, total.timestamp) == (
        None, 1490 * 2 + 1612 + 1701, 64 * 2 + 48 + 57, 2800, 4, 1757100001.0)
    assert total.cost_usd == pytest.approx(0.0068 * 2 + 0.0021 + 0.0026)
    assert total.latency_s == pytest.approx(3.21 * 2 + 2.64 + 4.02)
    assert any("the 4 completion logs do not pair up with the 3 assistant messages" in n for n in session.notes)


def test_usage_summary_when_the_response_has_no_usage(tmp_path: Path) -> None:
    folder = _copy(FNCALL, tmp_path)
    _edit(_logs(folder)[0], lambda d: (d["response"].pop("usage"), d.update(usage_summary={
        "prompt_tokens": 1490, "completion_tokens": 64, "reasoning_tokens": 0, "cache_read_tokens": 0})))
    [session] = load_trace(folder)
    assert session.usage[0] == RecordedUsage(1, 1490, 64, 0, 1, 0.0068, 3.21, 1757100010.5004)


# Prompt-based function calling -------------------------------------------------------------------------------

def test_prompt_based_actions_are_read_as_tool_calls() -> None:
    [session] = load_trace(PROMPT)
    assert session.model == "litellm_proxy/deepseek-chat"
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]
    assert "<function=terminal>" in _text(session.messages[0])  # the in-context example of the task is kept
    assert [(c.id, c.name, dict(c.input)) for c in _calls(session)] == [
        ("toolu_01", "terminal", {"command": "openssl x509 -enddate -noout -in /etc/ssl/api.pem"}),
        ("toolu_02", "finish", {"message": "The api.internal certificate expired on 2026-03-02: renew it."})]
    assert _text(session.messages[1]) == "Let me read the certificate's expiry date."
    [result] = _results(session)
    assert result.tool_use_id == "toolu_01" and result.content.startswith("EXECUTION RESULT of [terminal]:\n")
    assert _text(session.messages[3]) == "The certificate expired on March 2."  # from raw_response, stop word cut
    assert session.notes == (f"{PROMPT}: 2 action(s) written as text (OpenHands' prompt-based function calling, "
                             "<function=NAME>) read as tool calls, the user message after each as its result",)


def test_prompt_based_usage_and_tools() -> None:
    [session] = load_trace(PROMPT)
    assert [(u.call, u.input_tokens, u.cached_tokens) for u in session.usage] == [(1, 905, 832), (3, 987, 896)]
    assert session.tools == ("terminal", "finish") and len(session.tool_schemas) == 2  # kwargs.tools: sent


def test_prompt_based_newer_logs_send_no_schemas(tmp_path: Path) -> None:
    folder = _copy(PROMPT, tmp_path)
    for log in _logs(folder):
        _edit(log, lambda d: d["kwargs"].pop("tools"))
    [session] = load_trace(folder)
    assert session.tools == ("terminal", "finish") and session.tool_schemas == ()


def test_prompt_based_without_actions_has_a_note(tmp_path: Path) -> None:
    folder = _copy(PROMPT, tmp_path)
    _edit(_logs(folder)[-1], lambda d: (d["messages"].__setitem__(2, {"role": "assistant", "content": "Thinking."}),
                                        d["raw_response"]["choices"][0]["message"].update(content="Done, I think.")))
    [session] = load_trace(folder)
    assert _calls(session) == [] and _results(session) == []
    assert any("but no <function=...> action was found" in n for n in session.notes)


# Sniffing ------------------------------------------------------------------------------------------------

def test_sample_folders_are_sniffed_as_litellm_logs() -> None:
    for folder in (FNCALL, PROMPT):
        assert detect_format(folder) == NAME
        found = sniff(folder)
        assert found is not None and found.where == (0, DOCUMENT_RANK)


def test_a_folder_of_log_folders_is_walked() -> None:
    assert sniff(DATA) is None
    assert [s.session_id for s in load_traces([DATA])] == ["fncall-3-calls", "prompt-based-2-calls"]


def test_other_folders_are_not_claimed(tmp_path: Path) -> None:
    for folder in sorted((REPO / "tests" / "data" / "traces").iterdir()):
        if folder.name != NAME:
            assert sniff(folder) is None, folder
            for inner in folder.iterdir():
                assert not inner.is_dir() or sniff(inner) is None, inner
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "model-1757100010.500.json").write_bytes(b"\x00\xffnot json")
    chat = tmp_path / "chat"
    chat.mkdir()
    (chat / "model-1757100010.500.json").write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert sniff(garbage) is None and sniff(chat) is None and sniff(empty) is None
    assert sniff(tmp_path / "missing") is None


# Errors --------------------------------------------------------------------------------------------------

ERRORS: dict[str, tuple[Any, str]] = {
    "no-response": (lambda d: d.pop("response"), r"\$\.response: missing"),
    "messages-not-array": (lambda d: d.update(messages="hello"), r"\$\.messages: expected an array"),
    "no-choices": (lambda d: d["response"].update(choices=[]), r"\$\.response\.choices: empty"),
    "choice-without-message": (lambda d: d["response"]["choices"][0].pop("message"),
                               r"\$\.response\.choices\[0\]\.message: missing"),
    "tokens-text": (lambda d: d["response"]["usage"].update(prompt_tokens="1.6k"),
                    r"\$\.response\.usage\.prompt_tokens: expected a non-negative number, got "),
    "cost-text": (lambda d: d.update(cost="free"), r"\$\.cost: expected a number, got a string"),
    "timestamp-text": (lambda d: d.update(timestamp="noon"), r"\$\.timestamp: expected a number"),
    "tools-not-array": (lambda d: d["kwargs"].update(tools={"terminal": {}}), r"\$\.kwargs\.tools: expected an array"),
    "unknown-role": (lambda d: d["messages"][1].update(role="robot"), r"\$\.messages\[1\]\.role: unknown role"),
    "tool-without-call-id": (lambda d: d["messages"][3].pop("tool_call_id"), r"\$\.messages\[3\]\.tool_call_id: "
                             "missing"),
    "unknown-part": (lambda d: d["messages"][1]["content"][0].update(type="hologram"),
                     r"\$\.messages\[1\]\.content\[0\]\.type: unknown content part type 'hologram'"),
    "orphan-result": (lambda d: d["messages"][3].update(tool_call_id="toolu_nowhere"),
                      r"\$\.messages\[3\]: orphan tool result"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_malformed_last_log_fails_in_one_line(name: str, tmp_path: Path) -> None:
    edit, problem = ERRORS[name]
    folder = _copy(FNCALL, tmp_path)
    last = _logs(folder)[-1]
    _edit(last, edit)
    with pytest.raises(TraceError, match=problem) as caught:
        load_trace(folder, NAME)
    assert "\n" not in str(caught.value) and str(caught.value).startswith(str(last))


def test_other_errors_fail_in_one_line(tmp_path: Path) -> None:
    truncated = _copy(FNCALL, tmp_path, "truncated")
    first = _logs(truncated)[0]
    first.write_text(first.read_text()[:300])
    not_object = _copy(FNCALL, tmp_path, "not-object")
    _logs(not_object)[1].write_text("[]")
    no_time = tmp_path / "no-time"
    no_time.mkdir()
    (no_time / "call.json").write_text(json.dumps(json.loads(_logs(FNCALL)[0].read_text()) | {"timestamp": None}))
    only_errors = tmp_path / "only-errors"
    only_errors.mkdir()
    (only_errors / "m-1757100010.000-error.json").write_text(json.dumps({"messages": [], "error": {}}))
    empty = tmp_path / "empty"
    empty.mkdir()
    bad_response = _copy(FNCALL, tmp_path, "bad-response")
    _edit(_logs(bad_response)[0], lambda d: d.update(response="ok"))
    cases = {bad_response: (_logs(bad_response)[0], r"\$\.response: expected a chat completion response object"),
             truncated: (first, r"line \d+: invalid JSON"),
             not_object: (_logs(not_object)[1], r"\$: expected a LiteLLM completion log object"),
             no_time: (no_time / "call.json", r"\$\.timestamp: missing, and the file name holds no Unix time"),
             only_errors: (only_errors, r"directory: no LiteLLM completion log with a response \(1 failed"),
             empty: (empty, r"directory: no LiteLLM completion log with a response$")}
    for folder, (named, problem) in cases.items():
        with pytest.raises(TraceError, match=problem) as caught:
            load_trace(folder, NAME)
        assert "\n" not in str(caught.value) and str(caught.value).startswith(str(named)), folder


# OpenHands' own logs -------------------------------------------------------------------------------------

def test_real_openhands_logs_read_natively() -> None:
    if not REAL.is_dir():
        pytest.skip(f"{REAL} is not here")
    fncall, prompt = REAL / "llm-logs", REAL / "nonfncall-llm-logs"
    assert detect_format(fncall) == NAME and detect_format(prompt) == NAME
    [claude] = load_trace(fncall)
    assert claude.model == "litellm_proxy/claude-sonnet-4-20250514" and claude.notes == ()
    assert [u.call for u in claude.usage] == [1, 3, 5, 7, 9, 11]
    assert [u.input_tokens for u in claude.usage] == [4812, 5002, 6123, 6277, 6485, 6729]
    assert claude.tools == ("terminal", "str_replace_editor", "finish") and len(claude.tool_schemas) == 3
    [deepseek] = load_trace(prompt)
    assert [u.call for u in deepseek.usage] == [1, 3, 5, 7]
    assert [u.cached_tokens for u in deepseek.usage] == [7872, 8000, 8896, 9024]
    assert [c.name for c in _calls(deepseek)] == ["terminal", "str_replace_editor", "terminal", "finish"]
    assert len(deepseek.notes) == 1 and "4 action(s) written as text" in deepseek.notes[0]
