"""SWE-agent trajectories: the ``history`` read as sent (function calls, text actions, demonstrations), the
``trajectory`` steps read by ``--format swe-agent-steps``, usage, model and ids, sniffing, malformed files,
and every real ``.traj`` of the real transcripts beside the checkout (``REAL``) when they are there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.core.messages import Message, Text, ToolResult, ToolUse
from harness.core.tokens import default_tokenizer
from harness.run.traces import TraceError, detect_format, load_trace
from harness.run.traces.normal import ImportedSession, RecordedUsage
from harness.run.traces.reading import read_trace
from harness.run.traces.swe_agent import STEPS_FORMAT, split_action

ROOT = Path(__file__).resolve().parents[4]
DATA = ROOT / "tests" / "data" / "traces"
FC = DATA / "swe-agent" / "fc_units_fix.traj.json"
TEXT = DATA / "swe-agent" / "text_lanternfish.traj.json"
REAL = ROOT / ".." / "shared" / "realtraces" / "swe-agent"


def _uses(session: ImportedSession) -> list[ToolUse]:
    return [b for m in session.messages for b in m.blocks if isinstance(b, ToolUse)]


def _results(session: ImportedSession) -> list[ToolResult]:
    return [b for m in session.messages for b in m.blocks if isinstance(b, ToolResult)]


def _texts(message: Message) -> list[str]:
    return [b.text for b in message.blocks if isinstance(b, Text)]


def _write(tmp_path: Path, doc: Any, name: str = "t.traj") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _history(*items: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A minimal text-action trajectory around ``items`` (after a system prompt and the task)."""
    return {"environment": "swe_main", "trajectory": [], "info": {},
            "history": [{"role": "system", "content": "You fix bugs.", "agent": "primary"},
                        {"role": "user", "content": "Fix the crash in reef.py.", "agent": "primary"}, *items],
            **extra}


# The samples -------------------------------------------------------------------------------------------------

def test_function_calling_history_keeps_calls_results_usage_model_and_instance_id() -> None:
    [session] = load_trace(FC)
    assert session.format == "swe-agent"
    assert session.session_id == "tidepool-units-17"
    assert session.model == "gpt-4o-mini"
    assert session.system.startswith("You are an autonomous programmer")
    assert [m.role for m in session.messages] == ["user", "assistant"] * 5
    assert "parse_duration" in session.messages[0].text
    uses = _uses(session)
    assert [u.name for u in uses] == ["find_file", "open", "edit", "bash", "submit"]
    # the second call was saved as its Python repr: read with literal_eval, its JSON arguments parsed
    assert uses[1].input == {"path": "/repo/tidepool/units.py", "line_number": 40}
    assert uses[2].input == {"search": '    "s": 60,', "replace": '    "s": 1,', "replace-all": False}
    results = _results(session)
    assert [r.tool_use_id for r in results] == [u.id for u in uses[:4]]
    assert all(r.status == "success" for r in results)
    assert results[3].content.startswith("....\n4 passed")
    assert _texts(session.messages[1]) == ["Let me find the module that holds parse_duration."]
    assert session.messages[-1].role == "assistant" and session.messages[-1].kind == "action"  # submit: final
    assert session.usage == (RecordedUsage(call=None, input_tokens=3120, output_tokens=188, calls=5,
                                           cost_usd=0.0042),)
    assert session.notes == ()
    assert session.tool_schemas == () and session.tools == ()


def test_text_actions_become_tool_calls_and_the_block_is_counted_once() -> None:
    [session] = load_trace(TEXT)
    assert session.format == "swe-agent"
    assert session.session_id == "text_lanternfish"  # no replay_config: the file's name
    assert session.model is None
    uses = _uses(session)
    assert [u.name for u in uses] == ["search_dir", "open", "edit", "submit"]
    assert uses[0].input == {"command": 'search_dir "def count"'}
    assert uses[2].input == {"command": "edit 13:13\n    return len(fish), (sum(fish) / len(fish) if fish else 0.0)"
                                        "\nend_of_edit"}
    for message, use in zip([m for m in session.messages if m.role == "assistant"], uses, strict=True):
        text = "\n".join(_texts(message))
        assert "```\n" + use.input["command"] not in text  # the action goes only in the tool call
        assert use.input["command"].splitlines()[-1] not in text.splitlines()
    # a fenced block that is not the action stays in the thought
    assert "```python\nlanternfish.count([])\n```" in _texts(session.messages[3])[0]
    results = _results(session)
    assert [r.tool_use_id for r in results] == [u.id for u in uses[:3]]
    assert results[0].content.startswith('Found 1 matches for "def count"')
    assert session.messages[-1].role == "assistant"  # the final submit has no observation: left unanswered
    assert session.usage == (RecordedUsage(call=None, input_tokens=8100, output_tokens=240, calls=4, cost_usd=0.21),)
    notes = "\n".join(session.notes)
    assert "4 text action(s)" in notes and "read as tool calls" in notes
    assert "1 demonstration message(s) read as part of the prompt" in notes


def test_a_demonstration_before_the_task_is_kept_in_the_prompt() -> None:
    [session] = load_trace(TEXT)
    task = _texts(session.messages[0])
    assert task[0].startswith("Here is a demonstration") and "--- END OF DEMONSTRATION ---" in task[0]
    assert task[1].startswith("We're currently solving the following issue")


def test_steps_format_reads_one_call_per_step_after_the_prompt() -> None:
    [session] = load_trace(FC, "swe-agent-steps")
    assert session.format == "swe-agent-steps"
    assert session.session_id == "tidepool-units-17" and session.model == "gpt-4o-mini"
    assert session.system.startswith("You are an autonomous programmer")
    assert "parse_duration" in session.messages[0].text
    uses = _uses(session)
    assert [u.name for u in uses] == ["find_file", "open", "edit", "bash", "submit"]
    assert uses[0].input == {"command": "find_file units.py"}
    results = _results(session)
    assert [r.tool_use_id for r in results] == [u.id for u in uses]  # every step has its observation
    assert results[0].content == 'Found 1 matches for "units.py" in /repo:\n/repo/tidepool/units.py'
    assert results[-1].content.startswith("diff --git")
    assert session.usage[0].input_tokens == 3120
    assert any("5 of 5 trajectory step(s) read as tool calls" in n for n in session.notes)


def test_steps_format_keeps_a_step_without_action_as_text(tmp_path: Path) -> None:
    doc = _history(trajectory=[{"thought": "Look first.", "action": "ls\n", "observation": "reef.py"},
                               {"thought": "Out of budget.", "action": "", "observation": "Exited (cost)."}])
    [session] = load_trace(_write(tmp_path, doc), "swe-agent-steps")
    assert [u.name for u in _uses(session)] == ["ls"]
    assert _texts(session.messages[-1]) == ["Exited (cost)."]
    assert any("1 of 2 trajectory step(s)" in n for n in session.notes)


def test_the_steps_format_is_never_sniffed() -> None:
    for path in (FC, TEXT):
        assert STEPS_FORMAT.sniff(read_trace(path)) is None


# Sniffing ----------------------------------------------------------------------------------------------------

def test_each_sample_is_sniffed_as_swe_agent_and_chat_files_stay_openai_chat(tmp_path: Path) -> None:
    assert detect_format(FC) == "swe-agent"
    assert detect_format(TEXT) == "swe-agent"
    assert detect_format(DATA / "openai-chat" / "incident_triage.json") == "openai-chat"
    chat = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    assert detect_format(_write(tmp_path, chat, "chat.json")) == "openai-chat"
    # the same messages under "history" with SWE-agent's item keys, or beside "info", are a trajectory
    items = [{**m, "agent": "main"} for m in chat["messages"]]
    assert detect_format(_write(tmp_path, {"history": items}, "h.traj")) == "swe-agent"
    assert detect_format(_write(tmp_path, {"history": chat["messages"], "info": {}}, "i.traj")) == "swe-agent"


# Text actions ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "action", "expected"), [
    ("Look.\n```\nls -la\n```\n", None, ("Look.", "ls -la")),
    ("Look.\n```\nls\n```\nthen\n```bash\npwd\n```", None, ("Look.\n```\nls\n```\nthen", "pwd")),
    ("Look.\n```\nls\n```\nthen\n```bash\npwd\n```", "ls\n", ("Look.\nthen\n```bash\npwd\n```", "ls")),
    ("Outer\n```\nedit 1:1\n```python\nx = 1\n```\nend\n```", None, ("Outer", "edit 1:1\n```python\nx = 1\n```\nend")),
    ("Make the file.\n<command>\ncreate a.py\n</command>", "create a.py", ("Make the file.", "create a.py")),
    ("No block here.", None, None),
    ("No block here.", "ls", None),
    ("```\nls\n```", "pwd", None),
    ("```\n\n```", None, None),
])
def test_split_action_finds_the_command_block(text: str, action: str | None,
                                               expected: tuple[str, str] | None) -> None:
    assert split_action(text, action) == expected


def test_a_text_transcript_without_actions_says_so(tmp_path: Path) -> None:
    doc = _history({"role": "assistant", "content": "I think the bug is in line 3.", "agent": "primary"},
                   {"role": "user", "content": "Go on.", "agent": "primary"},
                   {"role": "assistant", "content": "Done thinking.", "agent": "primary"})
    [session] = load_trace(_write(tmp_path, doc))
    assert _uses(session) == []
    assert any("no assistant message holds a function call or a command block" in n for n in session.notes)


def test_an_action_missing_from_its_text_or_without_observation_stays_text(tmp_path: Path) -> None:
    doc = _history({"role": "assistant", "content": "<function=bash>ls</function>", "action": "ls",
                    "agent": "primary"},
                   {"role": "user", "content": "reef.py", "agent": "primary"},
                   {"role": "assistant", "content": "Now:\n```\ncat reef.py\n```", "agent": "primary"},
                   {"role": "assistant", "content": "Again:\n```\ncat reef.py\n```", "agent": "primary"})
    [session] = load_trace(_write(tmp_path, doc))
    uses = _uses(session)
    assert [u.input for u in uses] == [{"command": "cat reef.py"}]  # only the final message's call
    notes = "\n".join(session.notes)
    assert "1 assistant message(s) whose recorded action is not a command block of their text kept as text" in notes
    assert "1 assistant message(s) whose command block no observation follows kept as text" in notes


def test_demonstrations_put_in_the_history_are_kept_and_counted(tmp_path: Path) -> None:
    demo = [{"role": "assistant", "content": "Demo:\n```\nls\n```", "is_demo": True, "agent": "primary"},
            {"role": "user", "content": "a.py", "is_demo": True, "agent": "primary"}]
    doc = _history()
    doc["history"][1:1] = [{"role": "user", "content": "Here is a demonstration.", "is_demo": True,
                            "agent": "primary"}, *demo]
    [session] = load_trace(_write(tmp_path, doc))
    assert session.messages[0].text.startswith("Here is a demonstration.")
    assert [u.input for u in _uses(session)] == [{"command": "ls"}]
    assert _texts(session.messages[2]) == ["Fix the crash in reef.py."]
    assert any("3 demonstration message(s)" in n and "1 of them are assistant messages" in n for n in session.notes)


def test_only_the_first_agents_items_are_read(tmp_path: Path) -> None:
    doc = _history({"role": "user", "content": "summarize this", "agent": "summarizer"},
                   {"role": "assistant", "content": "summary", "agent": "summarizer"})
    [session] = load_trace(_write(tmp_path, doc))
    assert [m.role for m in session.messages] == ["user"]
    assert any("2 history item(s) of agents other than 'primary' skipped" in n for n in session.notes)


# Function calls, usage, ids ----------------------------------------------------------------------------------

def test_tool_calls_given_as_text_are_never_evaluated(tmp_path: Path) -> None:
    doc = _history({"role": "assistant", "content": "x", "agent": "primary",
                    "tool_calls": "__import__('os').system('touch pwned')"})
    with pytest.raises(TraceError, match=r"\$\.history\[2\]\.tool_calls: a string that is neither JSON nor a Python"):
        load_trace(_write(tmp_path, doc))
    assert not (tmp_path / "pwned").exists()


def test_tool_calls_given_as_json_text_are_read(tmp_path: Path) -> None:
    calls = [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]
    doc = _history({"role": "assistant", "content": "", "agent": "primary", "tool_calls": json.dumps(calls)},
                   {"role": "tool", "content": "reef.py", "agent": "primary", "tool_call_ids": ["c1"]})
    [session] = load_trace(_write(tmp_path, doc))
    assert [(u.id, u.name, u.input) for u in _uses(session)] == [("c1", "bash", {"command": "ls"})]
    assert [r.content for r in _results(session)] == ["reef.py"]


def test_replay_config_as_an_object_and_an_unreadable_one(tmp_path: Path) -> None:
    config = {"agent": {"model": {"model_name": "gpt4"}}, "problem_statement": {"id": "reef-3"}}
    [session] = load_trace(_write(tmp_path, _history(replay_config=config)))
    assert (session.model, session.session_id) == ("gpt4", "reef-3")
    [session] = load_trace(_write(tmp_path, _history(replay_config="{not json"), "bad.traj"))
    assert (session.model, session.session_id) == (None, "bad")
    assert any("replay_config: not JSON" in n for n in session.notes)


def test_usage_is_read_only_when_something_was_counted(tmp_path: Path) -> None:
    replayed = {"model_stats": {"instance_cost": 0, "tokens_sent": 0, "tokens_received": 0, "api_calls": 11}}
    [session] = load_trace(_write(tmp_path, _history(info=replayed)))
    assert session.usage == ()
    counted = {"model_stats": {"tokens_sent": 900, "tokens_received": 30}}
    [session] = load_trace(_write(tmp_path, _history(info=counted)))
    assert session.usage == (RecordedUsage(call=None, input_tokens=900, output_tokens=30, calls=0),)


def test_retry_agent_attempts_are_one_session_each(tmp_path: Path) -> None:
    first, second = _history(), _history()
    second["history"][1]["content"] = "Fix the crash in reef.py (second try)."
    [a, b] = load_trace(_write(tmp_path, {"attempts": [first, second]}, "reef.traj"))
    assert (a.session_id, b.session_id) == ("reef-1", "reef-2")
    assert "second try" in b.messages[0].text
    chosen = {**first, "attempts": [first, second]}
    [only] = load_trace(_write(tmp_path, chosen, "chosen.traj"))
    assert any("holds 2 attempts" in n for n in only.notes)


@pytest.mark.parametrize(("doc", "problem"), [
    ({"history": {"role": "user"}, "info": {}}, r"\$\.history: expected an array, got an object"),
    ({"history": [3], "info": {}}, r"\$\.history\[0\]: expected a history item object, got a number"),
    (_history({"role": "robot", "content": "beep"}), r"\$\.history\[2\]\.role: unknown role 'robot'"),
    (_history({"role": "assistant", "content": "x", "tool_calls": 7}),
     r"\$\.history\[2\]\.tool_calls: expected an array of tool calls, got a number"),
    (_history({"role": "assistant", "content": "x", "tool_calls": [{"id": "c", "function": {"name": "ls"}}]},
              {"role": "tool", "content": "out"}), r"\$\.history\[3\]\.tool_call_ids: missing"),
    (_history({"role": "assistant", "content": "x", "tool_calls": [{"id": "c", "function": {"name": "ls"}}]},
              {"role": "tool", "content": "out", "tool_call_ids": []}), r"tool_call_ids: empty"),
    (_history({"role": "assistant", "content": "x", "tool_calls": [
        {"id": "c", "function": {"name": "ls"}}, {"id": "c", "function": {"name": "ls"}}]}),
     r"tool id 'c' is used again while its call at \$\.history\[2\]\.tool_calls\[0\] is not answered"),
    (_history({"role": "assistant", "content": 5}), r"\$\.history\[2\]\.content: expected a string or an array"),
    (_history(info={"model_stats": {"tokens_sent": "lots"}}),
     r"\$\.info\.model_stats\.tokens_sent: expected a non-negative number, got 'lots'"),
    (_history(info={"model_stats": {"tokens_sent": 10.5}}), r"tokens_sent: expected a whole number"),
    ({"trajectory": [], "info": {}}, r"\$\.history: missing \(a file of trajectory steps only is read with --format "
                                     r"swe-agent-steps\)"),
])
def test_a_malformed_trajectory_is_one_line_naming_the_place(tmp_path: Path, doc: Any, problem: str) -> None:
    path = _write(tmp_path, doc)
    with pytest.raises(TraceError, match=problem) as raised:
        load_trace(path, "swe-agent")
    assert "\n" not in str(raised.value) and str(raised.value).startswith(str(path))


def test_several_json_values_are_not_a_trajectory(tmp_path: Path) -> None:
    path = tmp_path / "two.traj"
    path.write_text(json.dumps(_history()) + "\n" + json.dumps(_history()) + "\n")
    with pytest.raises(TraceError, match=r"line 2 \$: a SWE-agent trajectory is one JSON object"):
        load_trace(path, "swe-agent")


# The real files ----------------------------------------------------------------------------------------------

def _real_files() -> list[Path]:
    folder = REAL / "original"
    if not folder.is_dir():
        pytest.skip(f"no real SWE-agent transcripts at {REAL}")
    return sorted(folder.glob("*.traj"))


def test_every_real_trajectory_reads_in_both_formats_or_is_refused_in_one_line() -> None:
    for path in _real_files():
        assert detect_format(path) == "swe-agent", path
        [session] = load_trace(path)
        assert len(session.messages) > 1 and _uses(session), path
        try:
            [steps] = load_trace(path, "swe-agent-steps")
        except TraceError as e:  # a demonstration saved as its history only
            assert "\n" not in str(e) and "$.trajectory: missing" in str(e), path
        else:
            assert len(_uses(steps)) >= len(_uses(session)) - 1, path


def test_real_gpt4_runs_record_tokens_sent_and_text_runs_match_it() -> None:
    """The text-action GPT-4 runs' recorded prompt tokens against the unbounded replay's sum (each call sends
    the system prompt and every message before it): within 2%. The function-calling run's history lacks its
    last call (that SWE-agent version saved the history before the final step), so only its steps are
    compared, loosely."""
    count = default_tokenizer().count
    runs = [p for p in _real_files() if p.name.startswith("tests_test_data_trajectories_gpt4")]
    assert len(runs) == 3
    for path in runs:
        [session] = load_trace(path)
        [total] = session.usage
        assert total.input_tokens and total.call is None
        steps = "swe-agent-steps" if "1c2844" in path.name else None
        [replayed] = load_trace(path, steps) if steps else [session]
        sent = 0
        before = 0
        for message in replayed.messages:
            if message.role == "assistant":
                sent += count(replayed.system) + before
            before += message.tokens
        assert abs(sent / total.input_tokens - 1) < (0.02 if steps is None else 0.05), (path.name, sent)
