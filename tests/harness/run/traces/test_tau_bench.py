"""The tau-bench reader: tau-bench result lists and tau2-bench results read into the normal form (calls,
results, usage per call, tools, notes), sniffed apart from plain chat messages, refused in one line when
malformed; the published tau-bench trajectories read natively when the shared folder holds them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from harness.core.messages import Message, Text, ToolResult, ToolUse
from harness.run.traces import TraceError, detect_format, load_trace, load_traces
from harness.run.traces.normal import FRAGMENT_TASK, RecordedUsage
from harness.run.traces.reading import read_trace
from harness.run.traces.tau_bench import DOCUMENT_RANK, NAME, sniff

REPO = Path(__file__).resolve().parents[4]
DATA = REPO / "tests" / "data" / "traces" / "tau-bench"
TAU_BENCH = DATA / "airline_rebooking.json"
TAU2 = DATA / "tau2_telecom_results.json"
REAL = REPO / ".." / "shared" / "realtraces" / "tau-bench" / "original" / "gpt-4o-airline.json"


def _write(tmp_path: Path, value: Any, name: str = "trace.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value))
    return path


def _text(message: Message) -> str:
    return "\n".join(b.text for b in message.blocks if isinstance(b, Text))


def _calls(session: Any) -> list[ToolUse]:
    return [b for m in session.messages for b in m.blocks if isinstance(b, ToolUse)]


def _results(session: Any) -> list[ToolResult]:
    return [b for m in session.messages for b in m.blocks if isinstance(b, ToolResult)]


# tau-bench -----------------------------------------------------------------------------------------------

def test_tau_bench_list_is_one_session_per_run() -> None:
    sessions = load_trace(TAU_BENCH)
    assert [s.session_id for s in sessions] == ["task3-trial0", "task3-trial1"]
    assert {s.format for s in sessions} == {NAME}
    assert [len(s.messages) for s in sessions] == [11, 3]
    first = sessions[0]
    assert first.system.startswith("# Airline Agent Policy")
    assert first.messages[0].kind == "task" and _text(first.messages[0]).startswith("Hi, I need to move")
    assert first.model is None and first.tools == () and first.tool_schemas == () and first.usage == ()


def test_tau_bench_reused_id_after_its_answer_is_a_new_call() -> None:
    first = load_trace(TAU_BENCH)[0]
    assert [(c.id, c.name) for c in _calls(first)] == [
        ("call_Rk1", "get_reservation_details"), ("call_Rk1#2", "search_direct_flight"),
        ("call_Wm3", "update_reservation_flights")]
    assert [r.tool_use_id for r in _results(first)] == ["call_Rk1", "call_Rk1#2", "call_Wm3"]
    assert _calls(first)[1].input == {"origin": "BOS", "destination": "ORD", "date": "2024-05-17"}
    assert any("1 tool call(s) reuse the id" in n for n in first.notes)


def test_tau_bench_failed_run_is_skipped_with_a_note_on_the_first_session() -> None:
    first, second = load_trace(TAU_BENCH)
    [skipped] = [n for n in first.notes if "skipped" in n]
    assert skipped.startswith(f"{TAU_BENCH}: $[2]: run task4-trial0 skipped")
    assert "RateLimitError" in skipped
    assert second.notes == ()


def test_tau_bench_ids_without_trial_or_task(tmp_path: Path) -> None:
    traj = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    path = _write(tmp_path, [{"task_id": "t-9", "traj": traj}, {"task_id": None, "traj": traj}], "runs.json")
    assert [s.session_id for s in load_trace(path)] == ["taskt-9", "runs-2"]


def test_tau_bench_jsonl_of_results(tmp_path: Path) -> None:
    runs = json.loads(TAU_BENCH.read_text())[:2]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    assert detect_format(path) == NAME
    assert [s.session_id for s in load_trace(path)] == ["task3-trial0", "task3-trial1"]


# tau2 ----------------------------------------------------------------------------------------------------

def test_tau2_results_sessions_model_tools_and_system() -> None:
    sessions = load_trace(TAU2)
    assert [s.session_id for s in sessions] == ["2f9d1c0e-7a41-4d8e-9b1a-5c3e2d7f0a11",
                                                "8c4b7e22-03f6-4a9d-a1e5-6b2d9f4c8e37"]
    first = sessions[0]
    assert first.model == "gpt-4.1-2025-04-14"
    assert first.system.startswith("# Telecom agent policy")
    assert first.tools == ("get_customer_by_phone", "get_details_by_id", "enable_roaming")
    schema = json.loads(first.tool_schemas[0])
    assert schema == {"type": "function", "function": {
        "name": "get_customer_by_phone", "description": "Find a customer by the phone number of one of their lines.",
        "parameters": {"properties": {"phone_number": {"type": "string", "title": "Phone Number"}},
                       "required": ["phone_number"], "title": "parameters", "type": "object"}}}
    assert first.tool_schemas[0] == json.dumps(schema, sort_keys=True)


def test_tau2_greeting_is_read_after_a_placeholder_task_and_user_tools_are_skipped() -> None:
    first = load_trace(TAU2)[0]
    assert _text(first.messages[0]) == FRAGMENT_TASK
    assert first.messages[1].role == "assistant" and _text(first.messages[1]) == "Hi! How can I help you today?"
    assert [c.name for c in _calls(first)] == ["get_customer_by_phone"]  # the user's check_status_bar is not here
    assert "airplane mode ON" not in "".join(r.content for r in _results(first))
    notes = "\n".join(first.notes)
    assert "the transcript starts with the agent" in notes
    assert "2 tool call(s) and result(s) of the user simulator skipped" in notes
    assert "the system prompt is the domain policy" in notes
    assert "tool schemas rebuilt from tau2's tool signatures" in notes


def test_tau2_usage_names_the_assistant_message_of_each_call() -> None:
    first, second = load_trace(TAU2)
    def at(seconds: int, micro: int) -> float:  # the sample's times carry no zone: read as UTC
        return datetime(2025, 7, 2, 10, 15, seconds, micro, tzinfo=UTC).timestamp()

    assert first.usage == (
        RecordedUsage(3, 2210, 24, None, 1, 0.0046, None, at(5, 900000)),
        RecordedUsage(5, 2290, 27, None, 1, 0.0041, None, at(8, 300000)),
        RecordedUsage(7, 2350, 15, 2048, 1, 0.0044, None, at(22, 700000)),
    )
    for session in (first, second):
        for usage in session.usage:
            assert usage.call is not None and session.messages[usage.call].role == "assistant"
    assert [u.call for u in second.usage] == [3, 5]


def test_tau2_parallel_results_keep_their_error_status() -> None:
    second = load_trace(TAU2)[1]
    assert [(r.tool_use_id, r.status) for r in _results(second)] == [("call_P1", "success"), ("call_P2", "error")]
    assert second.messages[3].role == "assistant" and len(second.messages[3].blocks) == 2


def test_tau2_single_simulation_file(tmp_path: Path) -> None:
    simulation = json.loads(TAU2.read_text())["simulations"][1]
    path = _write(tmp_path, simulation)
    assert detect_format(path) == NAME
    [session] = load_trace(path)
    assert session.session_id == simulation["id"]
    assert session.model is None and session.system == "" and session.tools == ()
    assert [u.call for u in session.usage] == [3, 5]


def test_tau2_simulation_without_id_and_a_simulation_policy(tmp_path: Path) -> None:
    results = json.loads(TAU2.read_text())
    simulation = results["simulations"][1]
    del simulation["id"]
    simulation["policy"] = "Knowledge policy of this simulation."
    results["simulations"] = [simulation]
    [session] = load_trace(_write(tmp_path, results))
    assert session.session_id == "taskroaming_and_bill-trial0"
    assert session.system == "Knowledge policy of this simulation."
    assert any("$.simulations[0].policy: the system prompt" in n for n in session.notes)


def test_tau2_audio_content_becomes_a_placeholder(tmp_path: Path) -> None:
    simulation = json.loads(TAU2.read_text())["simulations"][1]
    simulation["messages"][1] |= {"is_audio": True, "content": "UklGRiQAAABXQVZF"}
    [session] = load_trace(_write(tmp_path, simulation))
    assert _text(session.messages[2]) == "[audio omitted]"


# Sniffing ------------------------------------------------------------------------------------------------

def test_samples_are_sniffed_as_tau_bench() -> None:
    for path in (TAU_BENCH, TAU2):
        assert detect_format(path) == NAME
        found = sniff(read_trace(path))
        assert found is not None and found.where == (0, DOCUMENT_RANK)


def test_plain_chat_messages_stay_openai_chat(tmp_path: Path) -> None:
    traj = json.loads(TAU_BENCH.read_text())[0]["traj"]
    path = _write(tmp_path, traj)
    assert sniff(read_trace(path)) is None
    assert detect_format(path) == "openai-chat"
    assert detect_format(_write(tmp_path, {"messages": traj}, "conversation.json")) == "openai-chat"


def test_other_shapes_are_not_claimed(tmp_path: Path) -> None:
    shapes: list[Any] = [[], [1, 2], {"task_id": 3}, [{"task_id": 3, "reward": 1.0}], {"info": {}}, {"simulations": []}]
    for value in shapes:
        assert sniff(read_trace(_write(tmp_path, value))) is None


def test_other_samples_are_not_claimed() -> None:
    for path in sorted((REPO / "tests" / "data" / "traces").glob("*/*.json*")):
        if path.parent.name != NAME:
            assert sniff(read_trace(path)) is None, path


# Errors --------------------------------------------------------------------------------------------------

def _tau_bench_run(**changes: Any) -> dict[str, Any]:
    return json.loads(TAU_BENCH.read_text())[0] | changes


def _tau2(edit: Any) -> dict[str, Any]:
    results = json.loads(TAU2.read_text())
    edit(results)
    return results


_UNANSWERED = _tau_bench_run(traj=[
    {"role": "user", "content": "Cancel both bookings."},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_X", "type": "function", "function": {"name": "cancel", "arguments": "{}"}},
        {"id": "call_X", "type": "function", "function": {"name": "cancel", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call_X", "content": "ok"}])

ERRORS: dict[str, tuple[Any, str]] = {
    "traj-not-array": ([_tau_bench_run(traj={"role": "user"})], r"\$\[0\]\.traj: expected an array, got an object"),
    "traj-item-not-object": ([_tau_bench_run(traj=["hello"])], r"\$\[0\]\.traj\[0\]: expected a message object"),
    "reused-while-unanswered": ([_UNANSWERED], r"\$\[0\]\.traj\[1\]\.tool_calls\[1\]: tool id 'call_X' is used again"),
    "task-id-object": ([_tau_bench_run(task_id={"n": 3})], r"\$\[0\]\.task_id: expected a number or a string"),
    "trial-string": ([_tau_bench_run(trial="0")], r"\$\[0\]\.trial: expected a number"),
    "every-run-failed": ([_tau_bench_run(traj=[], info={"error": "boom"})], r"\$: no session: \$\[0\]: run "
                         r"task3-trial0 skipped"),
    "item-of-another-shape": ([_tau_bench_run(), {"task_id": 4}], r"\$\[1\]: expected a tau-bench result"),
    "results-without-simulations": (_tau2(lambda r: r.pop("simulations")),
                                    r"\$\.simulations: missing: a tau2 results\.json of the directory layout"),
    "simulations-not-array": (_tau2(lambda r: r.update(simulations=5)), r"\$\.simulations: expected an array"),
    "voice-simulation": (_tau2(lambda r: r["simulations"][0].update(messages=None, ticks=[])),
                         r"\$\.simulations\[0\]\.messages: a full-duplex \(voice\) simulation"),
    "unknown-role": (_tau2(lambda r: r["simulations"][0]["messages"][1].update(role="robot")),
                     r"\$\.simulations\[0\]\.messages\[1\]\.role: unknown role 'robot'"),
    "usage-tokens-text": (_tau2(lambda r: r["simulations"][0]["messages"][2]["usage"].update(prompt_tokens="2k")),
                          r"messages\[2\]\.usage\.prompt_tokens: expected a non-negative number, got "),
    "cost-text": (_tau2(lambda r: r["simulations"][0]["messages"][2].update(cost="cheap")),
                  r"messages\[2\]\.cost: expected a number"),
    "tool-error-text": (_tau2(lambda r: r["simulations"][0]["messages"][3].update(error="no")),
                        r"messages\[3\]\.error: expected a boolean"),
    "tool-without-id": (_tau2(lambda r: r["simulations"][0]["messages"][3].pop("id")),
                        r"messages\[3\]\.id: missing"),
    "tool-defs-array": (_tau2(lambda r: r["info"]["environment_info"].update(tool_defs=[])),
                        r"\$\.info\.environment_info\.tool_defs: expected an object of tool signatures"),
    "info-not-object": (_tau2(lambda r: r.update(info=[])), r"\$\.info: expected an object"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_malformed_traces_fail_in_one_line(name: str, tmp_path: Path) -> None:
    value, problem = ERRORS[name]
    path = _write(tmp_path, value)
    with pytest.raises(TraceError, match=problem) as caught:
        load_trace(path, NAME)
    assert "\n" not in str(caught.value) and str(caught.value).startswith(str(path))


def test_truncated_file_fails_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text(TAU_BENCH.read_text()[:700])
    with pytest.raises(TraceError, match=r"line \d+: invalid JSON") as caught:
        load_trace(path)
    assert "\n" not in str(caught.value)


# The published trajectories ----------------------------------------------------------------------------------

def test_real_tau_bench_trajectories_read_natively() -> None:
    if not REAL.is_file():
        pytest.skip(f"{REAL} is not here")
    assert detect_format(REAL) == NAME
    sessions = load_traces([REAL])
    assert len(sessions) == 200 and len({s.session_id for s in sessions}) == 200
    assert {s.format for s in sessions} == {NAME}
    assert sum(any("reuse the id" in n for n in s.notes) for s in sessions) == 49
    assert all(s.system.startswith("# Airline Agent Policy") and s.messages[0].kind == "task" for s in sessions)
    assert all(r.tool_use_id in {c.id for c in _calls(s)} for s in sessions for r in _results(s))
